//! The command line: `bareagent` (the language server), `bareagent run`
//! (one headless turn), `bareagent --version`.

mod approve;
mod diff_view;
mod output;
mod run;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::permission::PermissionMode;
use crate::provider::ProviderKind;

pub use run::run;

#[derive(Debug, Parser)]
#[command(
    name = "bareagent",
    version,
    about = "A coding agent that runs inside any editor as a language server"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the Language Server Protocol on stdin/stdout (the default).
    Lsp,
    /// Run one agent turn in the current directory, without an editor.
    Run(RunArgs),
    /// Trust a directory's own settings (`.bareagent/config.toml`): until
    /// then they may only restrict what the agent may do.
    Trust {
        /// The project directory (default: the current one).
        path: Option<PathBuf>,
    },
}

/// `bareagent trust [PATH]`.
pub fn trust(path: Option<PathBuf>) -> anyhow::Result<()> {
    let root = match path {
        Some(path) => path,
        None => std::env::current_dir()?,
    };
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
    /// What to ask the agent.
    #[arg(required = true, value_name = "PROMPT")]
    pub prompt: Vec<String>,

    /// Model API to use. Default: anthropic if ANTHROPIC_API_KEY or
    /// ANTHROPIC_AUTH_TOKEN is set, else openai if OPENAI_API_KEY or
    /// OPENAI_BASE_URL is set.
    #[arg(long, env = crate::provider::PROVIDER_ENV, value_enum)]
    pub provider: Option<ProviderKind>,

    /// Model name (default: claude-sonnet-4-5 / gpt-4.1).
    #[arg(long, env = crate::provider::MODEL_ENV)]
    pub model: Option<String>,

    /// API base URL (default: ANTHROPIC_BASE_URL / OPENAI_BASE_URL, else the
    /// public endpoint). Behind a gateway, ANTHROPIC_AUTH_TOKEN is sent as a
    /// bearer token and ANTHROPIC_CUSTOM_HEADERS / OPENAI_CUSTOM_HEADERS
    /// (`Name: value` lines) as extra headers.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Who decides about edits and commands (default: the config file's, else `default`).
    #[arg(long, value_enum)]
    pub permission_mode: Option<PermissionMode>,

    /// Model calls per turn before giving up.
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub max_iterations: usize,

    /// Print one JSON event per line on stdout instead of text.
    #[arg(long)]
    pub json: bool,

    /// Write every model request and response to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,

    /// Answer from a recording instead of a model, offline.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,

    /// Do not print the diff of each edit applied without asking (as
    /// `--permission-mode accept-edits` applies them).
    #[arg(long)]
    pub quiet: bool,

    /// Ask for whole responses instead of streaming them.
    #[arg(long)]
    pub no_stream: bool,

    /// Seconds without data from the model before a call fails.
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    pub idle_timeout: u64,

    /// Attempts per model call, retries on rate limits and server errors included.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub max_attempts: u32,
}
