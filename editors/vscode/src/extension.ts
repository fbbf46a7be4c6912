/**
 * The extension's entry point: wires the Agent (the language client), the
 * chat view, the status bar, the review documents and the palette commands.
 * The palette commands have ids of their own (`bareagent.vscode.*`): the
 * server's (`bareagent.ask`, …) are registered by vscode-languageclient.
 */
import * as vscode from 'vscode';
import { Agent, ServerDown } from './agent';
import { setPath } from './binary';
import { ChatView } from './chatView';
import { pickEffort } from './effort';
import { Dialogs } from './dialogs';
import { ProposedDocuments, SCHEME } from './review';
import { StatusItem } from './status';
import { CurrentSession } from './sessionFilter';
import { Choices, Usage, pickItems, usageText } from './modelChoices';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const started = Date.now();
  const log = vscode.window.createOutputChannel('bareagent', { log: true });
  // The chat view is created below; the dialogs only ask whether it is visible.
  let chatVisible = (): boolean => false;
  const dialogs = new Dialogs(() => chatVisible(), (id) => chat.review(id));
  const agent = new Agent(log, dialogs, () => chatVisible());
  const status = new StatusItem();
  const proposed = new ProposedDocuments();
  const session = new CurrentSession();
  const chat: ChatView = new ChatView(context.extensionUri, agent, proposed, (): Promise<void> => pickModel(agent, chat));
  chatVisible = () => chat.visible;
  context.subscriptions.push(log, agent, status, proposed, dialogs);
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, proposed),
    vscode.window.registerWebviewViewProvider(ChatView.id, chat, { webviewOptions: { retainContextWhenHidden: true } }),
    agent.onEvent((event) => {
      dialogs.onEvent(event);
      // Its Review tab has served once the question is answered.
      if (event.type === 'approval_resolved') void proposed.close(event.id);
      if (['approval_resolved', 'turn_finished', 'turn_failed'].includes(event.type)) dialogs.resolved();
      // The view and the status bar show the current session only.
      if (!session.accept(event)) return;
      status.onEvent(event);
      chat.onEvent(event);
    }),
    chat.onVisibility((visible) => {
      if (!visible) dialogs.viewHidden();
    }),
    agent.onRunning((up) => {
      status.serverRunning(up);
      if (up) void chat.refreshModel();
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('bareagent.path')) void agent.restart();
      else if (e.affectsConfiguration('bareagent')) agent.sendSettings();
    }),
    // Trust widens what the workspace's settings may set: start again with them.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void agent.restart()),
  );

  const command = (id: string, run: (...args: any[]) => unknown) =>
    context.subscriptions.push(
      vscode.commands.registerCommand(id, async (...args: any[]) => {
        try {
          await run(...args);
        } catch (error) {
          if (error instanceof ServerDown) void agent.showDown(error);
          else void vscode.window.showErrorMessage(`bareagent: ${error instanceof Error ? error.message : error}`);
        }
      }),
    );

  command('bareagent.vscode.ask', async (text?: string) => {
    const prompt = text ?? (await vscode.window.showInputBox({ prompt: 'Ask bareagent', ignoreFocusOut: true }));
    if (!prompt) return;
    await chat.focus();
    await agent.run('bareagent.ask', { prompt });
  });
  command('bareagent.vscode.askSelection', async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.selection.isEmpty) throw new Error('select some code first');
    const question = await vscode.window.showInputBox({ prompt: 'Ask about the selection', ignoreFocusOut: true });
    if (!question) return;
    const { start, end } = editor.selection;
    // A selection of whole lines ends at column 0 of the next one: not a line of it.
    const last = end.character === 0 && end.line > start.line ? end.line - 1 : end.line;
    const lines = `${start.line + 1}-${last + 1}`;
    // An untitled buffer is no file the agent could read: say so, the text is all there is.
    const where = editor.document.isUntitled
      ? `lines ${lines} of ${editor.document.uri.path}, an unsaved, untitled buffer (not a file on disk: the text is only here)`
      : `${vscode.workspace.asRelativePath(editor.document.uri, false)}:${lines}`;
    const quoted = editor.document.getText(editor.selection).replace(/\r?\n$/, '');
    await chat.focus();
    await agent.run('bareagent.ask', { prompt: `${question}\n\nThe selection, ${where}:\n\`\`\`\n${quoted}\n\`\`\`` });
  });
  command('bareagent.vscode.fixDiagnostic', async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) throw new Error('open a file with a diagnostic first');
    const here = vscode.languages
      .getDiagnostics(editor.document.uri)
      .filter((d) => d.source !== 'bareagent' && d.range.contains(editor.selection.active));
    const all = here.length > 0 ? here : vscode.languages.getDiagnostics(editor.document.uri);
    if (all.length === 0) throw new Error('no diagnostic here');
    const picked =
      all.length === 1
        ? all[0]
        : (
            await vscode.window.showQuickPick(
              all.map((d) => ({ label: d.message, description: `line ${d.range.start.line + 1}`, d })),
              { placeHolder: 'Which diagnostic?' },
            )
          )?.d;
    if (!picked) return;
    const file = vscode.workspace.asRelativePath(editor.document.uri, false);
    const source = picked.source ? ` (${picked.source}${picked.code !== undefined ? ` ${codeOf(picked.code)}` : ''})` : '';
    await chat.focus();
    await agent.run('bareagent.ask', {
      prompt: `Fix this diagnostic in ${file}:${picked.range.start.line + 1}:${picked.range.start.character + 1}${source}: ${picked.message}`,
    });
  });
  command('bareagent.vscode.cancel', () => agent.run('bareagent.cancel', {}));
  command('bareagent.vscode.newSession', async () => {
    await agent.run('bareagent.newSession', {});
    // The old session's turn may still end: its events are dropped from now on.
    session.finish();
    chat.clear();
    status.newSession();
  });
  // The view marks the rewound turn (the `rewound` event); the server's own message says what was restored.
  command('bareagent.vscode.rewind', () => agent.run('bareagent.rewind', {}));
  command('bareagent.vscode.openChat', () => agent.run('bareagent.openChat'));
  command('bareagent.vscode.status', () => showStatus(agent));
  command('bareagent.vscode.setModel', () => pickModel(agent, chat));
  command('bareagent.vscode.setEffort', () => pickEffort(agent));
  command('bareagent.vscode.setPath', () => setPath());
  command('bareagent.vscode.restart', () => agent.restart());

  // The server starts in the background: activation does not wait for it.
  void agent.start();
  log.info(`activated in ${Date.now() - started} ms`);
}

export function deactivate(): void {}

function codeOf(code: vscode.Diagnostic['code']): string {
  return typeof code === 'object' && code !== null ? String(code.value) : String(code);
}

type Status = {
  sessions?: { name: string; running: boolean; messages: number; usage?: Usage }[];
  pendingApprovals?: { id: number; tool: string; summary: string }[];
  sandbox?: string;
  model?: { provider?: string; model?: string; providerFrom?: string; modelFrom?: string; error?: string };
  reasoning?: { effort?: string | null; thinking?: string; wire?: string | null; error?: string };
};

async function showStatus(agent: Agent): Promise<void> {
  const s = await agent.run<Status>('bareagent.status');
  const m = s.model;
  const lines = [
    m?.error ? `model: ${m.error}` : `model: ${m?.provider} ${m?.model} (${m?.modelFrom ?? m?.providerFrom ?? ''})`,
    s.reasoning?.error
      ? `effort: ${s.reasoning.error}`
      : `effort: ${s.reasoning?.effort ?? 'the model\'s default'}, thinking ${s.reasoning?.thinking ?? '?'}${s.reasoning?.wire ? `, OpenAI ${s.reasoning.wire} API` : ''}`,
    `sandbox: ${s.sandbox ?? '?'}`,
    ...(s.sessions ?? []).map(
      (x) =>
        `session ${x.name}: ${x.running ? 'running' : 'idle'}, ${x.messages} messages, ${usageText(x.usage ?? {})}`,
    ),
    (s.pendingApprovals ?? []).length === 0
      ? 'no pending approvals'
      : `pending: ${(s.pendingApprovals ?? []).map((p) => `#${p.id} ${p.tool} ${p.summary}`).join('; ')}`,
  ];
  await vscode.window.showInformationMessage(`bareagent — ${lines.join(' · ')}`, { modal: false });
}

async function pickModel(agent: Agent, chat: ChatView): Promise<void> {
  const answer = await agent.run<Choices>('bareagent.setModel');
  const items: (vscode.QuickPickItem & { pick?: object; effort?: true })[] = pickItems(answer);
  // The effort is chosen from the same picker (and `bareagent: Choose effort`).
  items.push({ label: 'Effort and thinking…', effort: true });
  const picked = await vscode.window.showQuickPick(items, {
    placeHolder: `Model for the next turn (now ${answer.current?.provider ?? '?'} · ${answer.current?.model ?? '?'}); type to filter`,
  });
  if (picked?.effort) return pickEffort(agent);
  if (!picked?.pick) return;
  await agent.run('bareagent.setModel', picked.pick);
  await chat.refreshModel();
}
