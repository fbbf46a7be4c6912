//! `bareagent.rewind`: the main session's last turn undone — its edits put
//! back in one `workspace/applyEdit` (see `restore.rs`), refused file by
//! file where the text is no longer what the agent left, and the turn
//! dropped from the history (and, by its record, from the session file).
//!
//! While it runs, the session counts as busy as during a turn: a prompt
//! sent meanwhile waits, and starts a turn on the rewound history once it
//! ends; a resume is refused.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower_lsp_server::ls_types::MessageType;

use super::editor::EditorWorkspace;
use super::editor_event::EditorEvent;
use super::session::Running;
use super::state::{MAIN_SESSION, State};
use super::turn::{Ask, start_locked};

pub async fn rewind(state: &Arc<State>) -> Result<Value, String> {
    let (id, file) = {
        let mut sessions = state.lock_sessions();
        let session = sessions.get_mut(MAIN_SESSION);
        let Some(session) = session.filter(|s| s.core.file().is_some()) else {
            return Err("nothing to rewind: the conversation has no turn yet".into());
        };
        if session.running.is_some() {
            return Err("a turn is running: cancel it (bareagent.cancel) before rewinding".into());
        }
        let id = state.next_turn();
        session.running = Some(Running {
            id,
            cancel: CancellationToken::new(),
            progress_token: format!("bareagent/rewind/{id}"),
        });
        (id, session.core.file())
    };
    // In a task of its own: a panic in it must not leave the session
    // marked busy for ever.
    let outcome = match file {
        Some(file) => {
            let (state, undoing) = (state.clone(), file.clone());
            match tokio::spawn(async move { undo(&state, &undoing).await }).await {
                Ok(result) => result.map(|rewound| (file, rewound)),
                Err(error) => {
                    tracing::error!(%error, "the rewind task failed");
                    Err("the rewind crashed (a bug in bareagent); nothing more was changed".into())
                }
            }
        }
        None => Err("nothing to rewind".into()),
    };

    // The session again, as the turn's end leaves it: only if it is still
    // the one this rewind claimed (`newSession` may have replaced it).
    {
        let mut sessions = state.lock_sessions();
        if let Some(session) = sessions
            .get_mut(MAIN_SESSION)
            .filter(|s| s.running.as_ref().is_some_and(|r| r.id == id))
        {
            session.running = None;
            if let Ok((file, rewound)) = &outcome
                && session.core.file().is_some_and(|f| Arc::ptr_eq(&f, file))
            {
                session.core.set_history(rewound.messages.clone());
            }
            let queued = session.core.inbox().take_user_messages();
            if !queued.is_empty() {
                let ask = Ask {
                    session: MAIN_SESSION.to_string(),
                    prompt: queued.join("\n\n"),
                    prompt_in_chat: false,
                };
                start_locked(state, &mut sessions, ask);
            }
        }
    }

    let (_, rewound) = outcome?;
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
    file: &crate::sessions::SessionFile,
) -> Result<crate::rewind::Rewound, String> {
    let settings = state.load_settings().await?;
    let workspace = EditorWorkspace::new(state.clone(), settings.edits.save.unwrap_or_default())
        .map_err(|e| format!("cannot open the workspace: {e}"))?;
    // Only its deny rules count: nobody is asked about an undo.
    let gate = settings
        .deny_rules_only(&state.init().root)
        .map_err(|e| e.to_string())?;
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
