//! `bareagent.compact`: the user asks for a session's history to be
//! compacted — by the running turn at its next step, or at once when the
//! session is idle, with the system prompt and tools of its turns (a turn
//! asked meanwhile starts after it); it is told through `bareagent/event` and
//! `window/showMessage`, not the chat file, whose end is the user's prompt.

use std::sync::Arc;

use serde_json::{Value, json};
use tower_lsp_server::ls_types::MessageType;

use super::editor_event::TurnEvent;
use super::state::{MAIN_SESSION, State};
use crate::events::{AgentEvent, EventSink};
use crate::session::Compacting;

/// Answers at once: `{"session", "when": "next step" | "now"}`, or a
/// message saying there is nothing to compact.
pub async fn compact(state: &Arc<State>, arguments: &[Value]) -> Value {
    let name = arguments
        .first()
        .and_then(|a| a.get("session"))
        .and_then(Value::as_str)
        .unwrap_or(MAIN_SESSION)
        .to_string();
    let no_history =
        || json!({"session": name, "when": null, "message": "the session has no history yet"});
    let Some(handle) = state.lock_sessions().get(&name).map(|s| s.handle.clone()) else {
        return no_history();
    };
    match handle.compact().await {
        Some(Compacting::NextStep(turn)) => {
            json!({"session": name, "turn": turn, "when": "next step"})
        }
        Some(Compacting::Idle) if !handle.session().history().is_empty() => {
            let core = handle.session().clone();
            tokio::spawn(compact_idle(state.clone(), name.clone(), core));
            json!({"session": name, "when": "now"})
        }
        _ => no_history(),
    }
}

/// What the user sees of an idle compaction's summary call: its retries,
/// as `notice` events of no turn (its outcome is told at its end).
struct Notices {
    state: Arc<State>,
    session: String,
}

impl EventSink for Notices {
    fn emit(&self, event: AgentEvent) {
        if let AgentEvent::Notice { .. } = &event {
            let sent = super::editor_event::TurnEvent::new(event, None, &self.session);
            let state = self.state.clone();
            tokio::spawn(async move { state.event(sent.into()).await });
        }
    }
}

/// Compacts an idle session with the system prompt and tools its turns
/// send (a turn asked meanwhile waits for it, then runs on the result).
async fn compact_idle(state: Arc<State>, name: String, core: Arc<crate::session::Session>) {
    let outcome = async {
        let workspace = super::turn::prepare(&state, &core).await?;
        let notices = Notices {
            state: state.clone(),
            session: name.clone(),
        };
        core.compact_now(&workspace, &notices)
            .await
            .map_err(|e| e.to_string())
    }
    .await;
    let event = match outcome {
        Ok(Some(done)) => AgentEvent::Compacted {
            before_tokens: done.before_tokens,
            after_tokens: done.after_tokens,
            how: done.how,
        },
        Ok(None) => {
            state
                .show(MessageType::INFO, "bareagent: nothing to compact yet")
                .await;
            return;
        }
        Err(reason) => {
            tracing::warn!(%reason, "compaction failed; the history is kept as it was");
            AgentEvent::CompactionFailed { reason }
        }
    };
    let line = match &event {
        AgentEvent::Compacted {
            before_tokens,
            after_tokens,
            how,
        } => how.describe(*before_tokens, *after_tokens),
        AgentEvent::CompactionFailed { reason } => {
            format!("compaction failed ({reason}); the history is kept")
        }
        _ => String::new(),
    };
    state.event(TurnEvent::new(event, None, &name).into()).await;
    state
        .show(MessageType::INFO, format!("bareagent: {line}"))
        .await;
}
