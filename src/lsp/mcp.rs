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
    let core = state
        .lock_sessions()
        .entry(super::state::MAIN_SESSION.to_string())
        .or_insert_with(|| state.new_session())
        .core
        .clone();
    if core.mcp().is_none() {
        servers.start_in_background();
        core.set_mcp(servers);
    }
}

/// Gives `core` its servers (started in the background) if it has none yet.
pub fn for_session(state: &Arc<State>, core: &crate::session::Session, settings: &McpSettings) {
    if core.mcp().is_some() {
        return;
    }
    let servers = Arc::new(McpServers::new(
        settings,
        &state.init().root,
        notify(Arc::downgrade(state)),
    ));
    if Arc::ptr_eq(&core.set_mcp(servers.clone()), &servers) {
        servers.start_in_background();
    }
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
