/**
 * "Review" for a pending edit: VS Code's diff editor between the file as the
 * editor holds it now (unsaved changes included) and the server's `proposed`
 * text, which lives in a read-only virtual document `bareagent-proposed:`.
 * Once the approval is answered, its Review tab is closed.
 */
import * as vscode from 'vscode';

export const SCHEME = 'bareagent-proposed';

export class ProposedDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly changes = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changes.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  /** The Review tabs left open, by the proposed side's URI, with the approval they show. */
  private readonly open = new Map<string, number>();

  /** Opens the diff for approval `id` of the edit to `fileUri`. */
  async review(id: number, fileUri: string, path: string, proposed: string): Promise<void> {
    const file = vscode.Uri.parse(fileUri);
    // The file's own name keeps its language (highlighting) in the right side.
    const virtual = vscode.Uri.from({ scheme: SCHEME, path: file.path, query: `approval=${id}` });
    this.texts.set(virtual.toString(), proposed);
    this.open.set(virtual.toString(), id);
    this.changes.fire(virtual);
    await vscode.commands.executeCommand('vscode.diff', file, virtual, `${path}: current ↔ proposed (approval ${id})`, {
      preview: true,
    });
  }

  /** Approval `id` was answered: its Review tab goes (the file's own tab stays). */
  async close(id: number): Promise<void> {
    const mine = [...this.open].filter(([, approval]) => approval === id).map(([uri]) => uri);
    if (mine.length === 0) return;
    mine.forEach((uri) => {
      this.open.delete(uri);
      this.texts.delete(uri);
    });
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && mine.includes(tab.input.modified.toString()));
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs);
  }

  dispose(): void {
    this.changes.dispose();
  }
}
