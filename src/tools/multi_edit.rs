//! `multi_edit`: several `edit_file` edits to one file, all or none.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::change::edit_text;
use super::edit_file::{apply_edit, line_delta};
use super::{Change, FileChange, Tool, ToolContext, ToolError, edit_action};
use crate::permission::Action;
use crate::workspace::PathResolver;

pub struct MultiEdit;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// The exact text to replace; unique in the file as it is after the edits before this one.
    pub old_string: String,
    pub new_string: String,
    #[serde(default)]
    pub replace_all: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// File path, relative to the workspace root.
    pub path: String,
    /// Edits applied in order, each to the result of the one before.
    pub edits: Vec<Edit>,
}

#[async_trait]
impl Tool for MultiEdit {
    type Input = Input;
    const NAME: &'static str = "multi_edit";
    const DESCRIPTION: &'static str = "Make several exact-string edits to one file at once, in order, with edit_file's rules for \
        each. If any edit fails, none is applied. Returns a summary, or which edit failed and why.";

    fn action(&self, input: &Input, paths: &PathResolver) -> Result<Action, ToolError> {
        let (added, removed) = input.edits.iter().fold((0, 0), |(a, r), edit| {
            let (da, dr) = line_delta(&edit.old_string, &edit.new_string);
            (a + da, r + dr)
        });
        let detail = format!("({} edits, +{added} -{removed})", input.edits.len());
        edit_action(Self::NAME, &input.path, detail, paths)
    }

    async fn change(
        &self,
        input: &Input,
        cx: &ToolContext<'_, '_>,
    ) -> Option<Result<Change, ToolError>> {
        Some(plan(input, cx).await.map(Change::from))
    }

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let change = plan(&input, cx).await?;
        change.apply(cx).await?;
        Ok(format!(
            "Applied {} edits to {}.",
            input.edits.len(),
            change.shown()
        ))
    }
}

/// The change all the edits make together, from the text the workspace reads now.
async fn plan(input: &Input, cx: &ToolContext<'_, '_>) -> Result<FileChange, ToolError> {
    if input.edits.is_empty() {
        return Err(ToolError::failed("no edits given"));
    }
    let total = input.edits.len();
    let (change, ()) = edit_text(cx, &input.path, |text| {
        let mut text = text.to_string();
        for (index, edit) in input.edits.iter().enumerate() {
            text = apply_edit(&text, &edit.old_string, &edit.new_string, edit.replace_all)
                .map_err(|error| {
                    format!(
                        "edit {} of {total} failed, so no edit was applied: {error}",
                        index + 1
                    )
                })?
                .text;
        }
        Ok((text, ()))
    })
    .await?;
    Ok(change)
}
