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
use crate::agent::Message;
use crate::config::Config;
use crate::events::EventSink;
use crate::session::{
    ChangeError, Current, Layer, Layers, Session, SessionChange, Surface, TurnEnd, TurnIo,
};
use crate::sync::Locked;
use crate::workspace::{DiskWorkspace, Workspace};

pub struct TerminalAgent {
    /// `--json`: answers and approvals as JSON lines.
    json: bool,
    pub workspace: DiskWorkspace,
    pub sink: Arc<dyn TurnSink>,
    pub session: Session,
    /// Typed while the last turn ran (see `turn_keys`).
    typed_ahead: std::sync::Mutex<String>,
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
            workspace,
            sink,
            session,
            typed_ahead: Default::default(),
        })
    }

    /// One turn on `prompt`, its events to `sink`, cancelled by `cancel`.
    pub async fn turn(
        &self,
        prompt: Message,
        sink: &dyn EventSink,
        cancel: CancellationToken,
    ) -> TurnEnd {
        let terminal = std::io::stdin().is_terminal();
        // The keyboard is the turn's: Esc cancels it, approvals take keys.
        let keys = match (self.json, terminal) {
            (false, true) => TurnKeys::start(cancel.clone(), self.sink.clone()),
            _ => None,
        };
        let approver =
            TerminalApprover::for_run(self.json, terminal, keys.as_ref().map(TurnKeys::keys));
        let io = TurnIo {
            workspace: &self.workspace,
            approver: Box::new(approver),
            sink,
            cancel,
            near: Vec::new(),
            code: None,
        };
        let end = self.session.run_turn(prompt, io).await;
        if let Some(keys) = keys {
            *self.typed_ahead.locked() = keys.finish();
        }
        end
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
    pub fn change(&self, change: &SessionChange) -> Result<Current, ChangeError> {
        self.session.change(change)
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
