//! A session's MCP servers in the language server: made from the settings
//! (files and editor) when the server is initialized for the main session
//! (so its first turn does not wait for them to start), else at a
//! session's first turn, kept in the `Session`
//! (stopped when it is dropped: `newSession`, a resume, shutdown), and
//! told to the user as `bareagent/event` `{"type": "mcp_server", ...}` and,
//! for a failure, a `window/showMessage`.

use std::sync::{Arc, Weak};

use super::editor_event::EditorEvent;
use super::state::State;
use crate::mcp::{McpServers, McpSettings, Notice};

/// At `initialized`, once the editor's configuration is in: the main
/// session's servers, started in the background (unless the settings say
/// `start = "lazy"`, which `McpServers` honours).
pub async fn at_start(state: &Arc<State>) {
    let settings = match state.load_settings().await {
        Ok(settings) => settings,
        // The first turn says what is wrong with the settings.
        Err(_) => return,
    };
    if settings.mcp.servers.is_empty() {
        return;
    }
    let servers = Arc::new(McpServers::new(
        &settings.mcp,
        &state.init().root,
        notify(Arc::downgrade(state)),
    ));
    let mut sessions = state.lock_sessions();
    let session = sessions
        .entry(super::state::MAIN_SESSION.to_string())
        .or_default();
    if session.mcp.is_none() {
        servers.start_in_background();
        session.mcp = Some(servers);
    }
}

/// The servers of the session running turn `turn`, made (and started in
/// the background) if it has none yet.
pub fn for_turn(state: &Arc<State>, turn: u64, settings: &McpSettings) -> Arc<McpServers> {
    let mut sessions = state.lock_sessions();
    let session = sessions
        .values_mut()
        .find(|s| s.running.as_ref().is_some_and(|r| r.id == turn));
    if let Some(Some(servers)) = session.as_ref().map(|s| s.mcp.clone()) {
        return servers;
    }
    let servers = Arc::new(McpServers::new(
        settings,
        &state.init().root,
        notify(Arc::downgrade(state)),
    ));
    servers.start_in_background();
    if let Some(session) = session {
        session.mcp = Some(servers.clone());
    }
    servers
}

/// Notices to the editor. Weak: the state owns the sessions that own the
/// servers that hold this.
fn notify(state: Weak<State>) -> crate::mcp::Notify {
    Arc::new(move |notice: Notice| {
        let Some(state) = state.upgrade() else {
            return;
        };
        tokio::spawn(async move {
            state
                .event(EditorEvent::McpServer {
                    server: notice.server,
                    state: notice.state.to_string(),
                    message: notice.message.clone(),
                })
                .await;
            if notice.state == "failed" {
                state
                    .show(
                        tower_lsp_server::ls_types::MessageType::WARNING,
                        notice.message,
                    )
                    .await;
            }
        });
    })
}
