//! Which provider and model the language server's turns use, and the
//! command that changes it, `bareagent.setModel`. A choice is a
//! [`SessionChange`] sent to every session through its handle — the
//! same change a chat's `/model` makes — and kept for the sessions made
//! later; it takes effect at the next turn, never in the middle of one.
//! What the next turn uses, and which layer each value came from, is the
//! one resolver's ([`Current`]), from the settings as they are now.

use std::sync::Arc;

use serde_json::{Value, json};

use super::state::{MAIN_SESSION, State};
use crate::provider::model_list::Listing;
use crate::provider::{ProviderKind, is_configured, parse_kind, suggested_models};
use crate::session::{Current, SessionChange, SessionHandle, SessionSettings, Surface};
use crate::sync::Locked;

/// What the main session's next turn uses, from the settings read now
/// (off the runtime's thread), and those settings.
pub async fn current(state: &Arc<State>) -> Result<(Current, SessionSettings), String> {
    let mut layers = state.layers().await?;
    let main = state
        .lock_sessions()
        .get(MAIN_SESSION)
        .map(|session| session.handle.clone());
    if let Some(main) = main {
        layers.session = main.session().layers().session;
    }
    let settings = SessionSettings::resolve(state.init().root.clone(), Surface::Editor, layers);
    Ok((Current::of(&settings), settings))
}

/// The `model` entry of `bareagent.status` and `setModel`'s answers.
pub fn model_entry(current: &Current) -> Value {
    match &current.model {
        Ok((kind, model)) => json!({
            "provider": kind,
            "model": model,
            "providerFrom": current.sources.provider.describe("provider"),
            "modelFrom": current.sources.model.describe("model"),
        }),
        Err(error) => json!({"error": error}),
    }
}

/// `change` for every session of the server, through its handle, and
/// for those made later. The main session (made if there is none yet,
/// brought up to the settings first) decides what the change means — a
/// model of the other API switches the provider — and its answer is what
/// the next turn uses; the others follow it.
pub async fn change_everywhere(
    state: &Arc<State>,
    change: SessionChange,
) -> Result<Current, String> {
    let layers = state.layers().await?;
    let main = state.handle_of(MAIN_SESSION);
    main.set_layers(layers).await.map_err(|e| e.to_string())?;
    let now = main
        .change(change.clone())
        .await
        .map_err(|e| e.to_string())?;
    *state.chosen.locked() = main.session().layers().session;
    let others: Vec<SessionHandle> = state
        .lock_sessions()
        .iter()
        .filter(|(name, _)| name.as_str() != MAIN_SESSION)
        .map(|(_, session)| session.handle.clone())
        .collect();
    for other in others {
        if let Err(error) = other.change(change.clone()).await {
            tracing::warn!(%error, "a session keeps its model and effort");
        }
    }
    Ok(now)
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
        let change = SessionChange {
            settings_model: true,
            ..SessionChange::default()
        };
        let now = change_everywhere(state, change).await?;
        return Ok(json!({"reset": true, "current": model_entry(&now)}));
    }
    if provider.is_none() && model.is_none() {
        if argument.get("model").is_some() {
            return Err("model: give a model's name".into());
        }
        let listed = listed(state).await;
        let (current, _) = current(state).await?;
        return Ok(choices(&current, listed));
    }
    let kind = provider
        .map(|name| parse_kind(name).map_err(|e| format!("provider `{name}`: {e}")))
        .transpose()?;
    let change = SessionChange {
        provider: kind,
        model: model.map(str::to_string),
        ..SessionChange::default()
    };
    let now = change_everywhere(state, change).await?;
    Ok(json!({
        "current": model_entry(&now),
        "message": "the next turn uses it",
    }))
}

/// What the main session's provider lists for its key (asked once per
/// session, through its own client): the session is made, and brought up
/// to the settings, if no turn made it yet.
async fn listed(state: &Arc<State>) -> Listing {
    let main = state.handle_of(MAIN_SESSION);
    match state.layers().await {
        Ok(layers) => {
            if let Err(error) = main.set_layers(layers).await {
                tracing::warn!(%error, "the model list uses the session's settings as they are");
            }
        }
        Err(error) => tracing::warn!(%error, "cannot read the settings for the model list"),
    }
    main.session().list_models().await
}

/// What a client offers the user to pick from: for the provider in use,
/// the models its API lists (else the built-in ones, and `note` says
/// why); for the other, the built-in suggestions.
fn choices(current: &Current, listed: Listing) -> Value {
    let current = model_entry(current);
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
