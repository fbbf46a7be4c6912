/**
 * The chat view (a webview in bareagent's own activity-bar container): it
 * renders the `bareagent/event` stream of the `main` session and sends what
 * the user does there (ask, cancel, new session, approval answers, review,
 * model choice, `@path` completion) to the server through the Agent.
 */
import * as vscode from 'vscode';
import { Agent, ServerDown } from './agent';
import { EditorEvent } from './editorEvent';
import { ProposedDocuments } from './review';
import { insideFolder } from './replyLinks';

const HISTORY_LIMIT = 5000;
const EDIT_TOOLS = new Set(['edit_file', 'multi_edit', 'write_file']);

type ApprovalRequested = Extract<EditorEvent, { type: 'approval_requested' }>;

type FromView =
  | { type: 'ready' }
  | { type: 'ask'; request: number; prompt: string }
  | { type: 'cancel' }
  | { type: 'newSession' }
  | { type: 'pickModel' }
  | { type: 'answer'; id: number; decision: 'approve' | 'approveSession' | 'approveAlways' | 'reject' }
  | { type: 'review'; id: number }
  | { type: 'complete'; request: number; prefix: string }
  | { type: 'resolvePaths'; request: number; paths: string[] }
  | { type: 'openPath'; uri: string; line?: number; column?: number };

const DECISIONS: Record<string, string> = {
  approve: 'bareagent.approve',
  approveSession: 'bareagent.approveSession',
  approveAlways: 'bareagent.approveAlways',
  reject: 'bareagent.reject',
};

export class ChatView implements vscode.WebviewViewProvider {
  static readonly id = 'bareagent.chat';
  private view: vscode.WebviewView | undefined;
  /** The events so far, replayed when the view is (re)created. */
  private history: EditorEvent[] = [];
  private readonly approvals = new Map<number, ApprovalRequested>();
  private readonly visibility = new vscode.EventEmitter<boolean>();
  /** Fires when the view is shown or hidden. */
  readonly onVisibility = this.visibility.event;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly agent: Agent,
    private readonly proposed: ProposedDocuments,
    private readonly pickModel: () => Promise<void>,
  ) {}

  /** An event of the session the view shows (see CurrentSession). */
  onEvent(event: EditorEvent): void {
    if (event.type === 'approval_requested') this.approvals.set(event.id, event);
    if (event.type === 'approval_resolved') this.approvals.delete(event.id);
    this.history.push(event);
    if (this.history.length > HISTORY_LIMIT) this.history.splice(0, this.history.length - HISTORY_LIMIT);
    void this.view?.webview.postMessage({ type: 'event', event });
  }

  clear(): void {
    this.history = [];
    void this.view?.webview.postMessage({ type: 'clear' });
  }

  showModel(label: string): void {
    void this.view?.webview.postMessage({ type: 'model', label });
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = this.html(view.webview, dist);
    view.webview.onDidReceiveMessage((message: FromView) => void this.handle(message));
    view.onDidChangeVisibility(() => this.visibility.fire(view.visible));
    view.onDidDispose(() => {
      if (this.view === view) this.view = undefined;
      this.visibility.fire(false);
    });
  }

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  /** Shows the view and puts the cursor in its input box. */
  async focus(): Promise<void> {
    await vscode.commands.executeCommand(`${ChatView.id}.focus`);
  }

  private async handle(message: FromView): Promise<void> {
    try {
      switch (message.type) {
        case 'ready':
          await this.view?.webview.postMessage({ type: 'replay', events: this.history });
          await this.refreshModel();
          break;
        case 'ask':
          // The box keeps the prompt until the server has it: if it is down, nothing typed is lost.
          await this.agent.run('bareagent.ask', { prompt: message.prompt });
          await this.view?.webview.postMessage({ type: 'asked', request: message.request, prompt: message.prompt });
          break;
        case 'cancel':
          await this.agent.run('bareagent.cancel', {});
          break;
        case 'newSession':
          await vscode.commands.executeCommand('bareagent.vscode.newSession');
          break;
        case 'pickModel':
          await this.pickModel();
          break;
        case 'answer': {
          const command = DECISIONS[message.decision];
          if (command) await this.agent.run(command, { id: message.id });
          break;
        }
        case 'review':
          await this.review(message.id);
          break;
        case 'complete':
          await this.view?.webview.postMessage({
            type: 'completions',
            request: message.request,
            items: await completePath(message.prefix),
          });
          break;
        case 'resolvePaths':
          await this.view?.webview.postMessage({
            type: 'paths',
            request: message.request,
            found: await resolvePaths(message.paths),
          });
          break;
        case 'openPath':
          await openPath(message.uri, message.line, message.column);
          break;
      }
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      void this.view?.webview.postMessage({ type: 'error', message: text });
      if (error instanceof ServerDown) void this.agent.showDown(error);
    }
  }

  /** Opens approval `id`'s edit for review: the diff editor, else the server's diff as a file. */
  async review(id: number): Promise<void> {
    const approval = this.approvals.get(id);
    if (!approval) throw new Error(`approval ${id} is no longer pending`);
    const { uri, path, proposed, tool } = approval;
    if (uri !== null && proposed !== null) {
      await this.proposed.review(id, uri, path ?? uri, proposed);
    } else if (EDIT_TOOLS.has(tool)) {
      // The server could not compute the result: its unified diff, as a file.
      await this.agent.run('bareagent.showDiff', { id });
    } else {
      throw new Error(`approval ${id} is not an edit`);
    }
  }

  async refreshModel(): Promise<void> {
    try {
      const status = await this.agent.run<{ model?: { provider?: string; model?: string; error?: string } }>(
        'bareagent.status',
      );
      const m = status?.model;
      this.showModel(m?.error ? 'no model' : `${m?.provider ?? '?'} · ${m?.model ?? '?'}`);
    } catch {
      this.showModel('server not running');
    }
  }

  private html(webview: vscode.Webview, dist: vscode.Uri): string {
    const nonce = [...Array(32)].map(() => Math.floor(Math.random() * 36).toString(36)).join('');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(dist, 'chat.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(dist, 'chat.css'));
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${webview.cspSource}; script-src 'nonce-${nonce}'; img-src ${webview.cspSource} data:;">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>bareagent</title>
</head>
<body>
<header>
  <button id="model" class="link" title="Choose the model (bareagent.setModel)">model…</button>
  <span class="spacer"></span>
  <button id="cancel" title="Cancel the running turn">Cancel</button>
  <button id="new" title="Forget this conversation and start a new one">New session</button>
</header>
<main id="log" aria-live="polite"></main>
<section id="todos" hidden></section>
<section id="approvals"></section>
<footer>
  <div id="completions" role="listbox" hidden></div>
  <textarea id="prompt" rows="3" placeholder="Ask bareagent… (@ for a file, Enter to send, Shift+Enter for a new line)"></textarea>
  <div class="row"><span id="usage"></span><span class="spacer"></span><button id="send">Send</button></div>
</footer>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }
}

/** Workspace files whose relative path starts with (or contains) `prefix`. */
async function completePath(prefix: string): Promise<string[]> {
  const safe = prefix.replace(/[{}[\]*?!]/g, '');
  const pattern = safe.includes('/') ? `${safe}*` : `**/${safe}*`;
  const found = await vscode.workspace.findFiles(pattern, '{**/node_modules/**,**/.git/**,**/target/**}', 50);
  return found
    .map((uri) => vscode.workspace.asRelativePath(uri, false))
    .sort((a, b) => a.length - b.length || a.localeCompare(b))
    .slice(0, 20);
}

/**
 * The workspace files the paths a reply names stand for: relative to a
 * workspace folder, absolute inside one, or a bare name that only one file
 * in the workspace has. Each path maps to its file's URI, or null.
 */
async function resolvePaths(paths: string[]): Promise<Record<string, string | null>> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  const found: Record<string, string | null> = {};
  for (const path of paths.slice(0, 200)) {
    found[path] = null;
    const within = folders.filter((f) => insideFolder(path, f.uri.path));
    const candidates = path.startsWith('/')
      ? within.map(() => vscode.Uri.file(path))
      : within.map((f) => vscode.Uri.joinPath(f.uri, path));
    for (const uri of candidates) {
      if (await isFile(uri)) {
        found[path] = uri.toString();
        break;
      }
    }
    if (found[path] === null && !path.includes('/') && folders.length > 0) {
      const safe = path.replace(/[{}[\]*?!]/g, '');
      const matches = await vscode.workspace.findFiles(`**/${safe}`, '{**/node_modules/**,**/.git/**,**/target/**}', 2);
      if (matches.length === 1) found[path] = matches[0].toString();
    }
  }
  return found;
}

async function isFile(uri: vscode.Uri): Promise<boolean> {
  try {
    return (await vscode.workspace.fs.stat(uri)).type === vscode.FileType.File;
  } catch {
    return false;
  }
}

/** Opens a file a reply named, at its line (and column) when it said one. */
async function openPath(uri: string, line?: number, column?: number): Promise<void> {
  const target = vscode.Uri.parse(uri);
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (target.scheme !== 'file' || !folders.some((f) => insideFolder(target.path, f.uri.path))) {
    throw new Error(`not a workspace file: ${uri}`);
  }
  const options: vscode.TextDocumentShowOptions = { preview: false };
  if (line && line > 0) {
    const at = new vscode.Position(line - 1, Math.max(0, (column ?? 1) - 1));
    options.selection = new vscode.Range(at, at);
  }
  await vscode.window.showTextDocument(target, options);
}
