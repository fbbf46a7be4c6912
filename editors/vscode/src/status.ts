/** The status bar item: idle / running / waiting for approval, and the session's tokens. */
import * as vscode from 'vscode';
import { EditorEvent } from './editorEvent';

export class StatusItem implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('bareagent.status', vscode.StatusBarAlignment.Left, 10);
  private readonly running = new Set<number>();
  private readonly pending = new Set<number>();
  private tokens = 0;
  private serverUp = false;

  constructor() {
    this.item.name = 'bareagent';
    this.item.command = 'bareagent.vscode.status';
    this.render();
    this.item.show();
  }

  serverRunning(up: boolean): void {
    this.serverUp = up;
    if (!up) {
      this.running.clear();
      this.pending.clear();
    }
    this.render();
  }

  onEvent(event: EditorEvent): void {
    switch (event.type) {
      case 'turn_started':
        this.running.add(event.turn);
        break;
      case 'turn_finished':
      case 'turn_failed':
        this.running.delete(event.turn);
        break;
      case 'approval_requested':
        this.pending.add(event.id);
        break;
      case 'approval_resolved':
        this.pending.delete(event.id);
        break;
      case 'usage':
        // The session's, not the turn's: the count grows over the conversation.
        this.tokens = event.session_total.input_tokens + event.session_total.output_tokens;
        break;
    }
    this.render();
  }

  /** New session: no tokens spent in it yet, and the old one's turn is over. */
  newSession(): void {
    this.tokens = 0;
    this.running.clear();
    this.render();
  }

  private render(): void {
    const tokens = this.tokens > 0 ? ` · ${formatTokens(this.tokens)} tokens` : '';
    if (!this.serverUp) {
      this.item.text = '$(circle-slash) bareagent: stopped';
      this.item.tooltip = 'The bareagent server is not running: click for why';
    } else if (this.pending.size > 0) {
      this.item.text = `$(question) bareagent: waiting for approval${tokens}`;
      this.item.tooltip = 'An action waits for your answer in the bareagent chat view';
    } else if (this.running.size > 0) {
      this.item.text = `$(sync~spin) bareagent: running${tokens}`;
      this.item.tooltip = 'The agent is working';
    } else {
      this.item.text = `$(comment-discussion) bareagent: idle${tokens}`;
      this.item.tooltip = 'bareagent: click for status';
    }
  }

  dispose(): void {
    this.item.dispose();
  }
}

function formatTokens(n: number): string {
  return n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}
