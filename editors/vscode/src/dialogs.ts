/**
 * `window/showMessageRequest` from the server. An approval question is shown
 * in the chat view when it is visible, so no toast is raised for it (a toast
 * cannot be closed by an extension and would outlive the answer given in the
 * view): the request is held, and answered `null` ("dismissed", which the
 * server never takes as allowed) once the approval is resolved or the turn
 * ends. When the view is hidden, or becomes hidden while a question is held,
 * the native notification is shown as vscode-languageclient would.
 */
import * as vscode from 'vscode';
import { MessageActionItem, MessageType, ShowMessageRequestParams } from 'vscode-languageclient/node';

type Held = { params: ShowMessageRequestParams; answer: (item: MessageActionItem | null) => void };

export class Dialogs implements vscode.Disposable {
  private held: Held[] = [];

  constructor(private readonly viewVisible: () => boolean) {}

  show(params: ShowMessageRequestParams, token: vscode.CancellationToken): Promise<MessageActionItem | null> {
    const approval = (params.actions ?? []).some((a) => a.title === 'Allow once');
    if (!approval || !this.viewVisible()) return native(params);
    return new Promise((answer) => {
      const held = { params, answer };
      this.held.push(held);
      token.onCancellationRequested(() => this.release(held, null));
    });
  }

  /** The approval was answered (in the view) or dropped (the turn ended). */
  resolved(): void {
    for (const held of [...this.held]) this.release(held, null);
  }

  /** The view was hidden: what it showed becomes a notification. */
  viewHidden(): void {
    for (const held of [...this.held]) {
      this.held = this.held.filter((h) => h !== held);
      void native(held.params).then(held.answer);
    }
  }

  private release(held: Held, item: MessageActionItem | null): void {
    if (!this.held.includes(held)) return;
    this.held = this.held.filter((h) => h !== held);
    held.answer(item);
  }

  dispose(): void {
    this.resolved();
  }
}

async function native(params: ShowMessageRequestParams): Promise<MessageActionItem | null> {
  const actions = params.actions ?? [];
  const show =
    params.type === MessageType.Error
      ? vscode.window.showErrorMessage
      : params.type === MessageType.Warning
        ? vscode.window.showWarningMessage
        : vscode.window.showInformationMessage;
  const picked = await show(params.message, ...actions);
  return picked ?? null;
}
