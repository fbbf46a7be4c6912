//! One agent turn started from the editor. It runs as its own task — the
//! command that started it has already answered — and shows itself as it
//! goes: `bareagent/event` notifications, the chat file, `$/progress`, and a
//! one-line `window/showMessage` at the end.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
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
use super::session::{Running, SessionPolicy};
use super::state::{MAIN_SESSION, State};
use crate::agent::{
    Agent, AgentParts, CompactRequest, Compaction, CompactionSettings, LoopConfig, LoopError,
    Message, TurnOutcome, load_instructions, paths_in, run_loop, system_prompt_in_editor,
    user_instructions_path,
};
use crate::events::{AgentEvent, EventSink, Spend, usage_line};
use crate::provider::openai::session_cache_key;
use crate::provider::{HttpSettings, ProviderChoice, Usage, context_window};
use crate::sandbox::Sandbox;
use crate::sessions::{Entry, NoTranscript, SessionFile, Transcript};
use crate::tools::{ReadLedger, ToolRegistry};

pub struct Ask {
    pub session: String,
    pub prompt: String,
    /// The prompt is already in the chat file, under `## You`.
    pub prompt_in_chat: bool,
}

/// Starts a turn, or, when the session is busy, hands the prompt to the
/// running turn (it reaches the model at its next step, or right after the
/// answer it is writing). Answers at once.
pub fn start(state: &Arc<State>, ask: Ask) -> Value {
    let mut sessions = state.lock_sessions();
    start_locked(state, &mut sessions, ask)
}

/// [`start`], with the sessions already locked.
pub(super) fn start_locked(
    state: &Arc<State>,
    sessions: &mut std::collections::HashMap<String, super::session::Session>,
    ask: Ask,
) -> Value {
    let session = sessions.entry(ask.session.clone()).or_default();
    if let Some(running) = &session.running {
        session.inbox.push_user(ask.prompt);
        return json!({
            "turn": running.id, "queued": true,
            "message": "queued: the running turn reads it at its next step",
        });
    }
    let id = state.next_turn();
    let cancel = CancellationToken::new();
    let progress_token = format!("bareagent/turn/{id}");
    session.running = Some(Running {
        id,
        cancel: cancel.clone(),
        progress_token: progress_token.clone(),
    });
    if ask.session == MAIN_SESSION && session.file.is_none() {
        session.file = Some(Arc::new(SessionFile::create(&state.init().paths)));
    }
    let mut messages = std::mem::take(&mut session.messages);
    crate::sessions::append(
        &mut messages,
        Message::user_text(ask.prompt.clone()),
        transcript_of(&session.file),
    );
    let turn = Turn {
        state: state.clone(),
        id,
        session: ask.session.clone(),
        cancel,
        progress_token,
        policy: session.policy.clone(),
        background: session.background.clone(),
        inbox: session.inbox.clone(),
        reads: session.reads.clone(),
        file: session.file.clone(),
        compact: session.compact.clone(),
        started: session.started,
        before: (session.usage, session.spend),
    };
    tokio::spawn(turn.run(messages, ask));
    json!({"turn": id, "queued": false})
}

/// `bareagent.newSession`: removes the session and cancels its turn, under
/// one lock, so no ask can slip in between and see the old session.
pub fn clear_session(state: &State, name: &str) {
    let removed = state.lock_sessions().remove(name);
    if let Some(running) = removed.and_then(|s| s.running) {
        running.cancel.cancel();
        state.approvals.clear_turn(running.id);
    }
}

/// Cancels the running turn of a session (or, by progress token, any).
pub fn cancel(state: &State, session: Option<&str>, progress_token: Option<&str>) -> Option<u64> {
    let sessions = state.lock_sessions();
    let running = sessions
        .iter()
        .filter_map(|(name, s)| s.running.as_ref().map(|r| (name, r)))
        .find(|(name, r)| match (session, progress_token) {
            (_, Some(token)) => r.progress_token == token,
            (Some(wanted), None) => name.as_str() == wanted,
            (None, None) => name.as_str() == MAIN_SESSION,
        })?;
    running.1.cancel.cancel();
    let id = running.1.id;
    drop(sessions);
    state.approvals.clear_turn(id);
    Some(id)
}

struct Turn {
    state: Arc<State>,
    id: u64,
    session: String,
    cancel: CancellationToken,
    progress_token: String,
    policy: Option<SessionPolicy>,
    background: Arc<crate::tools::BackgroundTasks>,
    inbox: crate::agent::Inbox,
    reads: Arc<ReadLedger>,
    compact: CompactRequest,
    /// When the session started (its `prompt_cache_key`).
    started: std::time::SystemTime,
    /// The session's usage and spend before this turn.
    before: (Usage, Spend),
    file: Option<Arc<SessionFile>>,
}

/// The session's file as a transcript, or none.
fn transcript_of(file: &Option<Arc<SessionFile>>) -> &dyn Transcript {
    match file {
        Some(file) => file.as_ref(),
        None => &NoTranscript,
    }
}

impl Turn {
    async fn run(self, messages: Vec<Message>, ask: Ask) {
        let state = self.state.clone();
        let snapshot = messages.clone();
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
            chat.write(chat::turn_header(&current, &ask.prompt, ask.prompt_in_chat));
            if let Some(notice) = super::resume::take_notice(&state) {
                chat.write(format!("_{notice}_\n\n"));
            }
        }
        state
            .event(EditorEvent::TurnStarted {
                turn: self.id,
                session: self.session.clone(),
                prompt: ask.prompt.clone(),
            })
            .await;
        let progress = self.begin_progress(&ask.prompt).await;

        let (sender, receiver) = mpsc::unbounded_channel();
        let sink = LspSink {
            sender,
            totals: Arc::default(),
        };
        let totals = sink.totals.clone();
        let forwarder = tokio::spawn(forward_events(
            Forwarding {
                state: state.clone(),
                turn: self.id,
                session: self.session.clone(),
                chat: chat.as_ref().map(ChatWriter::handle),
                progress: progress.clone(),
                totals: totals.clone(),
                before: self.before,
            },
            receiver,
        ));

        // The loop runs in a task of its own: a panic in it ends this turn
        // with an error, never the server.
        let parts = TurnParts {
            state: state.clone(),
            id: self.id,
            policy: self.policy.clone(),
            background: self.background.clone(),
            inbox: self.inbox.clone(),
            reads: self.reads.clone(),
            cancel: self.cancel.clone(),
            file: self.file.clone(),
            compact: self.compact.clone(),
            near: near_paths(&state, &ask.prompt),
            cache_key: session_cache_key(&state.init().root, self.started),
        };
        let worker = tokio::spawn(async move {
            let mut messages = messages;
            let outcome = run_agent(parts, sink, &mut messages).await;
            (outcome, messages)
        });
        let (outcome, messages) = match worker.await {
            Ok((outcome, messages)) => (outcome, messages),
            Err(error) => {
                let why = if error.is_panic() {
                    "the turn crashed (a bug in bareagent)"
                } else {
                    "the turn was stopped"
                };
                tracing::error!(%error, "turn task failed");
                (Err(why.to_string()), snapshot)
            }
        };
        let layout = forwarder.await.unwrap_or_default();
        if let Some(file) = self.file.clone() {
            // The sync waits for the disk: off the runtime's thread.
            let synced = tokio::task::spawn_blocking(move || file.record(Entry::TurnEnd)).await;
            if let Err(error) = synced {
                tracing::warn!(%error, "cannot sync the session file");
            }
        }

        let totals = totals.lock().unwrap_or_else(|p| p.into_inner()).clone();
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
        {
            // Only while the session is still this turn's: `newSession` may
            // have removed it (and another turn may run in its successor),
            // so a cancelled turn must not bring the old history back or
            // mark someone else's turn as ended.
            let mut sessions = state.lock_sessions();
            match sessions.get_mut(&self.session) {
                Some(session) if session.running.as_ref().is_some_and(|r| r.id == self.id) => {
                    session.messages = messages;
                    session.running = None;
                    session.usage += totals.usage;
                    session.spend = session.spend.then(&totals.spend);
                    // Prompts the loop did not take (they came after its
                    // last look, or the turn failed): the next turn starts
                    // with them now, not after the user's next prompt. Under
                    // this lock no ask can queue behind it. A cancelled turn
                    // starts nothing: they join the history, in order, for
                    // the next ask.
                    let queued = session.inbox.take_user_messages();
                    if self.cancel.is_cancelled() {
                        let blocks = queued
                            .iter()
                            .map(|prompt| crate::agent::ContentBlock::Text {
                                text: format!("<user-message>\n{prompt}\n</user-message>"),
                            })
                            .collect();
                        let queued = Message {
                            role: crate::agent::Role::User,
                            content: blocks,
                        };
                        let transcript = transcript_of(&session.file);
                        crate::sessions::append(&mut session.messages, queued, transcript);
                    } else if !queued.is_empty() {
                        let ask = Ask {
                            session: self.session.clone(),
                            prompt: queued.join("\n\n"),
                            prompt_in_chat: false,
                        };
                        start_locked(&state, &mut sessions, ask);
                    }
                }
                _ => tracing::info!(
                    turn = self.id,
                    session = %self.session,
                    "the session was cleared during the turn; its history is dropped"
                ),
            }
        }
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
    policy: Option<SessionPolicy>,
    background: Arc<crate::tools::BackgroundTasks>,
    inbox: crate::agent::Inbox,
    reads: Arc<ReadLedger>,
    cancel: CancellationToken,
    file: Option<Arc<SessionFile>>,
    /// The user's `bareagent.compact`, taken at the loop's next step.
    compact: CompactRequest,
    /// Files the turn is about: its instructions are read near them.
    near: Vec<std::path::PathBuf>,
    cache_key: String,
}

/// The files a turn is about: those its prompt names and those open in
/// the editor (the chat file aside).
fn near_paths(state: &State, prompt: &str) -> Vec<std::path::PathBuf> {
    let chat = state.chat_path();
    let mut near = paths_in(prompt);
    near.extend(
        state
            .lock_documents()
            .iter()
            .map(|(path, _)| path.clone())
            .filter(|path| *path != chat),
    );
    near
}

/// Builds the agent for this turn and runs the loop.
async fn run_agent(
    parts: TurnParts,
    sink: LspSink,
    messages: &mut Vec<Message>,
) -> Result<TurnOutcome, String> {
    let TurnParts {
        state,
        id,
        policy,
        background,
        inbox,
        reads,
        cancel,
        file,
        compact,
        near,
        cache_key,
    } = parts;
    state.wait_configured().await;
    let settings = state.load_settings().await?;
    let editor = state.editor_settings();
    let root = state.init().root.clone();
    if let Some(notice) = settings.ignored_notice(&root)
        && !state
            .trust_notice_shown
            .swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        state
            .show(tower_lsp_server::ls_types::MessageType::WARNING, notice)
            .await;
    }
    let TurnModel {
        provider,
        compaction,
        model,
    } = model_for(&state, &settings, Some(cache_key))?;
    let compaction = compaction.with_request(compact);
    let approver = EditorApprover {
        state: state.clone(),
        turn: id,
    };
    let (gate, sandbox_settings) = match policy {
        Some(policy) => (
            policy.gate.with_approver(Box::new(approver)),
            policy.sandbox,
        ),
        None => {
            let gate = settings
                .gate(
                    settings.permissions.mode.unwrap_or_default(),
                    Box::new(approver),
                    &root,
                )
                .map_err(|e| e.to_string())?;
            // Kept in the session, so "allow for session" outlives this turn.
            if let Some(session) = state
                .lock_sessions()
                .values_mut()
                .find(|s| s.running.as_ref().is_some_and(|r| r.id == id))
            {
                session.policy = Some(SessionPolicy {
                    gate: gate.clone(),
                    sandbox: settings.sandbox.clone(),
                });
            }
            (gate, settings.sandbox.clone())
        }
    };
    let workspace = EditorWorkspace::new(state.clone(), settings.edits.save.unwrap_or_default())
        .map_err(|e| format!("cannot open the workspace: {e}"))?;
    // The editor's diagnostics exist only here.
    state
        .diagnostics
        .set_settle(editor.diagnostics_settle_ms.map_or(
            crate::diagnostics::DEFAULT_SETTLE,
            std::time::Duration::from_millis,
        ));
    let mut tools = ToolRegistry::in_editor();
    super::mcp::for_turn(&state, id, &settings.mcp)
        .add_to(&mut tools)
        .await;
    let paths = state.init().paths.clone();
    let reader = gate.clone();
    let instructions = tokio::task::spawn_blocking(move || {
        load_instructions(&paths, &reader, user_instructions_path().as_deref(), &near)
    })
    .await
    .unwrap_or_default();
    if let Some(session) = state
        .lock_sessions()
        .values_mut()
        .find(|s| s.running.as_ref().is_some_and(|r| r.id == id))
    {
        session.instructions = instructions.files.clone();
    }
    let config = LoopConfig {
        system: system_prompt_in_editor(&root) + &instructions.prompt,
        max_iterations: editor.max_iterations.unwrap_or(200),
        price: model.as_deref().and_then(|m| settings.price(m)),
        context_window: model.as_deref().and_then(context_window),
        ..LoopConfig::default()
    };
    let sandbox = Sandbox::for_commands(&sandbox_settings, &root, gate.denied_read_prefixes())
        .map_err(|e| format!("cannot set up the sandbox: {e}"))?;
    let agent = Agent::new(AgentParts {
        provider: provider.as_ref(),
        tools: &tools,
        gate: &gate,
        workspace: &workspace,
        sandbox: &sandbox,
        sink: &sink,
        config: &config,
    })
    .with_inbox(&inbox)
    .with_background(&*background)
    .with_reads(reads)
    .with_compactor(&compaction)
    .with_cancel(cancel)
    .with_transcript(transcript_of(&file));
    match run_loop(&agent, messages).await {
        Ok(outcome) => Ok(outcome),
        Err(LoopError::Cancelled) => Err("cancelled".into()),
        Err(error) => Err(error.to_string()),
    }
}

/// The provider the editor's settings choose, and the compaction fitted to
/// its model's context window (and the `[context]` settings).
/// `cache_key`: the session's `prompt_cache_key`.
pub(super) fn model_for(
    state: &State,
    settings: &crate::config::Config,
    cache_key: Option<String>,
) -> Result<TurnModel, String> {
    let editor = state.editor_settings();
    let root = &state.init().root;
    let selected = super::model::select(state)?;
    let choice = ProviderChoice {
        kind: selected.kind,
        model: selected.model,
        base_url: editor.base_url.clone(),
        replay: editor
            .replay
            .clone()
            .map(|p| if p.is_relative() { root.join(p) } else { p }),
        record: None,
        http: HttpSettings {
            idle_timeout: editor
                .idle_timeout_secs
                .map_or(HttpSettings::default().idle_timeout, Duration::from_secs),
            ..HttpSettings::default()
        },
        cache_key,
        send_cache_key: settings.prompt_cache_key,
    };
    let provider = choice.build().map_err(|e| e.to_string())?;
    let model = choice.resolved_model().map_err(|e| e.to_string())?;
    let compaction = Compaction::new(CompactionSettings::for_model(
        model.as_deref().unwrap_or_default(),
        settings.context.window,
        settings.context.compact_at,
    ));
    Ok(TurnModel {
        provider,
        compaction,
        model,
    })
}

/// The model a turn calls.
pub(super) struct TurnModel {
    pub provider: Box<dyn crate::provider::Provider>,
    /// Fitted to the model's context window.
    pub compaction: Compaction,
    /// Its name, where the provider names one (not a replay).
    pub model: Option<String>,
}

/// What the chat footer reports.
#[derive(Clone, Debug, Default)]
struct Totals {
    usage: Usage,
    /// The turn's, as its last usage event said.
    spend: Spend,
    calls: u32,
    /// Edited files with +/- line counts.
    edits: BTreeMap<String, (usize, usize)>,
}

/// The loop's events, handed to a task that sends them out in order.
struct LspSink {
    sender: mpsc::UnboundedSender<AgentEvent>,
    totals: Arc<Mutex<Totals>>,
}

impl EventSink for LspSink {
    fn emit(&self, event: AgentEvent) {
        if let AgentEvent::Usage { call, spend, .. } = &event {
            let mut totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
            totals.usage += *call;
            totals.spend = *spend;
            totals.calls += 1;
        }
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
    totals: Arc<Mutex<Totals>>,
    /// The session's usage and spend before the turn.
    before: (Usage, Spend),
}

/// Sends each event as `bareagent/event`, feeds the chat, reports progress,
/// and counts edits for the chat's footer.
async fn forward_events(
    to: Forwarding,
    mut events: mpsc::UnboundedReceiver<AgentEvent>,
) -> chat::Layout {
    let mut calls: BTreeMap<String, (String, Value)> = BTreeMap::new();
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
            AgentEvent::ToolCall { id, name, input } => {
                let line = format!("`{name}` {}", crate::tool_line::brief(&input));
                if let Some(chat) = &to.chat {
                    chat.write(layout.list_item(&format!("- {line}")));
                }
                if let Some(progress) = &to.progress {
                    progress.report_with_message(line, Some(true)).await;
                }
                calls.insert(id, (name, input));
            }
            AgentEvent::ToolResult {
                id,
                content,
                is_error,
                ..
            } => {
                if is_error {
                    if let Some(chat) = &to.chat {
                        let first: String = content
                            .lines()
                            .next()
                            .unwrap_or_default()
                            .chars()
                            .take(160)
                            .collect();
                        chat.write(layout.list_item(&format!("  - ✗ {first}")));
                    }
                } else if let Some((name, input)) = calls.get(&id)
                    && let Some((path, added, removed)) = edit_counts(name, input)
                {
                    let mut totals = to.totals.lock().unwrap_or_else(|p| p.into_inner());
                    let entry = totals.edits.entry(path).or_default();
                    entry.0 += added;
                    entry.1 += removed;
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

/// Lines added and removed by a successful edit call, by its input.
fn edit_counts(tool: &str, input: &Value) -> Option<(String, usize, usize)> {
    let path = input.get("path")?.as_str()?.to_string();
    let lines = |key: &str, value: &Value| {
        value
            .get(key)
            .and_then(Value::as_str)
            .map_or(0, |s| s.lines().count())
    };
    match tool {
        "edit_file" => Some((path, lines("new_string", input), lines("old_string", input))),
        "write_file" => Some((path, lines("content", input), 0)),
        "multi_edit" => {
            let edits = input.get("edits")?.as_array()?;
            let added = edits.iter().map(|e| lines("new_string", e)).sum();
            let removed = edits.iter().map(|e| lines("old_string", e)).sum();
            Some((path, added, removed))
        }
        _ => None,
    }
}

fn footer(
    mut layout: chat::Layout,
    totals: &Totals,
    before: (Usage, Spend),
    outcome: &Result<TurnOutcome, String>,
) -> String {
    let mut text = String::new();
    if !totals.edits.is_empty() {
        let files: Vec<String> = totals
            .edits
            .iter()
            .map(|(path, (added, removed))| format!("`{path}` (+{added} −{removed})"))
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
