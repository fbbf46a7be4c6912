//! The command line: `bareagent` (the language server), `bareagent run`
//! (one headless turn), `bareagent chat` (turns typed at a prompt),
//! `bareagent sessions`, `bareagent --version`.

mod approve;
mod chat;
mod command_tail;
mod diff_view;
mod line_editor;
mod log_line;
mod markdown;
mod mcp;
mod mentions;
mod output;
mod recap;
mod run;
mod session_spend;
mod sessions;
mod slash;
mod terminal_agent;
mod turn_keys;

use std::path::PathBuf;

use clap::builder::{EnumValueParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::permission::PermissionMode;
use crate::provider::ProviderKind;

pub use chat::chat;
pub use log_line::Sentence as LogSentence;
pub use mcp::mcp;
pub use run::run;
pub use sessions::sessions;

#[derive(Debug, Parser)]
#[command(
    name = "bareagent",
    version,
    about = "A coding agent that runs inside any editor as a language server"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Accepted and ignored: the server always speaks on stdin/stdout
    /// (language clients such as vscode-languageclient append it).
    #[arg(long, global = true, hide = true)]
    pub stdio: bool,

    /// The editor's process: the language server exits when it ends.
    #[arg(
        long = "clientProcessId",
        global = true,
        hide = true,
        value_name = "PID"
    )]
    pub client_process_id: Option<u32>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the Language Server Protocol on stdin/stdout (the default).
    Lsp,
    /// Serve the Agent Client Protocol on stdin/stdout (Zed, JetBrains, CodeCompanion, avante.nvim).
    Acp(crate::acp::AcpArgs),
    /// Run one agent turn in the current directory, without an editor.
    Run(RunArgs),
    /// Talk with the agent in the current directory, a turn per prompt (`/help` lists the commands).
    Chat(ChatArgs),
    /// List this workspace's saved sessions (the last used first), or remove one.
    Sessions {
        #[command(subcommand)]
        action: Option<SessionsAction>,
    },
    /// Trust a directory's own settings (`.bareagent/config.toml`): until
    /// then they may only restrict what the agent may do.
    Trust {
        /// The project directory (default: the current one).
        path: Option<PathBuf>,
        /// Stop trusting it: its settings may again only restrict.
        #[arg(long)]
        remove: bool,
    },
    /// The MCP servers configured here (user config, project settings,
    /// `.mcp.json`): list them (started, their state and tools, then
    /// stopped), add one, remove one.
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Each server, its state and its tools.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add a server: `bareagent mcp add NAME -- COMMAND [ARGS...]` (stdio)
    /// or `bareagent mcp add NAME URL` (Streamable HTTP).
    Add(mcp::AddArgs),
    /// Remove a server from the user's config or the project's settings.
    Remove {
        name: String,
        /// Which file (default: the one that names it).
        #[arg(long, short = 's', value_enum)]
        scope: Option<mcp::Scope>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// Delete a session's file.
    Rm {
        /// The session's id (as `bareagent sessions` lists it).
        id: String,
    },
}

/// `bareagent trust [--remove] [PATH]`.
pub fn trust(path: Option<PathBuf>, remove: bool) -> anyhow::Result<()> {
    let root = match path {
        Some(path) => path,
        None => std::env::current_dir()?,
    };
    if remove {
        let (written, was) = crate::config::untrust_project(&root).map_err(anyhow::Error::msg)?;
        let root = root.canonicalize().unwrap_or(root);
        if was {
            println!(
                "No longer trusted: {}: its .bareagent/config.toml may again only restrict what the agent may do (recorded in {}).",
                root.display(),
                written.display()
            );
        } else {
            println!("{} was not trusted; nothing changed.", root.display());
        }
        return Ok(());
    }
    let written = crate::config::trust_project(&root).map_err(anyhow::Error::msg)?;
    println!(
        "Trusted {}: its .bareagent/config.toml now applies in full (recorded in {}).",
        root.canonicalize().unwrap_or(root).display(),
        written.display()
    );
    Ok(())
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// What to ask the agent; none, or `-`: read it from stdin
    /// (`echo "explain" | bareagent run`).
    #[arg(value_name = "PROMPT")]
    pub prompt: Vec<String>,

    /// Undo the last turn of the latest session (or of `--resume ID`): put
    /// back the files it edited, where nobody changed them since, and drop
    /// the turn from the session's history. Asks the model nothing.
    #[arg(long, conflicts_with_all = ["prompt", "continue_last"])]
    pub rewind: bool,

    #[command(flatten)]
    pub agent: AgentArgs,

    /// Print one JSON event per line on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
}

/// What `bareagent run` and `bareagent chat` share: which session, which
/// model, who decides, and the limits of a turn.
#[derive(Clone, Debug, Args)]
pub struct AgentArgs {
    /// Go on with this workspace's latest session instead of starting one.
    #[arg(long = "continue", conflicts_with = "resume")]
    pub continue_last: bool,

    /// Go on with the session ID (see `bareagent sessions`).
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,

    /// Model API to use (over BAREAGENT_PROVIDER). Default: anthropic if ANTHROPIC_API_KEY or
    /// ANTHROPIC_AUTH_TOKEN is set, else openai if OPENAI_API_KEY or
    /// OPENAI_BASE_URL is set.
    #[arg(
        long,
        value_parser = EnumValueParser::<ProviderArg>::new().map(ProviderKind::from),
    )]
    pub provider: Option<ProviderKind>,

    /// Model name, over BAREAGENT_MODEL (default: claude-opus-4-8 / gpt-5.5).
    #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub model: Option<String>,

    /// API base URL (default: ANTHROPIC_BASE_URL / OPENAI_BASE_URL, else the
    /// public endpoint). Behind a gateway, ANTHROPIC_AUTH_TOKEN is sent as a
    /// bearer token and ANTHROPIC_CUSTOM_HEADERS / OPENAI_CUSTOM_HEADERS
    /// (`Name: value` lines) as extra headers.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Who decides about edits and commands (default: the config file's, else `default`).
    #[arg(
        long,
        value_parser = EnumValueParser::<PermissionModeArg>::new().map(PermissionMode::from),
    )]
    pub permission_mode: Option<PermissionMode>,

    /// Model calls per turn before giving up [default: 200].
    #[arg(long, value_name = "N", value_parser = at_least_one::<usize>)]
    pub max_iterations: Option<usize>,

    /// Write every model request and response to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,

    /// Answer from a recording instead of a model, offline.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,

    /// Do not print the diff of each edit applied without asking (as
    /// `--permission-mode accept-edits` applies them), nor the model's
    /// thinking.
    #[arg(long)]
    pub quiet: bool,

    /// Ask for whole responses instead of streaming them.
    #[arg(long)]
    pub no_stream: bool,

    /// Seconds without data from the model before a call fails [default: 120].
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<u64>,

    /// Attempts per model call, retries on rate limits and server errors
    /// included [default: 4].
    #[arg(long, value_name = "N", value_parser = at_least_one::<u32>)]
    pub max_attempts: Option<u32>,

    #[command(flatten)]
    pub reasoning: crate::session::ReasoningArgs,
}

/// A count that must be 1 or more (`--max-iterations 0` would fail every
/// turn before its first call; `--max-attempts 0` would never call).
fn at_least_one<N>(text: &str) -> Result<N, String>
where
    N: std::str::FromStr + PartialOrd + From<u8>,
{
    match text.parse::<N>() {
        Ok(n) if n >= N::from(1) => Ok(n),
        Ok(_) => Err("must be 1 or more".to_string()),
        Err(_) => Err(format!("{text:?} is not a whole number")),
    }
}

/// `--provider`'s values: the command line's names for [`ProviderKind`],
/// here so that the provider module knows nothing of clap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum ProviderArg {
    Anthropic,
    Openai,
    Replay,
}

impl From<ProviderArg> for ProviderKind {
    fn from(arg: ProviderArg) -> Self {
        match arg {
            ProviderArg::Anthropic => ProviderKind::Anthropic,
            ProviderArg::Openai => ProviderKind::Openai,
            ProviderArg::Replay => ProviderKind::Replay,
        }
    }
}

/// `--permission-mode`'s values, and their help, for [`PermissionMode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum PermissionModeArg {
    /// Reads are allowed; edits and commands ask.
    Default,
    /// Reads and edits are allowed; commands ask.
    AcceptEdits,
    /// Read-only: everything else is denied.
    Plan,
    /// Nothing asks; deny rules still hold, and commands stay in the sandbox.
    Bypass,
}

impl From<PermissionModeArg> for PermissionMode {
    fn from(arg: PermissionModeArg) -> Self {
        match arg {
            PermissionModeArg::Default => PermissionMode::Default,
            PermissionModeArg::AcceptEdits => PermissionMode::AcceptEdits,
            PermissionModeArg::Plan => PermissionMode::Plan,
            PermissionModeArg::Bypass => PermissionMode::Bypass,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name a value has in the settings files (serde's spelling).
    fn config_name(value: impl serde::Serialize) -> String {
        serde_json::to_value(value)
            .ok()
            .and_then(|name| name.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    fn run_args(flags: &[&str]) -> RunArgs {
        let line = ["bareagent", "run"]
            .iter()
            .chain(flags)
            .chain(&["a prompt"]);
        match Cli::try_parse_from(line) {
            Ok(Cli {
                command: Some(Command::Run(args)),
                ..
            }) => args,
            other => panic!("{flags:?}: {other:?}"),
        }
    }

    /// Every value can be given on the command line, spelled as in the
    /// settings files.
    #[test]
    fn the_flags_take_every_value_as_the_settings_spell_it() {
        use PermissionMode::*;
        // Exhaustive: a new mode does not compile here until the flag takes it.
        match Default {
            Default | AcceptEdits | Plan | Bypass => {}
        }
        for mode in [Default, AcceptEdits, Plan, Bypass] {
            let args = run_args(&["--permission-mode", &config_name(mode)]);
            assert_eq!(args.agent.permission_mode, Some(mode));
        }
        match ProviderKind::Replay {
            ProviderKind::Anthropic | ProviderKind::Openai | ProviderKind::Replay => {}
        }
        for kind in [
            ProviderKind::Anthropic,
            ProviderKind::Openai,
            ProviderKind::Replay,
        ] {
            let args = run_args(&["--provider", &config_name(kind)]);
            assert_eq!(args.agent.provider, Some(kind));
        }
    }
}
