//! `bareagent sessions` (the list), `bareagent sessions rm ID`, and which
//! session `bareagent run` writes to: a new one, or with `--continue` /
//! `--resume ID` an old one, read back and repaired.

use anyhow::Context;

use super::{RunArgs, SessionsAction};
use crate::agent::Message;
use crate::sessions::{self, SessionError, SessionFile};
use crate::workspace::{DiskWorkspace, PathResolver, Workspace};

/// `bareagent sessions [rm ID]`, in the current directory.
pub fn sessions(action: Option<SessionsAction>) -> anyhow::Result<()> {
    let root = std::env::current_dir().context("cannot read the current directory")?;
    let paths = PathResolver::new(&root).context("cannot open the workspace")?;
    match action {
        Some(SessionsAction::Rm { id }) => {
            sessions::remove(&paths, &id)?;
            println!("Removed session {id}.");
        }
        None => {
            let list = sessions::list(&paths)?;
            if list.is_empty() {
                println!("No sessions in this workspace yet.");
            }
            for s in list {
                let prompt = s.first_prompt.as_deref().unwrap_or("");
                let prompt = crate::text::prefix(prompt.lines().next().unwrap_or(""), 60);
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
        }
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

/// `bareagent run --rewind [--resume ID]`: the last turn undone, on disk.
/// Exits 1 when a file was left as it is.
pub async fn rewind(
    workspace: &DiskWorkspace,
    args: &RunArgs,
) -> anyhow::Result<std::process::ExitCode> {
    let paths = workspace.paths();
    let id = match &args.resume {
        Some(id) => id.clone(),
        None => sessions::latest(paths)?.ok_or(SessionError::NoSession)?,
    };
    let (_, file) = sessions::load(paths, &id)?;
    // Only its deny rules count: nobody is asked about an undo.
    let settings = crate::config::Config::load(paths.root()).map_err(anyhow::Error::msg)?;
    let gate = settings.deny_rules_only(paths.root())?;
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
pub fn open(paths: &PathResolver, args: &RunArgs) -> anyhow::Result<(SessionFile, Vec<Message>)> {
    let id = match (&args.resume, args.continue_last) {
        (Some(id), _) => id.clone(),
        (None, true) => match sessions::latest(paths)? {
            Some(id) => id,
            None => anyhow::bail!("--continue: there is no session in this workspace yet"),
        },
        (None, false) => return Ok((SessionFile::create(paths), Vec::new())),
    };
    let (loaded, file) = sessions::load(paths, &id)?;
    let repaired = match loaded.repaired {
        0 => String::new(),
        n => format!("; {n} tool call(s) cut by the end of the last run marked interrupted"),
    };
    eprintln!(
        "bareagent: resuming session {id} ({} messages{repaired})",
        loaded.messages.len()
    );
    Ok((file, loaded.messages))
}
