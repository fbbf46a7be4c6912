//! `write_file`: a whole file's new content, parents created as needed. An
//! existing file must have been read first (see [`replace_file`]).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::change::replace_file;
use super::{Change, Previous, Tool, ToolContext, ToolError, edit_action};
use crate::permission::Action;
use crate::workspace::{MAX_TEXT_BYTES, PathResolver};

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
        To replace an existing file, read it with read_file first. Prefer edit_file to change part of an existing file. Returns what was written.";

    fn action(&self, input: &Input, paths: &PathResolver) -> Result<Action, ToolError> {
        within_cap(input)?;
        let detail = format!("({} lines)", input.content.lines().count());
        edit_action(Self::NAME, &input.path, detail, paths)
    }

    async fn change(
        &self,
        input: &Input,
        cx: &ToolContext<'_, '_>,
    ) -> Option<Result<Change, ToolError>> {
        if let Err(error) = within_cap(input) {
            return Some(Err(error));
        }
        Some(
            replace_file(cx, &input.path, &input.content)
                .await
                .map(Change::from),
        )
    }

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        within_cap(&input)?;
        let change = replace_file(cx, &input.path, &input.content).await?;
        change.apply(cx).await?;
        let lines = input.content.lines().count();
        let shown = change.shown();
        Ok(match change.before() {
            Previous::Missing => format!("Created {shown} ({lines} lines)."),
            _ => format!("Replaced {shown} ({lines} lines)."),
        })
    }
}

/// Content over the cap is refused before anything is made of it (a diff
/// to show, a copy to write): a model emitting it is broken or attacked.
fn within_cap(input: &Input) -> Result<(), ToolError> {
    let size = input.content.len() as u64;
    if size > MAX_TEXT_BYTES {
        return Err(ToolError::failed(format!(
            "the content is {size} bytes, over the {MAX_TEXT_BYTES} bytes (10 MiB) write_file takes; generate a file that large with a command (a script that writes it) instead"
        )));
    }
    Ok(())
}
