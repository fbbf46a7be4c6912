//! `diagnostics`: the errors and warnings the editor's own language servers
//! report (a type checker, a linter), for given files, the files the agent
//! has read or edited, or every file — what the user sees underlined.
//! Where the editor sends none (see `crate::workspace::reported`), it says so, and
//! what to do instead.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::visibility::HiddenFiles;
use super::{Tool, ToolContext, ToolError, plain_action};
use crate::permission::{Action, ActionKind};
use crate::workspace::PathResolver;
use crate::workspace::reported::describe;

pub struct Diagnostics;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Files to report on, relative to the workspace root. Default: the files you have read or edited.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// Report on every file the editor has problems for. Default false.
    #[serde(default)]
    pub all: bool,
}

/// Said when the editor sends no diagnostics.
const NONE_SENT: &str = "The editor sends no diagnostics to bareagent (the VS Code extension and the Neovim plugin do; \
     in other editors only those under the cursor reach it). Run the project's build, type checker or linter with bash instead.";

#[async_trait]
impl Tool for Diagnostics {
    type Input = Input;
    const NAME: &'static str = "diagnostics";
    const DESCRIPTION: &'static str = "The errors and warnings the editor's language servers report (compiler, type checker, linter), \
        with line, column, source and message. Give `paths`, or `all: true`; by default the files you have read or edited. \
        Faster than a build, and what the user sees in the editor.";

    fn action(&self, input: &Input, paths: &PathResolver) -> Result<Action, ToolError> {
        let summary = match (&input.paths, input.all) {
            (_, true) => "all files".to_string(),
            (Some(files), false) => {
                // Resolved now, so a path outside the workspace is refused
                // before anything runs.
                let shown: Result<Vec<String>, ToolError> = files
                    .iter()
                    .map(|p| Ok(paths.display(&paths.resolve(p)?)))
                    .collect();
                shown?.join(", ")
            }
            (None, false) => "the files read or edited".to_string(),
        };
        Ok(plain_action(Self::NAME, ActionKind::Read, summary))
    }

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let Some(diagnostics) = cx.workspace().diagnostics() else {
            return Ok(NONE_SENT.to_string());
        };
        let paths = cx.workspace().paths();
        let files = match (input.paths, input.all) {
            (_, true) => diagnostics
                .with_problems()
                .into_iter()
                .map(|(path, _)| path)
                .collect(),
            (Some(files), false) => files
                .iter()
                .map(|p| paths.resolve(p))
                .collect::<Result<Vec<_>, _>>()?,
            (None, false) => cx.reads.paths(),
        };
        // What the read policy hides is not reported on: a message may
        // quote the file.
        let hidden = HiddenFiles::new(cx.gate, Self::NAME, paths.root(), paths.root());
        let mut report = Vec::new();
        let mut clean = Vec::new();
        let mut unknown = Vec::new();
        for path in files {
            if hidden.hides(&path) {
                continue;
            }
            let shown = paths.display(&path);
            match diagnostics.of(&path) {
                None => unknown.push(shown),
                Some(items) => match describe(&items) {
                    lines if lines.is_empty() => clean.push(shown),
                    lines => report.push(format!("{shown}:\n  {}", lines.join("\n  "))),
                },
            }
        }
        if !clean.is_empty() {
            report.push(format!("No errors or warnings: {}.", clean.join(", ")));
        }
        if !unknown.is_empty() {
            report.push(format!(
                "Not reported on by the editor (not open, or no language server for it): {}.",
                unknown.join(", ")
            ));
        }
        if report.is_empty() {
            report.push("The editor reports no errors or warnings.".to_string());
        }
        report.extend(hidden.note());
        Ok(report.join("\n"))
    }
}
