//! One ACP session between prompts: its workspace root, its history and
//! session file, its permission gate (so "allow" answers outlive a turn)
//! and the turn running in it, if any.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::agent::{Inbox, Message};
use crate::config::Config;
use crate::permission::{DenyAll, PermissionGate, PermissionMode};
use crate::sessions::SessionFile;
use crate::tools::{BackgroundTasks, ReadLedger};
use crate::workspace::PathResolver;

pub struct Session {
    pub id: String,
    pub paths: PathResolver,
    pub settings: Config,
    pub file: Arc<SessionFile>,
    /// The history; a turn takes it while it runs and puts it back.
    pub messages: Mutex<Vec<Message>>,
    /// The settings' rules and the answers given so far, in the session's
    /// mode; each turn asks through its own approver.
    gate: Mutex<PermissionGate>,
    /// Rules the user answered "reject always" to: refused without asking.
    pub rejected: Arc<Mutex<HashSet<String>>>,
    /// The running turn's cancellation, while one runs.
    running: Mutex<Option<CancellationToken>>,
    pub reads: Arc<ReadLedger>,
    pub inbox: Inbox,
    pub background: Arc<BackgroundTasks>,
    pub started: std::time::SystemTime,
    /// Said to the user at the start of the next turn (ignored settings,
    /// MCP servers not taken or failing), then forgotten.
    pub notice: Arc<Mutex<Vec<String>>>,
    /// The MCP servers of the settings and of the client, started with the
    /// session, stopped (process groups and all) when it is dropped.
    pub mcp: crate::mcp::McpServers,
}

/// The workspace root a client names: absolute, existing, a directory.
pub fn root_of(cwd: &Path) -> Result<PathBuf, String> {
    if !cwd.is_absolute() {
        return Err(format!(
            "cwd `{}` is relative: session/new and session/load need the workspace's absolute path",
            cwd.display()
        ));
    }
    match std::fs::metadata(cwd) {
        Ok(meta) if meta.is_dir() => Ok(cwd.to_path_buf()),
        Ok(_) => Err(format!("cwd `{}` is not a directory", cwd.display())),
        Err(error) => Err(format!("cwd `{}` cannot be opened: {error}", cwd.display())),
    }
}

impl Session {
    /// A session in `root`: settings read as for `bareagent run` (the
    /// project's only as far as it is trusted), history `messages`.
    /// `client_servers`: the MCP servers the client passed, with those of
    /// the settings.
    pub fn open(
        root: &Path,
        file: Option<(SessionFile, Vec<Message>)>,
        client_servers: Vec<(String, crate::mcp::ServerConfig)>,
    ) -> Result<Session, String> {
        let paths = PathResolver::new(root)
            .map_err(|e| format!("cannot open the workspace {}: {e}", root.display()))?;
        let settings = Config::load(paths.root()).map_err(|e| e.to_string())?;
        let mode = settings.permissions.mode.unwrap_or_default();
        let nobody = DenyAll("nobody can be asked outside a prompt".into());
        let gate = settings
            .gate(mode, Box::new(nobody), paths.root())
            .map_err(|e| e.to_string())?;
        let mut notice = Vec::new();
        if let Some(ignored) = settings.ignored_notice(paths.root()) {
            notice.push(ignored);
        }
        let (file, messages) = match file {
            Some((file, messages)) => (file, messages),
            None => (SessionFile::create(&paths), Vec::new()),
        };
        let notice = Arc::new(Mutex::new(notice));
        let mut mcp_settings = settings.mcp.clone();
        mcp_settings.servers.extend(client_servers);
        let told = notice.clone();
        let mcp = crate::mcp::McpServers::new(
            &mcp_settings,
            paths.root(),
            Arc::new(move |said: crate::mcp::Notice| {
                told.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(said.message);
            }),
        );
        mcp.start_in_background();
        let inbox = Inbox::new();
        Ok(Session {
            id: file.id().to_string(),
            paths,
            settings,
            file: Arc::new(file),
            messages: Mutex::new(messages),
            gate: Mutex::new(gate),
            rejected: Arc::default(),
            running: Mutex::new(None),
            reads: Arc::default(),
            background: Arc::new(BackgroundTasks::new(inbox.clone())),
            inbox,
            started: std::time::SystemTime::now(),
            notice,
            mcp,
        })
    }

    /// Says `notice` at the start of the next turn.
    pub fn tell(&self, notice: String) {
        self.notice
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(notice);
    }

    pub fn gate(&self) -> PermissionGate {
        self.gate.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn mode(&self) -> PermissionMode {
        self.gate().mode()
    }

    /// The user's `session/set_mode`: prompts from now on run in `mode`
    /// (a running turn keeps the mode it started in).
    pub fn set_mode(&self, mode: PermissionMode) {
        let mut gate = self.gate.lock().unwrap_or_else(|p| p.into_inner());
        *gate = gate.with_mode(mode);
    }

    /// Marks a turn as running; `None` when one already runs.
    pub fn begin_turn(&self) -> Option<CancellationToken> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if running.is_some() {
            return None;
        }
        let cancel = CancellationToken::new();
        *running = Some(cancel.clone());
        Some(cancel)
    }

    pub fn end_turn(&self) {
        *self.running.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// `session/cancel`: stops the running turn, if any.
    pub fn cancel(&self) {
        if let Some(cancel) = &*self.running.lock().unwrap_or_else(|p| p.into_inner()) {
            cancel.cancel();
        }
    }

    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.notice.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
