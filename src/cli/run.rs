//! `bareagent run`: one turn in the current directory, on the terminal.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use serde_json::json;

use super::RunArgs;
use super::output::{TurnSink, print_json_line};
use super::terminal_agent::TerminalAgent;
use tokio_util::sync::CancellationToken;

use crate::agent::LoopError;
use crate::workspace::{DiskWorkspace, Workspace};

pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    if args.rewind {
        let root = std::env::current_dir().context("cannot read the current directory")?;
        let workspace = DiskWorkspace::new(&root).context("cannot open the workspace")?;
        return super::sessions::rewind(&workspace, &args).await;
    }
    let prompt = prompt_of(&args.prompt).await?;
    let agent = TerminalAgent::assemble(&args.agent, args.json).await?;
    let sink = agent.sink.clone();
    let cancel = CancellationToken::new();
    tokio::spawn(cancel_on_ctrl_c(cancel.clone(), sink.clone()));
    let (file, messages) = super::sessions::open(agent.workspace.paths(), &args.agent)?;
    if args.json {
        // First, so a script can `--resume` the session whatever happens next.
        print_json_line(&json!({"type": "session", "id": file.id()}));
    }
    agent
        .session()
        .start_conversation(Some(Arc::new(file)), messages);
    sink.started();
    let prompt = crate::agent::Message::user_text(prompt);
    let end = agent.turn(prompt, sink.clone(), cancel).await;
    agent.close().await;
    match end.result {
        Ok(outcome) => {
            sink.finished(&outcome);
            Ok(ExitCode::SUCCESS)
        }
        Err(LoopError::Cancelled) => {
            sink.failed("cancelled");
            Ok(ExitCode::from(130))
        }
        Err(error) => {
            sink.failed(&error.to_string());
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The prompt: the words given, else (none, or `-`) all of stdin. An
/// empty one is refused: the model would get an empty message.
async fn prompt_of(words: &[String]) -> anyhow::Result<String> {
    let from_stdin = words.is_empty() || words == ["-"];
    let prompt = if from_stdin {
        if words.is_empty() && std::io::stdin().is_terminal() {
            anyhow::bail!(
                "no prompt: give it as an argument (`bareagent run \"fix the tests\"`), or on stdin (`echo \"fix the tests\" | bareagent run`); for turns typed at a prompt, use `bareagent chat`"
            );
        }
        tokio::task::spawn_blocking(|| std::io::read_to_string(std::io::stdin()))
            .await
            .context("cannot read the prompt from stdin")?
            .context("cannot read the prompt from stdin")?
            .trim()
            .to_string()
    } else {
        words.join(" ")
    };
    if prompt.trim().is_empty() {
        match from_stdin {
            true => anyhow::bail!("the prompt read from stdin is empty: nothing to ask"),
            false => anyhow::bail!("the prompt is empty: nothing to ask"),
        }
    }
    Ok(prompt)
}

/// The first Ctrl-C cancels the turn (running commands are killed, the
/// history stays valid); a second one quits at once.
async fn cancel_on_ctrl_c(cancel: CancellationToken, sink: Arc<dyn TurnSink>) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    sink.notice("\nbareagent: cancelling (Ctrl-C again to quit now)");
    cancel.cancel();
    if tokio::signal::ctrl_c().await.is_ok() {
        // Clears the spinner: exit does not wait for its thread to.
        sink.failed("interrupted");
        super::turn_keys::restore_terminal();
        std::process::exit(130);
    }
}
