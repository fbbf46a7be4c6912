//! `bareagent mcp`: `list` — the MCP servers this directory's settings
//! configure, started as a session would start them, with their state and
//! their tools; then stopped — and `add` / `remove`, which write the
//! user's config or the project's settings as Claude Code's and Codex's
//! commands of those names do (`NAME -- COMMAND ARGS`, `NAME URL`, `-e`,
//! `-H`, `--scope`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};

use super::McpAction;
use crate::config::Config;
use crate::mcp::config::valid_server_name;
use crate::mcp::{McpServers, Status};

/// Which settings file `add` and `remove` write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    /// The user's own config: the server starts in every project.
    User,
    /// This project's `.bareagent/config.toml`, shared with the repository:
    /// it starts only where the project is trusted (`bareagent trust`).
    Project,
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The server's name: its tools reach the model as `mcp__NAME__TOOL`.
    pub name: String,
    /// The command to run (stdio), after `--` when it has flags of its own,
    /// or the server's `http(s)://` URL (Streamable HTTP).
    #[arg(required = true, num_args = 1.., value_name = "COMMAND_OR_URL")]
    pub command: Vec<String>,
    /// An environment variable for a stdio server, `KEY=VALUE` (a secret is
    /// better written `KEY=${VAR}`: expanded at start, never stored).
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// A header for an HTTP server, `"Name: value"`.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Where to write it.
    #[arg(short = 's', long, value_enum, default_value = "user")]
    pub scope: Scope,
}

pub async fn mcp(action: McpAction) -> anyhow::Result<()> {
    match action {
        McpAction::List { json } => list(json).await,
        McpAction::Add(args) => add(args),
        McpAction::Remove { name, scope } => remove(&name, scope),
    }
}

fn settings_file(scope: Scope) -> anyhow::Result<PathBuf> {
    Ok(match scope {
        Scope::User => crate::config::user_config_path()
            .context("cannot find the user's config directory: set HOME or XDG_CONFIG_HOME")?,
        Scope::Project => {
            let root = std::env::current_dir().context("cannot read the current directory")?;
            let file = crate::config::project_config_path(&root);
            // A cloned repository may hold either as a link to your own
            // config: written through, your settings would land in a file
            // you commit.
            for path in [root.join(crate::workspace::OWN_DIR), file.clone()] {
                if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                    bail!(
                        "{} is a symbolic link: bareagent does not write the project's settings through it",
                        path.display()
                    );
                }
            }
            file
        }
    })
}

fn add(args: AddArgs) -> anyhow::Result<()> {
    if !valid_server_name(&args.name) {
        bail!(
            "`{}` cannot be an MCP server's name: use ASCII letters, digits, `-` and single `_` (at most 32)",
            args.name
        );
    }
    let pair = |text: &str, separator: char, what: &str| -> anyhow::Result<(String, String)> {
        match text.split_once(separator) {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok((key.trim().to_string(), value.trim_start().to_string()))
            }
            _ => bail!("`{text}` is not {what}"),
        }
    };
    let mut server = toml_edit::Table::new();
    let first = &args.command[0];
    let http = first.starts_with("http://") || first.starts_with("https://");
    if http {
        if args.command.len() > 1 {
            bail!(
                "an HTTP server is its URL alone; `{}` follows it",
                args.command[1..].join(" ")
            );
        }
        if !args.env.is_empty() {
            bail!(
                "`--env` is for a server bareagent starts (stdio); an HTTP server takes `--header`"
            );
        }
        server.insert("url", toml_edit::value(first.as_str()));
        let mut headers = toml_edit::InlineTable::new();
        for header in &args.headers {
            let (name, value) = pair(header, ':', "a header (`Name: value`)")?;
            headers.insert(&name, value.into());
        }
        if !headers.is_empty() {
            server.insert("headers", toml_edit::value(headers));
        }
    } else {
        if !args.headers.is_empty() {
            bail!("`--header` is for an HTTP server; `{first}` is a command (stdio)");
        }
        server.insert("command", toml_edit::value(first.as_str()));
        if args.command.len() > 1 {
            let list: toml_edit::Array = args.command[1..].iter().map(String::as_str).collect();
            server.insert("args", toml_edit::value(list));
        }
        let mut env = toml_edit::InlineTable::new();
        for variable in &args.env {
            let (key, value) = pair(variable, '=', "an environment variable (`KEY=VALUE`)")?;
            env.insert(&key, value.into());
        }
        if !env.is_empty() {
            server.insert("env", toml_edit::value(env));
        }
    }
    let file = settings_file(args.scope)?;
    crate::config::add_mcp_server(&file, &args.name, server).map_err(anyhow::Error::msg)?;
    let literal = args
        .env
        .iter()
        .chain(&args.headers)
        .any(|value| !value.contains("${"));
    if args.scope == Scope::Project && literal {
        eprintln!(
            "bareagent: the values of -e and -H are written as given into {}, a file you may commit: for a secret, write `${{VAR}}` (read from your environment when the server starts)",
            file.display()
        );
    }
    // Values may be secrets: the line names what was added, not them.
    let what = if http {
        format!("Streamable HTTP server `{}` ({first})", args.name)
    } else {
        format!("stdio server `{}` ({})", args.name, args.command.join(" "))
    };
    println!("Added the MCP {what} to {}.", file.display());
    if args.scope == Scope::Project {
        println!(
            "A project's servers start only where it is trusted (`bareagent trust`); check it with `bareagent mcp list`."
        );
    }
    Ok(())
}

fn remove(name: &str, scope: Option<Scope>) -> anyhow::Result<()> {
    let scopes = match scope {
        Some(scope) => vec![scope],
        None => vec![Scope::User, Scope::Project],
    };
    let mut naming = Vec::new();
    for scope in scopes {
        let file = settings_file(scope)?;
        if crate::config::names_mcp_server(&file, name).map_err(anyhow::Error::msg)? {
            naming.push(file);
        }
    }
    match naming.as_slice() {
        [file] => {
            crate::config::remove_mcp_server(file, name).map_err(anyhow::Error::msg)?;
            println!("Removed the MCP server `{name}` from {}.", file.display());
            Ok(())
        }
        [user, project] => bail!(
            "both {} and {} name an MCP server `{name}`: say which with `--scope user` or `--scope project`",
            user.display(),
            project.display()
        ),
        _ => {
            let root = std::env::current_dir().context("cannot read the current directory")?;
            let in_mcp_json = std::fs::read(root.join(".mcp.json"))
                .ok()
                .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
                .is_some_and(|json| json["mcpServers"].get(name).is_some());
            if in_mcp_json {
                bail!(
                    "`{name}` comes from this project's .mcp.json, which bareagent reads but does not write: edit that file"
                );
            }
            bail!(
                "no MCP server named `{name}` in {}",
                match scope {
                    Some(Scope::User) => "your config",
                    Some(Scope::Project) => "this project's .bareagent/config.toml",
                    None => "your config or this project's .bareagent/config.toml",
                }
            )
        }
    }
}

async fn list(json: bool) -> anyhow::Result<()> {
    let root = std::env::current_dir().context("cannot read the current directory")?;
    let settings = Config::load(&root).map_err(anyhow::Error::msg)?;
    if let Some(notice) = settings.ignored_notice(&root) {
        eprintln!("bareagent: {notice}");
    }
    // Failures are in the listing itself: no second copy on stderr.
    let servers = McpServers::new(&settings.mcp, &root, Arc::new(|_| {}));
    let tools = servers.tools().await;
    let report = servers.report();
    servers.stop().await;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    if report.is_empty() {
        println!("No MCP servers are configured (see `[mcp.servers.NAME]` in the README).");
        return Ok(());
    }
    for server in &report {
        let state = match &server.status {
            Status::Running { tools } => format!("running, {}", crate::text::count(*tools, "tool")),
            Status::Failed { error, .. } => format!("failed: {error}"),
            Status::NotStarted => "not started".into(),
            Status::Starting => "starting".into(),
            Status::Stopped => "stopped".into(),
        };
        println!(
            "{} ({}, from {}): {state}",
            server.name,
            server.transport,
            server.origin.describe()
        );
        for tool in &server.tools {
            println!("  {tool}");
        }
    }
    if tools
        .iter()
        .any(|tool| tool.spec().name == crate::mcp::search::CALL_NAME)
    {
        println!(
            "(more tools than `[mcp] max_tools`: the model finds them with mcp_search and calls them with mcp_call)"
        );
    }
    Ok(())
}
