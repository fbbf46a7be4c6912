/**
 * Sends the editor's diagnostics to the server (`bareagent/diagnostics`):
 * for every file whose diagnostics change, its whole current set, debounced,
 * so the agent sees what the editor's language servers report after its edits.
 */
import * as vscode from 'vscode';
import { LanguageClient } from 'vscode-languageclient/node';

const DEBOUNCE_MS = 200;

export class DiagnosticsForwarder implements vscode.Disposable {
  private readonly pending = new Map<string, vscode.Uri>();
  private timer: NodeJS.Timeout | undefined;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly client: LanguageClient) {
    this.subscription = vscode.languages.onDidChangeDiagnostics((e) => this.queue(e.uris));
    // What is already reported when the server starts.
    this.queue(vscode.languages.getDiagnostics().map(([uri]) => uri));
  }

  private queue(uris: readonly vscode.Uri[]): void {
    for (const uri of uris) {
      if (uri.scheme === 'file') this.pending.set(uri.toString(), uri);
    }
    if (this.pending.size > 0 && !this.timer) {
      this.timer = setTimeout(() => void this.flush(), DEBOUNCE_MS);
    }
  }

  private async flush(): Promise<void> {
    this.timer = undefined;
    const uris = [...this.pending.values()];
    this.pending.clear();
    const c2p = this.client.code2ProtocolConverter;
    for (const uri of uris) {
      // The server's own diagnostics (pending approvals) are not the editor's findings.
      const own = vscode.languages.getDiagnostics(uri).filter((d) => d.source !== 'bareagent');
      const diagnostics = await c2p.asDiagnostics(own);
      await this.client
        .sendNotification('bareagent/diagnostics', { uri: c2p.asUri(uri), diagnostics })
        .catch(() => undefined);
    }
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.subscription.dispose();
  }
}
