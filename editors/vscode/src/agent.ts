/**
 * The language client to the `bareagent` server: starts it, passes the
 * settings, answers `bareagent/saveDocuments` and
 * `bareagent/codeIntelligence` (codeIntelligence.ts), forwards the editor's
 * diagnostics, and re-emits `bareagent/event` for the chat view and the
 * status bar. The server's own commands (`bareagent.ask`, …) are registered
 * by vscode-languageclient from `executeCommandProvider`; everything here
 * calls them through `run`.
 *
 * It starts the server process itself, to know how it ended: when the
 * server is not running, `run` says why (no binary on the PATH the editor
 * sees, the exit code or signal and the last lines of its stderr), and the
 * error offers Set path. The server's stderr goes to the output channel at
 * the level each line was logged with.
 */
import * as vscode from 'vscode';
import { spawn } from 'node:child_process';
import * as readline from 'node:readline';
import {
  CloseAction,
  ErrorAction,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  MessageType,
  ServerOptions,
  ShowMessageNotification,
  ShowMessageRequest,
  State,
} from 'vscode-languageclient/node';
import { CodeRequest, answerCode } from './codeIntelligence';
import { currentSettings } from './config';
import { findBinary } from './binary';
import { DiagnosticsForwarder } from './diagnostics';
import { Dialogs } from './dialogs';
import { EditorEvent } from './editorEvent';
import { ServerLog, exitReason } from './serverLog';

/** The server is not running: the message says why. */
export class ServerDown extends Error {}

export class Agent implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private forwarder: DiagnosticsForwarder | undefined;
  private readonly events = new vscode.EventEmitter<EditorEvent>();
  readonly onEvent = this.events.event;
  private readonly states = new vscode.EventEmitter<boolean>();
  /** Fires true when the server is running, false when it stopped. */
  readonly onRunning = this.states.event;

  private readonly serverLog = new ServerLog();
  /** Why the server is not running, once it was tried. */
  private down = 'it has not started yet';
  /** The process is being stopped on purpose (a restart, the window closing). */
  private stopping = false;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly dialogs: Dialogs,
    private readonly viewVisible: () => boolean,
  ) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  async start(): Promise<void> {
    const found = findBinary();
    if ('missing' in found) {
      this.down = found.missing;
      this.log.error(`the server cannot start: ${found.missing} (PATH here: ${process.env.PATH ?? ''})`);
      return;
    }
    const command = found.path;
    const started = Date.now();
    this.stopping = false;
    // Started here, not by the client, to know its exit code and keep its stderr's end.
    let ended: Promise<void> = Promise.resolve();
    const server: ServerOptions = async () => {
      this.serverLog.reset();
      const child = spawn(command, [], { env: process.env, stdio: 'pipe' });
      ended = new Promise((done) => {
        child.on('error', (error) => {
          this.down = `${command} could not be started: ${error.message}`;
          this.log.error(this.down);
          done();
        });
        // 'close': its stderr is read to the end by then.
        child.on('close', (code, signal) => {
          if (!this.stopping) {
            this.down = exitReason(code, signal, this.serverLog.tail());
            this.log.error(`${command}: ${this.down}`);
          }
          done();
        });
      });
      return child;
    };
    // A crash restarts the server, up to 4 times in 3 minutes (as the
    // client's default does); then, and on a broken pipe, the reason is ours
    // to give (the exit code and stderr), not the client's "write EPIPE".
    const restarts: number[] = [];
    const options: LanguageClientOptions = {
      errorHandler: {
        error: (_error, _message, count) => ({
          action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
          handled: true,
        }),
        closed: () => {
          const now = Date.now();
          restarts.push(now);
          while (restarts.length > 0 && now - restarts[0] > 3 * 60_000) restarts.shift();
          if (restarts.length <= 4) return { action: CloseAction.Restart, handled: true };
          void this.showDown(new ServerDown(`the server stopped 5 times in 3 minutes: ${this.down}`));
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
      stdioOptions: {
        stdout: () => undefined,
        // Each line at its own level (the client's default logs them all as errors).
        stderr: (input) => {
          readline.createInterface({ input, crlfDelay: Infinity, terminal: false }).on('line', (raw) => {
            const { level, text } = this.serverLog.line(raw);
            this.log[level](text);
          });
        },
      },
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
      // The process's end says why (its exit code and stderr): wait for it, a little.
      await Promise.race([ended, new Promise((later) => setTimeout(later, 3000))]);
      if (this.down === 'it has not started yet') this.down = `it did not start: ${error}`;
      this.log.error(`the server did not start (${command}): ${this.down}`);
      void this.showDown(new ServerDown(`the server did not start (${command}): ${this.down}`));
      return;
    }
    this.down = 'it stopped';
    // After start, so these replace the client's own handlers.
    client.onRequest(ShowMessageRequest.type, (params, token) => this.dialogs.show(params, token));
    client.onNotification(ShowMessageNotification.type, (params) => this.message(params.type, params.message));
    this.log.info(`server started in ${Date.now() - started} ms: ${command}`);
    this.forwarder = new DiagnosticsForwarder(client);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.down = 'it was stopped';
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
      throw new ServerDown(`the bareagent server is not running: ${this.down}`);
    }
    return this.client.sendRequest(ExecuteCommandRequest.type, {
      command,
      arguments: argument === undefined ? [] : [argument],
    });
  }

  /** Says why the server is down, with what to do about it. */
  async showDown(error: ServerDown): Promise<void> {
    const choice = await vscode.window.showErrorMessage(
      `bareagent: ${error.message}`,
      'Set path',
      'Show output',
      'Restart server',
    );
    if (choice === 'Set path') await vscode.commands.executeCommand('bareagent.vscode.setPath');
    if (choice === 'Show output') this.log.show(true);
    if (choice === 'Restart server') await this.restart();
  }

  /**
   * `window/showMessage`. While the chat view is shown, an information
   * ("done", "rewound …") is what the view already shows: it goes to the
   * log only. Warnings and errors are shown.
   */
  private message(type: MessageType, text: string): void {
    if (type === MessageType.Info || type === MessageType.Log) {
      this.log.info(text);
      if (type === MessageType.Info && !this.viewVisible()) void vscode.window.showInformationMessage(text);
      return;
    }
    this.log.warn(text);
    const show = type === MessageType.Error ? vscode.window.showErrorMessage : vscode.window.showWarningMessage;
    void show(text);
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
