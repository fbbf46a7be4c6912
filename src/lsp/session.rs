//! A conversation with the agent inside the language server: its messages,
//! its running turn, its permission gate (with the rules the user allowed
//! during it) and its background commands. The main session is the one the
//! chat file shows; others can be started by name through `bareagent.ask`.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::{CompactRequest, Inbox, InstructionFile, Message};
use crate::events::Spend;
use crate::permission::PermissionGate;
use crate::provider::Usage;
use crate::sandbox::SandboxSettings;
use crate::sessions::SessionFile;
use crate::tools::{BackgroundTasks, ReadLedger};

pub struct Session {
    pub messages: Vec<Message>,
    pub running: Option<Running>,
    pub usage: Usage,
    /// What the session's turns cost, and its context after the last one.
    pub spend: Spend,
    /// When it started: with the root, its `prompt_cache_key`.
    pub started: std::time::SystemTime,
    /// The instruction files its last turn read (`bareagent.status`).
    pub instructions: Vec<InstructionFile>,
    /// Built at the first turn from the settings; "allow for session"
    /// answers accumulate in it. Dropped when the editor's settings change;
    /// a settings file changed during the session (by the agent or anyone)
    /// is not read back into it.
    pub policy: Option<SessionPolicy>,
    pub background: Arc<BackgroundTasks>,
    pub inbox: Inbox,
    /// What the model of this session has seen of each file.
    pub reads: Arc<ReadLedger>,
    /// Where the main session is saved; made at its first turn, or the
    /// session resumed (other sessions live in memory only).
    pub file: Option<Arc<SessionFile>>,
    /// Which conversation this is, for the chat, when it could not be said
    /// at start (the user's prompt was waiting there): said at the next turn.
    pub chat_notice: Option<String>,
    /// `bareagent.compact` during a turn: its loop compacts at its next step.
    pub compact: CompactRequest,
    /// Its MCP servers, made at its first turn; dropped with it, which
    /// stops them (process groups and all).
    pub mcp: Option<Arc<crate::mcp::McpServers>>,
}

/// What a session may do, fixed at its first turn.
#[derive(Clone)]
pub struct SessionPolicy {
    pub gate: PermissionGate,
    pub sandbox: SandboxSettings,
}

pub struct Running {
    pub id: u64,
    pub cancel: CancellationToken,
    /// The `$/progress` token, when the editor shows progress.
    pub progress_token: String,
}

impl Default for Session {
    fn default() -> Self {
        let inbox = Inbox::new();
        Session {
            messages: Vec::new(),
            running: None,
            usage: Usage::default(),
            spend: Spend::default(),
            started: std::time::SystemTime::now(),
            instructions: Vec::new(),
            policy: None,
            background: Arc::new(BackgroundTasks::new(inbox.clone())),
            inbox,
            reads: Arc::default(),
            file: None,
            chat_notice: None,
            compact: CompactRequest::default(),
            mcp: None,
        }
    }
}
