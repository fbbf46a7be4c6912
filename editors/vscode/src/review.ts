/**
 * "Review" for a pending edit: VS Code's diff editor between the file as the
 * editor holds it now (unsaved changes included) and the server's `proposed`
 * text, which lives in a read-only virtual document `bareagent-proposed:`.
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

  /** Opens the diff for approval `id` of the edit to `fileUri`. */
  async review(id: number, fileUri: string, path: string, proposed: string): Promise<void> {
    const file = vscode.Uri.parse(fileUri);
    // The file's own name keeps its language (highlighting) in the right side.
    const virtual = vscode.Uri.from({ scheme: SCHEME, path: file.path, query: `approval=${id}` });
    this.texts.set(virtual.toString(), proposed);
    this.changes.fire(virtual);
    await vscode.commands.executeCommand('vscode.diff', file, virtual, `${path}: current ↔ proposed (approval ${id})`, {
      preview: true,
    });
  }

  dispose(): void {
    this.changes.dispose();
  }
}
