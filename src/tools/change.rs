//! The change an edit tool makes to one file, as a value: computed from the
//! text the tool reads (the open buffer first, then the disk), shown to the
//! user as a unified diff when the gate asks about the call, and written
//! only while it is still the change the user allowed.
//!
//! Each edit tool computes its change in one place ([`super::Tool::change`]),
//! which serves both the preview and the run: the diff a user judges is made
//! by the code that makes the edit, not by a second copy of it.

use std::path::PathBuf;

use super::{ToolContext, ToolError};
use crate::diff::{self, Before};
use crate::events::AgentEvent;

/// What a file held before a change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Previous {
    Missing,
    Binary,
    Text(String),
}

/// One file's new text, and what it replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The resolved path.
    pub path: PathBuf,
    /// The path as the model and the user see it (workspace-relative).
    pub shown: String,
    pub before: Previous,
    /// The version `before` was read at (where the workspace has versions).
    pub read_version: Option<i32>,
    pub after: String,
}

impl FileChange {
    pub fn diff(&self) -> String {
        let before = match &self.before {
            Previous::Missing => Before::Missing,
            Previous::Binary => Before::Binary,
            Previous::Text(text) => Before::Text(text),
        };
        diff::unified(&self.shown, before, &self.after)
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
                return Err(ToolError(format!(
                    "{} changed while the user was being asked, so this is no longer the change they allowed; \
                     nothing was written. Read the file again, then redo the edit.",
                    self.shown
                )));
            }
        };
        let workspace = cx.workspace();
        let version = workspace
            .write_text(&self.path, &self.after, self.read_version)
            .await?;
        cx.reads.saw(&self.path, version);
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
