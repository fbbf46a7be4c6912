//! One agent turn started from the editor. It runs as its own task — the
//! command that started it has already answered — and shows itself as it
//! goes: `bareagent/event` notifications, the chat file, `$/progress`, and a
//! one-line `window/showMessage` at the end.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tower_lsp_server::ls_types::{MessageType, NumberOrString};
use tower_lsp_server::{Cancellable, OngoingProgress, Unbounded};

use super::approvals::EditorApprover;
use super::chat::{self, ChatWriter};
use super::editor::EditorWorkspace;
use super::editor_event::{EditorEvent, SessionSpend, TurnEvent};
use super::state::{MAIN_SESSION, State};
use crate::agent::{LoopError, Message, TurnOutcome};
use crate::events::{AgentEvent, EventSink, Spend, usage_line};
use crate::provider::Usage;
use crate::session::{Afterwards, Busy, Counted, RunQueued, RunTurn, Started, Turn, TurnIo};
use crate::session_files::SessionFile;

pub struct Ask {
    pub session: String,
    pub prompt: String,
    /// The prompt is already in the chat file, under `## You`.
    pub prompt_in_chat: bool,
}

/// Starts a turn, or, when the session is busy, hands the prompt to the
/// running turn (it reaches the model at its next step, or right after the
/// answer it is writing). Answers once the session's task has taken it.
pub async fn start(state: &Arc<State>, ask: Ask) -> Value {
    let handle = state.handle_of(&ask.session);
    if ask.session == MAIN_SESSION && handle.session().file().is_none() {
        // Making the file loads (or makes and syncs) the user's key: off
        // the runtime's thread, and outside the sessions' lock, which
        // every other request takes.
        let paths = state.init().paths.clone();
        match tokio::task::spawn_blocking(move || SessionFile::create(&paths)).await {
            // A file made by a second ask meanwhile is kept (this one's was
            // never written: a file is written at its first record).
            Ok(file) if handle.session().file().is_none() => {
                handle.session().set_file(Arc::new(file))
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "cannot make the session file"),
        }
    }
    let queued = queued_turns(state, &ask.session);
    let run = runner(state, ask.session.clone(), ask.prompt_in_chat);
    match handle
        .prompt(Message::user_text(ask.prompt), Busy::Queue(queued), run)
        .await
    {
        Ok(Started::Turn(id)) => json!({"turn": id, "queued": false}),
        Ok(Started::Queued(id)) => json!({
            "turn": id, "queued": true,
            "message": "queued: the running turn reads it at its next step",
        }),
        Err(error) => json!({"turn": null, "queued": false, "message": error.to_string()}),
    }
}

/// Runs a turn of the session `name` the way the editor shows it.
fn runner(state: &Arc<State>, name: String, prompt_in_chat: bool) -> RunTurn {
    let state = state.clone();
    Box::new(move |turn| {
        Box::pin(async move {
            let Turn {
                id,
                session: core,
                prompt,
                cancel,
            } = turn;
            let turn = EditorTurn {
                state,
                id,
                session: name,
                cancel,
                progress_token: format!("bareagent/turn/{id}"),
                before: core.totals(),
                core,
            };
            turn.run(prompt.text(), prompt_in_chat).await
        })
    })
}

/// Runs the turns queued prompts start in the session `name` (their
/// prompt is not in the chat file yet).
fn queued_turns(state: &Arc<State>, name: &str) -> RunQueued {
    let (state, name) = (state.clone(), name.to_string());
    Arc::new(move |turn| runner(&state, name.clone(), false)(turn))
}

/// `bareagent.newSession`: removes the session and closes it (its turn
/// cancelled); a later ask starts a new one.
pub async fn clear_session(state: &State, name: &str) {
    let removed = state.lock_sessions().remove(name);
    if let Some(session) = removed {
        // Cancelled before its questions are withdrawn: a withdrawn
        // question is a refusal, which a turn not cancelled would go on from.
        if let Some(id) = session.handle.cancel(None).await {
            state.approvals.clear_turn(id);
        }
        // Sent now; the session's task does the rest.
        drop(session.handle.close());
    }
}

/// Cancels the running turn of a session (or, by progress token, any).
pub async fn cancel(
    state: &State,
    session: Option<&str>,
    progress_token: Option<&str>,
) -> Option<u64> {
    let (handle, turn) = match progress_token {
        Some(token) => {
            let id: u64 = token.strip_prefix("bareagent/turn/")?.parse().ok()?;
            let sessions = state.lock_sessions();
            let handle = sessions
                .values()
                .find(|s| s.handle.running() == Some(id))?
                .handle
                .clone();
            (handle, Some(id))
        }
        None => {
            let name = session.unwrap_or(MAIN_SESSION);
            (state.lock_sessions().get(name)?.handle.clone(), None)
        }
    };
    let id = handle.cancel(turn).await?;
    state.approvals.clear_turn(id);
    Some(id)
}

/// A turn as the editor shows it.
struct EditorTurn {
    state: Arc<State>,
    id: u64,
    session: String,
    cancel: CancellationToken,
    progress_token: String,
    core: Arc<crate::session::Session>,
    /// The session's usage and spend before this turn.
    before: (Usage, Spend),
}

impl EditorTurn {
    /// Runs the turn; then, once the session is free, says how it ended.
    async fn run(self, prompt: String, prompt_in_chat: bool) -> Afterwards {
        let state = self.state.clone();
        let in_chat = self.session == MAIN_SESSION;
        let mut chat = in_chat.then(|| ChatWriter::start(state.clone()));
        if let Some(chat) = &chat {
            // Created first, so the header fits the file's text (a missing
            // file is created with its own `## You` on the first append).
            if state.lock_documents().get(&state.chat_path()).is_none()
                && let Err(error) = chat::ensure_exists(&state.init().paths, &state.chat_path())
            {
                tracing::warn!(%error, "cannot create the chat file");
            }
            let current = chat::current_text(&state).unwrap_or_default();
            chat.write(chat::turn_header(&current, &prompt, prompt_in_chat));
            if let Some(notice) = take_notice(&state) {
                chat.write(format!("_{notice}_\n\n"));
            }
        }
        state
            .event(EditorEvent::TurnStarted {
                turn: self.id,
                session: self.session.clone(),
                prompt: prompt.clone(),
            })
            .await;
        let progress = self.begin_progress(&prompt).await;

        let (sender, receiver) = mpsc::unbounded_channel();
        let sink = LspSink { sender };
        let forwarder = tokio::spawn(forward_events(
            Forwarding {
                state: state.clone(),
                turn: self.id,
                session: self.session.clone(),
                chat: chat.as_ref().map(ChatWriter::handle),
                progress: progress.clone(),
                before: self.before,
            },
            receiver,
        ));

        // The loop runs in a task of its own: a panic in it ends this turn
        // with an error, never the server.
        let parts = TurnParts {
            state: state.clone(),
            id: self.id,
            core: self.core.clone(),
            cancel: self.cancel.clone(),
            prompt: prompt.clone(),
        };
        let worker = tokio::spawn(run_agent(parts, sink));
        let (outcome, totals) = match worker.await {
            Ok(ended) => ended,
            Err(error) => {
                let why = if error.is_panic() {
                    "the turn crashed (a bug in bareagent)"
                } else {
                    "the turn was stopped"
                };
                tracing::error!(%error, "turn task failed");
                (Err(why.to_string()), Counted::default())
            }
        };
        let layout = forwarder.await.unwrap_or_default();
        let summary = match &outcome {
            Ok(outcome) => format!(
                "bareagent: done ({}, {} tokens out)",
                chat::count(outcome.iterations, "model call"),
                outcome.usage.output_tokens
            ),
            Err(reason) => format!("bareagent: {reason}"),
        };
        if let Some(chat) = &mut chat {
            chat.write(footer(layout, &totals, self.before, &outcome));
            chat.finish().await;
        }
        Afterwards::new(self.ended(outcome, summary, progress))
    }

    /// Says how the turn ended: the approvals it asked for withdrawn, its
    /// progress ended, `turn_finished` or `turn_failed`, a message.
    async fn ended(
        self,
        outcome: Result<TurnOutcome, String>,
        summary: String,
        progress: Option<Arc<TurnProgress>>,
    ) {
        let state = self.state.clone();
        state.approvals.clear_turn(self.id);
        state.publish_approvals().await;
        // The forwarder (the other holder) has ended.
        if let Some(progress) = progress.and_then(|p| Arc::try_unwrap(p).ok()) {
            progress.finish_with_message(summary.clone()).await;
        }
        let (kind, event) = match &outcome {
            Ok(outcome) => (
                MessageType::INFO,
                EditorEvent::TurnFinished {
                    turn: self.id,
                    session: self.session.clone(),
                    text: outcome.text.clone(),
                    usage: outcome.usage,
                },
            ),
            Err(reason) => (
                MessageType::WARNING,
                EditorEvent::TurnFailed {
                    turn: self.id,
                    session: self.session.clone(),
                    message: reason.clone(),
                },
            ),
        };
        state.event(event).await;
        state.show(kind, summary).await;
    }

    /// `$/progress` for the turn, cancellable, where the editor shows
    /// progress: tower-lsp-server's builder, after the token is created.
    async fn begin_progress(&self, prompt: &str) -> Option<Arc<TurnProgress>> {
        if !self.state.init().can_progress {
            return None;
        }
        let token = NumberOrString::String(self.progress_token.clone());
        let created = tokio::time::timeout(
            Duration::from_secs(5),
            self.state.client.create_work_done_progress(token.clone()),
        )
        .await;
        if !matches!(created, Ok(Ok(()))) {
            return None;
        }
        let title = crate::text::prefix(prompt, 60).to_string();
        let progress = self
            .state
            .client
            .progress(token, "bareagent")
            .with_message(title)
            .with_cancel_button()
            .begin()
            .await;
        Some(Arc::new(progress))
    }
}

/// A turn's `$/progress`: reported by the event forwarder, ended by the turn.
type TurnProgress = OngoingProgress<Unbounded, Cancellable>;

/// What a turn's agent is built from.
struct TurnParts {
    state: Arc<State>,
    id: u64,
    core: Arc<crate::session::Session>,
    cancel: CancellationToken,
    prompt: String,
}

/// The files a turn is about besides those its prompt names: those open
/// in the editor (the chat file aside).
fn open_files(state: &State) -> Vec<std::path::PathBuf> {
    let chat = state.chat_path();
    state
        .lock_documents()
        .iter()
        .map(|(path, _)| path.clone())
        .filter(|path| *path != chat)
        .collect()
}

/// Brings the session up to the settings, then runs the turn.
async fn run_agent(parts: TurnParts, sink: LspSink) -> (Result<TurnOutcome, String>, Counted) {
    let TurnParts {
        state,
        id,
        core,
        cancel,
        prompt,
    } = parts;
    let workspace = match prepare(&state, &core).await {
        Ok(workspace) => workspace,
        Err(error) => return (Err(error), Counted::default()),
    };
    let approver = EditorApprover {
        state: state.clone(),
        turn: id,
    };
    let io = TurnIo {
        workspace: &workspace,
        approver: Box::new(approver),
        sink: &sink,
        cancel,
        near: open_files(&state),
        code: super::code::EditorIntelligence::of(&state)
            .map(|editor| Arc::new(editor) as Arc<dyn crate::tools::code::Intelligence>),
    };
    let end = core.run_turn(Message::user_text(prompt), io).await;
    let outcome = match end.result {
        Ok(outcome) => Ok(outcome),
        Err(LoopError::Cancelled) => Err(CANCELLED.into()),
        Err(error) => Err(error.to_string()),
    };
    (outcome, end.counted)
}

/// What the chat's footer and `turn_failed` say of a cancelled turn.
pub const CANCELLED: &str = "cancelled";

/// The session brought up to the editor's and the files' settings (each
/// part rebuilt only if its settings changed: the provider and its
/// connections are kept), its MCP servers made, and the workspace for a
/// turn.
pub(super) async fn prepare(
    state: &Arc<State>,
    core: &crate::session::Session,
) -> Result<EditorWorkspace, String> {
    state.wait_configured().await;
    let layers = state.layers().await?;
    let root = state.init().root.clone();
    if let Some(notice) = layers.files.ignored_notice(&root)
        && !state
            .trust_notice_shown
            .swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        state.show(MessageType::WARNING, notice).await;
    }
    let save = layers.files.edits.save.unwrap_or_default();
    let mcp = layers.files.mcp.clone();
    core.set_layers(layers).map_err(|e| e.to_string())?;
    super::mcp::for_session(state, core, &mcp);
    // The editor's diagnostics exist only here.
    let settle = state.editor_settings().diagnostics_settle_ms;
    state.diagnostics.set_settle(settle.map_or(
        crate::workspace::reported::DEFAULT_SETTLE,
        std::time::Duration::from_millis,
    ));
    EditorWorkspace::new(state.clone(), save).map_err(|e| format!("cannot open the workspace: {e}"))
}

/// The loop's events, handed to a task that sends them out in order.
struct LspSink {
    sender: mpsc::UnboundedSender<AgentEvent>,
}

impl EventSink for LspSink {
    fn emit(&self, event: AgentEvent) {
        let _ = self.sender.send(event);
    }
}

/// Where a turn's events go besides the `bareagent/event` stream.
struct Forwarding {
    state: Arc<State>,
    turn: u64,
    session: String,
    chat: Option<chat::ChatHandle>,
    /// The turn's `$/progress`, if the editor shows progress.
    progress: Option<Arc<TurnProgress>>,
    /// The session's usage and spend before the turn.
    before: (Usage, Spend),
}

/// Sends each event as `bareagent/event`, feeds the chat, reports progress.
async fn forward_events(
    to: Forwarding,
    mut events: mpsc::UnboundedReceiver<AgentEvent>,
) -> chat::Layout {
    let mut layout = chat::Layout::default();
    while let Some(event) = events.recv().await {
        let mut sent = TurnEvent::new(event.clone(), Some(to.turn), &to.session);
        if let AgentEvent::Usage { total, spend, .. } = &event {
            let mut usage = to.before.0;
            usage += *total;
            sent.session_spend = Some(SessionSpend {
                session_total: usage,
                session_cost_usd: to.before.1.then(spend).cost_usd,
            });
        }
        to.state.event(sent.into()).await;
        match event {
            AgentEvent::TextDelta { text } => {
                if let Some(chat) = &to.chat {
                    chat.write(layout.text(&text));
                }
            }
            AgentEvent::ThinkingDelta { text } => {
                if let Some(chat) = &to.chat {
                    chat.write(layout.thinking(&text));
                }
            }
            AgentEvent::ToolCall { name, input, .. } => {
                let line = format!("`{name}` {}", crate::tool_line::brief(&input));
                if let Some(chat) = &to.chat {
                    chat.write(layout.list_item(&format!("- {line}")));
                }
                if let Some(progress) = &to.progress {
                    progress.report_with_message(line, Some(true)).await;
                }
            }
            AgentEvent::ToolResult {
                content, is_error, ..
            } => {
                if is_error && let Some(chat) = &to.chat {
                    let first: String = content
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .chars()
                        .take(160)
                        .collect();
                    chat.write(layout.list_item(&format!("  - ✗ {first}")));
                }
            }
            AgentEvent::Notice { text } => {
                if let Some(chat) = &to.chat {
                    let text = text.strip_prefix("bareagent: ").unwrap_or(&text);
                    chat.write(layout.list_item(&format!("- _{text}_")));
                }
            }
            AgentEvent::UserMessage { text } => {
                if let Some(chat) = &to.chat {
                    chat.write(layout.section(&chat::prompt_section(&text)));
                }
            }
            AgentEvent::Compacted {
                before_tokens,
                after_tokens,
                how,
            } => {
                if let Some(chat) = &to.chat {
                    let line = how.describe(before_tokens, after_tokens);
                    chat.write(layout.list_item(&format!("- _{line}_")));
                }
            }
            AgentEvent::CompactionFailed { reason } => {
                if let Some(chat) = &to.chat {
                    let line = format!("- _compaction failed ({reason}); the history is kept_");
                    chat.write(layout.list_item(&line));
                }
            }
            _ => {}
        }
    }
    layout
}

fn footer(
    mut layout: chat::Layout,
    totals: &Counted,
    before: (Usage, Spend),
    outcome: &Result<TurnOutcome, String>,
) -> String {
    let mut text = String::new();
    if !totals.changed.is_empty() {
        let files: Vec<String> = totals
            .changed
            .iter()
            .map(|(path, count)| format!("`{path}` ({})", count.describe()))
            .collect();
        text.push_str(&layout.section(&format!("**Edited:** {}", files.join(", "))));
    }
    if let Err(reason) = outcome {
        text.push_str(&layout.section(&format!("**Stopped:** {reason}")));
    }
    let mut session = before.0;
    session += totals.usage;
    text.push_str(&layout.section(&format!(
        "_{} · {}_  \n_session: {}_",
        chat::count(totals.calls as usize, "model call"),
        usage_line(&totals.usage, &totals.spend),
        usage_line(&session, &before.1.then(&totals.spend)),
    )));
    text.push_str(&layout.section(chat::YOU));
    text
}

/// A notice kept for the main session's next turn, taken.
fn take_notice(state: &State) -> Option<String> {
    state
        .lock_sessions()
        .get_mut(MAIN_SESSION)
        .and_then(|s| s.chat_notice.take())
}
