//! The change an edit tool makes to one file, as a value: computed from the
//! text the tool reads (the open buffer first, then the disk), shown to the
//! user as a unified diff when the gate asks about the call, and written
//! only while it is still the change the user allowed.
//!
//! Each edit tool computes its change in one place ([`super::Tool::change`]),
//! which serves both the preview and the run: the diff a user judges is made
//! by the code that makes the edit, not by a second copy of it.
//!
//! This module owns the edit protocol, and is the only code that makes a
//! [`FileChange`] (its fields are private): resolve the path, read the file,
//! check the read ledger (the file is what the model last saw; a whole-file
//! write over an existing file needs a read at all), compute the new text,
//! write it with the version it was computed from, record what the model
//! now knows. A tool supplies only the computation, so none can skip a step.

use std::path::PathBuf;

use super::{ReadFirst, SinceRead, ToolContext, ToolError};
use crate::diff::{self, Before};
use crate::events::AgentEvent;
use crate::session_files::Entry;
use crate::workspace::{Restore, WorkspaceError};

/// What a file held before a change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Previous {
    Missing,
    Binary,
    Text(String),
}

impl Previous {
    pub fn text(&self) -> Option<&str> {
        match self {
            Previous::Text(text) => Some(text),
            Previous::Missing | Previous::Binary => None,
        }
    }
}

/// One file's new text, and what it replaces. Made only by [`edit_text`]
/// and [`replace_file`], so every change has been through the ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The resolved path.
    path: PathBuf,
    /// The path as the model and the user see it (workspace-relative).
    shown: String,
    before: Previous,
    /// The version `before` was read at (where the workspace has versions).
    read_version: Option<i32>,
    after: String,
}

/// Plans a change to part of an existing text file: `edit` gets its text
/// and returns the new text (with whatever the tool wants to report), or
/// why the edit does not apply. A read is not required first (the edit
/// names the text it replaces), but a file changed since a read is refused.
pub async fn edit_text<T>(
    cx: &ToolContext<'_, '_>,
    path: &str,
    edit: impl FnOnce(&str) -> Result<(String, T), String>,
) -> Result<(FileChange, T), ToolError> {
    plan(cx, path, ReadFirst::NotNeeded, |before| {
        match before.text() {
            Some(text) => edit(text),
            // `plan` reads a missing or binary file as an error for this kind.
            None => Err("not a text file".to_string()),
        }
    })
    .await
}

/// Plans a whole file's new content. A missing file is created; an
/// existing text file must have been read first, and not changed since.
/// (A binary file cannot be read as text, so it is replaced without.)
pub async fn replace_file(
    cx: &ToolContext<'_, '_>,
    path: &str,
    content: &str,
) -> Result<FileChange, ToolError> {
    plan(cx, path, ReadFirst::Required, |_| {
        Ok((content.to_string(), ()))
    })
    .await
    .map(|(change, ())| change)
}

/// The protocol up to the write: resolve, read, check the ledger, compute.
async fn plan<T>(
    cx: &ToolContext<'_, '_>,
    path: &str,
    read_first: ReadFirst,
    compute: impl FnOnce(&Previous) -> Result<(String, T), String>,
) -> Result<(FileChange, T), ToolError> {
    let workspace = cx.workspace();
    let path = workspace.paths().resolve(path)?;
    let shown = workspace.paths().display(&path);
    // Only a whole-file write may create a file or replace a binary one.
    let whole = read_first == ReadFirst::Required;
    let (before, read_version) = match workspace.read_text(&path).await {
        Ok(file) => (Previous::Text(file.text), file.version),
        Err(WorkspaceError::NotFound(_)) if whole => (Previous::Missing, None),
        Err(WorkspaceError::Binary(_)) if whole => (Previous::Binary, None),
        Err(error) => return Err(error.into()),
    };
    if let Some(text) = before.text() {
        cx.reads
            .check(&path, &shown, text, read_version, read_first)?;
    }
    let (after, report) = compute(&before).map_err(|reason| ToolError::Edit {
        path: shown.clone(),
        reason,
    })?;
    let change = FileChange {
        path,
        shown,
        before,
        read_version,
        after,
    };
    Ok((change, report))
}

impl FileChange {
    /// The path as the model and the user see it (workspace-relative).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The resolved path.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The file's whole text after the change.
    pub fn after(&self) -> &str {
        &self.after
    }

    /// The version the text before was read at, where the workspace has versions.
    pub fn read_version(&self) -> Option<i32> {
        self.read_version
    }

    /// What the file held before.
    pub fn before(&self) -> &Previous {
        &self.before
    }

    pub fn diff(&self) -> String {
        diff::unified(&self.shown, self.before_for_diff(), &self.after)
    }

    fn before_for_diff(&self) -> Before<'_> {
        match &self.before {
            Previous::Missing => Before::Missing,
            Previous::Binary => Before::Binary,
            Previous::Text(text) => Before::Text(text),
        }
    }

    /// Writes the new text, if it is the change the user allowed (when they
    /// were asked), records the version the model now knows, and tells the
    /// event sink what changed.
    pub async fn apply(&self, cx: &ToolContext<'_, '_>) -> Result<(), ToolError> {
        apply(std::slice::from_ref(self), cx).await
    }
}

/// A change to one file or several, made whole or not at all: what a call
/// would do, as the user is shown it and as it is written. Every edit tool
/// changes one file; a rename changes every file that names the symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Never empty; in the order the user is shown them.
    files: Vec<FileChange>,
}

impl From<FileChange> for Change {
    fn from(file: FileChange) -> Self {
        Change { files: vec![file] }
    }
}

impl Change {
    /// Several files' changes as one; `None` for none.
    pub fn of(files: Vec<FileChange>) -> Option<Self> {
        (!files.is_empty()).then_some(Change { files })
    }

    pub fn files(&self) -> &[FileChange] {
        &self.files
    }

    /// One unified diff across all the files.
    pub fn diff(&self) -> String {
        self.files.iter().map(FileChange::diff).collect()
    }

    /// Writes every file, if this is the change the user allowed, or none.
    pub async fn apply(&self, cx: &ToolContext<'_, '_>) -> Result<(), ToolError> {
        apply(&self.files, cx).await
    }
}

/// The write of one change: checked against what the user allowed, then
/// written (several files as one edit: see [`write_together`]), recorded
/// for a rewind, and told to the sink file by file.
async fn apply(files: &[FileChange], cx: &ToolContext<'_, '_>) -> Result<(), ToolError> {
    let Some(first) = files.first() else {
        return Ok(());
    };
    let asked = match cx.approved {
        Approved::WithoutAsking => false,
        Approved::Change(allowed) if same_files(&allowed.files, files) => true,
        // The files changed between the question and now (or the change
        // could not be shown at all): what would be written now is not
        // what the user allowed.
        Approved::Change(_) | Approved::WithoutDiff => {
            return Err(ToolError::ChangedWhileAsked {
                path: first.shown.clone(),
            });
        }
    };
    let versions = match files {
        [file] => vec![
            cx.workspace()
                .write_text(&file.path, &file.after, file.read_version)
                .await?,
        ],
        _ => write_together(files, cx).await?,
    };
    for (file, version) in files.iter().zip(versions) {
        cx.reads.saw(&file.path, &file.after, version);
        cx.edits.record(Entry::Edit {
            path: &file.shown,
            before: file.before_for_diff(),
            after: &file.after,
        });
        cx.sink.emit(AgentEvent::FileChanged {
            path: file.shown.clone(),
            diff: file.diff(),
            asked,
        });
    }
    Ok(())
}

/// Several files written as one change: each read again and refused whole
/// if any no longer holds the text the change was computed from, then
/// written as one edit (one `applyEdit`, one undo, in an editor; on disk one
/// file after another, the ones written put back if a later one fails).
/// The versions the files are at afterwards are not known here (the
/// editor's next versions are): `None`, so the ledger keeps their texts.
async fn write_together(
    files: &[FileChange],
    cx: &ToolContext<'_, '_>,
) -> Result<Vec<Option<i32>>, ToolError> {
    let workspace = cx.workspace();
    let mut writes = Vec::with_capacity(files.len());
    for file in files {
        let Previous::Text(before) = &file.before else {
            return Err(ToolError::Edit {
                path: file.shown.clone(),
                reason: "only text files change together".into(),
            });
        };
        let now = workspace.read_text(&file.path).await?;
        if now.text != *before {
            return Err(ToolError::Stale {
                path: file.shown.clone(),
                change: SinceRead::Text,
            });
        }
        writes.push(Restore {
            path: file.path.clone(),
            text: Some(file.after.clone()),
            expected: before.clone(),
            version: now.version,
        });
    }
    let results = workspace.restore(&writes).await;
    let failed: Vec<String> = files
        .iter()
        .zip(&results)
        .filter_map(|(file, result)| {
            let error = result.as_ref().err()?;
            Some(format!("{}: {error}", file.shown))
        })
        .collect();
    if failed.is_empty() {
        return Ok(vec![None; files.len()]);
    }
    // Whole or not at all: what was written goes back.
    let back: Vec<Restore> = files
        .iter()
        .zip(&results)
        .filter(|(_, result)| result.is_ok())
        .filter_map(|(file, _)| {
            Some(Restore {
                path: file.path.clone(),
                text: Some(file.before.text()?.to_string()),
                expected: file.after.clone(),
                version: None,
            })
        })
        .collect();
    for (file, result) in back.iter().zip(workspace.restore(&back).await) {
        if let Err(error) = result {
            tracing::warn!(path = %file.path.display(), %error, "cannot put a file back after a failed change");
        }
    }
    Err(ToolError::failed(format!(
        "nothing was changed: {}",
        failed.join("; ")
    )))
}

/// The same change: the same file, from the same text to the same text.
/// (Texts, not diffs, are compared: a diff of large texts may come out
/// differently twice when its time limit strikes.)
fn same_change(a: &FileChange, b: &FileChange) -> bool {
    a.path == b.path && a.before == b.before && a.after == b.after
}

fn same_files(a: &[FileChange], b: &[FileChange]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_change(a, b))
}

/// What the user allowed of the call being run.
#[derive(Clone, Copy, Debug)]
pub enum Approved<'a> {
    /// Nobody was asked: a rule or the mode allowed it.
    WithoutAsking,
    /// The user was asked and shown this change.
    Change(&'a Change),
    /// The user was asked without a change to see (not an edit, or its
    /// change could not be computed then).
    WithoutDiff,
}

/// The gate's yes to one call.
pub enum Permit {
    WithoutAsking,
    /// After asking; with the change shown, for an edit.
    Asked(Option<Change>),
}

impl Permit {
    pub fn approved(&self) -> Approved<'_> {
        match self {
            Permit::WithoutAsking => Approved::WithoutAsking,
            Permit::Asked(Some(change)) => Approved::Change(change),
            Permit::Asked(None) => Approved::WithoutDiff,
        }
    }
}
