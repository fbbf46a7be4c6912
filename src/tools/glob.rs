//! `glob`: files whose path matches a pattern, newest first, respecting
//! `.gitignore` (ripgrep's `ignore` crate walks; `globset` matches).

use std::path::Path;
use std::time::SystemTime;

use async_trait::async_trait;
use globset::GlobBuilder;
use schemars::JsonSchema;
use serde::Deserialize;

use super::buffers::only_in_buffers;
use super::visibility::HiddenFiles;
use super::{Tool, ToolContext, ToolError, read_action};
use crate::permission::Action;
use crate::workspace::{Buffers, PathResolver};

pub struct Glob;

pub const MAX_PATHS: usize = 200;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// A glob like `**/*.rs` or `src/**/test_*.py`; `*` stays within one directory, `**` crosses them.
    pub pattern: String,
    /// Directory to search in, relative to the workspace root. Default: the root.
    #[serde(default)]
    pub path: Option<String>,
}

#[async_trait]
impl Tool for Glob {
    type Input = Input;
    const NAME: &'static str = "glob";
    const DESCRIPTION: &'static str = "Find files by name pattern, e.g. `**/*.rs` or `src/**/mod.rs`. Skips what .gitignore ignores, \
        and hidden files unless the pattern names them. Returns matching paths, newest first, at most 200.";

    fn action(&self, input: &Input, paths: &PathResolver) -> Result<Action, ToolError> {
        let detail = format!("({})", input.pattern);
        read_action(Self::NAME, input.path.as_deref(), detail, paths)
    }

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let paths = cx.workspace().paths().clone();
        let dir = paths.resolve(input.path.as_deref().unwrap_or("."))?;
        if !paths.is_dir(&dir) {
            return Err(ToolError::failed(format!(
                "`{}` is not a directory",
                paths.display(&dir)
            )));
        }
        let pattern = input.pattern.clone();
        let hidden = HiddenFiles::new(cx.gate, Self::NAME, paths.root(), &dir);
        let buffers = cx.workspace().buffers();
        tokio::task::spawn_blocking(move || find(&pattern, &dir, &paths, &hidden, &buffers))
            .await
            .map_err(|error| ToolError::failed(format!("glob failed: {error}")))?
    }
}

fn find(
    pattern: &str,
    dir: &Path,
    paths: &PathResolver,
    hidden: &HiddenFiles,
    buffers: &Buffers,
) -> Result<String, ToolError> {
    let pattern = pattern.trim_start_matches("./");
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|error| ToolError::failed(format!("invalid glob `{pattern}`: {error}")))?
        .compile_matcher();
    // Hidden files only when the pattern itself names one (`.github/**`, `**/.env`).
    let wants_hidden = pattern
        .split('/')
        .any(|part| part.starts_with('.') && part != "." && part != "..");
    let walker = ignore::WalkBuilder::new(dir)
        .hidden(!wants_hidden)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    let mut found: Vec<(SystemTime, String)> = Vec::new();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(dir) else {
            continue;
        };
        if matcher.is_match(relative) && !hidden.hides(entry.path()) {
            // Checked through the resolver, not the walk's name: a directory
            // swapped for a link to outside cannot lend its file names.
            if let Some(modified) = paths.file_modified(entry.path()) {
                found.push((modified, paths.display(entry.path())));
            }
        }
    }
    // Files only the editor has are the newest of all.
    let now = SystemTime::now();
    for (path, _) in only_in_buffers(buffers, dir, wants_hidden) {
        let Ok(relative) = path.strip_prefix(dir) else {
            continue;
        };
        if matcher.is_match(relative) && !hidden.hides(path) {
            found.push((now, paths.display(path)));
        }
    }
    let note = hidden.note();
    if found.is_empty() {
        let none = format!("No files match `{pattern}`.");
        return Ok(match note {
            Some(note) => format!("{none}\n{note}"),
            None => none,
        });
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let mut out: Vec<String> = found
        .into_iter()
        .take(MAX_PATHS)
        .map(|(_, path)| path)
        .collect();
    if total > MAX_PATHS {
        out.push(format!(
            "({} more files match; narrow the pattern or the path to see them.)",
            total - MAX_PATHS
        ));
    }
    out.extend(note);
    Ok(out.join("\n"))
}
