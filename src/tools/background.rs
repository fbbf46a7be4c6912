//! Commands that run while the agent goes on: `bash` with
//! `run_in_background`, read with `bash_output`, stopped with `kill_bash`.
//! When one ends, a notice goes into the session's inbox, and the loop puts
//! it before the model at the top of its next iteration (the seed article's
//! background injection).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::process::{Ending, GroupProcess, SharedOutput};
use super::{Tool, ToolContext, ToolError, plain_action};
use crate::inbox::Inbox;
use crate::permission::{Action, ActionKind};
use crate::sandbox::Sandbox;
use crate::sync::Locked;
use crate::workspace::{CommandView, CommandViews, PathResolver};

/// How much of a finished command's output the notice carries.
const NOTICE_CHARS: usize = 4_000;

struct Task {
    command: String,
    output: SharedOutput,
    ending: Arc<Mutex<Option<Ending>>>,
    /// Byte offset up to which bash_output has shown the output.
    read_upto: usize,
    stop: CancellationToken,
}

/// The session's background commands.
pub struct BackgroundTasks {
    tasks: Mutex<BTreeMap<String, Task>>,
    next_id: Mutex<u64>,
    inbox: Inbox,
    /// Cancelled by [`BackgroundTasks::kill_all`] (then replaced, so later
    /// commands run) and when the session ends: every command is killed.
    session: Mutex<CancellationToken>,
}

impl BackgroundTasks {
    pub fn new(inbox: Inbox) -> Self {
        BackgroundTasks {
            tasks: Mutex::default(),
            next_id: Mutex::new(1),
            inbox,
            session: Mutex::default(),
        }
    }

    fn tasks(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Task>> {
        self.tasks.locked()
    }

    /// Starts `command` and returns its id (`bash_1`, `bash_2`, …).
    /// Starts `command` seeing `view`; when it ends, `views` brings back
    /// what it wrote to the view's copies.
    pub fn start(
        &self,
        command: &str,
        cwd: &Path,
        sandbox: &Sandbox,
        views: Option<Arc<dyn CommandViews>>,
        view: CommandView,
    ) -> Result<String, ToolError> {
        let mut process = match GroupProcess::spawn(command, cwd, sandbox, &view) {
            Ok(process) => process,
            Err(error) => {
                if let Some(views) = views {
                    tokio::spawn(async move { views.finish(view).await });
                }
                return Err(ToolError::failed(format!("cannot start bash: {error}")));
            }
        };
        let id = {
            let mut next = self.next_id.locked();
            *next += 1;
            format!("bash_{}", *next - 1)
        };
        let stop = self.session.locked().child_token();
        let task = Task {
            command: command.to_string(),
            output: process.output.clone(),
            ending: Arc::default(),
            read_upto: 0,
            stop: stop.clone(),
        };
        let (ending, output, inbox) =
            (task.ending.clone(), task.output.clone(), self.inbox.clone());
        let (notice_id, notice_command) = (id.clone(), command.to_string());
        let sandbox = sandbox.clone();
        self.tasks().insert(id.clone(), task);
        tokio::spawn(async move {
            let end = process.wait(None, &stop).await;
            let brought_back = match views {
                Some(views) => views.finish(view).await,
                None => Vec::new(),
            };
            *ending.locked() = Some(end);
            let shown = output.locked().render(NOTICE_CHARS);
            let note = match end {
                Ending::Exited(0) => None,
                _ => sandbox
                    .explain_failure(&shown)
                    .map(|note| format!("{note}\n")),
            };
            let mut note = note.unwrap_or_default();
            for line in brought_back.into_iter().chain(sandbox.sweep()) {
                note.push_str(&line);
                note.push('\n');
            }
            inbox.push(format!(
                "<background-command id=\"{notice_id}\" status=\"{end}\">\n$ {notice_command}\n{shown}\n{note}</background-command>"
            ));
        });
        Ok(id)
    }

    /// New output since the last call, and the status.
    pub fn read(&self, id: &str) -> Result<String, ToolError> {
        let mut tasks = self.tasks();
        let task = tasks.get_mut(id).ok_or_else(|| unknown(id))?;
        let (text, upto) = task.output.locked().since(task.read_upto);
        task.read_upto = upto;
        let status = match *task.ending.locked() {
            Some(end) => format!("finished: {end}"),
            None => "still running".to_string(),
        };
        let text = if text.is_empty() {
            "(no new output)".to_string()
        } else {
            text
        };
        Ok(format!("[{id}: `{}` — {status}]\n{text}", task.command))
    }

    pub fn kill(&self, id: &str) -> Result<String, ToolError> {
        let tasks = self.tasks();
        let task = tasks.get(id).ok_or_else(|| unknown(id))?;
        if task.ending.locked().is_some() {
            return Ok(format!("{id} had already finished."));
        }
        task.stop.cancel();
        Ok(format!(
            "Killed {id} (`{}`) and its child processes.",
            task.command
        ))
    }

    /// Kills every command still running (the session is ending, or a new
    /// conversation starts); commands started later run as usual.
    pub fn kill_all(&self) {
        std::mem::take(&mut *self.session.locked()).cancel();
    }
}

impl Drop for BackgroundTasks {
    fn drop(&mut self) {
        self.kill_all();
    }
}

fn unknown(id: &str) -> ToolError {
    ToolError::failed(format!(
        "no background command `{id}` (ids look like bash_1)"
    ))
}

fn tasks_of<'a>(cx: &'a ToolContext<'_, '_>) -> Result<&'a BackgroundTasks, ToolError> {
    cx.background
        .ok_or_else(|| ToolError::failed("there are no background commands here"))
}

pub struct BashOutput;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdInput {
    /// The id bash returned, like `bash_1`.
    pub id: String,
}

#[async_trait]
impl Tool for BashOutput {
    type Input = IdInput;
    const NAME: &'static str = "bash_output";
    const DESCRIPTION: &'static str = "Read what a background command printed since the last read, and whether it is still running.";

    fn action(&self, input: &IdInput, _paths: &PathResolver) -> Result<Action, ToolError> {
        Ok(plain_action(Self::NAME, ActionKind::Read, input.id.clone()))
    }

    async fn run(&self, input: IdInput, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        tasks_of(cx)?.read(&input.id)
    }
}

pub struct KillBash;

#[async_trait]
impl Tool for KillBash {
    type Input = IdInput;
    const NAME: &'static str = "kill_bash";
    const DESCRIPTION: &'static str = "Stop a background command and everything it started.";

    fn action(&self, input: &IdInput, _paths: &PathResolver) -> Result<Action, ToolError> {
        // Stopping the agent's own command needs nobody's approval.
        Ok(plain_action(
            Self::NAME,
            ActionKind::Internal,
            input.id.clone(),
        ))
    }

    async fn run(&self, input: IdInput, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        tasks_of(cx)?.kill(&input.id)
    }
}
