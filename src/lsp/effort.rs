//! How hard the language server's turns ask the model to think, and the
//! command that changes it, `bareagent.setEffort`: `{"effort": "high"}`,
//! `{"thinking": "off"}` (either or both; `"effort": "default"` goes back to
//! the settings), or no argument for what is set and the levels to offer.
//! Like `bareagent.setModel`, the choice is the session layer of every
//! session's settings from the next turn on.

use serde_json::{Value, json};

use super::state::State;
use crate::provider::{Effort, ProviderChoice, ProviderKind, Thinking};
use crate::session::{SessionSettings, Surface};

/// `bareagent.setEffort`.
pub fn set_effort(state: &State, argument: &Value) -> Result<Value, String> {
    let effort = argument.get("effort");
    let thinking = argument.get("thinking");
    if effort.is_none() && thinking.is_none() {
        let levels: Vec<&str> = Effort::ALL.iter().map(|e| e.as_str()).collect();
        return Ok(json!({
            "current": status(state),
            "efforts": levels,
            "thinking": [Thinking::Auto.as_str(), Thinking::Off.as_str()],
            "message": "pass {\"effort\": LEVEL or \"default\"} and/or {\"thinking\": \"auto\" or \"off\"}; the next turn uses it",
        }));
    }
    let mut chosen = state.model_override.get();
    if let Some(effort) = effort {
        chosen.effort = match effort.as_str() {
            Some("default") => None,
            Some(name) => Some(Effort::parse(name)?),
            None => return Err(format!("effort: `{effort}` is not a level's name")),
        };
    }
    if let Some(thinking) = thinking {
        let name = thinking
            .as_str()
            .ok_or_else(|| format!("thinking: `{thinking}` is not auto or off"))?;
        chosen.thinking = Some(Thinking::parse(name)?);
    }
    state.model_override.set(chosen);
    Ok(json!({"current": status(state), "message": "the next turn uses it"}))
}

/// The `reasoning` entry of `bareagent.status`: the effort, thinking and
/// (for OpenAI) the wire the next turn uses, from the one resolver.
pub fn status(state: &State) -> Value {
    let settings = match state.layers_now() {
        Ok(layers) => SessionSettings::resolve(state.init().root.clone(), Surface::Editor, layers),
        Err(error) => return json!({"error": error}),
    };
    let provider = &settings.provider;
    let choice = ProviderChoice {
        kind: provider.kind,
        base_url: provider.base_url.clone(),
        replay: provider.replay.clone(),
        wire: provider.wire,
        ..ProviderChoice::default()
    };
    let wire = match choice.resolved_kind() {
        Ok(ProviderKind::Openai) => choice.resolved_wire().ok().map(|wire| wire.as_str()),
        _ => None,
    };
    json!({
        "effort": settings.reasoning.effort.map(Effort::as_str),
        "thinking": settings.reasoning.thinking.as_str(),
        "wire": wire,
    })
}
