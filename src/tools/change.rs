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

use super::{ReadFirst, ToolContext, ToolError};
use crate::diff::{self, Before};
use crate::events::AgentEvent;
use crate::sessions::Entry;
use crate::workspace::WorkspaceError;

/// What a file held before a change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Previous {
    Missing,
    Binary,
    Text(String),
}

impl Previous {
    fn text(&self) -> Option<&str> {
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
        let asked = match cx.approved {
            Approved::WithoutAsking => false,
            Approved::Change(allowed) if same_change(allowed, self) => true,
            // The file changed between the question and now (or the change
            // could not be shown at all): what would be written now is not
            // what the user allowed.
            Approved::Change(_) | Approved::WithoutDiff => {
                return Err(ToolError::ChangedWhileAsked {
                    path: self.shown.clone(),
                });
            }
        };
        let workspace = cx.workspace();
        let version = workspace
            .write_text(&self.path, &self.after, self.read_version)
            .await?;
        cx.reads.saw(&self.path, &self.after, version);
        cx.edits.record(Entry::Edit {
            path: &self.shown,
            before: self.before_for_diff(),
            after: &self.after,
        });
        cx.sink.emit(AgentEvent::FileChanged {
            path: self.shown.clone(),
            diff: self.diff(),
            asked,
        });
        Ok(())
    }
}

/// The same change: the same file, from the same text to the same text.
/// (Texts, not diffs, are compared: a diff of large texts may come out
/// differently twice when its time limit strikes.)
fn same_change(a: &FileChange, b: &FileChange) -> bool {
    a.path == b.path && a.before == b.before && a.after == b.after
}

/// What the user allowed of the call being run.
#[derive(Clone, Copy, Debug)]
pub enum Approved<'a> {
    /// Nobody was asked: a rule or the mode allowed it.
    WithoutAsking,
    /// The user was asked and shown this change.
    Change(&'a FileChange),
    /// The user was asked without a change to see (not an edit, or its
    /// change could not be computed then).
    WithoutDiff,
}

/// The gate's yes to one call.
pub enum Permit {
    WithoutAsking,
    /// After asking; with the change shown, for an edit.
    Asked(Option<FileChange>),
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
