/**
 * `window/showMessageRequest` from the server. An approval question is shown
 * in the chat view when it is visible, so no toast is raised for it (a toast
 * cannot be closed by an extension and would outlive the answer given in the
 * view): the request is held, and answered `null` ("dismissed", which the
 * server never takes as allowed) once the approval is resolved or the turn
 * ends. When the view is hidden, or becomes hidden while a question is held,
 * the native notification is shown instead: the question without the diff
 * (a toast flattens it into a paragraph), with short button labels (a
 * toast cuts long ones to `Allo…`), and Review opening the diff editor
 * before it asks again.
 */
import * as vscode from 'vscode';
import { MessageActionItem, MessageType, ShowMessageRequestParams } from 'vscode-languageclient/node';
import type { EditorEvent } from './editorEvent';
import { shortApproval } from './approvalToast';

type ApprovalRequested = Extract<EditorEvent, { type: 'approval_requested' }>;

type Held = { params: ShowMessageRequestParams; answer: (item: MessageActionItem | null) => void };

export class Dialogs implements vscode.Disposable {
  private held: Held[] = [];
  /** The questions asked, to find the one a dialog is about (its Review). */
  private readonly approvals = new Map<number, ApprovalRequested>();

  constructor(
    private readonly viewVisible: () => boolean,
    private readonly review: (id: number) => Promise<void>,
  ) {}

  onEvent(event: EditorEvent): void {
    if (event.type === 'approval_requested') this.approvals.set(event.id, event);
    if (event.type === 'approval_resolved') this.approvals.delete(event.id);
  }

  show(params: ShowMessageRequestParams, token: vscode.CancellationToken): Promise<MessageActionItem | null> {
    const approval = (params.actions ?? []).some((a) => a.title === 'Allow once');
    if (!approval) return native(params);
    if (!this.viewVisible()) return this.approvalToast(params);
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
      void this.approvalToast(held.params).then(held.answer);
    }
  }

  private release(held: Held, item: MessageActionItem | null): void {
    if (!this.held.includes(held)) return;
    this.held = this.held.filter((h) => h !== held);
    held.answer(item);
  }

  /** The approval as a toast: the question, short labels, Review opening the diff and asking again. */
  private async approvalToast(params: ShowMessageRequestParams): Promise<MessageActionItem | null> {
    const question = [...this.approvals.values()].find((a) =>
      params.message.startsWith(`bareagent wants to run ${a.tool} ${a.summary} (`),
    );
    const toast = shortApproval(params.message, params.actions ?? [], question !== undefined);
    for (;;) {
      const picked = await vscode.window.showWarningMessage(toast.message, ...toast.labels);
      const answer = picked === undefined ? undefined : toast.answers.get(picked);
      if (answer === 'review' && question) {
        await this.review(question.id).catch((error) =>
          vscode.window.showErrorMessage(`bareagent: ${error instanceof Error ? error.message : error}`),
        );
        // Asked again, unless it was answered meanwhile (in the view, or the turn ended).
        if (!this.approvals.has(question.id)) return null;
        continue;
      }
      return answer && answer !== 'review' ? answer : null;
    }
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
