//! How hard the language server's turns ask the model to think, and the
//! command that changes it, `bareagent.setEffort`: `{"effort": "high"}`,
//! `{"thinking": "off"}` (either or both; `"effort": "default"` goes back to
//! the settings), or no argument for what is set and the levels to offer.
//! Like `bareagent.setModel`, the choice is a [`SessionChange`] sent to
//! every session, from the next turn on.

use std::sync::Arc;

use serde_json::{Value, json};

use super::state::State;
use crate::provider::{Effort, Thinking};
use crate::session::{Current, SessionChange};

/// `bareagent.setEffort`.
pub async fn set_effort(state: &Arc<State>, argument: &Value) -> Result<Value, String> {
    let effort = argument.get("effort");
    let thinking = argument.get("thinking");
    if effort.is_none() && thinking.is_none() {
        let (current, _) = super::model::current(state).await?;
        let levels: Vec<&str> = Effort::ALL.iter().map(|e| e.as_str()).collect();
        return Ok(json!({
            "current": reasoning_entry(&current),
            "efforts": levels,
            "thinking": [Thinking::Auto.as_str(), Thinking::Off.as_str()],
            "message": "pass {\"effort\": LEVEL or \"default\"} and/or {\"thinking\": \"auto\" or \"off\"}; the next turn uses it",
        }));
    }
    let mut change = SessionChange::default();
    if let Some(effort) = effort {
        change.effort = Some(match effort.as_str() {
            Some("default") => None,
            Some(name) => Some(Effort::parse(name)?),
            None => return Err(format!("effort: `{effort}` is not a level's name")),
        });
    }
    if let Some(thinking) = thinking {
        let name = thinking
            .as_str()
            .ok_or_else(|| format!("thinking: `{thinking}` is not auto or off"))?;
        change.thinking = Some(Thinking::parse(name)?);
    }
    let now = super::model::change_everywhere(state, change).await?;
    Ok(json!({"current": reasoning_entry(&now), "message": "the next turn uses it"}))
}

/// The `reasoning` entry of `bareagent.status`: the effort, thinking and
/// (for OpenAI) the wire the next turn uses.
pub fn reasoning_entry(current: &Current) -> Value {
    json!({
        "effort": current.effort.map(Effort::as_str),
        "thinking": current.thinking.as_str(),
        "wire": current.wire.map(|wire| wire.as_str()),
    })
}
