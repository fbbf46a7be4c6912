//! `bareagent sessions` (the list), `bareagent sessions rm ID`, and which
//! session `bareagent run` and `bareagent chat` write to: a new one, or
//! with `--continue` / `--resume ID` (or `/resume`) an old one, read back
//! and repaired.

use anyhow::Context;

use super::{AgentArgs, RunArgs, SessionsAction};
use crate::agent::Message;
use crate::history::Usage;
use crate::session_files::{self, SessionFile, SessionFileError};
use crate::workspace::{DiskWorkspace, PathResolver, Workspace};

/// `bareagent sessions [rm ID]`, in the current directory.
pub fn sessions(action: Option<SessionsAction>) -> anyhow::Result<()> {
    let root = std::env::current_dir().context("cannot read the current directory")?;
    let paths = PathResolver::new(&root).context("cannot open the workspace")?;
    match action {
        Some(SessionsAction::Rm { id }) => {
            session_files::remove(&paths, &id)?;
            println!("Removed session {id}.");
        }
        None => print_list(&paths)?,
    }
    Ok(())
}

/// The list `bareagent sessions` and `/sessions` print, the last used first.
pub fn print_list(paths: &PathResolver) -> anyhow::Result<()> {
    let list = session_files::list(paths)?;
    if list.is_empty() {
        println!("No sessions in this workspace yet.");
    }
    for s in list {
        let prompt = s.first_prompt.as_deref().unwrap_or("");
        // A session file may have come with the repository: its text
        // shows, and never drives the terminal.
        let prompt = super::diff_view::visible_lines(crate::text::prefix(
            prompt.lines().next().unwrap_or(""),
            60,
        ));
        let cost = match s.cost_usd {
            Some(usd) => format!("${usd:.4}"),
            None => "cost unknown".to_string(),
        };
        println!(
            "{}  {}  {:>3} turns  {:>7} tokens  {:>12}  {:>8}  {prompt}",
            s.id,
            s.date,
            s.turns,
            s.tokens,
            cost,
            size(s.size)
        );
    }
    Ok(())
}

fn size(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// Which session a run or a chat writes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Which {
    New,
    /// The workspace's latest (`--continue`, `/resume`).
    Latest,
    /// `--resume ID`, `/resume ID`.
    Id(String),
}

impl Which {
    pub fn of(args: &AgentArgs) -> Which {
        match (&args.resume, args.continue_last) {
            (Some(id), _) => Which::Id(id.clone()),
            (None, true) => Which::Latest,
            (None, false) => Which::New,
        }
    }
}

/// A session opened to write to, and what it had.
pub struct Opened {
    pub file: SessionFile,
    /// The history it starts from (repaired).
    pub messages: Vec<Message>,
    /// The usage its model calls reported so far.
    pub usage: Usage,
    /// What they cost, as recorded; `None`: some call's price was unknown.
    pub cost_usd: Option<f64>,
}

/// `bareagent run --rewind [--resume ID]`: the last turn undone, on disk.
/// Exits 1 when a file was left as it is.
pub async fn rewind(
    workspace: &DiskWorkspace,
    args: &RunArgs,
) -> anyhow::Result<std::process::ExitCode> {
    let paths = workspace.paths();
    let id = match &args.agent.resume {
        Some(id) => id.clone(),
        None => session_files::latest(paths)?.ok_or(SessionFileError::NoSession)?,
    };
    let (_, file) = session_files::load(paths, &id)?;
    // Only its deny rules count: nobody is asked about an undo.
    let settings = crate::config::Config::load(paths.root()).map_err(anyhow::Error::msg)?;
    let gate = crate::session::deny_rules_gate(&settings, paths.root())?;
    let rewound = crate::rewind::rewind(workspace, &file, &gate).await?;
    if args.json {
        let event = serde_json::json!({
            "type": "rewound",
            "session": id,
            "restored": rewound.restored,
            "refused": rewound.refused,
        });
        println!("{event}");
    } else {
        println!("Session {id}: {}.", rewound.describe());
    }
    Ok(if rewound.refused.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    })
}

/// The session this run writes to, and the history it starts from.
pub fn open(paths: &PathResolver, args: &AgentArgs) -> anyhow::Result<(SessionFile, Vec<Message>)> {
    open_which(paths, &Which::of(args)).map(|opened| (opened.file, opened.messages))
}

/// Opens `which` session; an old one is said on stderr, with its size.
pub fn open_which(paths: &PathResolver, which: &Which) -> anyhow::Result<Opened> {
    let id = match which {
        Which::Id(id) => id.clone(),
        Which::Latest => match session_files::latest(paths)? {
            Some(id) => id,
            None => anyhow::bail!("there is no session in this workspace yet to go on with"),
        },
        Which::New => {
            return Ok(Opened {
                file: SessionFile::create(paths),
                messages: Vec::new(),
                usage: Usage::default(),
                cost_usd: Some(0.0),
            });
        }
    };
    let (loaded, file) = session_files::load(paths, &id)?;
    let repaired = match loaded.repaired {
        0 => String::new(),
        n => format!("; {n} tool call(s) cut by the end of the last run marked interrupted"),
    };
    eprintln!(
        "bareagent: resuming session {id} ({} messages{repaired})",
        loaded.messages.len()
    );
    Ok(Opened {
        file,
        messages: loaded.messages,
        usage: loaded.usage,
        cost_usd: loaded.cost_usd,
    })
}
