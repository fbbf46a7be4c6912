//! `write_file`: a whole file's new content, parents created as needed.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{FileChange, Previous, Tool, ToolContext, ToolError, file_action};
use crate::permission::{Action, ActionKind};
use crate::workspace::{PathResolver, WorkspaceError};

pub struct WriteFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// File path, relative to the workspace root (or absolute inside it).
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

#[async_trait]
impl Tool for WriteFile {
    type Input = Input;
    const NAME: &'static str = "write_file";
    const DESCRIPTION: &'static str = "Create a file, or replace a whole file, with `content`; missing parent directories are created. \
        Prefer edit_file to change part of an existing file. Returns what was written.";

    fn action(&self, input: &Input, paths: &PathResolver) -> Result<Action, ToolError> {
        let detail = format!("({} lines)", input.content.lines().count());
        file_action(
            Self::NAME,
            ActionKind::Edit,
            &input.path,
            Some(detail),
            paths,
        )
    }

    async fn change(
        &self,
        input: &Input,
        cx: &ToolContext<'_, '_>,
    ) -> Option<Result<FileChange, ToolError>> {
        Some(plan(input, cx).await)
    }

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let change = plan(&input, cx).await?;
        change.apply(cx).await?;
        let lines = input.content.lines().count();
        let shown = &change.shown;
        Ok(match change.before {
            Previous::Missing => format!("Created {shown} ({lines} lines)."),
            _ => format!("Replaced {shown} ({lines} lines)."),
        })
    }
}

/// The file's whole new content, and what it replaces as the workspace reads it now.
async fn plan(input: &Input, cx: &ToolContext<'_, '_>) -> Result<FileChange, ToolError> {
    let workspace = cx.workspace();
    let path = workspace.paths().resolve(&input.path)?;
    let shown = workspace.paths().display(&path);
    let (before, read_version) = match workspace.read_text(&path).await {
        Ok(file) => (Previous::Text(file.text), file.version),
        Err(WorkspaceError::NotFound(_)) => (Previous::Missing, None),
        // Replacing a binary file is allowed.
        Err(WorkspaceError::Binary(_)) => (Previous::Binary, None),
        Err(error) => return Err(error.into()),
    };
    cx.reads.check(&path, &shown, read_version)?;
    Ok(FileChange {
        path,
        shown,
        before,
        read_version,
        after: input.content.clone(),
    })
}
