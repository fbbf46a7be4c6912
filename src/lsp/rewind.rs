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
use tokio::sync::oneshot;
use tower_lsp_server::ls_types::MessageType;

use super::editor::EditorWorkspace;
use super::editor_event::EditorEvent;
use super::state::{MAIN_SESSION, State};
use crate::session::{Afterwards, HandleError, Job, JobEnd};

pub async fn rewind(state: &Arc<State>) -> Result<Value, String> {
    let (handle, file) = {
        let sessions = state.lock_sessions();
        let session = sessions.get(MAIN_SESSION);
        let Some((session, file)) = session.and_then(|s| Some((s, s.core.file()?))) else {
            return Err("nothing to rewind: the conversation has no turn yet".into());
        };
        (session.handle.clone(), file)
    };
    // The session's job while it runs; answered once the session is free
    // (and the prompts queued meanwhile have started their turn).
    let (answer, answered) = oneshot::channel();
    let undoing = state.clone();
    let core = handle.session().clone();
    let job: Job<JobEnd> = Box::pin(async move {
        let outcome = undo(&undoing, &core, &file).await;
        let history = outcome.as_ref().ok().map(|r| r.messages.clone());
        JobEnd {
            history,
            afterwards: Afterwards::new(async move {
                let _ = answer.send(outcome);
            }),
        }
    });
    handle.rewind(job).await.map_err(|error| match error {
        HandleError::Closed => "nothing to rewind: the conversation was cleared".to_string(),
        _ => "a turn is running: cancel it (bareagent.cancel) before rewinding".to_string(),
    })?;
    let outcome = answered.await.unwrap_or_else(|_| {
        Err("the rewind crashed (a bug in bareagent); nothing more was changed".into())
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

async fn undo(
    state: &Arc<State>,
    core: &crate::session::Session,
    file: &crate::session_files::SessionFile,
) -> Result<crate::rewind::Rewound, String> {
    let settings = core.settings();
    let workspace =
        EditorWorkspace::new(state.clone(), settings.files.edits.save.unwrap_or_default())
            .map_err(|e| format!("cannot open the workspace: {e}"))?;
    // Only its deny rules count: nobody is asked about an undo.
    let gate = core.deny_rules_gate().map_err(|e| e.to_string())?;
    crate::rewind::rewind(&workspace, file, &gate)
        .await
        .map_err(|e| e.to_string())
}

fn capitalised(line: &str) -> String {
    let mut chars = line.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
