//! Which provider to build, from the command line, the settings files and
//! the environment — shared by `bareagent run` and the language server.
//! Keys come only from the environment. Everything that can be checked
//! without a request is checked here, so a mistake is a usage error at
//! start (`bareagent run` exits 2), not a failed model call.

use std::path::PathBuf;

use super::{
    Anthropic, Credentials, HttpSettings, OpenAi, OpenAiResponses, Provider, ProviderError,
    ProviderKind, Recorder, Replay,
};

/// The defaults a user of today's models expects: what Claude Code and
/// Codex ask by default (observed in Claude Code 2.1.197 and Codex 0.171.0,
/// December 2026), each thinking in its best mode (`provider::models`).
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-opus-4-8";
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-5.5";

/// The environment variables that choose the provider and the model, read
/// by `bareagent run` (as its flags' defaults) and by the language server
/// (under the editor's settings) alike.
pub const PROVIDER_ENV: &str = "BAREAGENT_PROVIDER";
pub const MODEL_ENV: &str = "BAREAGENT_MODEL";

/// A provider and a model named by the environment, each if set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FromEnvironment {
    pub kind: Option<ProviderKind>,
    pub model: Option<String>,
}

impl FromEnvironment {
    /// Reads [`PROVIDER_ENV`] and [`MODEL_ENV`]; an unknown provider is an
    /// error naming the variable (as `run` refuses it as a flag).
    pub fn read() -> Result<FromEnvironment, ProviderError> {
        let kind = match env(PROVIDER_ENV) {
            Some(name) => Some(
                parse_kind(&name)
                    .map_err(|e| ProviderError::Config(format!("{PROVIDER_ENV}={name}: {e}")))?,
            ),
            None => None,
        };
        Ok(FromEnvironment {
            kind,
            model: env(MODEL_ENV),
        })
    }
}

/// A provider's name as the settings files spell it (`anthropic`, `openai`).
pub fn parse_kind(name: &str) -> Result<ProviderKind, String> {
    use serde::Deserialize;
    use serde::de::value::{Error, StrDeserializer};
    // The settings files' spelling, so there is one list of names.
    ProviderKind::deserialize(StrDeserializer::<Error>::new(name)).map_err(|_| {
        "not a provider; the providers are anthropic, openai (and replay, with a recording)"
            .to_string()
    })
}

/// The model a provider uses when none is named.
pub fn default_model(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::Anthropic => Some(DEFAULT_ANTHROPIC_MODEL),
        ProviderKind::Openai => Some(DEFAULT_OPENAI_MODEL),
        ProviderKind::Replay => None,
    }
}

/// Models to offer for a provider, the default first. Suggestions only:
/// any name the provider serves is accepted (a local server's, say).
pub fn suggested_models(kind: ProviderKind) -> &'static [&'static str] {
    match kind {
        ProviderKind::Anthropic => &[
            DEFAULT_ANTHROPIC_MODEL,
            "claude-sonnet-5",
            "claude-haiku-4-5",
        ],
        ProviderKind::Openai => &[DEFAULT_OPENAI_MODEL, "gpt-5.4", "gpt-4.1"],
        ProviderKind::Replay => &[],
    }
}

/// Whether the environment holds what a provider needs to be called: a
/// key, or (OpenAI-compatible) a base URL of a local server.
pub fn is_configured(kind: ProviderKind) -> bool {
    match kind {
        ProviderKind::Anthropic => env("ANTHROPIC_API_KEY").is_some(),
        ProviderKind::Openai => env("OPENAI_API_KEY").is_some() || env("OPENAI_BASE_URL").is_some(),
        ProviderKind::Replay => false,
    }
}

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
    /// The session's `prompt_cache_key` (OpenAI-compatible only), see
    /// [`super::openai::session_cache_key`].
    pub cache_key: Option<String>,
    /// Whether to send it; `None`: only to api.openai.com.
    pub send_cache_key: Option<bool>,
    /// OpenAI's API to speak; `None`: [`ProviderChoice::resolved_wire`].
    pub wire: Option<super::OpenAiWire>,
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
            (None, None)
                if env("ANTHROPIC_API_KEY").is_some() || env("ANTHROPIC_AUTH_TOKEN").is_some() =>
            {
                Ok(ProviderKind::Anthropic)
            }
            (None, None) if env("OPENAI_API_KEY").is_some() || env("OPENAI_BASE_URL").is_some() => {
                Ok(ProviderKind::Openai)
            }
            (None, None) => Err(ProviderError::Config(
                "no model provider configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY (or OPENAI_BASE_URL for a local server), or try the offline demo with --replay".into(),
            )),
        }
    }

    /// The model that will be asked: as chosen, else the provider's default.
    pub fn resolved_model(&self) -> Result<Option<String>, ProviderError> {
        let kind = self.resolved_kind()?;
        Ok(self
            .model
            .clone()
            .or_else(|| default_model(kind).map(str::to_string)))
    }

    /// The OpenAI API an `openai` provider speaks: as chosen, else the
    /// Responses API for OpenAI's own endpoint and Chat Completions for any
    /// other base URL (the compatible servers speak only that).
    pub fn resolved_wire(&self) -> Result<super::OpenAiWire, ProviderError> {
        if let Some(wire) = self.wire {
            return Ok(wire);
        }
        let base = self.base_url_or_env("OPENAI_BASE_URL")?;
        Ok(match base.as_deref() {
            None => super::OpenAiWire::Responses,
            Some(url) if super::openai::is_openai_endpoint(url) => super::OpenAiWire::Responses,
            Some(_) => super::OpenAiWire::Chat,
        })
    }

    pub fn build(&self) -> Result<Box<dyn Provider>, ProviderError> {
        if let Some(url) = &self.base_url {
            check_base_url(url, "the base URL")?;
        }
        let model = |default: &str| self.model.clone().unwrap_or_else(|| default.to_string());
        let provider: Box<dyn Provider> = match self.resolved_kind()? {
            ProviderKind::Anthropic => {
                let base = self.base_url_or_env("ANTHROPIC_BASE_URL")?;
                Box::new(Anthropic::with_credentials(
                    base.as_deref()
                        .unwrap_or(super::anthropic::DEFAULT_BASE_URL),
                    Credentials::anthropic_from_env()?,
                    &model(DEFAULT_ANTHROPIC_MODEL),
                    self.http.clone(),
                )?)
            }
            ProviderKind::Openai => {
                let base = self.base_url_or_env("OPENAI_BASE_URL")?;
                let credentials = Credentials::openai_from_env()?;
                // Only a server of one's own may do without a key.
                if base.is_none() && credentials.api_key.is_none() {
                    return Err(ProviderError::Config(
                        "openai: OPENAI_API_KEY is not set (for a local server that needs no key, set OPENAI_BASE_URL or --base-url; or use --replay FILE)".into(),
                    ));
                }
                let send = self
                    .send_cache_key
                    .unwrap_or_else(|| super::openai::sends_cache_key_by_default(base.as_deref()));
                let prompt_cache_key = self.cache_key.clone().filter(|_| send);
                let send_output_limit = super::openai::sends_output_limit(base.as_deref());
                let base = base.as_deref().unwrap_or(super::openai::DEFAULT_BASE_URL);
                let model = model(DEFAULT_OPENAI_MODEL);
                match self.resolved_wire()? {
                    super::OpenAiWire::Responses => Box::new(OpenAiResponses::with_wire(
                        super::responses::Responses { prompt_cache_key },
                        base,
                        credentials,
                        &model,
                        self.http.clone(),
                    )?),
                    super::OpenAiWire::Chat => Box::new(OpenAi::with_wire(
                        super::openai::ChatCompletions {
                            prompt_cache_key,
                            send_output_limit,
                        },
                        base,
                        credentials,
                        &model,
                        self.http.clone(),
                    )?),
                }
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

impl ProviderChoice {
    /// The base URL as given, else from `var`, checked either way.
    fn base_url_or_env(&self, var: &str) -> Result<Option<String>, ProviderError> {
        match (&self.base_url, env(var)) {
            (Some(given), _) => Ok(Some(given.clone())),
            (None, Some(url)) => {
                check_base_url(&url, var)?;
                Ok(Some(url))
            }
            (None, None) => Ok(None),
        }
    }
}

/// A base URL must be an absolute `http` or `https` URL with a host: anything
/// else would only fail later, as a confusing connection error.
fn check_base_url(url: &str, what: &str) -> Result<(), ProviderError> {
    let problem = match reqwest::Url::parse(url) {
        Err(error) => error.to_string(),
        Ok(parsed) if !matches!(parsed.scheme(), "http" | "https") => {
            format!("the scheme `{}` is not http or https", parsed.scheme())
        }
        Ok(parsed) if parsed.host_str().is_none_or(str::is_empty) => "it names no host".into(),
        Ok(_) => return Ok(()),
    };
    Err(ProviderError::Config(format!(
        "{what} `{url}` is not usable ({problem}); give a full URL such as http://127.0.0.1:8080/v1"
    )))
}

#[cfg(test)]
mod tests {
    use super::check_base_url;

    #[test]
    fn only_absolute_http_urls_with_a_host_are_base_urls() {
        let cases = [
            ("http://127.0.0.1:8080/v1", true),
            ("https://api.example.com", true),
            ("notaurl", false),
            ("127.0.0.1:8080", false),
            ("ftp://example.com", false),
            ("file:///tmp/x", false),
            ("http://", false),
            ("", false),
        ];
        for (url, ok) in cases {
            assert_eq!(check_base_url(url, "the base URL").is_ok(), ok, "{url}");
        }
    }
}
