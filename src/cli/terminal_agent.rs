//! The session a terminal front end runs (`bareagent run`, `bareagent
//! chat`): the core [`Session`] opened from the command line and the
//! settings, with the terminal's workspace, approver and sink for each turn.
//!
//! It must not touch the terminal beyond the first-run trust question: the
//! line editor belongs to `bareagent chat` alone.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::AgentArgs;
use super::approve::TerminalApprover;
use super::output::{JsonSink, TerminalSink, TurnSink};
use super::turn_keys::TurnKeys;
use crate::agent::LoopError;
use crate::agent::Message;
use crate::config::Config;
use crate::events::EventSink;
use crate::session::{
    Afterwards, Busy, Current, HandleError, Layer, Layers, RunTurn, Session, SessionChange,
    SessionHandle, Surface, Turn, TurnEnd, TurnIo,
};
use crate::sync::Locked;
use crate::workspace::{DiskWorkspace, Workspace};

pub struct TerminalAgent {
    /// `--json`: answers and approvals as JSON lines.
    json: bool,
    pub workspace: Arc<DiskWorkspace>,
    pub sink: Arc<dyn TurnSink>,
    /// The session's task: every turn goes through it, as in every front end.
    handle: SessionHandle,
    /// Typed while the last turn ran (see `turn_keys`).
    typed_ahead: Arc<std::sync::Mutex<String>>,
}

impl TerminalAgent {
    /// Opens the session for the current directory.
    pub async fn assemble(args: &AgentArgs, json: bool) -> anyhow::Result<Self> {
        // Its session signs with the user's key: loaded meanwhile.
        crate::session_files::chain::SessionKey::prepare();
        let root = std::env::current_dir().context("cannot read the current directory")?;
        let workspace = DiskWorkspace::new(&root).context("cannot open the workspace")?;
        let mut settings = Config::load(workspace.paths().root()).map_err(anyhow::Error::msg)?;
        if let Some(notice) = settings.ignored_notice(workspace.paths().root()) {
            eprintln!("bareagent: {notice}");
            // On a terminal, the user can trust the directory here and now.
            if !json
                && std::io::stdin().is_terminal()
                && super::approve::ask_to_trust(workspace.paths().root()).await
            {
                let written = crate::config::trust_project(workspace.paths().root())
                    .map_err(anyhow::Error::msg)?;
                eprintln!("bareagent: trusted (recorded in {})", written.display());
                settings = Config::load(workspace.paths().root()).map_err(anyhow::Error::msg)?;
            }
        }
        let sink: Arc<dyn TurnSink> = if json {
            Arc::new(JsonSink::default())
        } else {
            Arc::new(TerminalSink::new(args.quiet))
        };
        let notices = sink.clone();
        let mcp = Arc::new(crate::mcp::McpServers::new(
            &settings.mcp,
            workspace.paths().root(),
            Arc::new(move |notice| notices.notice(&format!("bareagent: {}", notice.message))),
        ));
        mcp.start_in_background();
        let layers = Layers {
            command_line: command_line(args),
            environment: Layer::from_environment()?,
            files: settings,
            ..Layers::default()
        };
        let session = Session::open(root, Surface::Terminal, layers, mcp)?;
        session.check_provider()?;
        for notice in session.take_notices() {
            eprintln!("{notice}");
        }
        Ok(TerminalAgent {
            json,
            workspace: Arc::new(workspace),
            sink,
            handle: SessionHandle::spawn(Arc::new(session)),
            typed_ahead: Default::default(),
        })
    }

    /// The session, for what it holds (its history, totals, settings).
    pub fn session(&self) -> &Arc<Session> {
        self.handle.session()
    }

    /// Undoes the last turn on disk, as the session's job.
    pub async fn rewind_last_turn(&self) -> Result<crate::rewind::Rewound, HandleError> {
        let workspace: Arc<dyn Workspace> = self.workspace.clone();
        self.handle.rewind_last_turn(workspace).await
    }

    /// Ends the session: background commands, MCP and language servers.
    pub async fn close(&self) {
        self.handle.close().await;
    }

    /// One turn on `prompt`, its events to `sink`, cancelled by `cancel`
    /// (or by the session's close), run by the session's handle.
    pub async fn turn(
        &self,
        prompt: Message,
        sink: Arc<dyn EventSink>,
        cancel: CancellationToken,
    ) -> TurnEnd {
        let (ended, end) = tokio::sync::oneshot::channel();
        let (json, workspace) = (self.json, self.workspace.clone());
        let (shown, typed_ahead) = (self.sink.clone(), self.typed_ahead.clone());
        let run: RunTurn = Box::new(move |turn: Turn| {
            Box::pin(async move {
                // Ctrl-C and Esc cancel the caller's token; the turn runs on
                // the handle's, which a close cancels too.
                let turn_cancel = turn.cancel.clone();
                let caller = cancel.clone();
                let link = tokio::spawn(async move {
                    caller.cancelled().await;
                    turn_cancel.cancel();
                });
                let terminal = std::io::stdin().is_terminal();
                // The keyboard is the turn's: Esc cancels it, approvals take keys.
                let keys = match (json, terminal) {
                    (false, true) => TurnKeys::start(cancel, shown),
                    _ => None,
                };
                let approver =
                    TerminalApprover::for_run(json, terminal, keys.as_ref().map(TurnKeys::keys));
                let io = TurnIo {
                    workspace: workspace.as_ref(),
                    approver: Box::new(approver),
                    sink: sink.as_ref(),
                    cancel: turn.cancel,
                    near: Vec::new(),
                    code: None,
                };
                let end = turn.session.run_turn(turn.prompt, io).await;
                link.abort();
                if let Some(keys) = keys {
                    *typed_ahead.locked() = keys.finish();
                }
                let _ = ended.send(end);
                Afterwards::new(async {})
            })
        });
        let refused = match self.handle.prompt(prompt, Busy::Refuse, run).await {
            Ok(_) => match end.await {
                Ok(end) => return end,
                Err(_) => "the session ended before the turn did".to_string(),
            },
            Err(error) => error.to_string(),
        };
        TurnEnd {
            result: Err(LoopError::Setup(refused)),
            counted: Default::default(),
        }
    }

    /// Puts `text` at the next prompt, before what was typed meanwhile.
    pub fn type_ahead(&self, text: String) {
        let mut typed = self.typed_ahead.locked();
        typed.insert_str(0, &text);
    }

    /// What was typed during the last turn, for the next prompt.
    pub fn take_typed_ahead(&self) -> String {
        std::mem::take(&mut *self.typed_ahead.locked())
    }

    /// Changes what the next turns use (the model, effort, thinking or
    /// mode): the session decides, as for every front end. On an error
    /// nothing changes.
    pub async fn change(&self, change: SessionChange) -> Result<Current, HandleError> {
        self.handle.change(change).await
    }
}

/// The command line's layer of the settings.
fn command_line(args: &AgentArgs) -> Layer {
    args.reasoning.onto(Layer {
        // `--replay FILE` names its provider: it wins over
        // BAREAGENT_PROVIDER as an explicit `--provider` would.
        provider: args.provider.or(args
            .replay
            .as_ref()
            .map(|_| crate::provider::ProviderKind::Replay)),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        replay: args.replay.clone(),
        record: args.record.clone(),
        mode: args.permission_mode,
        max_iterations: args.max_iterations,
        idle_timeout: args.idle_timeout.map(Duration::from_secs),
        max_attempts: args.max_attempts,
        stream: args.no_stream.then_some(false),
        ..Layer::default()
    })
}
