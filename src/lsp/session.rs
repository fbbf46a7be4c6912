//! A conversation with the agent inside the language server: the core
//! session (its history, gate, provider, sandbox, tools and spend), the
//! handle that runs its turns, and a notice for the chat. The main session
//! is the one the chat file shows; others can be started by name through
//! `bareagent.ask`.

use std::sync::Arc;

use crate::session::{Given, Layer, Layers, SessionHandle, Surface};

pub struct EditorSession {
    pub core: Arc<crate::session::Session>,
    /// Runs its turns one at a time, queues prompts, cancels.
    pub handle: SessionHandle,
    /// Which conversation this is, for the chat, when it could not be said
    /// at start (the user's prompt was waiting there): said at the next turn.
    pub chat_notice: Option<String>,
}

impl EditorSession {
    /// A new conversation in `root`, starting from what the editor's
    /// commands chose (`bareagent.setModel`, `setEffort`); its
    /// parts are built from the settings at its first turn.
    pub fn new(root: &std::path::Path, chosen: Layer) -> EditorSession {
        let layers = Layers {
            session: chosen,
            ..Layers::default()
        };
        let core = crate::session::Session::unprepared(
            root.to_path_buf(),
            Surface::Editor,
            layers,
            Given::default(),
        );
        let core = Arc::new(core);
        EditorSession {
            handle: SessionHandle::spawn(core.clone()),
            core,
            chat_notice: None,
        }
    }
}
