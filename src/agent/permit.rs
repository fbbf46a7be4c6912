//! The gate's step in the loop: asks the permission gate about one prepared
//! call. For an edit it asks the user about, the question carries the
//! unified diff of the change the call would make now, computed by the
//! tool's own code from the input parsed once for the call.

use super::parts::Agent;
use crate::permission::{ActionKind, Assessment, Decision, EditPreview, ProposedFile};
use crate::tools::{Approved, Permit, PreparedCall, Previous, ToolError};

/// The gate's answer to `call`. The error is the denial, as the model reads it.
pub(super) async fn permit(
    agent: &Agent<'_>,
    call: &PreparedCall<'_>,
) -> Result<Permit, ToolError> {
    let action = &call.action;
    let reason = match agent.gate.assess(action) {
        Assessment::Allow => return Ok(Permit::WithoutAsking),
        Assessment::Deny(reason) => return Err(ToolError::NotRun(reason)),
        Assessment::Ask(reason) => reason,
    };
    // Only now, past the deny rules: the preview reads the file. Edits run
    // alone (never next to another call), so this wait before the question
    // cannot change the order in which questions are asked.
    let preview = match action.kind {
        ActionKind::Edit => {
            call.change(&agent.tool_context(Approved::WithoutAsking))
                .await
        }
        _ => None,
    };
    let diff = match &preview {
        Some(Ok(change)) => Some(change.diff()),
        _ => None,
    };
    let edit = match (&preview, &diff) {
        (Some(Ok(change)), Some(diff)) => Some(EditPreview {
            diff,
            files: change
                .files()
                .iter()
                .map(|file| ProposedFile {
                    path: file.path(),
                    before: match file.before() {
                        Previous::Text(text) => Some(text),
                        Previous::Missing | Previous::Binary => None,
                    },
                    after: file.after(),
                })
                .collect(),
        }),
        _ => None,
    };
    let reason = match &preview {
        // The error's first line only: the rest may quote the file, and
        // the model has not been allowed to read it yet.
        Some(Err(error)) => {
            let error = error.to_string();
            let first = error.lines().next().unwrap_or_default();
            format!("{reason}; the change cannot be shown: {first}")
        }
        Some(Ok(_)) | None => reason,
    };
    match agent.gate.ask(action, &reason, edit).await {
        Decision::Allow => Ok(Permit::Asked(preview.and_then(Result::ok))),
        Decision::Deny(reason) => Err(ToolError::NotRun(reason)),
    }
}
