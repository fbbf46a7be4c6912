//! What a session's next turns use — provider, model, effort, thinking,
//! permission mode — as every front end shows it ([`Current`]), and the
//! one way any of them changes it ([`SessionChange`]): `/model`, `/effort`
//! and `/mode` in a chat, `bareagent.setModel` and `bareagent.setEffort` in
//! an editor, ACP's `session/set_mode` and config options. A change is the
//! session's own layer of its settings; the resolver decides the rest.

use super::settings::{Layer, SessionSettings, Sources};
use crate::permission::PermissionMode;
use crate::provider::{Effort, OpenAiWire, ProviderKind, Thinking, default_model};

/// A change to what the session's next turns use; each field left `None`
/// stays as it is. A running turn keeps what it started with.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionChange {
    /// A model by name. A model of the other API (by the model table, else
    /// its family's prefix) switches the provider with it; a name never
    /// goes to the API of the other.
    pub model: Option<String>,
    /// A provider; with no model named, its default model.
    pub provider: Option<ProviderKind>,
    /// Back to the provider and model the settings choose.
    pub settings_model: bool,
    /// `Some(None)`: back to the settings' effort.
    pub effort: Option<Option<Effort>>,
    pub thinking: Option<Thinking>,
    pub mode: Option<PermissionMode>,
}

/// Why a change was refused; the session is as it was.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error(
        "{model} is a model of the {api} API, and the session's base URL {url} is the {current} API's; start a session with --provider {api} to use it"
    )]
    OtherApi {
        model: String,
        api: &'static str,
        current: &'static str,
        url: String,
    },
    #[error("provider `replay`: a replay is set in the settings, not chosen in a session")]
    Replay,
    #[error("{model} is a model of the {api} API: {error}")]
    Switched {
        model: String,
        api: &'static str,
        error: Box<super::SessionError>,
    },
    #[error(transparent)]
    Session(#[from] Box<super::SessionError>),
}

impl SessionChange {
    /// A model change alone.
    pub fn model(name: &str) -> SessionChange {
        SessionChange {
            model: Some(name.to_string()),
            ..SessionChange::default()
        }
    }

    /// A mode change alone.
    pub fn mode(mode: PermissionMode) -> SessionChange {
        SessionChange {
            mode: Some(mode),
            ..SessionChange::default()
        }
    }

    /// The session's layer after the change, for a session whose settings
    /// are `settings`; and the provider a model's name switched to.
    pub fn onto(
        &self,
        mut layer: Layer,
        settings: &SessionSettings,
    ) -> Result<(Layer, Option<ProviderKind>), ChangeError> {
        if self.settings_model {
            (layer.provider, layer.model) = (None, None);
        }
        let mut switched = None;
        match (self.provider, &self.model) {
            (Some(ProviderKind::Replay), _) => return Err(ChangeError::Replay),
            (Some(kind), model) => {
                layer.provider = Some(kind);
                layer.model = model
                    .clone()
                    .or_else(|| default_model(kind).map(str::to_string));
            }
            (None, Some(model)) => {
                let current = settings.provider.choice().resolved_kind().ok();
                let switch = match (api_of(model), current) {
                    (_, Some(ProviderKind::Replay)) => None,
                    (Some(kind), current) if Some(kind) != current => Some(kind),
                    _ => None,
                };
                if let (Some(kind), Some(url)) = (switch, &settings.provider.base_url) {
                    return Err(ChangeError::OtherApi {
                        model: model.clone(),
                        api: api_name(kind),
                        current: current.map_or("other", api_name),
                        url: url.clone(),
                    });
                }
                layer.model = Some(model.clone());
                if switch.is_some() {
                    layer.provider = switch;
                }
                switched = switch;
            }
            (None, None) => {}
        }
        if let Some(effort) = self.effort {
            layer.effort = effort;
        }
        if let Some(thinking) = self.thinking {
            layer.thinking = Some(thinking);
        }
        if let Some(mode) = self.mode {
            layer.mode = Some(mode);
        }
        Ok((layer, switched))
    }
}

/// What the session's next turn uses, each chosen value with the layer
/// it came from: what `/status`, `bareagent.status` and ACP's config
/// options show.
#[derive(Clone, Debug, PartialEq)]
pub struct Current {
    /// The provider and the model it is asked for (`None`: a replay's), or
    /// why no provider can be used.
    pub model: Result<(ProviderKind, Option<String>), String>,
    pub effort: Option<Effort>,
    pub thinking: Thinking,
    /// OpenAI's API, for an `openai` provider.
    pub wire: Option<OpenAiWire>,
    pub mode: PermissionMode,
    pub sources: Sources,
}

impl Current {
    /// What `settings` make the next turn use.
    pub fn of(settings: &SessionSettings) -> Current {
        let choice = settings.provider.choice();
        let model = choice
            .resolved_kind()
            .and_then(|kind| Ok((kind, choice.resolved_model()?)))
            .map_err(|error| error.to_string());
        let wire = match model {
            Ok((ProviderKind::Openai, _)) => choice.resolved_wire().ok(),
            _ => None,
        };
        Current {
            model,
            effort: settings.reasoning.effort,
            thinking: settings.reasoning.thinking,
            wire,
            mode: settings.mode,
            sources: settings.sources,
        }
    }
}

/// The API a model name belongs to: the model table's, else its family's
/// prefix (`claude-…`; `gpt-…`, `o1`, `o3`, `o4…`); `None`: any (a local
/// server's model).
pub fn api_of(name: &str) -> Option<ProviderKind> {
    use crate::provider::models::{ModelReasoning, info};
    if let Some(known) = info(name) {
        return Some(match known.reasoning {
            ModelReasoning::Anthropic { .. } => ProviderKind::Anthropic,
            _ => ProviderKind::Openai,
        });
    }
    let openai = name.starts_with("gpt-")
        || name.starts_with("chatgpt-")
        || ["o1", "o3", "o4"]
            .iter()
            .any(|family| name == *family || name.starts_with(&format!("{family}-")));
    match () {
        _ if name.starts_with("claude-") => Some(ProviderKind::Anthropic),
        _ if openai => Some(ProviderKind::Openai),
        _ => None,
    }
}

/// A provider as `--provider` and the settings name it.
pub fn api_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Anthropic => "anthropic",
        ProviderKind::Openai => "openai",
        ProviderKind::Replay => "replay",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Layers, Surface};

    fn settings(kind: Option<ProviderKind>, base_url: Option<&str>) -> SessionSettings {
        let layers = Layers {
            command_line: Layer {
                provider: kind,
                base_url: base_url.map(String::from),
                ..Layer::default()
            },
            ..Layers::default()
        };
        SessionSettings::resolve("/w".into(), Surface::Terminal, layers)
    }

    /// (what is asked, the session's provider and base URL, the layer's
    /// provider and model after, or the error's start)
    #[test]
    fn a_change_is_the_sessions_layer_and_a_models_name_picks_its_api() {
        use ProviderKind::{Anthropic, Openai, Replay};
        type Want = Result<(Option<ProviderKind>, Option<&'static str>), &'static str>;
        let cases: Vec<(SessionChange, Option<ProviderKind>, Option<&str>, Want)> = vec![
            (
                SessionChange::model("gpt-5.5"),
                Some(Anthropic),
                None,
                Ok((Some(Openai), Some("gpt-5.5"))),
            ),
            (
                SessionChange::model("claude-opus-4-8"),
                Some(Anthropic),
                None,
                Ok((None, Some("claude-opus-4-8"))),
            ),
            // A local server's model goes to the provider in use.
            (
                SessionChange::model("qwen3:32b"),
                Some(Openai),
                None,
                Ok((None, Some("qwen3:32b"))),
            ),
            (
                SessionChange::model("gpt-5.5"),
                Some(Anthropic),
                Some("http://127.0.0.1:1"),
                Err("gpt-5.5 is a model of the openai API, and the session's base URL"),
            ),
            (
                SessionChange {
                    provider: Some(Openai),
                    ..SessionChange::default()
                },
                Some(Anthropic),
                None,
                Ok((Some(Openai), default_model(Openai))),
            ),
            (
                SessionChange {
                    provider: Some(Replay),
                    ..SessionChange::default()
                },
                Some(Anthropic),
                None,
                Err("provider `replay`"),
            ),
        ];
        for (change, kind, url, want) in cases {
            let got = change
                .onto(Layer::default(), &settings(kind, url))
                .map(|(layer, _)| (layer.provider, layer.model));
            match (got, want) {
                (Ok(got), Ok((provider, model))) => {
                    assert_eq!(got, (provider, model.map(String::from)), "{change:?}")
                }
                (Err(error), Err(start)) => {
                    assert!(error.to_string().starts_with(start), "{change:?}: {error}")
                }
                (got, want) => panic!("{change:?}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn back_to_the_settings_forgets_the_sessions_model_and_effort() {
        let layer = Layer {
            provider: Some(ProviderKind::Openai),
            model: Some("gpt-5.5".into()),
            effort: Some(Effort::High),
            mode: Some(PermissionMode::Plan),
            ..Layer::default()
        };
        let change = SessionChange {
            settings_model: true,
            effort: Some(None),
            ..SessionChange::default()
        };
        let (after, _) = change.onto(layer, &settings(None, None)).expect("a change");
        assert_eq!(
            (after.provider, after.model, after.effort, after.mode),
            (None, None, None, Some(PermissionMode::Plan))
        );
    }
}
