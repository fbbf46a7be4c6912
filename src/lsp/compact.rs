//! `bareagent.compact`: the user asks for a session's history to be
//! compacted — by the running turn at its next step, or at once when the
//! session is idle. An idle compaction works on a copy and puts it back
//! only if the session has not moved on meanwhile (else the next turn's
//! first step compacts instead); it is told through `bareagent/event` and
//! `window/showMessage`, not the chat file, whose end is the user's prompt.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tower_lsp_server::ls_types::MessageType;

use super::editor_event::TurnEvent;
use super::state::{MAIN_SESSION, State};
use crate::agent::{LoopConfig, Message, system_prompt_in_editor};
use crate::events::{AgentEvent, EventSink};
use crate::provider::Usage;
use crate::tools::ToolRegistry;

/// Answers at once: `{"session", "when": "next step" | "now"}`, or a
/// message saying there is nothing to compact.
pub fn compact(state: &Arc<State>, arguments: &[Value]) -> Value {
    let name = arguments
        .first()
        .and_then(|a| a.get("session"))
        .and_then(Value::as_str)
        .unwrap_or(MAIN_SESSION)
        .to_string();
    let mut sessions = state.lock_sessions();
    let Some(session) = sessions.get_mut(&name) else {
        return json!({"session": name, "when": null, "message": "the session has no history yet"});
    };
    if let Some(running) = &session.running {
        session.compact.ask();
        return json!({"session": name, "turn": running.id, "when": "next step"});
    }
    if session.messages.is_empty() {
        return json!({"session": name, "when": null, "message": "the session has no history yet"});
    }
    let snapshot = session.messages.clone();
    drop(sessions);
    tokio::spawn(compact_idle(state.clone(), name.clone(), snapshot));
    json!({"session": name, "when": "now"})
}

/// Counts the summary call's usage for the session.
#[derive(Default)]
struct UsageOnly(Mutex<Usage>);

impl EventSink for UsageOnly {
    fn emit(&self, event: AgentEvent) {
        if let AgentEvent::Usage { call, .. } = event {
            *self.0.lock().unwrap_or_else(|p| p.into_inner()) += call;
        }
    }
}

async fn compact_idle(state: Arc<State>, name: String, snapshot: Vec<Message>) {
    let usage = UsageOnly::default();
    let mut messages = snapshot.clone();
    let outcome = async {
        let settings = state.load_settings().await?;
        let super::turn::TurnModel {
            provider,
            compaction,
            model,
        } = super::turn::model_for(&state, &settings, None)?;
        let price = model.as_deref().and_then(|m| settings.price(m));
        let system = system_prompt_in_editor(&state.init().root);
        let tools = ToolRegistry::in_editor();
        compaction
            .compact_idle(
                provider.as_ref(),
                &system,
                tools.specs(),
                LoopConfig::default().max_tokens,
                &usage,
                &mut messages,
            )
            .await
            .map(|done| done.map(|done| (done, price)))
            .map_err(|e| e.to_string())
    }
    .await;
    let event = match outcome {
        Ok(Some((done, price))) => {
            let mut sessions = state.lock_sessions();
            let session = sessions.get_mut(&name);
            let kept = match session {
                Some(session) if session.running.is_none() && session.messages == snapshot => {
                    if let Some(file) = &session.file {
                        use crate::sessions::Transcript;
                        file.record(crate::sessions::Entry::Usage {
                            usage: done.usage,
                            cost_usd: price.map(|price| price.cost(&done.usage)),
                        });
                        file.record(crate::sessions::Entry::Compaction {
                            before_tokens: done.before_tokens,
                            after_tokens: done.after_tokens,
                            messages: &messages,
                        });
                    }
                    session.messages = messages;
                    session.usage += *usage.0.lock().unwrap_or_else(|p| p.into_inner());
                    true
                }
                Some(session) => {
                    // It moved on: its next step compacts what it has now.
                    session.compact.ask();
                    false
                }
                None => false,
            };
            drop(sessions);
            if !kept {
                tracing::info!(session = %name, "the session changed during compaction; it compacts at its next step instead");
                return;
            }
            AgentEvent::Compacted {
                before_tokens: done.before_tokens,
                after_tokens: done.after_tokens,
                how: done.how,
            }
        }
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
