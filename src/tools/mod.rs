//! Tools: what the model can do. A tool is three things kept apart, as
//! codex-rs keeps them: what it *is* (name, description, input schema — all
//! derived from one input type, so the schema the model sees and the
//! validation we apply cannot drift), what it *does* for the permission gate
//! (an [`Action`], with its paths already confined), and how it *runs*.

mod background;
mod bash;
mod buffers;
mod change;
mod edit_file;
mod glob;
mod grep;
mod multi_edit;
mod output;
mod process;
mod read_file;
mod reaper;
mod task;
mod todo;
mod visibility;
mod write_file;

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::events::EventSink;
use crate::permission::{Action, ActionKind, PermissionGate, Target};
use crate::provider::ToolSpec;
use crate::sandbox::Sandbox;
use crate::workspace::{PathResolver, Workspace, WorkspaceError};

pub use background::{BackgroundTasks, BashOutput, KillBash};
pub use bash::Bash;
pub use change::{Approved, FileChange, Permit, Previous};
pub use edit_file::EditFile;
pub use glob::Glob;
pub use grep::{FileResult, Grep, GrepQuery, OutputMode, search, search_files};
pub use multi_edit::MultiEdit;
pub use process::{Ending, GroupProcess};
pub use read_file::ReadFile;
pub use reaper::start as start_reaper;
pub use task::{SubAgentError, SubAgents, SubTask, Task};
pub use todo::{TodoItem, TodoStatus, TodoWrite};
pub use write_file::WriteFile;

/// What a running tool may use, and nothing more: no provider, no history,
/// no loop. `'b` is the agent's parts, `'a` this call's approval.
///
/// Architecture Invariant: `tools` never names `agent`. What a tool needs
/// from the agent (running a sub-agent) it asks through a trait the agent
/// implements ([`SubAgents`]).
pub struct ToolContext<'a, 'b> {
    pub workspace: &'b dyn Workspace,
    /// For visibility checks: what the user's rules hide, tools do not list.
    pub gate: &'b PermissionGate,
    /// What confines the commands a tool starts.
    pub sandbox: &'b Sandbox,
    /// Cancelled when the turn is: a long-running tool stops.
    pub cancel: &'b CancellationToken,
    /// Commands started with `run_in_background`, if this agent may start any.
    pub background: Option<&'b BackgroundTasks>,
    /// Which version of each file the model has seen.
    pub reads: &'b ReadLedger,
    /// What the user sees: file changes, the plan.
    pub sink: &'b dyn EventSink,
    /// Runs sub-agents, where this agent may start them.
    pub sub_agents: Option<&'b dyn SubAgents>,
    /// An edit writes only the change the user allowed, when they were asked.
    pub approved: Approved<'a>,
}

impl ToolContext<'_, '_> {
    pub fn workspace(&self) -> &dyn Workspace {
        self.workspace
    }
}

/// The version of each file as the model last saw it, so an edit computed
/// from that view is refused once the file has changed since — by the user
/// typing, a formatter, anything — rather than applied to text the model
/// never saw. Only versioned files (open in an editor) are tracked.
#[derive(Debug, Default)]
pub struct ReadLedger(Mutex<std::collections::HashMap<std::path::PathBuf, i32>>);

impl ReadLedger {
    pub fn saw(&self, path: &std::path::Path, version: Option<i32>) {
        if let Some(version) = version {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(path.to_path_buf(), version);
        }
    }

    /// Fails when the model saw an older version of the file than `current`.
    pub fn check(
        &self,
        path: &std::path::Path,
        shown: &str,
        current: Option<i32>,
    ) -> Result<(), ToolError> {
        let seen = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
            .copied();
        match (seen, current) {
            (Some(seen), Some(current)) if seen != current => Err(ToolError(format!(
                "{shown} changed in the editor since you last read it (you saw version {seen}, it is now {current}); read it again, then edit"
            ))),
            _ => Ok(()),
        }
    }
}

/// A tool's failure, as the model will read it (after `Error: `).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct ToolError(pub String);

impl From<WorkspaceError> for ToolError {
    fn from(error: WorkspaceError) -> Self {
        ToolError(error.to_string())
    }
}

/// A tool with a typed input. Implement this; the registry erases the type.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The input; its JSON schema is what the model sees.
    type Input: DeserializeOwned + JsonSchema + Send + Sync;
    const NAME: &'static str;
    /// When to use the tool and what it returns, for the model.
    const DESCRIPTION: &'static str;

    /// What a call would do. Resolve paths here (with [`file_action`]) so an
    /// escape is refused before anyone is asked about it.
    fn action(&self, input: &Self::Input, paths: &PathResolver) -> Result<Action, ToolError>;

    /// For a tool that changes a file: the change this call would make now,
    /// computed by the same code as `run`'s, without writing anything. The
    /// user sees its diff when asked. `None` for every other tool.
    async fn change(
        &self,
        _input: &Self::Input,
        _cx: &ToolContext<'_, '_>,
    ) -> Option<Result<FileChange, ToolError>> {
        None
    }

    async fn run(&self, input: Self::Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError>;
}

/// The object-safe face of a [`Tool`], for the registry and the loop.
pub trait AnyTool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    /// Parses the input, once, and says what the call would do: the loop
    /// batches, gates and runs the call from this one parse. The error is
    /// the complete text for the model.
    fn prepare(&self, input: &Value, paths: &PathResolver) -> Result<PreparedCall<'_>, String>;
}

/// One call with its input parsed: what it would do (its paths confined),
/// and the typed input to run it with.
pub struct PreparedCall<'t> {
    pub action: Action,
    call: Box<dyn Invocation + 't>,
}

impl PreparedCall<'_> {
    /// Read-only calls may run next to each other; any other runs alone.
    pub fn is_read_only(&self) -> bool {
        self.action.kind == ActionKind::Read
    }

    /// See [`Tool::change`].
    pub async fn change(&self, cx: &ToolContext<'_, '_>) -> Option<Result<FileChange, ToolError>> {
        self.call.change(cx).await
    }

    pub async fn run(self, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        self.call.run(cx).await
    }
}

/// A tool and its parsed input, with the input's type erased.
#[async_trait]
trait Invocation: Send + Sync {
    async fn change(&self, cx: &ToolContext<'_, '_>) -> Option<Result<FileChange, ToolError>>;
    async fn run(self: Box<Self>, cx: &ToolContext<'_, '_>) -> Result<String, ToolError>;
}

struct Typed<'t, T: Tool> {
    tool: &'t T,
    input: T::Input,
}

#[async_trait]
impl<T: Tool> Invocation for Typed<'_, T> {
    async fn change(&self, cx: &ToolContext<'_, '_>) -> Option<Result<FileChange, ToolError>> {
        Tool::change(self.tool, &self.input, cx).await
    }

    async fn run(self: Box<Self>, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let Typed { tool, input } = *self;
        tool.run(input, cx).await
    }
}

fn parse<T: Tool>(input: &Value) -> Result<T::Input, String> {
    T::Input::deserialize(input).map_err(|error| format!("Invalid input for {}: {error}", T::NAME))
}

use serde::Deserialize as _;

impl<T: Tool> AnyTool for T {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: T::NAME.to_string(),
            description: T::DESCRIPTION.to_string(),
            input_schema: input_schema::<T::Input>(),
        }
    }

    fn prepare(&self, input: &Value, paths: &PathResolver) -> Result<PreparedCall<'_>, String> {
        let parsed = parse::<T>(input)?;
        let action =
            Tool::action(self, &parsed, paths).map_err(|error| format!("Error: {error}"))?;
        Ok(PreparedCall {
            action,
            call: Box::new(Typed {
                tool: self,
                input: parsed,
            }),
        })
    }
}

/// An action on one file: the path is confined and shown relative to the root.
pub fn file_action(
    tool: &str,
    kind: ActionKind,
    path: &str,
    detail: Option<String>,
    paths: &PathResolver,
) -> Result<Action, ToolError> {
    let resolved = paths.resolve(path)?;
    let shown = paths.display(&resolved);
    Ok(Action {
        tool: tool.to_string(),
        kind,
        summary: match detail {
            Some(detail) => format!("{shown} {detail}"),
            None => shown.clone(),
        },
        target: Target::Path(shown),
    })
}

/// An action with nothing for rules to match but the tool's name.
pub fn plain_action(tool: &str, kind: ActionKind, summary: String) -> Action {
    Action {
        tool: tool.to_string(),
        kind,
        summary,
        target: Target::None,
    }
}

/// The JSON schema of an input type, without the keys models do not need.
fn input_schema<I: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(I)).unwrap_or_default();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema
}

/// The tools of an agent, by name.
#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<&'static str, Box<dyn AnyTool>>,
    specs: Vec<ToolSpec>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything: the user's agent.
    pub fn standard() -> Self {
        let mut registry = ToolRegistry::general();
        registry.register(Task);
        registry
    }

    /// Everything but `task`: a general sub-agent, which may not nest.
    pub fn general() -> Self {
        let mut registry = ToolRegistry::explore();
        registry.register(WriteFile);
        registry.register(EditFile);
        registry.register(MultiEdit);
        registry.register(Bash);
        registry.register(BashOutput);
        registry.register(KillBash);
        registry.register(TodoWrite);
        registry
    }

    /// Read-only: an explore sub-agent.
    pub fn explore() -> Self {
        let mut registry = ToolRegistry::new();
        registry.register(ReadFile);
        registry.register(Glob);
        registry.register(Grep);
        registry
    }

    /// Only the file tools (`read_file`, `write_file`, `edit_file`).
    pub fn file_tools() -> Self {
        let mut registry = ToolRegistry::new();
        registry.register(ReadFile);
        registry.register(WriteFile);
        registry.register(EditFile);
        registry
    }

    pub fn register<T: Tool>(&mut self, tool: T) {
        self.specs.retain(|spec| spec.name != T::NAME);
        self.specs.push(tool.spec());
        self.tools.insert(T::NAME, Box::new(tool));
    }

    pub fn get(&self, name: &str) -> Option<&dyn AnyTool> {
        self.tools.get(name).map(|tool| tool.as_ref())
    }

    /// The definitions sent to the model, in registration order.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }
}

/// Cuts `text` to at most `max` chars at a char boundary; returns whether it cut.
pub(crate) fn truncate_chars(text: &mut String, max: usize) -> bool {
    match text.char_indices().nth(max) {
        Some((cut, _)) => {
            text.truncate(cut);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_objects_and_name_their_required_fields() {
        let registry = ToolRegistry::standard();
        let names: Vec<_> = registry.specs().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "read_file",
                "glob",
                "grep",
                "write_file",
                "edit_file",
                "multi_edit",
                "bash",
                "bash_output",
                "kill_bash",
                "todo_write",
                "task"
            ]
        );
        for spec in registry.specs() {
            assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
            assert!(spec.input_schema.get("$schema").is_none());
            assert!(
                spec.input_schema["required"]
                    .as_array()
                    .is_some_and(|r| !r.is_empty()),
                "{}",
                spec.name
            );
        }
    }

    #[test]
    fn invalid_input_says_what_is_wrong() {
        let registry = ToolRegistry::standard();
        let root = tempfile::tempdir().unwrap();
        let paths = PathResolver::new(root.path()).unwrap();
        let tool = registry.get("read_file").unwrap();
        let action = |input| tool.prepare(&input, &paths).map(|call| call.action);
        let error = action(serde_json::json!({"pth": "x"})).unwrap_err();
        assert_eq!(
            error,
            "Invalid input for read_file: unknown field `pth`, expected one of `path`, `offset`, `limit`"
        );
        let error = action(serde_json::json!({"path": 7})).unwrap_err();
        assert!(error.contains("invalid type"), "{error}");
        let error = action(serde_json::json!({"path": "../x"})).unwrap_err();
        assert!(
            error.starts_with("Error: path `../x` is outside the workspace"),
            "{error}"
        );
    }
}
