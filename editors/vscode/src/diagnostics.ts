/**
 * Sends the editor's diagnostics to the server (`bareagent/diagnostics`):
 * for every file whose diagnostics change, its whole current set, debounced,
 * so the agent sees what the editor's language servers report after its edits.
 * A set already sent for the same text of the file is not sent again: VS Code
 * says a file's diagnostics changed when an editor opens on it (the Review
 * diff editor does), and the server would take that repeat for the report on
 * an edit the language server has not checked yet.
 */
import * as vscode from 'vscode';
import { LanguageClient } from 'vscode-languageclient/node';

const DEBOUNCE_MS = 200;

export class DiagnosticsForwarder implements vscode.Disposable {
  private readonly pending = new Map<string, vscode.Uri>();
  private timer: NodeJS.Timeout | undefined;
  private readonly subscription: vscode.Disposable;
  /** What was last sent for each file, with the version of its text then. */
  private readonly sent = new Map<string, { version: number | undefined; diagnostics: string }>();

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
      const key = uri.toString();
      const version = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key)?.version;
      const said = { version, diagnostics: JSON.stringify(diagnostics) };
      const last = this.sent.get(key);
      if (last && last.version === said.version && last.diagnostics === said.diagnostics) continue;
      this.sent.set(key, said);
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
