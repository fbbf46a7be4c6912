/**
 * The language client to the `bareagent` server: starts it, passes the
 * settings, answers `bareagent/saveDocuments` and
 * `bareagent/codeIntelligence` (codeIntelligence.ts), forwards the editor's
 * diagnostics, and re-emits `bareagent/event` for the chat view and the
 * status bar. The server's own commands (`bareagent.ask`, …) are registered
 * by vscode-languageclient from `executeCommandProvider`; everything here
 * calls them through `run`.
 */
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  ShowMessageRequest,
  State,
} from 'vscode-languageclient/node';
import { CodeRequest, answerCode } from './codeIntelligence';
import { currentSettings } from './config';
import { findBinary } from './binary';
import { DiagnosticsForwarder } from './diagnostics';
import { Dialogs } from './dialogs';
import { EditorEvent } from './editorEvent';

export class Agent implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private forwarder: DiagnosticsForwarder | undefined;
  private readonly events = new vscode.EventEmitter<EditorEvent>();
  readonly onEvent = this.events.event;
  private readonly states = new vscode.EventEmitter<boolean>();
  /** Fires true when the server is running, false when it stopped. */
  readonly onRunning = this.states.event;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly dialogs: Dialogs,
  ) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  async start(): Promise<void> {
    const command = findBinary();
    if (!command) return;
    const started = Date.now();
    // No `transport`: with TransportKind.stdio the client appends `--stdio`.
    const server: ServerOptions = { command, args: [], options: { env: process.env } };
    const options: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
      initializationOptions: () => ({ ...currentSettings(), saveDocuments: true, diagnostics: true, codeIntelligence: true }),
      outputChannel: this.log,
      middleware: {
        workspace: {
          // Answer from the trust-aware settings, never the raw configuration.
          configuration: (params) =>
            params.items.map((item) => (item.section === 'bareagent' ? currentSettings() : null)),
        },
      },
    };
    const client = new LanguageClient('bareagent', 'bareagent', server, options);
    this.client = client;
    client.onDidChangeState((e) => this.states.fire(e.newState === State.Running));
    client.onNotification('bareagent/event', (event: EditorEvent) => this.events.fire(event));
    client.onRequest('bareagent/saveDocuments', (params: { uris?: string[] }) => saveDocuments(params?.uris ?? []));
    client.onRequest('bareagent/codeIntelligence', (params: CodeRequest) => answerCode(params));
    try {
      await client.start();
    } catch (error) {
      this.log.error(`the server did not start: ${error}`);
      void vscode.window.showErrorMessage(`bareagent: the server did not start (${command}): ${error}`);
      return;
    }
    // After start, so this replaces the client's own handler.
    client.onRequest(ShowMessageRequest.type, (params, token) => this.dialogs.show(params, token));
    this.log.info(`server started in ${Date.now() - started} ms: ${command}`);
    this.forwarder = new DiagnosticsForwarder(client);
  }

  async stop(): Promise<void> {
    this.forwarder?.dispose();
    this.forwarder = undefined;
    const client = this.client;
    this.client = undefined;
    if (client) await client.stop().catch(() => undefined);
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Sends the current settings (after a change, or once the workspace is trusted). */
  sendSettings(): void {
    if (!this.running) return;
    void this.client?.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { bareagent: currentSettings() },
    });
  }

  /** Runs one of the server's commands and returns its answer. */
  async run<T = any>(command: string, argument?: object): Promise<T> {
    if (!this.client || !this.running) {
      throw new Error('the bareagent server is not running (see the "bareagent" output)');
    }
    return this.client.sendRequest(ExecuteCommandRequest.type, {
      command,
      arguments: argument === undefined ? [] : [argument],
    });
  }

  dispose(): void {
    void this.stop();
    this.events.dispose();
    this.states.dispose();
  }
}

/** `bareagent/saveDocuments`: save the buffers the agent edited; answer which were saved. */
async function saveDocuments(uris: string[]): Promise<{ saved: string[] }> {
  const saved: string[] = [];
  for (const raw of uris) {
    const wanted = vscode.Uri.parse(raw).toString();
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === wanted);
    if (!doc) continue;
    if (!doc.isDirty || (await doc.save())) saved.push(raw);
  }
  return { saved };
}
