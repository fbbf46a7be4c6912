//! A session's settings, resolved once from its layers. Each front end
//! reads its own inputs into [`Layer`]s (the command line, the editor's
//! settings, what the user chose during the session) and the one
//! [`SessionSettings::resolve`] decides every setting by the same table:
//!
//! | setting          | session | command line | editor | environment | files |
//! |------------------|---------|--------------|--------|-------------|-------|
//! | provider, model  | ✓       | ✓            | ✓      | ✓           | ✓     |
//! | mode             | ✓       | ✓            | ✓      |             | ✓     |
//! | base URL, replay, record, idle timeout, attempts, stream, iterations | | ✓ | ✓ | | |
//! | context window, compact at | | | ✓        |             | ✓     |
//!
//! The first layer from the left that says a value wins; none: the
//! default. Rules, MCP servers and the sandbox are not chosen but merged
//! (the settings files' `Config`, the editor's lists added to it; an ACP
//! client's MCP servers added too): a layer can add a rule, never take one
//! away. The environment's provider keys and base URLs are read by the
//! provider itself (`provider::choice`), after every layer here.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::Config;
use crate::permission::PermissionMode;
use crate::provider::retry::RetryPolicy;
use crate::provider::{FromEnvironment, HttpSettings, ProviderError, ProviderKind};

/// One layer's answer for each setting it can give; `None`: it says nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Layer {
    pub provider: Option<ProviderKind>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// Answer from a recording (the offline demo, and tests).
    pub replay: Option<PathBuf>,
    /// Record every exchange to this file.
    pub record: Option<PathBuf>,
    pub mode: Option<PermissionMode>,
    pub max_iterations: Option<usize>,
    pub idle_timeout: Option<Duration>,
    pub max_attempts: Option<u32>,
    pub stream: Option<bool>,
    pub context_window: Option<u64>,
    pub compact_at: Option<f64>,
}

impl Layer {
    /// `BAREAGENT_PROVIDER` and `BAREAGENT_MODEL`: the only settings read
    /// from the environment, read here for every front end.
    pub fn from_environment() -> Result<Layer, ProviderError> {
        let named = FromEnvironment::read()?;
        Ok(Layer {
            provider: named.kind,
            model: named.model,
            ..Layer::default()
        })
    }

    /// What the settings files choose (their rules and servers are merged,
    /// not chosen: see [`SessionSettings::files`]).
    pub fn from_files(files: &Config) -> Layer {
        Layer {
            provider: files.provider,
            model: files.model.clone(),
            mode: files.permissions.mode,
            context_window: files.context.window,
            compact_at: files.context.compact_at,
            ..Layer::default()
        }
    }
}

/// Where the session is used: it decides the system prompt and the tools
/// (the editor's have the diagnostics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    Terminal,
    Editor,
}

/// Every layer a session's settings come from, highest first.
#[derive(Clone, Debug, Default)]
pub struct Layers {
    /// Chosen during the session: `/model`, `/mode`, `bareagent.setModel`,
    /// ACP's `session/set_mode`.
    pub session: Layer,
    pub command_line: Layer,
    /// `initializationOptions` / `workspace/configuration`.
    pub editor: Layer,
    pub environment: Layer,
    /// The settings files: the user's, and the project's as far as it is
    /// trusted (`Config::load`), with the rule lists and MCP servers of the
    /// other layers already added.
    pub files: Config,
}

/// What builds the provider: two sessions with equal ones can share it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderSettings {
    pub kind: Option<ProviderKind>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub replay: Option<PathBuf>,
    pub record: Option<PathBuf>,
    pub idle_timeout: Duration,
    pub max_attempts: u32,
    /// Send OpenAI's `prompt_cache_key` (`None`: only to api.openai.com).
    pub send_cache_key: Option<bool>,
}

impl ProviderSettings {
    /// The provider's HTTP settings; retries go to `on_retry`.
    pub fn http(&self, on_retry: Option<crate::provider::retry::RetryObserver>) -> HttpSettings {
        HttpSettings {
            idle_timeout: self.idle_timeout,
            retry: RetryPolicy {
                max_attempts: self.max_attempts,
                ..RetryPolicy::default()
            },
            on_retry,
            ..HttpSettings::default()
        }
    }
}

/// A session's settings, every one decided.
#[derive(Clone, Debug)]
pub struct SessionSettings {
    pub root: PathBuf,
    pub surface: Surface,
    pub provider: ProviderSettings,
    pub mode: PermissionMode,
    /// Model calls per turn before the turn ends with an error.
    pub max_iterations: usize,
    pub stream: bool,
    pub context_window: Option<u64>,
    pub compact_at: Option<f64>,
    /// The merged rules, sandbox, MCP servers, prices and edits.
    pub files: Config,
}

/// The defaults, where no layer says.
pub const DEFAULT_MAX_ITERATIONS: usize = 200;
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

impl SessionSettings {
    /// Decides each setting: the first layer that says it, else its default.
    pub fn resolve(root: PathBuf, surface: Surface, layers: Layers) -> SessionSettings {
        let files = Layer::from_files(&layers.files);
        let order = [
            &layers.session,
            &layers.command_line,
            &layers.editor,
            &layers.environment,
            &files,
        ];
        macro_rules! first {
            ($field:ident) => {
                order.iter().find_map(|layer| layer.$field.clone())
            };
        }
        SessionSettings {
            provider: ProviderSettings {
                kind: first!(provider),
                model: first!(model),
                base_url: first!(base_url),
                replay: first!(replay),
                record: first!(record),
                idle_timeout: first!(idle_timeout)
                    .unwrap_or(DEFAULT_IDLE_TIMEOUT)
                    .max(Duration::from_secs(1)),
                max_attempts: first!(max_attempts)
                    .unwrap_or(RetryPolicy::default().max_attempts)
                    .max(1),
                send_cache_key: layers.files.prompt_cache_key,
            },
            mode: first!(mode).unwrap_or_default(),
            max_iterations: first!(max_iterations).unwrap_or(DEFAULT_MAX_ITERATIONS),
            stream: first!(stream).unwrap_or(true),
            context_window: first!(context_window),
            compact_at: first!(compact_at),
            files: layers.files,
            root,
            surface,
        }
    }
}
