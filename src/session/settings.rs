//! A session's settings, resolved once from its layers. Each front end
//! reads its own inputs into [`Layer`]s (the command line, the editor's
//! settings, what the user chose during the session) and the one
//! [`SessionSettings::resolve`] decides every setting by the same table:
//!
//! | setting          | session | command line | editor | environment | files |
//! |------------------|---------|--------------|--------|-------------|-------|
//! | provider, model  | ✓       | ✓            | ✓      | ✓           | ✓     |
//! | mode             | ✓       | ✓            | ✓      |             | ✓     |
//! | effort, thinking | ✓       | ✓            | ✓      |             | ✓     |
//! | wire (OpenAI)    |         | ✓            | ✓      |             | ✓     |
//! | base URL, replay, record, idle timeout, attempts, stream, iterations | | ✓ | ✓ | | |
//! | context window, compact at | | | ✓        |             | ✓     |
//!
//! The first layer from the left that says a value wins; none: the
//! default; the resolved settings say which layer gave each chosen value
//! ([`Sources`]), so a status shows it without deciding again. Rules, MCP servers and the sandbox are not chosen but merged
//! (the settings files' `Config`, the editor's lists added to it; an ACP
//! client's MCP servers added too): a layer can add a rule, never take one
//! away. The environment's provider keys and base URLs are read by the
//! provider itself (`provider::choice`), after every layer here.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::Config;
use crate::permission::PermissionMode;
use crate::provider::retry::RetryPolicy;
use crate::provider::{
    Effort, FromEnvironment, HttpSettings, OpenAiWire, ProviderError, ProviderKind, Reasoning,
    Thinking,
};

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
    pub effort: Option<Effort>,
    pub thinking: Option<Thinking>,
    pub wire: Option<OpenAiWire>,
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
            effort: files.effort,
            thinking: files.thinking,
            wire: files.wire,
            ..Layer::default()
        }
    }
}

/// How hard the model thinks: `run`, `chat` and `acp` take the same flags.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ReasoningArgs {
    /// How much the model spends on an answer: minimal, low, medium, high,
    /// xhigh or max (over config.toml's `effort`; the nearest level the model
    /// takes is sent) [default: the model's].
    #[arg(long, value_name = "LEVEL", value_parser = Effort::parse)]
    pub effort: Option<Effort>,

    /// Whether the model thinks before it answers: auto or off [default: auto].
    #[arg(long, value_name = "auto|off", value_parser = Thinking::parse)]
    pub thinking: Option<Thinking>,

    /// OpenAI's API: responses or chat [default: responses for api.openai.com,
    /// chat for any other server].
    #[arg(long, value_name = "responses|chat", value_parser = OpenAiWire::parse)]
    pub wire: Option<OpenAiWire>,
}

impl ReasoningArgs {
    /// Into the command line's layer.
    pub fn onto(&self, layer: Layer) -> Layer {
        Layer {
            effort: self.effort,
            thinking: self.thinking,
            wire: self.wire,
            ..layer
        }
    }
}

/// Where the session is used: it decides the system prompt and the tools
/// (the editor's have the diagnostics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    Terminal,
    Editor,
    /// An ACP client's agent panel: the terminal's tools and prompt (the
    /// client shows the diff and runs its own terminal).
    AgentPanel,
}

/// Which layer gave a setting its value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Chosen during the session (`/model`, `bareagent.setModel`, ACP's
    /// `session/set_mode` and config options).
    Session,
    CommandLine,
    Editor,
    Environment,
    Files,
    /// No layer said it.
    #[default]
    Default,
}

impl Source {
    /// The layers in their order, highest first, as [`Layers`] holds them.
    pub const ORDER: [Source; 5] = [
        Source::Session,
        Source::CommandLine,
        Source::Editor,
        Source::Environment,
        Source::Files,
    ];

    /// Where `setting` came from, as a status says it.
    pub fn describe(self, setting: &str) -> &'static str {
        match (self, setting) {
            (Source::Session, _) => "chosen in this session",
            (Source::CommandLine, _) => "the command line",
            (Source::Editor, _) => "the editor's settings",
            (Source::Environment, "provider") => crate::provider::PROVIDER_ENV,
            (Source::Environment, "model") => crate::provider::MODEL_ENV,
            (Source::Environment, _) => "the environment",
            (Source::Files, _) => "the settings file",
            (Source::Default, "provider") => "the keys that are set",
            (Source::Default, "model") => "the provider's default",
            (Source::Default, _) => "the default",
        }
    }
}

/// Which layer gave each chosen setting (those a user picks during a
/// session and a status shows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Sources {
    pub provider: Source,
    pub model: Source,
    pub mode: Source,
    pub effort: Source,
    pub thinking: Source,
    pub wire: Source,
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
    /// Which OpenAI API (`None`: the Responses API for OpenAI's own
    /// endpoint, Chat Completions for any other).
    pub wire: Option<OpenAiWire>,
}

impl ProviderSettings {
    /// What builds the provider, as far as these settings say (the HTTP
    /// settings and the cache key are the session's to add): the one place
    /// a `ProviderChoice` is made from a session's settings.
    pub fn choice(&self) -> crate::provider::ProviderChoice {
        crate::provider::ProviderChoice {
            kind: self.kind,
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            replay: self.replay.clone(),
            record: self.record.clone(),
            send_cache_key: self.send_cache_key,
            wire: self.wire,
            ..crate::provider::ProviderChoice::default()
        }
    }

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
    /// How hard the model is asked to think, at every call.
    pub reasoning: Reasoning,
    /// The merged rules, sandbox, MCP servers, prices and edits.
    pub files: Config,
    /// Which layer decided each chosen setting.
    pub sources: Sources,
}

/// The defaults, where no layer says.
pub const DEFAULT_MAX_ITERATIONS: usize = 200;
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

impl SessionSettings {
    /// What the sandbox these settings describe would enforce here.
    pub fn sandbox_status(&self) -> crate::sandbox::SandboxStatus {
        let policy = crate::sandbox::SandboxPolicy::new(&self.files.sandbox, &self.root);
        crate::sandbox::SandboxStatus::of(&policy)
    }

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
        macro_rules! source {
            ($field:ident) => {
                order
                    .iter()
                    .zip(Source::ORDER)
                    .find_map(|(layer, source)| layer.$field.is_some().then_some(source))
                    .unwrap_or_default()
            };
        }
        let sources = Sources {
            provider: source!(provider),
            model: source!(model),
            mode: source!(mode),
            effort: source!(effort),
            thinking: source!(thinking),
            wire: source!(wire),
        };
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
                wire: first!(wire),
            },
            reasoning: Reasoning {
                thinking: first!(thinking).unwrap_or_default(),
                effort: first!(effort),
            },
            mode: first!(mode).unwrap_or_default(),
            max_iterations: first!(max_iterations).unwrap_or(DEFAULT_MAX_ITERATIONS),
            stream: first!(stream).unwrap_or(true),
            context_window: first!(context_window),
            compact_at: first!(compact_at),
            files: layers.files,
            root,
            surface,
            sources,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One setting: how a layer says value `n`, and what the resolved
    /// settings say (as text, to compare any type).
    struct Setting {
        name: &'static str,
        say: fn(&mut Layer, u32),
        /// How the settings files say it, where they can.
        in_files: Option<fn(&mut Config, u32)>,
        resolved: fn(&SessionSettings) -> String,
        /// Where the resolved settings say it came from, for the settings
        /// a status shows.
        source: Option<fn(&Sources) -> Source>,
    }

    const KINDS: [ProviderKind; 2] = [ProviderKind::Anthropic, ProviderKind::Openai];
    const MODES: [PermissionMode; 4] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::Bypass,
    ];

    fn settings() -> Vec<Setting> {
        vec![
            Setting {
                name: "provider",
                say: |l, n| l.provider = Some(KINDS[n as usize % 2]),
                in_files: Some(|c, n| c.provider = Some(KINDS[n as usize % 2])),
                resolved: |s| format!("{:?}", s.provider.kind),
                source: Some(|s| s.provider),
            },
            Setting {
                name: "model",
                say: |l, n| l.model = Some(format!("m{n}")),
                in_files: Some(|c, n| c.model = Some(format!("m{n}"))),
                resolved: |s| format!("{:?}", s.provider.model),
                source: Some(|s| s.model),
            },
            Setting {
                name: "base URL",
                say: |l, n| l.base_url = Some(format!("http://h{n}")),
                in_files: None,
                resolved: |s| format!("{:?}", s.provider.base_url),
                source: None,
            },
            Setting {
                name: "replay",
                say: |l, n| l.replay = Some(format!("r{n}").into()),
                in_files: None,
                resolved: |s| format!("{:?}", s.provider.replay),
                source: None,
            },
            Setting {
                name: "record",
                say: |l, n| l.record = Some(format!("w{n}").into()),
                in_files: None,
                resolved: |s| format!("{:?}", s.provider.record),
                source: None,
            },
            Setting {
                name: "mode",
                say: |l, n| l.mode = Some(MODES[n as usize % 4]),
                in_files: Some(|c, n| c.permissions.mode = Some(MODES[n as usize % 4])),
                resolved: |s| format!("{:?}", s.mode),
                source: Some(|s| s.mode),
            },
            Setting {
                name: "iterations",
                say: |l, n| l.max_iterations = Some(10 + n as usize),
                in_files: None,
                resolved: |s| s.max_iterations.to_string(),
                source: None,
            },
            Setting {
                name: "idle timeout",
                say: |l, n| l.idle_timeout = Some(Duration::from_secs(10 + u64::from(n))),
                in_files: None,
                resolved: |s| format!("{:?}", s.provider.idle_timeout),
                source: None,
            },
            Setting {
                name: "attempts",
                say: |l, n| l.max_attempts = Some(10 + n),
                in_files: None,
                resolved: |s| s.provider.max_attempts.to_string(),
                source: None,
            },
            Setting {
                name: "stream",
                say: |l, n| l.stream = Some(n % 2 == 0),
                in_files: None,
                resolved: |s| s.stream.to_string(),
                source: None,
            },
            Setting {
                name: "effort",
                say: |l, n| l.effort = Some(Effort::ALL[n as usize]),
                in_files: Some(|c, n| c.effort = Some(Effort::ALL[n as usize])),
                resolved: |s| format!("{:?}", s.reasoning.effort),
                source: Some(|s| s.effort),
            },
            Setting {
                name: "thinking",
                // Off is the only value that is not the default: a layer
                // below says auto, which would be the default too.
                say: |l, n| {
                    l.thinking = Some([Thinking::Auto, Thinking::Off, Thinking::Auto][n as usize])
                },
                in_files: Some(|c, n| {
                    c.thinking = Some([Thinking::Auto, Thinking::Off, Thinking::Auto][n as usize])
                }),
                resolved: |s| format!("{:?}", s.reasoning.thinking),
                source: Some(|s| s.thinking),
            },
            Setting {
                name: "wire",
                say: |l, n| {
                    l.wire = Some(
                        [OpenAiWire::Chat, OpenAiWire::Responses, OpenAiWire::Chat][n as usize],
                    )
                },
                in_files: Some(|c, n| {
                    c.wire = Some(
                        [OpenAiWire::Chat, OpenAiWire::Responses, OpenAiWire::Chat][n as usize],
                    )
                }),
                resolved: |s| format!("{:?}", s.provider.wire),
                source: Some(|s| s.wire),
            },
            Setting {
                name: "context window",
                say: |l, n| l.context_window = Some(1000 + u64::from(n)),
                in_files: Some(|c, n| c.context.window = Some(1000 + u64::from(n))),
                resolved: |s| format!("{:?}", s.context_window),
                source: None,
            },
            Setting {
                name: "compact at",
                say: |l, n| l.compact_at = Some(0.1 * f64::from(n + 1)),
                in_files: Some(|c, n| c.context.compact_at = Some(0.1 * f64::from(n + 1))),
                resolved: |s| format!("{:?}", s.compact_at),
                source: None,
            },
        ]
    }

    const LAYERS: [&str; 5] = ["session", "command line", "editor", "environment", "files"];

    /// Layers where layers `from..to` each say the setting: `from` value 1,
    /// those below it value 2 (neither the default); `None` when layer
    /// `from` cannot say it.
    fn said(setting: &Setting, from: usize, to: usize) -> Option<Layers> {
        let mut layers = Layers::default();
        for at in from..to {
            let n = if at == from { 1 } else { 2 };
            match at {
                0 => (setting.say)(&mut layers.session, n),
                1 => (setting.say)(&mut layers.command_line, n),
                2 => (setting.say)(&mut layers.editor, n),
                3 => (setting.say)(&mut layers.environment, n),
                _ => match setting.in_files {
                    Some(say) => say(&mut layers.files, n),
                    None if at == from => return None,
                    None => {}
                },
            }
        }
        Some(layers)
    }

    /// Every setting × every layer: the highest layer that says a value
    /// gives it, whatever the layers below say; none: the default.
    #[test]
    fn the_highest_layer_that_says_a_setting_decides_it() {
        let resolve = |layers| SessionSettings::resolve("/w".into(), Surface::Terminal, layers);
        let default = resolve(Layers::default());
        for setting in settings() {
            let mut decided = 0;
            for (at, layer) in LAYERS.iter().enumerate() {
                let (Some(all_below), Some(alone)) =
                    (said(&setting, at, LAYERS.len()), said(&setting, at, at + 1))
                else {
                    continue;
                };
                let alone = (setting.resolved)(&resolve(alone));
                assert_ne!(
                    alone,
                    (setting.resolved)(&default),
                    "{}: the {layer} layer's value is not the default",
                    setting.name
                );
                let resolved = resolve(all_below);
                assert_eq!(
                    (setting.resolved)(&resolved),
                    alone,
                    "{}: the {layer} layer decides over those below it",
                    setting.name
                );
                if let Some(source) = setting.source {
                    assert_eq!(
                        source(&resolved.sources),
                        Source::ORDER[at],
                        "{}: the source is the {layer} layer",
                        setting.name
                    );
                    assert_eq!(
                        source(&default.sources),
                        Source::Default,
                        "{}",
                        setting.name
                    );
                }
                decided += 1;
            }
            let expected = if setting.in_files.is_some() { 5 } else { 4 };
            assert_eq!(decided, expected, "{}", setting.name);
        }
    }

    #[test]
    fn the_defaults() {
        let s = SessionSettings::resolve("/w".into(), Surface::Terminal, Layers::default());
        assert_eq!(s.max_iterations, 200);
        assert_eq!(s.provider.idle_timeout, Duration::from_secs(120));
        assert_eq!(s.provider.max_attempts, 4);
        assert!(s.stream);
        assert_eq!(s.mode, PermissionMode::Default);
    }
}
