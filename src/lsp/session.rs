//! A conversation with the agent inside the language server: the core
//! session (its history, gate, provider, sandbox, tools and spend), and
//! what only the language server tracks — the turn running in it and a
//! notice for the chat. The main session is the one the chat file shows;
//! others can be started by name through `bareagent.ask`.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::session::{Given, Layers, Surface};

pub struct Session {
    pub core: Arc<crate::session::Session>,
    pub running: Option<Running>,
    /// Which conversation this is, for the chat, when it could not be said
    /// at start (the user's prompt was waiting there): said at the next turn.
    pub chat_notice: Option<String>,
}

pub struct Running {
    pub id: u64,
    pub cancel: CancellationToken,
    /// The `$/progress` token, when the editor shows progress.
    pub progress_token: String,
}

impl Session {
    /// A new conversation in `root`; its parts are built from the
    /// settings at its first turn.
    pub fn new(root: &std::path::Path) -> Session {
        let core = crate::session::Session::unprepared(
            root.to_path_buf(),
            Surface::Editor,
            Layers::default(),
            Given::default(),
        );
        Session {
            core: Arc::new(core),
            running: None,
            chat_notice: None,
        }
    }
}
