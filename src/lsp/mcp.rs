//! A session's MCP servers in the language server: made at the session's
//! first turn from the settings (files and editor), kept in the `Session`
//! (stopped when it is dropped: `newSession`, a resume, shutdown), and
//! told to the user as `bareagent/event` `{"type": "mcp_server", ...}` and,
//! for a failure, a `window/showMessage`.

use std::sync::{Arc, Weak};

use serde_json::json;

use super::state::State;
use crate::mcp::{McpServers, McpSettings, Notice};

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
                .event(json!({
                    "type": "mcp_server",
                    "server": notice.server,
                    "state": notice.state,
                    "message": notice.message,
                }))
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
