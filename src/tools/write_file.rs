//! `write_file`: a whole file's new content, parents created as needed.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, file_action};
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

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let workspace = cx.workspace();
        let path = workspace.paths().resolve(&input.path)?;
        let previous = match workspace.read_text(&path).await {
            Ok(file) => Some(file),
            Err(WorkspaceError::NotFound(_)) => None,
            Err(WorkspaceError::Binary(_)) => None, // replacing a binary file is allowed
            Err(error) => return Err(error.into()),
        };
        let version = previous.as_ref().and_then(|file| file.version);
        let shown_path = workspace.paths().display(&path);
        cx.agent.reads.check(&path, &shown_path, version)?;
        let written = workspace.write_text(&path, &input.content, version).await?;
        cx.agent.reads.saw(&path, written);
        let lines = input.content.lines().count();
        let shown = workspace.paths().display(&path);
        Ok(match previous {
            Some(_) => format!("Replaced {shown} ({lines} lines)."),
            None => format!("Created {shown} ({lines} lines)."),
        })
    }
}
