//! One ACP session between prompts: its workspace root, its core session
//! (history, session file, gate — so "allow" answers outlive a turn) and
//! the handle that runs its turns, one at a time.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::agent::Message;
use crate::config::Config;
use crate::permission::PermissionMode;
use crate::session::{Layer, Layers, SessionHandle, Surface};
use crate::session_files::SessionFile;
use crate::sync::Locked;
use crate::workspace::PathResolver;

pub struct AcpSession {
    pub id: String,
    pub paths: PathResolver,
    /// The conversation: its history, file, gate, provider, sandbox, tools.
    pub core: Arc<crate::session::Session>,
    /// Runs the session's turns, refuses a prompt while one runs, cancels.
    pub handle: SessionHandle,
    /// Rules the user answered "reject always" to: refused without asking.
    pub rejected: Arc<Mutex<HashSet<String>>>,
    /// Said to the user at the start of the next turn (MCP servers not
    /// taken or failing), then forgotten.
    pub notice: Arc<Mutex<Vec<String>>>,
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

impl AcpSession {
    /// A session in `root`: settings read as for `bareagent run` (the
    /// project's only as far as it is trusted), history `messages`.
    /// `client_servers`: the MCP servers the client passed, with those of
    /// the settings. `command_line`: `bareagent acp`'s flags.
    pub fn open(
        root: &Path,
        file: Option<(SessionFile, Vec<Message>)>,
        client_servers: Vec<(String, crate::mcp::ServerConfig)>,
        command_line: Layer,
    ) -> Result<AcpSession, String> {
        let paths = PathResolver::new(root)
            .map_err(|e| format!("cannot open the workspace {}: {e}", root.display()))?;
        let mut settings = Config::load(paths.root()).map_err(|e| e.to_string())?;
        let notice = Arc::new(Mutex::new(Vec::new()));
        if let Some(ignored) = settings.ignored_notice(paths.root()) {
            notice.locked().push(ignored);
        }
        settings.mcp.servers.extend(client_servers);
        let told = notice.clone();
        let mcp = Arc::new(crate::mcp::McpServers::new(
            &settings.mcp,
            paths.root(),
            Arc::new(move |said: crate::mcp::Notice| told.locked().push(said.message)),
        ));
        mcp.start_in_background();
        let layers = Layers {
            command_line,
            environment: Layer::from_environment().map_err(|e| e.to_string())?,
            files: settings,
            ..Layers::default()
        };
        let core = crate::session::Session::open(
            paths.root().to_path_buf(),
            Surface::AgentPanel,
            layers,
            mcp,
        )
        .map_err(|e| e.to_string())?;
        let (file, messages) = match file {
            Some((file, messages)) => (file, messages),
            None => (SessionFile::create(&paths), Vec::new()),
        };
        let id = file.id().to_string();
        core.start_conversation(Some(Arc::new(file)), messages);
        let core = Arc::new(core);
        Ok(AcpSession {
            id,
            paths,
            handle: SessionHandle::spawn(core.clone()),
            core,
            rejected: Arc::default(),
            notice,
        })
    }

    /// Says `notice` at the start of the next turn.
    pub fn tell(&self, notice: String) {
        self.notice.locked().push(notice);
    }

    pub fn mode(&self) -> PermissionMode {
        self.core.mode()
    }

    /// The user's `session/set_mode`: prompts from now on run in `mode`
    /// (a running turn keeps the mode it started in).
    pub async fn set_mode(&self, mode: PermissionMode) -> Result<(), String> {
        self.handle
            .change(crate::session::SessionChange::mode(mode))
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *self.notice.locked())
    }
}
