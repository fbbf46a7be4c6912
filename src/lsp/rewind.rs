//! `bareagent.rewind`: the main session's last turn undone — its edits put
//! back in one `workspace/applyEdit` (see `restore.rs`), refused file by
//! file where the text is no longer what the agent left, and the turn
//! dropped from the history (and, by its record, from the session file).
//!
//! It runs as the session's job (see `session::handle`): a prompt sent
//! meanwhile waits, and starts a turn on the rewound history once it
//! ends; a resume is refused.

use std::sync::Arc;

use serde_json::{Value, json};
use tower_lsp_server::ls_types::MessageType;

use super::editor::EditorWorkspace;
use super::editor_event::EditorEvent;
use super::state::{MAIN_SESSION, State};
use crate::session::HandleError;

pub async fn rewind(state: &Arc<State>) -> Result<Value, String> {
    let handle = {
        let sessions = state.lock_sessions();
        let session = sessions.get(MAIN_SESSION);
        match session.filter(|s| s.core.file().is_some()) {
            Some(session) => session.handle.clone(),
            None => return Err("nothing to rewind: the conversation has no turn yet".into()),
        }
    };
    // The settings as they are now (a resumed session has had no turn to
    // bring it up to them): its deny rules decide the rewind.
    let layers = state.layers().await?;
    handle.set_layers(layers).await.map_err(|e| e.to_string())?;
    let save = handle.session().settings().files.edits.save;
    let workspace = EditorWorkspace::new(state.clone(), save.unwrap_or_default())
        .map_err(|e| format!("cannot open the workspace: {e}"))?;
    let outcome = handle
        .rewind_last_turn(Arc::new(workspace))
        .await
        .map_err(|error| match error {
            HandleError::Closed => "nothing to rewind: the conversation was cleared".to_string(),
            HandleError::BusyRewinding => {
                "a turn is running: cancel it (bareagent.cancel) before rewinding".to_string()
            }
            other => other.to_string(),
        });
    let rewound = outcome?;
    let line = rewound.describe();
    state
        .event(EditorEvent::Rewound {
            session: MAIN_SESSION.to_string(),
            restored: rewound.restored.clone(),
            refused: rewound.refused.clone(),
        })
        .await;
    let kind = if rewound.refused.is_empty() {
        MessageType::INFO
    } else {
        MessageType::WARNING
    };
    state.show(kind, format!("bareagent: {line}")).await;
    super::resume::tell_chat(state, &format!("{}.", capitalised(&line))).await;
    Ok(json!({
        "restored": rewound.restored,
        "refused": rewound.refused,
        "message": line,
    }))
}

fn capitalised(line: &str) -> String {
    let mut chars = line.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
