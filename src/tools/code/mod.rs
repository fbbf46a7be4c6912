//! `code`: what the project's language servers know of the code —
//! definitions, references, implementations, types, outlines, callers and
//! callees, and renames — asked of the editor where it can answer, else of
//! our own client of the servers configured for the project.
//!
//! One tool with an `operation`, so the model's tool list stays short. A
//! place in the code is named the way models name them reliably: a file and
//! a symbol's name (`target.rs` finds it through the file's outline), or a
//! line and column. Answers are compact (`answer.rs`): `path:line:col` and
//! the line, grouped by file, capped, only files inside the workspace the
//! read policy shows. `rename` is an edit (`rename.rs`): the server's
//! `WorkspaceEdit` becomes one [`Change`] across its files, shown whole
//! before it is allowed and written whole or not at all.

mod answer;
mod intelligence;
mod rename;
mod target;

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Change, Tool, ToolContext, ToolError, edit_action, read_action};
use crate::permission::Action;
use crate::workspace::PathResolver;

pub use intelligence::{CodeError, EDITOR, Intelligence};

/// The tool, with whoever answers its requests this turn.
pub struct Code {
    intelligence: Arc<dyn Intelligence>,
    /// For an explore sub-agent, which only reads: no `rename`.
    read_only: bool,
}

impl Code {
    pub fn new(intelligence: Arc<dyn Intelligence>) -> Self {
        Code {
            intelligence,
            read_only: false,
        }
    }

    /// Every operation but `rename`.
    pub fn read_only(intelligence: Arc<dyn Intelligence>) -> Self {
        Code {
            intelligence,
            read_only: true,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Definition,
    References,
    Implementations,
    Hover,
    Symbols,
    WorkspaceSymbols,
    Callers,
    Callees,
    Rename,
}

impl Operation {
    fn word(self) -> &'static str {
        match self {
            Operation::Definition => "definition",
            Operation::References => "references",
            Operation::Implementations => "implementations",
            Operation::Hover => "hover",
            Operation::Symbols => "symbols",
            Operation::WorkspaceSymbols => "workspace_symbols",
            Operation::Callers => "callers",
            Operation::Callees => "callees",
            Operation::Rename => "rename",
        }
    }

    /// Whether it works on one place in a file (not the file's outline,
    /// not the workspace).
    fn at_a_place(self) -> bool {
        !matches!(self, Operation::Symbols | Operation::WorkspaceSymbols)
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    pub operation: Operation,
    /// File, relative to the workspace root. Optional only for workspace_symbols.
    #[serde(default)]
    pub path: Option<String>,
    /// The symbol's name as written in the code; `Class.method` for a member. For workspace_symbols: the name to find.
    #[serde(default)]
    pub symbol: Option<String>,
    /// Line (from 1) the symbol is on, to pick one of several; with `column` instead of `symbol`, a position.
    #[serde(default)]
    pub line: Option<u32>,
    /// Column (from 1, in characters), with `line`.
    #[serde(default)]
    pub column: Option<u32>,
    /// rename: the new name.
    #[serde(default)]
    pub new_name: Option<String>,
}

impl Input {
    fn invalid(reason: impl Into<String>) -> ToolError {
        ToolError::InvalidInput {
            tool: Code::NAME.to_string(),
            reason: reason.into(),
        }
    }

    fn path(&self) -> Result<&str, ToolError> {
        self.path
            .as_deref()
            .ok_or_else(|| Self::invalid(format!("{} needs `path`", self.operation.word())))
    }

    fn new_name(&self) -> Result<&str, ToolError> {
        match self.new_name.as_deref().map(str::trim) {
            Some(name) if !name.is_empty() => Ok(name),
            _ => Err(Self::invalid("rename needs `new_name`")),
        }
    }

    /// What the call is about, for the user: `parse` or `line 3:5`.
    fn about(&self) -> String {
        match (&self.symbol, self.line, self.column) {
            (Some(symbol), _, _) => format!("`{symbol}`"),
            (None, Some(line), Some(column)) => format!("line {line}:{column}"),
            (None, Some(line), None) => format!("line {line}"),
            _ => String::new(),
        }
    }
}

#[async_trait]
impl Tool for Code {
    type Input = Input;
    const NAME: &'static str = "code";
    const DESCRIPTION: &'static str = "Ask the project's language servers (the type checker) about code. \
        operation: definition, references (real uses only, not comments, strings or other classes' same-named \
        members), implementations, hover (inferred type and docs), symbols (a file's outline), workspace_symbols \
        (find a symbol by name; `symbol` is the query), callers, callees, rename (every use, across files, as one \
        change; needs `new_name`). Name the place by `path` and `symbol` (`Class.method` for a member; add `line` \
        to pick one of several), or by `line` and `column`. Prefer it to grep for symbols; use grep for text, \
        config and comments. Returns `path:line:col` and the line, grouped by file.";

    fn action(&self, input: &Input, paths: &PathResolver) -> Result<Action, ToolError> {
        if input.operation.at_a_place() && input.symbol.is_none() && input.line.is_none() {
            return Err(Input::invalid(format!(
                "{} needs `symbol` (or `line` and `column`)",
                input.operation.word()
            )));
        }
        match input.operation {
            Operation::Rename if self.read_only => Err(Input::invalid(
                "rename is not available here: this agent only reads",
            )),
            Operation::Rename => {
                let detail = format!("(rename {} to `{}`)", input.about(), input.new_name()?);
                edit_action(Self::NAME, input.path()?, detail, paths)
            }
            Operation::WorkspaceSymbols => {
                let query = input
                    .symbol
                    .as_deref()
                    .ok_or_else(|| Input::invalid("workspace_symbols needs `symbol`"))?;
                let detail = format!("(workspace_symbols `{query}`)");
                read_action(Self::NAME, input.path.as_deref(), detail, paths)
            }
            operation => {
                let detail = match input.about() {
                    about if about.is_empty() => format!("({})", operation.word()),
                    about => format!("({} {about})", operation.word()),
                };
                read_action(Self::NAME, Some(input.path()?), detail, paths)
            }
        }
    }

    async fn change(
        &self,
        input: &Input,
        cx: &ToolContext<'_, '_>,
    ) -> Option<Result<Change, ToolError>> {
        (input.operation == Operation::Rename).then_some(())?;
        Some(
            self.rename_change(input, cx)
                .await
                .map(|(change, _)| change),
        )
    }

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let ask = Ask {
            intelligence: self.intelligence.as_ref(),
            cx,
        };
        match input.operation {
            Operation::Rename => {
                let (change, edits) = self.rename_change(&input, cx).await?;
                rename::check_each_file(&change, cx)?;
                change.apply(cx).await?;
                Ok(rename::summary(&input, &change, edits))
            }
            Operation::WorkspaceSymbols => {
                let query = input.symbol.as_deref().unwrap_or_default();
                let near = match input.path.as_deref() {
                    Some(path) => Some(cx.workspace().paths().resolve(path)?),
                    None => None,
                };
                let result = ask
                    .cancellable(self.intelligence.workspace_symbols(
                        cx.workspace(),
                        query,
                        near.as_deref(),
                    ))
                    .await?;
                answer::workspace_symbols(&ask, query, result).await
            }
            Operation::Symbols => {
                let path = cx.workspace().paths().resolve(input.path()?)?;
                let text = cx.workspace().read_text(&path).await?.text;
                let outline = ask
                    .answer(
                        &path,
                        "textDocument/documentSymbol",
                        json!({
                            "textDocument": {"uri": uri(&path)?},
                        }),
                    )
                    .await?;
                answer::outline(&ask, &path, outline, &ropey::Rope::from_str(&text))
            }
            operation => {
                let place = target::locate(&ask, &input).await?;
                answer::at_place(&ask, operation, &place).await
            }
        }
    }
}

impl Code {
    /// The rename's change, computed now from the server's answer, and how
    /// many edits it makes.
    async fn rename_change(
        &self,
        input: &Input,
        cx: &ToolContext<'_, '_>,
    ) -> Result<(Change, usize), ToolError> {
        let ask = Ask {
            intelligence: self.intelligence.as_ref(),
            cx,
        };
        let new_name = input.new_name()?;
        let place = target::locate(&ask, input).await?;
        let edit = ask
            .answer(
                &place.path,
                "textDocument/rename",
                json!({
                    "textDocument": {"uri": uri(&place.path)?},
                    "position": place.position,
                    "newName": new_name,
                }),
            )
            .await?;
        rename::change(&ask, &place, edit).await
    }
}

/// One call's way to the language server: requests cancelled with the
/// turn, failures as the model reads them.
pub(super) struct Ask<'c, 'a, 'b> {
    intelligence: &'c dyn Intelligence,
    cx: &'c ToolContext<'a, 'b>,
}

impl Ask<'_, '_, '_> {
    async fn request(&self, path: &Path, method: &str, params: Value) -> Result<Value, ToolError> {
        self.cancellable(
            self.intelligence
                .request(self.cx.workspace(), path, method, params),
        )
        .await
    }

    /// One request, its answer read as the protocol's type `T`.
    async fn answer<T: serde::de::DeserializeOwned>(
        &self,
        path: &Path,
        method: &str,
        params: Value,
    ) -> Result<T, ToolError> {
        let value = self.request(path, method, params).await?;
        serde_json::from_value(value).map_err(|error| self.garbage(path, method, error))
    }

    async fn cancellable(
        &self,
        work: impl std::future::Future<Output = Result<Value, CodeError>>,
    ) -> Result<Value, ToolError> {
        tokio::select! {
            result = work => result.map_err(|error| ToolError::failed(error.to_string())),
            () = self.cx.cancel.cancelled() => Err(ToolError::NotRun("cancelled".into())),
        }
    }

    /// An answer that is not what the protocol says, as the model reads it.
    fn garbage(&self, path: &Path, method: &str, error: impl std::fmt::Display) -> ToolError {
        ToolError::failed(
            CodeError::Garbage {
                server: self.intelligence.answerer(path),
                method: method.to_string(),
                reason: error.to_string(),
            }
            .to_string(),
        )
    }
}

/// A file's URI, as language servers name files.
fn uri(path: &Path) -> Result<String, ToolError> {
    tower_lsp_server::ls_types::Uri::from_file_path(path)
        .map(|uri| uri.to_string())
        .ok_or_else(|| ToolError::failed(format!("cannot name {} as a URI", path.display())))
}
