//! Rewind: the last turn of a session undone. Its file edits are put back as they were
//! before it (in an editor as one undoable `workspace/applyEdit`, headless
//! on disk), and the turn is dropped from the history, by a record the
//! loader honours, so a resumed session has forgotten it too.
//!
//! The session file is the truth: the turn's edits and the history before
//! it are read back from it, whoever asks (`bareagent run --rewind`, the
//! chat's `/rewind`, `bareagent.rewind`).
//!
//! What it must not do: overwrite anything nobody recorded. A file is put
//! back only if it still holds exactly the text the agent left in it;
//! otherwise (the user or a command changed it since, it was deleted, it
//! was binary before so its bytes were not kept) it is left as it is and
//! named. A file the user's deny rules keep edits from is not written
//! either (the gate's rules, whatever the mode). Changes that commands made
//! are not recorded, so not undone.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use crate::history::{ContentBlock, Message, push_user_blocks};
use crate::permission::PermissionGate;
use crate::session_files::{
    EditRecord, Entry as Said, Refused, RewindRecord, SessionFile, SessionFileError, Transcript,
    read_own,
};
use crate::tools::edit_action;
use crate::workspace::{Restore, Workspace, WorkspaceError};

/// What a rewind did.
#[derive(Clone, Debug)]
pub struct Rewound {
    /// Files put back as they were before the turn.
    pub restored: Vec<String>,
    /// Files left as they are.
    pub refused: Vec<Refused>,
    /// The history without the turn: what the model is sent next.
    pub messages: Vec<Message>,
    /// A compaction came after the turn began: the history is the one it
    /// replaced, cut before the turn, so that compaction is undone too.
    pub uncompacted: bool,
}

impl Rewound {
    /// One line for the user: what was restored, what was not and why.
    pub fn describe(&self) -> String {
        let mut line = match self.restored.len() {
            0 => "rewound the last turn".to_string(),
            _ => format!(
                "rewound the last turn: restored {}",
                self.restored.join(", ")
            ),
        };
        if !self.refused.is_empty() {
            let refused: Vec<String> = self
                .refused
                .iter()
                .map(|r| format!("{} ({})", r.path, r.reason))
                .collect();
            line.push_str(&format!("; left as they are: {}", refused.join(", ")));
        }
        if self.uncompacted {
            line.push_str(
                "; the history is as it was before the turn, so the compaction since is undone too",
            );
        }
        line
    }
}

/// Undoes the last turn of the session written to `file`.
pub async fn rewind(
    workspace: &dyn Workspace,
    file: &SessionFile,
    gate: &PermissionGate,
) -> Result<Rewound, SessionFileError> {
    let paths = workspace.paths();
    // Its edit records say what to write into files: only the user's own.
    let loaded = match read_own(paths, file.id()) {
        // Its file is made at its first record: nothing was said yet.
        Err(SessionFileError::NotFound(_)) => return Err(SessionFileError::NothingToRewind),
        other => other?,
    };
    let turn = loaded
        .last_turn()
        .ok_or(SessionFileError::NothingToRewind)?;

    let mut restores = Vec::new();
    let mut shown = Vec::new();
    let mut refused = Vec::new();
    let mut restored = Vec::new();
    for (path, change) in changes_by_file(turn.edits) {
        match plan_restore(workspace, gate, path, &change).await {
            Ok(Some(restore)) => {
                restores.push(restore);
                shown.push(path.to_string());
            }
            Ok(None) => restored.push(path.to_string()),
            Err(reason) => refused.push(Refused {
                path: path.to_string(),
                reason,
            }),
        }
    }
    let mut failed = Vec::new();
    for (path, result) in shown.into_iter().zip(workspace.restore(&restores).await) {
        match result {
            Ok(()) => restored.push(path),
            Err(error) => failed.push(Refused {
                path,
                reason: error.to_string(),
            }),
        }
    }
    // Nothing could be put back (an editor refuses a stale edit whole):
    // the turn stays, so the rewind can be tried again.
    if restored.is_empty() && !failed.is_empty() {
        return Err(SessionFileError::RewindFailed(
            failed
                .iter()
                .map(|f| format!("{}: {}", f.path, f.reason))
                .collect::<Vec<_>>()
                .join("; "),
        ));
    }
    refused.extend(failed);

    let uncompacted = turn.before_a_compaction;
    let mut messages = turn.history_before;
    if let Some(note) = note_for_the_model(&refused) {
        push_user_blocks(&mut messages, vec![ContentBlock::Text { text: note }]);
    }
    let record = RewindRecord {
        restored: restored.clone(),
        refused: refused.clone(),
        messages,
    };
    file.record(Said::Rewind(&record));
    Ok(Rewound {
        restored,
        refused,
        messages: record.messages,
        uncompacted,
    })
}

/// What the model is told when the disk cannot lose the turn: files still
/// hold its edits.
fn note_for_the_model(refused: &[Refused]) -> Option<String> {
    if refused.is_empty() {
        return None;
    }
    let left: Vec<&str> = refused.iter().map(|r| r.path.as_str()).collect();
    Some(format!(
        "<system-reminder>The user rewound your last turn, but these files still hold its edits (they changed since, so they were left as they are): {}. Read files again before relying on what you remember of them.</system-reminder>",
        left.join(", ")
    ))
}

/// One file's change over a turn: what it held before the turn's first
/// edit of it, and after its last — if every edit started from the text
/// the one before it left (else something else changed the file between
/// them, and putting the first text back would undo that too).
struct TurnChange<'a> {
    before: Option<&'a str>,
    binary: bool,
    after: &'a str,
    unbroken: bool,
}

/// The turn's edits, one change per file (by workspace-relative path).
fn changes_by_file(edits: &[EditRecord]) -> BTreeMap<&str, TurnChange<'_>> {
    let mut files: BTreeMap<&str, TurnChange<'_>> = BTreeMap::new();
    for edit in edits {
        match files.entry(edit.path.as_str()) {
            Entry::Vacant(vacant) => {
                vacant.insert(TurnChange {
                    before: edit.before.as_deref(),
                    binary: edit.binary,
                    after: &edit.after,
                    unbroken: true,
                });
            }
            Entry::Occupied(mut occupied) => {
                let change = occupied.get_mut();
                change.unbroken &= !edit.binary && edit.before.as_deref() == Some(change.after);
                change.after = &edit.after;
            }
        }
    }
    files
}

/// How to put one file back (`None`: it is already as it was), or why not.
async fn plan_restore(
    workspace: &dyn Workspace,
    gate: &PermissionGate,
    path: &str,
    change: &TurnChange<'_>,
) -> Result<Option<Restore>, String> {
    if change.binary {
        return Err("it was binary before the turn; its bytes were not kept".into());
    }
    if !change.unbroken {
        return Err(
            "it changed between the agent's edits of it (by you or a command): putting it back would undo that too".into(),
        );
    }
    let paths = workspace.paths();
    let action = edit_action("rewind", path, "put back as it was".into(), paths)
        .map_err(|e| e.to_string())?;
    if let Some(denied) = gate.denied_by_rule(&action) {
        return Err(denied);
    }
    let resolved = paths.resolve(path).map_err(|e| e.to_string())?;
    let now = match workspace.read_text(&resolved).await {
        Ok(now) if Some(now.text.as_str()) == change.before => return Ok(None),
        Ok(now) => now,
        Err(WorkspaceError::NotFound(_)) if change.before.is_none() => return Ok(None),
        Err(WorkspaceError::NotFound(_)) => return Err("deleted since".into()),
        Err(WorkspaceError::Binary(_)) => return Err("changed since (now binary)".into()),
        Err(error) => return Err(error.to_string()),
    };
    if now.text != change.after {
        return Err("changed since the agent edited it".into());
    }
    Ok(Some(Restore {
        path: resolved,
        text: change.before.map(str::to_string),
        expected: now.text,
        version: now.version,
    }))
}
