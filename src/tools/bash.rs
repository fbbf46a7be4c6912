//! `bash`: a shell command in the workspace root, in its own process group,
//! with a timeout; or started in the background (see `background.rs`).

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Approved;
use super::output::MAX_OUTPUT_CHARS;
use super::process::{Ending, GroupProcess};
use super::{Tool, ToolContext, ToolError};
use crate::permission::{Action, ActionKind, CommandCheck, Target};
use crate::sync::Locked;
use crate::workspace::{ClientTerminal, CommandView, PathResolver};

pub struct Bash;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The command line, run with `bash -c` in the workspace root.
    pub command: String,
    /// Milliseconds before the command is killed. Default 120000, at most 600000.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Start it and return at once with an id for bash_output and kill_bash (servers, watchers, long builds).
    #[serde(default)]
    pub run_in_background: bool,
}

#[async_trait]
impl Tool for Bash {
    type Input = Input;
    const NAME: &'static str = "bash";
    const DESCRIPTION: &'static str = "Run a shell command in the workspace root (builds, tests, git, package managers). \
        stdin is closed; prefer read_file/grep/glob for reading and searching. Returns stdout and stderr together (long \
        output keeps its head and tail) and the exit code.";

    fn action(&self, input: &Input, paths: &PathResolver) -> Result<Action, ToolError> {
        if input.command.trim().is_empty() {
            return Err(ToolError::failed("the command is empty"));
        }
        Ok(Action {
            tool: Self::NAME.to_string(),
            kind: ActionKind::Execute,
            summary: input.command.clone(),
            target: Target::Command(Box::new(CommandCheck::new(&input.command, paths))),
        })
    }

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let root = cx.workspace().paths().root().to_path_buf();
        // The agent's edits the disk does not hold yet: saved, or mounted for the command.
        let views = cx.workspace().command_views();
        let mut view = match &views {
            Some(views) => views.prepare().await,
            None => CommandView::default(),
        };
        let mut notes = std::mem::take(&mut view.notes);
        if input.run_in_background {
            let background = cx.background.ok_or_else(|| {
                ToolError::failed(
                    "background commands are not available here; run it in the foreground",
                )
            })?;
            let id = background.start(&input.command, &root, cx.sandbox, views, view)?;
            return Ok(with_notes(
                format!(
                    "Started in the background as {id}. Its output arrives when it ends; read it sooner with bash_output, stop it with kill_bash."
                ),
                &notes,
            ));
        }
        let timeout = input
            .timeout_ms
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
            .min(MAX_TIMEOUT);
        // A command the user allowed when asked may run in the client's
        // terminal; one allowed without asking stays in our sandbox.
        if let Some(terminal) = cx.workspace().client_terminal()
            && !matches!(cx.approved, Approved::WithoutAsking)
        {
            if let Some(views) = &views {
                notes.extend(views.finish(view).await);
            }
            return in_client_terminal(terminal.as_ref(), &input.command, &root, timeout, cx)
                .await
                .map(|output| with_notes(output, &notes))
                .map_err(|error| match error {
                    ToolError::Failed(text) => ToolError::failed(with_notes(text, &notes)),
                    other => other,
                });
        }
        let spawned = GroupProcess::spawn(&input.command, &root, cx.sandbox, &view);
        let mut process = match spawned {
            Ok(process) => process,
            Err(error) => {
                if let Some(views) = &views {
                    views.finish(view).await;
                }
                return Err(ToolError::failed(format!("cannot start bash: {error}")));
            }
        };
        let ending = wait_showing_output(&mut process, timeout, cx.cancel, cx.sink).await;
        let mounted: Vec<String> = view
            .mounts
            .iter()
            .map(|m| cx.workspace().paths().display(&m.path))
            .collect();
        if let Some(views) = &views {
            notes.extend(views.finish(view).await);
        }
        notes.extend(cx.sandbox.sweep());
        let output = process.output.locked().render(MAX_OUTPUT_CHARS);
        let output = if output.trim().is_empty() {
            "(no output)".to_string()
        } else {
            output
        };
        if !mounted.is_empty() && output.contains("Device or resource busy") {
            notes.push(format!(
                "Note: {} held the agent's unsaved edits, mounted for this command: they can be written in place but not replaced or deleted (sed -i does that); use edit_file instead.",
                mounted.join(", ")
            ));
        }
        let output = with_notes(output, &notes);
        match ending {
            Ending::Exited(0) => Ok(output),
            other => {
                let note = cx
                    .sandbox
                    .explain_failure(&output)
                    .map(|note| format!("\n{note}"))
                    .unwrap_or_default();
                Err(ToolError::failed(format!("{other}\n{output}{note}")))
            }
        }
    }
}

/// Waits for the command as [`GroupProcess::wait`] does, telling `sink`
/// it started and each piece of output as it comes (pieces that come
/// faster than the sink takes them are joined): what a terminal shows
/// live of any command the user sees run.
pub(crate) async fn wait_showing_output(
    process: &mut GroupProcess,
    timeout: Duration,
    cancel: &tokio_util::sync::CancellationToken,
    sink: &dyn crate::events::EventSink,
) -> Ending {
    let output = process.output.clone();
    let mut grown = process.grown();
    sink.command_output("");
    let mut shown = 0;
    let wait = process.wait(Some(timeout), cancel);
    tokio::pin!(wait);
    loop {
        tokio::select! {
            ending = &mut wait => return ending,
            Ok(()) = grown.changed() => {
                let (text, next) = output.locked().since(shown);
                shown = next;
                if !text.is_empty() {
                    sink.command_output(&text);
                }
            }
        }
    }
}

/// Runs the command in the client's terminal: its output, or the way it
/// ended and its output as the error.
async fn in_client_terminal(
    terminal: &dyn ClientTerminal,
    command: &str,
    root: &std::path::Path,
    timeout: Duration,
    cx: &ToolContext<'_, '_>,
) -> Result<String, ToolError> {
    let run = terminal
        .run(command, root, timeout, cx.cancel)
        .await
        .map_err(|error| {
            ToolError::failed(format!("cannot run it in the editor's terminal: {error}"))
        })?;
    let mut kept = super::output::OutputBuffer::default();
    kept.push(run.output.as_bytes());
    let mut output = kept.render(MAX_OUTPUT_CHARS);
    if run.truncated {
        output.insert_str(0, "(the editor kept only the end of the output)\n");
    }
    if output.trim().is_empty() {
        output = "(no output)".to_string();
    }
    match (&run.killed, run.exit_code, &run.signal) {
        (None, Some(0), None) => Ok(output),
        (Some(why), _, _) => Err(ToolError::failed(format!("{why}\n{output}"))),
        (None, Some(code), _) => Err(ToolError::failed(format!("exit code {code}\n{output}"))),
        (None, None, Some(signal)) => Err(ToolError::failed(format!(
            "killed by signal {signal}\n{output}"
        ))),
        (None, None, None) => Err(ToolError::failed(format!(
            "ended without an exit code\n{output}"
        ))),
    }
}

/// The result, then one line for each thing the command did not see as the
/// model does, or changed in a buffer.
pub fn with_notes(mut result: String, notes: &[String]) -> String {
    for note in notes {
        result.push('\n');
        result.push_str(note);
    }
    result
}
