//! Tools: what the model can do. A tool is three things kept apart, as
//! codex-rs keeps them: what it *is* (name, description, input schema — all
//! derived from one input type, so the schema the model sees and the
//! validation we apply cannot drift), what it *does* for the permission gate
//! (an [`Action`], with its paths already confined), and how it *runs*.

mod background;
mod bash;
mod buffers;
mod change;
pub mod code;
mod diagnostics;
pub(crate) mod edit_file;
mod glob;
mod grep;
mod multi_edit;
mod output;
mod process;
mod read_file;
pub(crate) mod reaper;
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
use crate::history::ToolSpec;
use crate::permission::{Action, ActionKind, PermissionGate, Target};
use crate::sandbox::Sandbox;
use crate::sync::Locked;
use crate::workspace::{PathResolver, Workspace, WorkspaceError};

pub use background::{BackgroundTasks, BashOutput, KillBash};
pub use bash::Bash;
pub use change::{Approved, Change, FileChange, Permit, Previous};
pub use diagnostics::Diagnostics;
pub use edit_file::EditFile;
pub use glob::Glob;
pub use grep::{FileResult, Grep, GrepError, GrepQuery, OutputMode, search, search_files};
pub use multi_edit::MultiEdit;
pub(crate) use process::is_secret as is_secret_variable;
pub use process::{Ending, GroupProcess};
pub(crate) use process::{confine, keep_stderr_tail, spawn_confined};
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
    /// Where each change to a file is recorded with its text before, for a
    /// rewind (the session file; a sub-agent's are its parent's).
    pub edits: &'b dyn crate::session_files::Transcript,
}

impl ToolContext<'_, '_> {
    pub fn workspace(&self) -> &dyn Workspace {
        self.workspace
    }
}

/// What the model last saw of each file, so that a change computed from
/// that view is refused once the file has changed since — by the user
/// typing, a formatter, a command, anything — rather than applied to text
/// the model never saw. A file open in an editor is known by its document
/// version; any file also by a fingerprint of the text read, which is what
/// tells a file on disk (no versions there) has changed.
#[derive(Debug, Default)]
pub struct ReadLedger(Mutex<std::collections::HashMap<std::path::PathBuf, Seen>>);

/// One file as the model saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    version: Option<i32>,
    fingerprint: Fingerprint,
}

/// A text's length and hash. Chosen over the file's mtime and size: the
/// text is the one the model was shown (a stat is a second look, racing
/// the read), and an mtime ticks coarsely (a kernel jiffy), so two writes
/// of the same length in one tick would look unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fingerprint {
    len: usize,
    hash: u64,
}

impl Fingerprint {
    fn of(text: &str) -> Self {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        Fingerprint {
            len: text.len(),
            hash: hasher.finish(),
        }
    }
}

/// Whether a change may be made to a file the model has not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadFirst {
    /// An edit names the text it replaces, so it cannot clobber unseen text.
    NotNeeded,
    /// A whole-file write over an existing file would.
    Required,
}

impl ReadLedger {
    /// Records `text` (at `version`, where the workspace has versions) as
    /// what the model now knows of `path`: after a read, and after its own write.
    pub fn saw(&self, path: &std::path::Path, text: &str, version: Option<i32>) {
        let seen = Seen {
            version,
            fingerprint: Fingerprint::of(text),
        };
        self.0.locked().insert(path.to_path_buf(), seen);
    }

    /// Every file the model has read or written, in path order.
    pub fn paths(&self) -> Vec<std::path::PathBuf> {
        let mut paths: Vec<_> = self.0.locked().keys().cloned().collect();
        paths.sort();
        paths
    }

    /// Fails when the file now holds (`text` at `version`) something other
    /// than what the model last saw, or, where a read is required, when the
    /// model has not read it at all.
    pub fn check(
        &self,
        path: &std::path::Path,
        shown: &str,
        text: &str,
        version: Option<i32>,
        read_first: ReadFirst,
    ) -> Result<(), ToolError> {
        let seen = self.0.locked().get(path).copied();
        let Some(seen) = seen else {
            return match read_first {
                ReadFirst::NotNeeded => Ok(()),
                ReadFirst::Required => Err(ToolError::NotRead {
                    path: shown.to_string(),
                }),
            };
        };
        let stale = |change| ToolError::Stale {
            path: shown.to_string(),
            change,
        };
        match (seen.version, version) {
            // The editor's versions say it best: they count every change.
            (Some(seen), Some(now)) if seen != now => Err(stale(SinceRead::Version { seen, now })),
            (Some(_), Some(_)) => Ok(()),
            _ if seen.fingerprint != Fingerprint::of(text) => Err(stale(SinceRead::Text)),
            _ => Ok(()),
        }
    }
}

/// How a file changed since the model read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SinceRead {
    /// In the editor, from one document version to another.
    Version { seen: i32, now: i32 },
    /// Its text is not the text the model was shown.
    Text,
}

impl std::fmt::Display for SinceRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SinceRead::Version { seen, now } => write!(
                f,
                "in the editor since you last read it (you saw version {seen}, it is now {now})"
            ),
            SinceRead::Text => write!(f, "since you last read it (its text is not what you saw)"),
        }
    }
}

/// Why a tool call produced no output but an error: what failed, on what,
/// and what the model can do about it. [`ToolError::to_result_text`] is the
/// one place it becomes the text of a `tool_result`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ToolError {
    /// The model named a tool this agent does not have.
    #[error("Unknown tool: {0}")]
    UnknownTool(String),
    /// The input does not fit the tool's schema.
    #[error("Invalid input for {tool}: {reason}")]
    InvalidInput { tool: String, reason: String },
    /// Not run: denied by a rule or the user, or cancelled; the reason as is.
    #[error("{0}")]
    NotRun(String),
    /// A path that cannot be used, or a file that cannot be read or written.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// The file changed since the model read it: the change would be made
    /// to text the model never saw.
    #[error("{path} changed {change}; read it again, then edit")]
    Stale { path: String, change: SinceRead },
    /// A whole-file write over a file the model has not read.
    #[error(
        "{path} already exists and you have not read it; read it with read_file first, then write it (or change part of it with edit_file)"
    )]
    NotRead { path: String },
    /// The edit does not apply to the file's text.
    #[error("{path}: {reason}")]
    Edit { path: String, reason: String },
    /// The file changed while the user was being asked about the change.
    #[error(
        "{path} changed while the user was being asked, so this is no longer the change they allowed; nothing was written. Read the file again, then redo the edit."
    )]
    ChangedWhileAsked { path: String },
    /// The tool panicked (a bug); the conversation goes on.
    #[error("the {tool} tool crashed: {what}")]
    Crashed { tool: String, what: String },
    /// Any other failure of the tool, said by the tool.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// A tool's own failure, in its words.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }

    /// The text of the `tool_result` (whose `is_error` is set): the only
    /// place the `Error: ` prefix is added. Refusals before the tool ran
    /// read as they are.
    pub fn to_result_text(&self) -> String {
        match self {
            ToolError::UnknownTool(_) | ToolError::InvalidInput { .. } | ToolError::NotRun(_) => {
                self.to_string()
            }
            _ => format!("Error: {self}"),
        }
    }
}

/// A tool with a typed input. Implement this; the registry erases the type.
///
/// Contract: the input's deserialisation is its validation (use
/// `#[serde(deny_unknown_fields)]`: a misspelt field is then an error that
/// names it). `action` runs before anyone is asked and must resolve every
/// path the call touches, so the gate judges real locations; `run` may
/// assume the gate said yes. A tool's failure is a `ToolError`, never a
/// panic (a panic is caught and reported, but it is a bug); it never
/// reaches the model or the provider, only its narrow [`ToolContext`]. A
/// tool that changes files does so only through `change::edit_text` /
/// `change::replace_file`, which check what the model read.
#[warn(missing_docs)]
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The input; its JSON schema is what the model sees.
    type Input: DeserializeOwned + JsonSchema + Send + Sync;
    /// The name the model calls it by.
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
    ) -> Option<Result<Change, ToolError>> {
        None
    }

    /// Runs the call; the text is the `tool_result` the model reads.
    async fn run(&self, input: Self::Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError>;
}

/// What a call returns: the text of its `tool_result`, and images.
///
/// The one way a tool hands the loop images. Only [`Invocation`]s carry
/// it — a [`Tool`]'s `run` returns text, which becomes an output with no
/// images — so today only an MCP tool returns any. The loop puts them in
/// the `tool_result`, and each provider sends them (or a note) its way.
#[derive(Debug, Default, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    pub images: Vec<crate::history::Image>,
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        ToolOutput {
            text,
            images: Vec::new(),
        }
    }
}

/// The object-safe face of a [`Tool`], for the registry and the loop.
pub trait AnyTool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    /// Parses the input, once, and says what the call would do: the loop
    /// batches, gates and runs the call from this one parse.
    fn prepare(&self, input: &Value, paths: &PathResolver) -> Result<PreparedCall<'_>, ToolError>;
}

/// One call with its input parsed: what it would do (its paths confined),
/// and the typed input to run it with.
pub struct PreparedCall<'t> {
    pub action: Action,
    call: Box<dyn Invocation + 't>,
}

impl<'t> PreparedCall<'t> {
    /// A call of a tool that implements [`AnyTool`] itself (an MCP tool,
    /// whose schema is known only at run time).
    pub fn new(action: Action, call: Box<dyn Invocation + 't>) -> Self {
        PreparedCall { action, call }
    }

    /// Read-only calls may run next to each other; any other runs alone.
    pub fn is_read_only(&self) -> bool {
        self.action.kind == ActionKind::Read
    }

    /// See [`Tool::change`].
    pub async fn change(&self, cx: &ToolContext<'_, '_>) -> Option<Result<Change, ToolError>> {
        self.call.change(cx).await
    }

    /// Runs the call. An edit's result gains what the editor reports about
    /// the file once it has settled (see `crate::workspace::reported`).
    pub async fn run(self, cx: &ToolContext<'_, '_>) -> Result<ToolOutput, ToolError> {
        let watched = match (&self.action.kind, &self.action.target) {
            (ActionKind::Edit, Target::Path(shown)) => cx.workspace().diagnostics().and_then(|d| {
                let path = cx.workspace().paths().resolve(shown).ok()?;
                let before = d.of(&path).unwrap_or_default();
                Some((d.mark(&path)?, d, path, shown.clone(), before))
            }),
            _ => None,
        };
        let mut output = self.call.run(cx).await?;
        let Some((mark, diagnostics, path, shown, before)) = watched else {
            return Ok(output);
        };
        let now = tokio::select! {
            now = diagnostics.after(&path, mark) => now,
            () = cx.cancel.cancelled() => None,
        };
        if let Some(line) =
            now.and_then(|now| crate::workspace::reported::after_edit_line(&shown, &before, &now))
        {
            output.text = format!("{}\n{line}", output.text);
        }
        Ok(output)
    }
}

/// A tool and its parsed input, with the input's type erased.
#[async_trait]
pub trait Invocation: Send + Sync {
    async fn change(&self, cx: &ToolContext<'_, '_>) -> Option<Result<Change, ToolError>>;
    async fn run(self: Box<Self>, cx: &ToolContext<'_, '_>) -> Result<ToolOutput, ToolError>;
}

struct Typed<'t, T: Tool> {
    tool: &'t T,
    input: T::Input,
}

#[async_trait]
impl<T: Tool> Invocation for Typed<'_, T> {
    async fn change(&self, cx: &ToolContext<'_, '_>) -> Option<Result<Change, ToolError>> {
        Tool::change(self.tool, &self.input, cx).await
    }

    async fn run(self: Box<Self>, cx: &ToolContext<'_, '_>) -> Result<ToolOutput, ToolError> {
        let Typed { tool, input } = *self;
        tool.run(input, cx).await.map(ToolOutput::from)
    }
}

fn parse<T: Tool>(input: &Value) -> Result<T::Input, ToolError> {
    T::Input::deserialize(input).map_err(|error| ToolError::InvalidInput {
        tool: T::NAME.to_string(),
        reason: error.to_string(),
    })
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

    fn prepare(&self, input: &Value, paths: &PathResolver) -> Result<PreparedCall<'_>, ToolError> {
        let parsed = parse::<T>(input)?;
        let action = Tool::action(self, &parsed, paths)?;
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

/// An edit of one file: `detail` follows the path in the summary.
pub fn edit_action(
    tool: &str,
    path: &str,
    detail: String,
    paths: &PathResolver,
) -> Result<Action, ToolError> {
    file_action(tool, ActionKind::Edit, path, Some(detail), paths)
}

/// A read of a file or a directory (`.` by default): `detail` follows the
/// path in the summary.
pub fn read_action(
    tool: &str,
    path: Option<&str>,
    detail: String,
    paths: &PathResolver,
) -> Result<Action, ToolError> {
    file_action(
        tool,
        ActionKind::Read,
        path.unwrap_or("."),
        Some(detail),
        paths,
    )
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
    tools: BTreeMap<String, Box<dyn AnyTool>>,
    specs: Vec<ToolSpec>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything: the user's agent.
    pub fn standard() -> Self {
        let mut registry = ToolRegistry::general();
        registry.register(Task::default());
        registry
    }

    /// The standard tools and `diagnostics`: the language server's, where
    /// an editor reports them.
    pub fn in_editor() -> Self {
        let mut registry = ToolRegistry::standard();
        registry.register(Diagnostics);
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
        self.tools.insert(T::NAME.to_string(), Box::new(tool));
    }

    /// A tool known only at run time (an MCP server's), by its spec's name;
    /// it replaces a tool of the same name.
    pub fn register_dyn(&mut self, tool: Box<dyn AnyTool>) {
        let spec = tool.spec();
        self.specs.retain(|known| known.name != spec.name);
        self.tools.insert(spec.name.clone(), tool);
        self.specs.push(spec);
    }

    pub fn get(&self, name: &str) -> Option<&dyn AnyTool> {
        self.tools.get(name).map(|tool| tool.as_ref())
    }

    /// The definitions sent to the model, in registration order.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
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
    fn only_failures_of_a_tool_that_ran_or_was_refused_by_it_read_as_errors() {
        let path = || "f.txt".to_string();
        // (error, the tool_result text)
        let cases = [
            (ToolError::UnknownTool("x".into()), "Unknown tool: x"),
            (
                ToolError::InvalidInput {
                    tool: "grep".into(),
                    reason: "missing field `pattern`".into(),
                },
                "Invalid input for grep: missing field `pattern`",
            ),
            (ToolError::NotRun("Denied by user".into()), "Denied by user"),
            (
                ToolError::Workspace(WorkspaceError::NotFound(path())),
                "Error: `f.txt` does not exist",
            ),
            (
                ToolError::Stale {
                    path: path(),
                    change: SinceRead::Text,
                },
                "Error: f.txt changed since you last read it (its text is not what you saw); read it again, then edit",
            ),
            (
                ToolError::Stale {
                    path: path(),
                    change: SinceRead::Version { seen: 3, now: 5 },
                },
                "Error: f.txt changed in the editor since you last read it (you saw version 3, it is now 5); read it again, then edit",
            ),
            (
                ToolError::Edit {
                    path: path(),
                    reason: "no".into(),
                },
                "Error: f.txt: no",
            ),
            (
                ToolError::Crashed {
                    tool: "bash".into(),
                    what: "boom".into(),
                },
                "Error: the bash tool crashed: boom",
            ),
            (ToolError::failed("exit code 1"), "Error: exit code 1"),
        ];
        for (error, want) in cases {
            assert_eq!(error.to_result_text(), want, "{error:?}");
        }
    }

    #[test]
    fn the_ledger_refuses_changes_to_text_the_model_did_not_see() {
        use ReadFirst::*;
        let path = std::path::Path::new("/w/f.txt");
        let seen = |text: &str, version| {
            let ledger = ReadLedger::default();
            ledger.saw(path, text, version);
            ledger
        };
        let check = |ledger: &ReadLedger, text: &str, version, read_first| {
            ledger.check(path, "f.txt", text, version, read_first)
        };
        let stale = |change| {
            Err(ToolError::Stale {
                path: "f.txt".into(),
                change,
            })
        };
        let not_read = || {
            Err(ToolError::NotRead {
                path: "f.txt".into(),
            })
        };
        // (what the model saw, what is there now, read first?, the answer)
        let cases = [
            (None, ("a", None), NotNeeded, Ok(())),
            (None, ("a", None), Required, not_read()),
            (None, ("a", Some(1)), Required, not_read()),
            (Some(("a", None)), ("a", None), Required, Ok(())),
            // Same length, other text: what mtime and size could miss.
            (
                Some(("a", None)),
                ("b", None),
                NotNeeded,
                stale(SinceRead::Text),
            ),
            (
                Some(("a", None)),
                ("ab", None),
                Required,
                stale(SinceRead::Text),
            ),
            (Some(("a", Some(2))), ("a", Some(2)), Required, Ok(())),
            (
                Some(("a", Some(2))),
                ("a", Some(3)),
                NotNeeded,
                stale(SinceRead::Version { seen: 2, now: 3 }),
            ),
            // Known by version once, by text now (closed in the editor), or the other way.
            (Some(("a", Some(2))), ("a", None), Required, Ok(())),
            (
                Some(("a", Some(2))),
                ("b", None),
                Required,
                stale(SinceRead::Text),
            ),
            (Some(("a", None)), ("a", Some(7)), Required, Ok(())),
            (
                Some(("a", None)),
                ("c", Some(7)),
                Required,
                stale(SinceRead::Text),
            ),
        ];
        for (before, (text, version), read_first, want) in cases {
            let ledger = match before {
                Some((text, version)) => seen(text, version),
                None => ReadLedger::default(),
            };
            assert_eq!(
                check(&ledger, text, version, read_first),
                want,
                "{before:?} then {text:?} at {version:?}"
            );
        }
    }

    #[test]
    fn invalid_input_says_what_is_wrong() {
        let registry = ToolRegistry::standard();
        let root = tempfile::tempdir().unwrap();
        let paths = PathResolver::new(root.path()).unwrap();
        let tool = registry.get("read_file").unwrap();
        let error_of = |input| {
            tool.prepare(&input, &paths)
                .map(|call| call.action)
                .unwrap_err()
                .to_result_text()
        };
        let error = error_of(serde_json::json!({"pth": "x"}));
        assert_eq!(
            error,
            "Invalid input for read_file: unknown field `pth`, expected one of `path`, `offset`, `limit`"
        );
        let error = error_of(serde_json::json!({"path": 7}));
        assert!(error.contains("invalid type"), "{error}");
        let error = error_of(serde_json::json!({"path": "../x"}));
        assert!(
            error.starts_with("Error: path `../x` is outside the workspace"),
            "{error}"
        );
    }
}
