//! Project instructions: `AGENTS.md` (and `CLAUDE.md`, `BAREAGENT.md`) that
//! steer the agent, gathered at the start of each turn into a section of
//! the system prompt.
//!
//! Which files: the user's own `~/.config/bareagent/AGENTS.md` first, then
//! the workspace root's, then those of each directory between the root and
//! a file the turn is about (named in the prompt, or open in the editor),
//! shallower before deeper, so the most specific comes last. A turn's set
//! is fixed when it starts: a directory the agent only reaches during the
//! turn is picked up by the next one (the system prompt stays the same for
//! every call of a turn, which keeps the prompt cache warm).
//!
//! How: the workspace's files only where the gate lets `read_file` show
//! them without asking (a deny rule on `docs/**` keeps `docs/AGENTS.md`
//! out), through the resolver, opened beneath the root
//! without following any link (a planted `AGENTS.md -> /etc/passwd` is not
//! read, and is named as refused), and from disk (an unsaved buffer of one
//! is not what the project says). Each file is capped at
//! [`MAX_FILE_BYTES`], all of them at [`MAX_TOTAL_BYTES`], with a note in
//! the prompt where text was cut.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::permission::{FileVisibility, PermissionGate};
use crate::workspace::PathResolver;

/// The names read in each directory, in this order.
pub const INSTRUCTION_FILES: [&str; 3] = ["AGENTS.md", "CLAUDE.md", "BAREAGENT.md"];
/// At most this much of one file goes into the prompt.
pub const MAX_FILE_BYTES: usize = 16 * 1024;
/// At most this much of all of them.
pub const MAX_TOTAL_BYTES: usize = 32 * 1024;
/// Directories named by a prompt that are looked at, at most.
const MAX_NEAR: usize = 64;

/// One instruction file, as `bareagent.status` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionFile {
    /// Relative to the root; the user's file by its full path.
    pub path: String,
    /// Its size on disk.
    pub bytes: usize,
    /// How much of it the prompt holds (less than `bytes` when cut).
    pub included: usize,
    /// Why it was not read (a link, not a regular file), if it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// The instructions of one turn.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instructions {
    pub files: Vec<InstructionFile>,
    /// The section for the system prompt; empty when there are none.
    pub prompt: String,
}

/// The user's own instructions file, beside the user's config.
pub fn user_instructions_path() -> Option<PathBuf> {
    crate::config_files::user_config_path()
        .and_then(|config| Some(config.parent()?.join("AGENTS.md")))
}

/// Gathers the instructions for a turn about the files `near` (absolute,
/// or relative to the root; those outside it are ignored). A workspace file
/// that `gate` would not let `read_file` show without asking (a deny or
/// ask rule, a name that may hold secrets) is refused: going into the
/// prompt is a read.
pub fn load(
    paths: &PathResolver,
    gate: &PermissionGate,
    user_file: Option<&Path>,
    near: &[PathBuf],
) -> Instructions {
    let mut found: Vec<(InstructionFile, String)> = Vec::new();
    if let Some(user) = user_file
        && let Ok(file) = std::fs::File::open(user)
        && let Found::Text(text, size) = read_capped(file)
    {
        found.push((file_entry(user.display().to_string(), size), text));
    }
    let is_dir = |relative: &Path| paths.is_dir(&paths.root().join(relative));
    for dir in directories(paths.root(), near, is_dir) {
        for name in INSTRUCTION_FILES {
            let path = paths.root().join(&dir).join(name);
            let shown = paths.display(&path);
            let outcome = match gate.file_visibility("read_file", &shown) {
                FileVisibility::Visible => read(paths, &path),
                FileVisibility::Denied(rule) => match read(paths, &path) {
                    Found::Missing => Found::Missing,
                    _ => Found::Refused(format!("the rule `{rule}` denies reading it")),
                },
                FileVisibility::NeedsApproval(why) => match read(paths, &path) {
                    Found::Missing => Found::Missing,
                    _ => Found::Refused(format!("reading it would ask first ({why})")),
                },
            };
            match outcome {
                Found::Text(text, size) => found.push((file_entry(shown, size), text)),
                Found::Missing => {}
                Found::Refused(why) => {
                    tracing::warn!(path = %shown, why, "not reading an instruction file");
                    let mut entry = file_entry(shown, 0);
                    entry.refused = Some(why);
                    found.push((entry, String::new()));
                }
            }
        }
    }
    let mut prompt = String::new();
    let mut budget = MAX_TOTAL_BYTES;
    for (entry, text) in &mut found {
        if entry.refused.is_some() {
            continue;
        }
        let mut cut = MAX_FILE_BYTES.min(budget).min(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let kept = &text[..cut];
        entry.included = kept.len();
        budget -= kept.len();
        prompt.push_str(&format!("\n<instructions file=\"{}\">\n", entry.path));
        prompt.push_str(kept);
        if kept.len() < entry.bytes {
            prompt.push_str(&format!(
                "\n[cut: {} of {} bytes shown; read the file for the rest]",
                kept.len(),
                entry.bytes
            ));
        }
        prompt.push_str("\n</instructions>\n");
    }
    if !prompt.is_empty() {
        prompt.insert_str(
            0,
            "\nProject instructions follow (the user's, then the project's, most specific last; \
             where they disagree, the later one wins):\n",
        );
    }
    Instructions {
        files: found.into_iter().map(|(entry, _)| entry).collect(),
        prompt,
    }
}

fn file_entry(path: String, bytes: usize) -> InstructionFile {
    InstructionFile {
        path,
        bytes,
        included: 0,
        refused: None,
    }
}

enum Found {
    /// Its text (up to a little over the cap) and its whole size.
    Text(String, usize),
    Missing,
    Refused(String),
}

/// One file, beneath the root and through no link.
fn read(paths: &PathResolver, path: &Path) -> Found {
    use crate::workspace::WorkspaceError;
    match paths.open_file(path) {
        Ok(file) => read_capped(file),
        Err(WorkspaceError::NotFound(_)) => Found::Missing,
        Err(WorkspaceError::IsDirectory(_)) => Found::Missing,
        Err(error) => Found::Refused(error.to_string()),
    }
}

/// An opened file's text, read up to a little over the cap (enough to
/// know it was cut), and its size.
fn read_capped(file: std::fs::File) -> Found {
    let size = file.metadata().map_or(0, |m| m.len() as usize);
    let mut bytes = Vec::new();
    match Read::take(file, MAX_FILE_BYTES as u64 + 4).read_to_end(&mut bytes) {
        Ok(_) => Found::Text(String::from_utf8_lossy(&bytes).into_owned(), size),
        Err(error) => Found::Refused(error.to_string()),
    }
}

/// The root, then every directory between it and each of `near`, each
/// once, shallower first (relative to the root; `""` is the root). A path
/// of `near` counts as a directory itself when `is_dir` says so.
fn directories(root: &Path, near: &[PathBuf], is_dir: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::new()];
    for path in near.iter().take(MAX_NEAR) {
        let relative = if path.is_absolute() {
            match path.strip_prefix(root) {
                Ok(relative) => relative.to_path_buf(),
                Err(_) => continue,
            }
        } else {
            path.clone()
        };
        if relative
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            continue;
        }
        let components: Vec<_> = relative.components().collect();
        let above = if is_dir(&relative) {
            components.len()
        } else {
            components.len().saturating_sub(1)
        };
        let mut dir = PathBuf::new();
        for component in &components[..above] {
            dir.push(component);
            if !dirs.contains(&dir) {
                dirs.push(dir.clone());
            }
        }
    }
    dirs.sort_by_key(|d| d.components().count());
    dirs
}

/// Paths a prompt names: words that look like paths (`src/a.rs`,
/// `` `docs/` ``), for [`load`] to look near. Whether each exists does not
/// matter; one that does not has no instructions.
pub fn paths_in(prompt: &str) -> Vec<PathBuf> {
    prompt
        .split_whitespace()
        .map(|word| {
            word.trim_matches(|c: char| {
                matches!(
                    c,
                    '`' | '"' | '\'' | ',' | ';' | ':' | '(' | ')' | '[' | ']' | '<' | '>'
                ) || (c == '.')
            })
        })
        .filter(|word| word.contains('/') && !word.contains("://"))
        .map(PathBuf::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_run_from_the_root_to_each_file() {
        let root = Path::new("/w");
        let near = [
            PathBuf::from("/w/src/lsp/chat.rs"),
            PathBuf::from("docs/a.md"),
            PathBuf::from("/elsewhere/x.rs"),
            PathBuf::from("../up/x.rs"),
        ];
        let dirs: Vec<String> = directories(root, &near, |p| p == Path::new("docs/a.md"))
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        assert_eq!(dirs, ["", "src", "docs", "src/lsp", "docs/a.md"]);
    }

    #[test]
    fn prompts_name_paths() {
        assert_eq!(
            paths_in("Fix `src/lsp/chat.rs`, then docs/ (see https://x.org/a)."),
            [PathBuf::from("src/lsp/chat.rs"), PathBuf::from("docs/")]
        );
    }
}
