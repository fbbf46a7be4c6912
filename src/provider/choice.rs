//! Which provider to build, from the command line, the settings files and
//! the environment — shared by `bareagent run` and the language server.
//! Keys come only from the environment.

use std::path::PathBuf;

use super::{
    Anthropic, HttpSettings, OpenAi, Provider, ProviderError, ProviderKind, Recorder, Replay,
};

pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1";

#[derive(Clone, Debug, Default)]
pub struct ProviderChoice {
    pub kind: Option<ProviderKind>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// Answer from this recording instead of a model.
    pub replay: Option<PathBuf>,
    /// Record every exchange to this file.
    pub record: Option<PathBuf>,
    pub http: HttpSettings,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

impl ProviderChoice {
    /// The provider kind: as chosen, else guessed from which keys are set.
    pub fn resolved_kind(&self) -> Result<ProviderKind, ProviderError> {
        match (&self.replay, self.kind) {
            (Some(_), None | Some(ProviderKind::Replay)) => Ok(ProviderKind::Replay),
            (Some(_), Some(other)) => Err(ProviderError::Config(format!(
                "a replay answers from a file; it cannot be combined with the provider {other:?}"
            ))),
            (None, Some(kind)) => Ok(kind),
            (None, None) if env("ANTHROPIC_API_KEY").is_some() => Ok(ProviderKind::Anthropic),
            (None, None) if env("OPENAI_API_KEY").is_some() || env("OPENAI_BASE_URL").is_some() => {
                Ok(ProviderKind::Openai)
            }
            (None, None) => Err(ProviderError::Config(
                "no model provider configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY (or OPENAI_BASE_URL for a local server), or try the offline demo with --replay".into(),
            )),
        }
    }

    pub fn build(&self) -> Result<Box<dyn Provider>, ProviderError> {
        let model = |default: &str| self.model.clone().unwrap_or_else(|| default.to_string());
        let provider: Box<dyn Provider> = match self.resolved_kind()? {
            ProviderKind::Anthropic => {
                let base = self.base_url.clone().or_else(|| env("ANTHROPIC_BASE_URL"));
                Box::new(Anthropic::new(
                    base.as_deref()
                        .unwrap_or(super::anthropic::DEFAULT_BASE_URL),
                    env("ANTHROPIC_API_KEY").unwrap_or_default(),
                    &model(DEFAULT_ANTHROPIC_MODEL),
                    self.http,
                )?)
            }
            ProviderKind::Openai => {
                let base = self.base_url.clone().or_else(|| env("OPENAI_BASE_URL"));
                Box::new(OpenAi::new(
                    base.as_deref().unwrap_or(super::openai::DEFAULT_BASE_URL),
                    env("OPENAI_API_KEY"),
                    &model(DEFAULT_OPENAI_MODEL),
                    self.http,
                )?)
            }
            ProviderKind::Replay => {
                let path = self.replay.as_deref().ok_or_else(|| {
                    ProviderError::Config("the replay provider needs a recording file".into())
                })?;
                Box::new(Replay::from_file(path)?)
            }
        };
        match &self.record {
            Some(path) => Ok(Box::new(Recorder::new(provider, path).map_err(
                |error| ProviderError::Config(format!("cannot create {}: {error}", path.display())),
            )?)),
            None => Ok(provider),
        }
    }
}
