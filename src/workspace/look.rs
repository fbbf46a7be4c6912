//! A look at the workspace's files: each one's size, times and inode, walked
//! as git sees the tree. Two looks, one before and one after a tool we cannot
//! see into (an MCP server's), say which files it created, modified or
//! deleted, so the turn counts them as it counts the file tools' edits.
//!
//! No contents are kept: a look costs a `stat` per file, not a read, and
//! holds a few dozen bytes per file. So a change found this way has no diff
//! and no line counts: what the file held before is not known.
//!
//! What it sees: files (not links, not directories) under the root, with
//! `.gitignore` honoured and `.git` skipped, as [`super::clean_stale_temp_files`]
//! walks them, and `.bareagent` skipped too: the agent's own chat and
//! session files change during every call.
//!
//! What it cannot see is who changed a file: the user saving in the
//! editor, or a command left running in the background, while the tool
//! ran, is told as the tool's change. So the turn says a file changed
//! *while* the tool ran, not that the tool changed it. The change time is part of a file's stamp: a tool may set the
//! modification time back, but not the change time, so a rewrite of the same
//! size within one clock tick is still seen.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use ignore::WalkState;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::sync::Locked;

/// The most files a look stamps. A tree larger than this is not looked at
/// (a look at 100,000 files takes 0.3 s on the 2-core VM of
/// `benches/mcp.rs`, and a cut look cannot tell "deleted" from "not
/// reached"): its changes go uncounted, the log says so, and the process
/// does not walk that root again.
pub const MOST_FILES: usize = 100_000;

/// Roots found larger than [`MOST_FILES`].
static TOO_LARGE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The agent's own directory: not the user's files.
const OWN: &str = super::OWN_DIR;

/// How a file changed between two looks.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Touch {
    Created,
    Modified,
    Deleted,
}

impl Touch {
    pub fn as_str(self) -> &'static str {
        match self {
            Touch::Created => "created",
            Touch::Modified => "modified",
            Touch::Deleted => "deleted",
        }
    }
}

/// What one file looked like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
    inode: (u64, u64),
}

impl Stamp {
    fn of(metadata: &std::fs::Metadata) -> Stamp {
        Stamp {
            len: metadata.len(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
            changed: (metadata.ctime(), metadata.ctime_nsec()),
            inode: (metadata.dev(), metadata.ino()),
        }
    }
}

/// The workspace's files at one moment, by path relative to the root.
#[derive(Debug)]
pub struct Look {
    files: HashMap<PathBuf, Stamp>,
    /// More files than [`MOST_FILES`]: the look says nothing.
    cut: bool,
}

impl Look {
    /// Blocks for a walk of the tree: call it off the async threads.
    pub fn take(root: &Path) -> Look {
        Look::take_at_most(root, MOST_FILES)
    }

    /// Walks on every core: the walk is a `stat` per file, and on a VM a
    /// `stat` can cost microseconds (see `benches/mcp.rs`).
    fn take_at_most(root: &Path, most: usize) -> Look {
        if TOO_LARGE.locked().iter().any(|large| large == root) {
            return Look::cut();
        }
        let files = Mutex::new(HashMap::new());
        let cut = AtomicBool::new(false);
        super::tree_walker(root).build_parallel().run(|| {
            Box::new(|entry| {
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                let Ok(relative) = entry.path().strip_prefix(root) else {
                    return WalkState::Continue;
                };
                if relative.starts_with(OWN) {
                    return WalkState::Skip;
                }
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                let Ok(metadata) = entry.metadata() else {
                    return WalkState::Continue;
                };
                let mut files = files.locked();
                if files.len() == most {
                    cut.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
                files.insert(relative.to_path_buf(), Stamp::of(&metadata));
                WalkState::Continue
            })
        });
        if cut.into_inner() {
            tracing::info!(
                root = %root.display(),
                most,
                "the workspace has too many files to look at; changes by MCP tools are not counted"
            );
            TOO_LARGE.locked().push(root.to_path_buf());
            return Look::cut();
        }
        Look {
            files: files
                .into_inner()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
            cut: false,
        }
    }

    fn cut() -> Look {
        Look {
            files: HashMap::new(),
            cut: true,
        }
    }

    /// The files that differ in `after`, sorted by path; none when either
    /// look was cut.
    pub fn changes_to(&self, after: &Look) -> Vec<(PathBuf, Touch)> {
        if self.cut || after.cut {
            return Vec::new();
        }
        let mut changes: Vec<(PathBuf, Touch)> = after
            .files
            .iter()
            .filter_map(|(path, stamp)| match self.files.get(path) {
                None => Some((path.clone(), Touch::Created)),
                Some(before) if before != stamp => Some((path.clone(), Touch::Modified)),
                Some(_) => None,
            })
            .chain(
                self.files
                    .keys()
                    .filter(|path| !after.files.contains_key(*path))
                    .map(|path| (path.clone(), Touch::Deleted)),
            )
            .collect();
        changes.sort();
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    type Step = fn(&Path);
    /// (what a tool did, in words and as a step; the changes a look sees)
    type Case = (&'static str, Step, Vec<(&'static str, Touch)>);

    /// Every case starts from the same tree: `a.txt`, `sub/b.txt`, an
    /// ignored `build/`, `.git/`, `.bareagent/`.
    #[test]
    fn two_looks_see_what_a_tool_did_and_nothing_else() {
        let cases: Vec<Case> = vec![
            ("nothing", |_| {}, vec![]),
            (
                "a new file",
                |root| fs::write(root.join("new.txt"), "x").unwrap(),
                vec![("new.txt", Touch::Created)],
            ),
            (
                "a new file in a new directory",
                |root| {
                    fs::create_dir(root.join("d")).unwrap();
                    fs::write(root.join("d/n.txt"), "x").unwrap();
                },
                vec![("d/n.txt", Touch::Created)],
            ),
            (
                "a rewrite of the same size, its modification time put back",
                |root| {
                    let path = root.join("a.txt");
                    let before = fs::metadata(&path).unwrap().modified().unwrap();
                    fs::write(&path, "A\n").unwrap();
                    let file = fs::File::options().write(true).open(&path).unwrap();
                    file.set_modified(before).unwrap();
                },
                vec![("a.txt", Touch::Modified)],
            ),
            (
                "a file replaced by a rename",
                |root| {
                    fs::write(root.join("tmp"), "b\n").unwrap();
                    fs::rename(root.join("tmp"), root.join("sub/b.txt")).unwrap();
                },
                vec![("sub/b.txt", Touch::Modified)],
            ),
            (
                "a deletion",
                |root| fs::remove_file(root.join("sub/b.txt")).unwrap(),
                vec![("sub/b.txt", Touch::Deleted)],
            ),
            (
                "a move",
                |root| fs::rename(root.join("a.txt"), root.join("moved.txt")).unwrap(),
                vec![("a.txt", Touch::Deleted), ("moved.txt", Touch::Created)],
            ),
            (
                "a file git ignores, and git's own files",
                |root| {
                    fs::write(root.join("build/out.o"), "o").unwrap();
                    fs::write(root.join(".git/index"), "i").unwrap();
                },
                vec![],
            ),
            (
                "a hidden file git does not ignore",
                |root| fs::write(root.join(".env.example"), "K=\n").unwrap(),
                vec![(".env.example", Touch::Created)],
            ),
            (
                // A hostile repository's link out of the workspace: never
                // followed, so what changes out there is not walked or told.
                "a link to a directory outside, with a file in it",
                |root| {
                    let outside = root.with_extension("outside");
                    fs::create_dir_all(&outside).unwrap();
                    fs::write(outside.join("x.txt"), "x").unwrap();
                    std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
                },
                vec![],
            ),
            (
                "the agent's own chat file",
                |root| fs::write(root.join(".bareagent/chat.md"), "## You\n").unwrap(),
                vec![],
            ),
            (
                "a file read, not written",
                |root| {
                    fs::read(root.join("a.txt")).unwrap();
                },
                vec![],
            ),
        ];
        for (what, step, want) in cases {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            fs::create_dir_all(root.join("sub")).unwrap();
            fs::create_dir_all(root.join("build")).unwrap();
            fs::create_dir_all(root.join(".git")).unwrap();
            fs::create_dir_all(root.join(".bareagent")).unwrap();
            fs::write(root.join("a.txt"), "a\n").unwrap();
            fs::write(root.join("sub/b.txt"), "b\n").unwrap();
            fs::write(root.join(".gitignore"), "build/\n").unwrap();
            let before = Look::take(root);
            step(root);
            let seen = before.changes_to(&Look::take(root));
            // The one case that makes a directory beside the workspace.
            let _ = fs::remove_dir_all(root.with_extension("outside"));
            let want: Vec<(PathBuf, Touch)> = want
                .into_iter()
                .map(|(path, touch)| (PathBuf::from(path), touch))
                .collect();
            assert_eq!(seen, want, "{what}");
        }
    }

    #[test]
    fn a_tree_past_the_limit_says_nothing() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a", "b", "c"] {
            fs::write(dir.path().join(name), name).unwrap();
        }
        let before = Look::take_at_most(dir.path(), 2);
        fs::remove_file(dir.path().join("a")).unwrap();
        assert!(before.cut);
        let after = Look::take_at_most(dir.path(), 2);
        assert!(after.cut, "the root is remembered as too large");
        assert_eq!(before.changes_to(&after), vec![]);
    }
}
