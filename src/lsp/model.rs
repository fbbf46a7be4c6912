//! Which provider and model the language server's turns use, and the
//! command that changes it, `bareagent.setModel`.
//!
//! The first that names one wins: `bareagent.setModel` (for the rest of
//! the server's life), the editor's settings (`initializationOptions`,
//! `workspace/configuration`), the environment (`BAREAGENT_PROVIDER`,
//! `BAREAGENT_MODEL`, read by the same code as `bareagent run`), the
//! settings files, and last the provider's default (the provider itself
//! guessed from which keys are set). Each turn resolves it anew, so a
//! change takes effect at the next turn, never in the middle of one.

use std::sync::Arc;

use serde_json::{Value, json};

use super::state::{MAIN_SESSION, State};
use crate::provider::model_list::Listing;
use crate::provider::{
    FromEnvironment, ProviderChoice, ProviderKind, default_model, is_configured, parse_kind,
    suggested_models,
};

/// The provider and model for the next turn, and where each came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Selected {
    pub kind: Option<ProviderKind>,
    pub model: Option<String>,
    pub kind_from: &'static str,
    pub model_from: &'static str,
}

/// The first of the sources that names a provider, and a model.
pub fn select(state: &State) -> Result<Selected, String> {
    let chosen = state.model_override.get();
    let editor = state.editor_settings();
    let environment = FromEnvironment::read().map_err(|e| e.to_string())?;
    let files = state.settings()?;
    let pick = |sources: [(Option<ProviderKind>, &'static str); 4]| {
        sources
            .into_iter()
            .find_map(|(value, from)| value.map(|v| (Some(v), from)))
            .unwrap_or((None, "the keys that are set"))
    };
    let (kind, kind_from) = pick([
        (chosen.kind, "bareagent.setModel"),
        (editor.provider, "the editor's settings"),
        (environment.kind, crate::provider::PROVIDER_ENV),
        // The files' value: the merged settings hold the editor's only
        // where it is set, and that case was taken above.
        (files.provider, "the settings file"),
    ]);
    let models = [
        (chosen.model, "bareagent.setModel"),
        (editor.model, "the editor's settings"),
        (environment.model, crate::provider::MODEL_ENV),
        (files.model, "the settings file"),
    ];
    let (model, model_from) = models
        .into_iter()
        .find_map(|(value, from)| value.map(|v| (Some(v), from)))
        .unwrap_or((None, "the provider's default"));
    Ok(Selected {
        kind,
        model,
        kind_from,
        model_from,
    })
}

/// The `model` entry of `bareagent.status`: what the next turn will use.
pub fn status(state: &State) -> Value {
    let selected = match select(state) {
        Ok(selected) => selected,
        Err(error) => return json!({"error": error}),
    };
    let choice = ProviderChoice {
        kind: selected.kind,
        model: selected.model.clone(),
        replay: state.editor_settings().replay,
        ..ProviderChoice::default()
    };
    match choice
        .resolved_kind()
        .and_then(|kind| Ok((kind, choice.resolved_model()?)))
    {
        Ok((kind, model)) => json!({
            "provider": kind,
            "model": model,
            "providerFrom": selected.kind_from,
            "modelFrom": selected.model_from,
        }),
        Err(error) => json!({"error": error.to_string()}),
    }
}

/// `bareagent.setModel`: with no argument, the choices to offer; with
/// `{provider?, model?}`, the choice for the next turns (a provider alone
/// brings its default model; `{"reset": true}` goes back to the settings).
pub async fn set_model(state: &Arc<State>, argument: &Value) -> Result<Value, String> {
    let provider = argument.get("provider").and_then(Value::as_str);
    let model = argument
        .get("model")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty());
    if argument.get("reset").and_then(Value::as_bool) == Some(true) {
        // The model's choice only: an effort chosen stays.
        let mut chosen = state.model_override.get();
        (chosen.kind, chosen.model) = (None, None);
        state.model_override.set(chosen);
        return Ok(json!({"reset": true, "current": status(state)}));
    }
    if provider.is_none() && model.is_none() {
        if argument.get("model").is_some() {
            return Err("model: give a model's name".into());
        }
        let listed = listed(state).await;
        return Ok(choices(state, listed));
    }
    let kind = provider
        .map(|name| parse_kind(name).map_err(|e| format!("provider `{name}`: {e}")))
        .transpose()?;
    if kind == Some(ProviderKind::Replay) {
        return Err("provider `replay`: a replay is set in the editor's settings, not here".into());
    }
    let mut chosen = state.model_override.get();
    if let Some(kind) = kind {
        chosen.kind = Some(kind);
        chosen.model = default_model(kind).map(str::to_string);
    }
    if let Some(model) = model {
        chosen.model = Some(model.to_string());
    }
    state.model_override.set(chosen);
    Ok(json!({
        "current": status(state),
        "message": "the next turn uses it",
    }))
}

/// What the main session's provider lists for its key (asked once per
/// session, through its own client): the session is made, under the
/// editor's settings, if no turn made it yet.
async fn listed(state: &Arc<State>) -> Listing {
    let (core, new) = {
        let mut sessions = state.lock_sessions();
        let new = !sessions.contains_key(MAIN_SESSION);
        let session = sessions
            .entry(MAIN_SESSION.to_string())
            .or_insert_with(|| super::session::Session::new(&state.init().root));
        (session.core.clone(), new)
    };
    if new {
        // A running turn's settings are never changed from here: only a
        // session no turn has used yet is brought up to the settings.
        match state.layers().await {
            Ok(layers) => {
                if let Err(error) = core.reconfigure(|current| *current = layers) {
                    tracing::warn!(%error, "the model list uses the session's settings as they are");
                }
            }
            Err(error) => tracing::warn!(%error, "cannot read the settings for the model list"),
        }
    }
    core.list_models().await
}

/// What a client offers the user to pick from: for the provider in use,
/// the models its API lists (else the built-in ones, and `note` says
/// why); for the other, the built-in suggestions.
fn choices(state: &State, listed: Listing) -> Value {
    let current = status(state);
    let note = listed.note.clone();
    let choices: Vec<Value> = [ProviderKind::Anthropic, ProviderKind::Openai]
        .into_iter()
        .flat_map(|kind| {
            let configured = is_configured(kind);
            let mut models: Vec<String> = if kind == listed.kind {
                listed.models.clone()
            } else {
                suggested_models(kind)
                    .iter()
                    .map(|m| m.to_string())
                    .collect()
            };
            // The model in use, if it is this provider's and not a suggestion.
            if current["provider"] == json!(kind)
                && let Some(model) = current["model"].as_str()
                && !models.iter().any(|m| m == model)
            {
                models.insert(0, model.to_string());
            }
            models.into_iter().map(
                move |model| json!({"provider": kind, "model": model, "configured": configured}),
            )
        })
        .collect();
    json!({
        "current": current,
        "choices": choices,
        "listedBy": {"provider": listed.kind, "source": listed.source, "note": note},
        "message": "pass {\"provider\", \"model\"} to choose (any model the provider serves); the next turn uses it",
    })
}
