//! `bareagent chat`: turns typed at a prompt, on the same loop as
//! `bareagent run` and the same agent ([`TerminalAgent`]): the model's
//! text streams, tool calls show as they run, approvals ask inline with
//! the diff. One session file for the whole chat (a new one, or the one
//! `--continue` / `--resume` / `/resume` names), a turn end recorded after
//! each turn, the history kept in memory between turns.
//!
//! Ctrl-C or Esc during a turn cancels it (the history stays valid, the
//! prompt comes back, with what was typed meanwhile); a second Ctrl-C soon
//! after quits with 130, whether the turn has ended by then or not.
//! Otherwise at the prompt Ctrl-C clears the line; Ctrl-D on an empty line
//! (or `/exit`) ends the chat. A prompt's `@path` mentions and image paths
//! are attached (`mentions.rs`); `!command` runs in the agent's sandbox.
//! The slash commands are `slash.rs`'s; what each does is here.

use std::future::Future;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::line_editor::{LineEditor, Read, history_path};
use super::mentions::prompt_message;
use super::output::TurnSink;
use super::session_spend::{CallsOutsideTurns, SessionSpend};
use super::sessions::{Which, open_which, print_list};
use super::slash::{Input, Slash, help, parse};
use super::terminal_agent::TerminalAgent;
use super::{ChatArgs, PermissionModeArg};
use crate::agent::{LoopError, Message};
use crate::permission::PermissionMode;
use crate::provider::{Effort, Thinking};
use crate::session::{SessionChange, api_name};
use crate::session_files::SessionFile;
use crate::sync::Locked;
use crate::workspace::Workspace;

pub async fn chat(args: ChatArgs) -> anyhow::Result<ExitCode> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "bareagent chat needs a terminal to read prompts from; for one turn without one, use `bareagent run \"…\"`"
        );
    }
    let agent = TerminalAgent::assemble(&args.agent, false).await?;
    let opened = open_which(agent.workspace.paths(), &Which::of(&args.agent))?;
    let recap = super::recap::for_stderr(&opened.messages);
    let spend = Arc::new(SessionSpend::new(agent.sink.clone()));
    spend.start(opened.usage, opened.cost_usd);
    agent
        .session()
        .start_conversation(Some(Arc::new(opened.file)), opened.messages);
    let mut chat = Chat {
        agent,
        spend,
        interrupts: Interrupts {
            signal: signal(SignalKind::interrupt())?,
            cancelled_at: None,
        },
    };
    eprintln!(
        "bareagent chat · model {} · permission mode {} · session {} · /help for the commands, Ctrl-D to quit",
        chat.agent
            .session()
            .model()
            .unwrap_or_else(|| "from the recording (--replay)".into()),
        mode_name(chat.agent.session().mode()),
        chat.session_id(),
    );
    eprint!("{recap}");
    // The terminal as the shell left it, to leave it so if the chat quits
    // while the prompt has it in raw mode.
    let cooked = rustix::termios::tcgetattr(std::io::stdin()).ok();
    let root = chat.agent.workspace.paths().root().to_path_buf();
    let mut editor = LineEditor::start(history_path(), root);
    loop {
        let read = editor.read(chat.agent.take_typed_ahead());
        tokio::pin!(read);
        let read = loop {
            tokio::select! {
                read = &mut read => break read?,
                // A second Ctrl-C that came after the turn had ended but
                // before the prompt took the terminal (a SIGINT still).
                Some(()) = chat.interrupts.signal.recv() => {
                    if chat.interrupts.again() {
                        if let Some(cooked) = &cooked {
                            let _ = rustix::termios::tcsetattr(
                                std::io::stdin(),
                                rustix::termios::OptionalActions::Now,
                                cooked,
                            );
                        }
                        return Ok(chat.quit_interrupted());
                    }
                }
            }
        };
        let typed = match read {
            Read::End => break,
            Read::Interrupted if chat.interrupts.again() => return Ok(chat.quit_interrupted()),
            Read::Interrupted => continue,
            Read::Line(typed) => typed,
        };
        match parse(&typed) {
            Ok(Input::Empty) => {}
            Ok(Input::Prompt(prompt)) => chat.prompt(prompt).await,
            Ok(Input::Shell(command)) => chat.shell(&command).await,
            Ok(Input::Command(Slash::Exit)) => break,
            Ok(Input::Command(command)) => chat.command(command).await,
            Err(error) => eprintln!("bareagent: {error}"),
        }
    }
    chat.agent.close().await;
    Ok(ExitCode::SUCCESS)
}

/// A chat between two prompts.
struct Chat {
    agent: TerminalAgent,
    /// What the session has spent; every turn's events pass it.
    spend: Arc<SessionSpend>,
    interrupts: Interrupts,
}

impl Chat {
    /// Ctrl-C twice: the chat ends with 130.
    fn quit_interrupted(&self) -> ExitCode {
        self.agent.sink.failed("interrupted");
        self.agent.session().background().kill_all();
        ExitCode::from(130)
    }

    /// The session file's id: a chat always has one.
    fn session_id(&self) -> String {
        self.agent
            .session()
            .file()
            .map(|file| file.id().to_string())
            .unwrap_or_default()
    }

    /// One turn for what the user typed, with the files and images it
    /// names; one it cannot be sent with is said, and put back at the
    /// prompt to be changed.
    async fn prompt(&mut self, typed: String) {
        let message = match self.agent.session().deny_rules_gate() {
            Ok(gate) => prompt_message(&typed, self.agent.workspace.as_ref(), &gate).await,
            Err(error) => Err(error.to_string()),
        };
        match message {
            Ok(message) => self.turn(message).await,
            Err(error) => {
                eprintln!("bareagent: {error}; nothing was sent");
                self.agent.type_ahead(typed);
            }
        }
    }

    /// `!command`: run in the sandbox the bash tool uses, its output shown
    /// and added to the history as the user's message, which the model
    /// reads with the next prompt. Ctrl-C, Esc or the timeout kills it.
    async fn shell(&mut self, command: &str) {
        use crate::tools::GroupProcess;
        let sandbox = match self.agent.session().sandbox() {
            Ok(sandbox) => sandbox,
            Err(error) => {
                eprintln!("bareagent: cannot run it: {error}");
                return;
            }
        };
        let root = self.agent.workspace.paths().root().to_path_buf();
        let view = crate::workspace::CommandView::default();
        let mut process = match GroupProcess::spawn(command, &root, &sandbox, &view) {
            Ok(process) => process,
            Err(error) => {
                eprintln!("bareagent: cannot start bash: {error}");
                return;
            }
        };
        let cancel = CancellationToken::new();
        let sink = self.agent.sink.clone();
        let wait = process.wait(Some(SHELL_TIMEOUT), &cancel);
        // Esc stops it too, as it stops a turn.
        let keys = super::turn_keys::TurnKeys::start(cancel.clone(), sink.clone());
        eprintln!("running it (Esc or Ctrl-C stops it)");
        let ending = self.interrupts.during(wait, &cancel, sink.as_ref()).await;
        if let Some(keys) = keys {
            self.agent.type_ahead(keys.finish());
        }
        let mut notes = sandbox.sweep();
        if !matches!(ending, crate::tools::Ending::Exited(0)) {
            notes.extend(
                sandbox.explain_failure(&process.output.locked().render(SHELL_OUTPUT_CHARS)),
            );
        }
        // Scrubbed of the keys, as a tool's output is.
        let rendered = process.output.locked().render(SHELL_OUTPUT_CHARS);
        let mut output = crate::secrets::Secrets::global()
            .scrub(&rendered)
            .into_owned();
        for note in notes {
            output = format!("{}\n{note}", output.trim_end());
        }
        eprint!("{}", super::diff_view::visible_lines(&output));
        if !output.ends_with('\n') {
            eprintln!();
        }
        eprintln!("({ending})");
        self.agent.session().append(Message::user_text(format!(
            "I ran `{command}` myself ({ending}). Its output:\n{output}"
        )));
    }

    /// One turn for `prompt`, on the history so far.
    async fn turn(&mut self, prompt: Message) {
        let cancel = CancellationToken::new();
        let sink = self.agent.sink.clone();
        sink.started();
        let turn = self.agent.turn(prompt, self.spend.clone(), cancel.clone());
        let end = self.interrupts.during(turn, &cancel, sink.as_ref()).await;
        self.spend.end_turn();
        match end.result {
            Ok(outcome) => sink.finished(&outcome),
            Err(LoopError::Cancelled) => {
                sink.failed("cancelled; the history is kept: go on, or /rewind the turn")
            }
            Err(error) => sink.failed(&error.to_string()),
        }
    }

    async fn command(&mut self, command: Slash) {
        match command {
            Slash::Help => eprint!("{}", help()),
            Slash::Cost => eprintln!("session {}: {}", self.session_id(), self.spend.line()),
            Slash::Sessions => {
                if let Err(error) = print_list(self.agent.workspace.paths()) {
                    eprintln!("bareagent: {error:#}");
                }
            }
            Slash::Resume(id) => self.resume(id),
            Slash::Compact => self.compact().await,
            Slash::Model(None) => {
                eprintln!("{}", self.model_line());
                // A replay answers from its file: there is nothing to pick.
                if self.agent.session().model().is_some() {
                    let listing = self.agent.session().list_models().await;
                    eprint!("{}", model_choices(&listing, self.agent.session().model()));
                }
            }
            Slash::Model(Some(name)) => {
                let before = self.agent.session().current().model;
                match self.agent.change(SessionChange::model(&name)).await {
                    Ok(now) => match (before, now.model) {
                        (Ok((was, _)), Ok((provider, _))) if was != provider => eprintln!(
                            "from the next turn on, {} (provider {}, the history goes with it)",
                            self.model_line(),
                            api_name(provider)
                        ),
                        _ => eprintln!("from the next turn on, {}", self.model_line()),
                    },
                    Err(error) => eprintln!("bareagent: the model is unchanged: {error:#}"),
                }
            }
            Slash::Mode(None) => eprintln!(
                "permission mode {} (the modes: {})",
                mode_name(self.agent.session().mode()),
                mode_names()
            ),
            Slash::Mode(Some(name)) => self.set_mode(&name).await,
            Slash::Effort(None) | Slash::Thinking(None) => eprintln!("{}", self.reasoning_line()),
            Slash::Effort(Some(name)) => match name.as_str() {
                "default" => {
                    self.change_reasoning(SessionChange {
                        effort: Some(None),
                        ..SessionChange::default()
                    })
                    .await
                }
                name => match Effort::parse(name) {
                    Ok(effort) => {
                        self.change_reasoning(SessionChange {
                            effort: Some(Some(effort)),
                            ..SessionChange::default()
                        })
                        .await
                    }
                    Err(error) => eprintln!("bareagent: unchanged: {error}"),
                },
            },
            Slash::Thinking(Some(name)) => match Thinking::parse(&name) {
                Ok(thinking) => {
                    self.change_reasoning(SessionChange {
                        thinking: Some(thinking),
                        ..SessionChange::default()
                    })
                    .await
                }
                Err(error) => eprintln!("bareagent: unchanged: {error}"),
            },
            Slash::Rewind => {
                let said = rewind_last_turn(self).await;
                eprintln!("{said}");
            }
            Slash::Clear => self.clear(),
            Slash::Exit => {}
        }
    }

    /// `model NAME · $3 / $15 per million tokens in / out · context window 200k`.
    fn model_line(&self) -> String {
        let Some(name) = self.agent.session().model() else {
            return "no model: the answers come from the recording (--replay)".to_string();
        };
        let price = match self.agent.session().price() {
            Some(price) => format!(
                "${} / ${} per million tokens in / out",
                price.input, price.output
            ),
            None => format!(
                "no price known (costs show as unknown; add [prices.\"{name}\"] to config.toml)"
            ),
        };
        let window = match self.agent.session().context_window() {
            Some(window) => format!("context window {}k", window / 1000),
            None => "context window unknown".to_string(),
        };
        format!("model {name} · {price} · {window}")
    }

    /// `effort high · thinking auto`, as the next call asks.
    fn reasoning_line(&self) -> String {
        let reasoning = self.agent.session().reasoning();
        format!(
            "effort {} · thinking {}",
            reasoning
                .effort
                .map_or("default (the model's)", Effort::as_str),
            reasoning.thinking.as_str()
        )
    }

    /// Changes the effort or thinking as `change` says, from the next turn on.
    async fn change_reasoning(&mut self, change: SessionChange) {
        match self.agent.change(change).await {
            Ok(_) => eprintln!("from the next turn on, {}", self.reasoning_line()),
            Err(error) => eprintln!("bareagent: unchanged: {error:#}"),
        }
    }

    async fn set_mode(&mut self, name: &str) {
        let Ok(mode) = PermissionModeArg::from_str(name, false) else {
            eprintln!(
                "bareagent: unknown permission mode {name:?}; the modes: {}",
                mode_names()
            );
            return;
        };
        match self
            .agent
            .change(SessionChange::mode(PermissionMode::from(mode)))
            .await
        {
            Ok(_) => eprintln!(
                "permission mode {} from now on",
                mode_name(self.agent.session().mode())
            ),
            Err(error) => eprintln!("bareagent: the mode is unchanged: {error:#}"),
        }
    }

    /// `/resume [ID]`: the session named, else the latest other than this one.
    fn resume(&mut self, id: Option<String>) {
        let paths = self.agent.workspace.paths();
        let current = self.session_id();
        let which = match id {
            Some(id) => Which::Id(id),
            None => {
                let other = crate::session_files::list(paths)
                    .map(|list| list.into_iter().map(|s| s.id).find(|id| *id != current));
                match other {
                    Ok(Some(id)) => Which::Id(id),
                    Ok(None) => {
                        eprintln!(
                            "bareagent: there is no other session in this workspace to resume"
                        );
                        return;
                    }
                    Err(error) => {
                        eprintln!("bareagent: {error}");
                        return;
                    }
                }
            }
        };
        match open_which(paths, &which) {
            Ok(opened) => {
                eprint!("{}", super::recap::for_stderr(&opened.messages));
                self.agent
                    .session()
                    .start_conversation(Some(Arc::new(opened.file)), opened.messages);
                self.spend.start(opened.usage, opened.cost_usd);
            }
            Err(error) => eprintln!("bareagent: {error:#}; still in session {current}"),
        }
    }

    /// `/clear`: a new session, an empty history.
    fn clear(&mut self) {
        let old = self.session_id();
        let had_history = !self.agent.session().history().is_empty();
        let file = SessionFile::create(self.agent.workspace.paths());
        self.agent
            .session()
            .start_conversation(Some(Arc::new(file)), Vec::new());
        self.spend.start(Default::default(), Some(0.0));
        let new = self.session_id();
        if had_history {
            eprintln!("New session {new}; the previous one is saved (/resume {old} to go back).");
        } else {
            eprintln!("New session {new}.");
        }
    }

    /// `/compact`: now, between turns; Ctrl-C gives up on it.
    async fn compact(&mut self) {
        if self.agent.session().history().is_empty() {
            eprintln!("Nothing to compact yet.");
            return;
        }
        let Chat {
            agent,
            spend,
            interrupts,
        } = self;
        let cancel = CancellationToken::new();
        let usage = CallsOutsideTurns {
            spend,
            price: agent.session().price(),
        };
        let work = async {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                done = agent.session().compact_now(agent.workspace.as_ref(), &usage) => Some(done),
            }
        };
        let outcome = interrupts.during(work, &cancel, agent.sink.as_ref()).await;
        match outcome {
            None => eprintln!("Compaction cancelled; the history is kept as it was."),
            Some(Ok(Some(done))) => {
                eprintln!(
                    "{}.",
                    capitalised(&done.how.describe(done.before_tokens, done.after_tokens))
                );
            }
            Some(Ok(None)) => eprintln!("Nothing to compact yet: the history is too short."),
            Some(Err(error)) => {
                eprintln!("Compaction failed ({error}); the history is kept as it was.")
            }
        }
    }
}

/// `/rewind`: undoes the last turn's edits and drops the turn from the
/// history (see `crate::rewind`). Returns what to tell the user.
async fn rewind_last_turn(chat: &mut Chat) -> String {
    if chat.agent.session().file().is_none() {
        return "bareagent: cannot rewind: the chat has no session file".to_string();
    }
    match chat.agent.rewind_last_turn().await {
        Ok(rewound) => format!("bareagent: {}.", rewound.describe()),
        Err(error) => format!("bareagent: {error}"),
    }
}

/// The most of a `!command`'s output kept, as the bash tool keeps (head
/// and tail).
const SHELL_OUTPUT_CHARS: usize = 30_000;
/// A `!command` is killed after this long, as the bash tool's longest.
const SHELL_TIMEOUT: Duration = Duration::from_secs(600);

/// Ctrl-C while something runs (a turn, `/compact`): SIGINT, since the
/// terminal is not in raw mode then. At the prompt it is a key.
struct Interrupts {
    signal: Signal,
    /// When a Ctrl-C last cancelled something.
    cancelled_at: Option<Instant>,
}

/// A second Ctrl-C this soon after the one that cancelled quits, even if
/// the prompt is back by then (a cancelled turn ends at once, so "twice"
/// would otherwise rarely find it still running).
const TWICE: Duration = Duration::from_secs(2);

impl Interrupts {
    /// Runs `work`; the first Ctrl-C cancels it through `cancel` (it ends
    /// soon, tidily), a second one before it has ended quits at once.
    async fn during<T>(
        &mut self,
        work: impl Future<Output = T>,
        cancel: &CancellationToken,
        sink: &dyn TurnSink,
    ) -> T {
        use futures_util::FutureExt;
        // A Ctrl-C pressed between two turns (while nothing could take
        // it) is not this turn's.
        while self.signal.recv().now_or_never().flatten().is_some() {}
        self.cancelled_at = None;
        tokio::pin!(work);
        loop {
            tokio::select! {
                done = &mut work => return done,
                Some(()) = self.signal.recv() => {
                    if cancel.is_cancelled() {
                        // Clears the spinner: exit does not wait for its thread to.
                        sink.failed("interrupted");
                        super::turn_keys::restore_terminal();
                        std::process::exit(130);
                    }
                    sink.notice("\nbareagent: cancelling (Ctrl-C again to quit now)");
                    cancel.cancel();
                    self.cancelled_at = Some(Instant::now());
                }
            }
        }
    }

    /// A Ctrl-C at the prompt: whether it is the second of two (quit).
    fn again(&mut self) -> bool {
        self.cancelled_at
            .take()
            .is_some_and(|at| at.elapsed() < TWICE)
    }
}

/// A mode as the settings and `--permission-mode` spell it.
fn mode_name(mode: PermissionMode) -> String {
    PermissionModeArg::value_variants()
        .iter()
        .find(|arg| PermissionMode::from(**arg) == mode)
        .and_then(|arg| arg.to_possible_value())
        .map(|value| value.get_name().to_string())
        .unwrap_or_else(|| format!("{mode:?}"))
}

fn mode_names() -> String {
    PermissionModeArg::value_variants()
        .iter()
        .map(|arg| mode_name(PermissionMode::from(*arg)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// What `/model` lists: the models to pick from, the one in use marked,
/// and the note when the list is the built-in one.
fn model_choices(
    listing: &crate::provider::model_list::Listing,
    current: Option<String>,
) -> String {
    let mut text = match listing.source {
        "api" => String::from("the models your key can use (/model NAME to ask one):\n"),
        _ => String::from("models (/model NAME to ask one; any name the provider serves works):\n"),
    };
    for model in &listing.models {
        let mark = if current.as_deref() == Some(model.as_str()) {
            "*"
        } else {
            " "
        };
        text.push_str(&format!("  {mark} {model}\n"));
    }
    if let Some(note) = &listing.note {
        text.push_str(&format!("  ({note})\n"));
    }
    text
}
