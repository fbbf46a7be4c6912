//! Questions waiting for the user. Each approval is pending until something
//! answers it: the editor's `window/showMessageRequest` dialog (where the
//! client has one), a code action, or a command. A dialog that is dismissed,
//! or a client that answers with an error (Helix up to 25.07 says -32601),
//! leaves the approval pending — never allowed. Cancelling the turn, or
//! dropping its future, takes its approvals away.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tower_lsp_server::ls_types::{MessageActionItem, MessageType, Uri};

use super::editor_event::EditorEvent;
use super::pending::{PendingView, describe};
use super::state::State;
use crate::permission::{Approval, Approver, DENIED_BY_USER, Question};
use crate::sync::Locked;

/// The dialog's buttons, in order.
pub const ALLOW_ONCE: &str = "Allow once";
pub const ALLOW_FOR_SESSION: &str = "Allow for session";
pub const REJECT: &str = "Reject";
/// Not an answer: opens the whole diff, then asks again.
pub const SHOW_DIFF: &str = "Show diff";

/// Lines of an edit's diff the dialog itself shows.
const DIALOG_DIFF_LINES: usize = 12;

/// The approver a turn uses: pending approval, dialog, code actions.
pub struct EditorApprover {
    pub state: Arc<State>,
    pub turn: u64,
}

/// Removes the approval when the asking future ends, however it ends.
struct PendingGuard {
    state: Arc<State>,
    id: u64,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.state.approvals.remove(self.id);
        let state = self.state.clone();
        let id = self.id;
        tokio::spawn(async move {
            state.publish_approvals().await;
            state.event(EditorEvent::ApprovalResolved { id }).await;
        });
    }
}

#[async_trait]
impl Approver for EditorApprover {
    async fn ask(&self, question: &Question<'_>) -> Approval {
        let approvals = &self.state.approvals;
        let view = PendingView {
            id: approvals.next_id(),
            turn: self.turn,
            tool: question.action.tool.clone(),
            summary: question.action.summary.clone(),
            reason: question.reason.to_string(),
            rule: question.rule.to_string(),
            diff: question.diff().map(str::to_string),
            // A review shows one file beside its change; a change to
            // several (a rename) is reviewed as its diff.
            proposed: match question.edit.as_ref().map(|edit| edit.files.as_slice()) {
                Some([file]) => Some((file.path.to_path_buf(), file.after.to_string())),
                _ => None,
            },
        };
        let answer = approvals.add(view.clone());
        let _guard = PendingGuard {
            state: self.state.clone(),
            id: view.id,
        };
        self.state.event(requested_event(&self.state, &view)).await;
        self.state.publish_approvals().await;
        if self.state.init().can_ask {
            tokio::spawn(show_dialog(self.state.clone(), view.clone()));
        }
        answer
            .await
            .unwrap_or_else(|_| Approval::Reject(DENIED_BY_USER.into()))
    }
}

/// The dialog's text: the question, and for an edit the first lines of its diff.
fn dialog_message(view: &PendingView, note: Option<&str>) -> String {
    let mut message = describe(view);
    if let Some(diff) = &view.diff {
        let (head, more) = crate::diff::head(diff, DIALOG_DIFF_LINES);
        message.push_str("\n\n");
        message.push_str(head);
        if more > 0 {
            message.push_str(&crate::diff::more_lines(more));
            message.push_str(&format!(" (\"{SHOW_DIFF}\" shows them all)"));
        }
    }
    if let Some(note) = note {
        message.push_str(&format!("\n\n{note}"));
    }
    message
}

/// Shows one dialog (after any other open one), again after each "Show
/// diff". An answer resolves the approval; no answer, `null` or an error
/// leaves it pending.
async fn show_dialog(state: Arc<State>, view: PendingView) {
    let _one_at_a_time = state.approvals.dialog.lock().await;
    // "Always" names the rule it saves, so the user sees what they grant.
    let always = format!("Allow always: {}", view.rule);
    let mut titles = vec![ALLOW_ONCE, ALLOW_FOR_SESSION, always.as_str(), REJECT];
    if view.diff.is_some() {
        titles.push(SHOW_DIFF);
    }
    let actions: Vec<MessageActionItem> = titles
        .into_iter()
        .map(|title| MessageActionItem {
            title: title.to_string(),
            properties: Default::default(),
        })
        .collect();
    let mut note = None;
    loop {
        if !state.approvals.is_pending(view.id) {
            return;
        }
        let dialog = state.client.show_message_request(
            MessageType::WARNING,
            dialog_message(&view, note.as_deref()),
            Some(actions.clone()),
        );
        // Answered elsewhere (a code action, a command, a cancel): stop waiting,
        // so the next question is not stuck behind a dialog nobody needs.
        let answer = tokio::select! {
            answer = dialog => answer,
            () = state.approvals.settled(view.id) => return,
        };
        let approval = match answer {
            Ok(Some(item)) if item.title == ALLOW_ONCE => Approval::AllowOnce,
            Ok(Some(item)) if item.title == ALLOW_FOR_SESSION => Approval::AllowForSession,
            Ok(Some(item)) if item.title == always => Approval::AllowAlways,
            Ok(Some(item)) if item.title == REJECT => Approval::Reject(DENIED_BY_USER.into()),
            Ok(Some(item)) if item.title == SHOW_DIFF => {
                note = match show_diff(&state, &view).await {
                    Ok(shown) if shown.opened => None,
                    Ok(shown) => Some(format!("The whole diff is in {}.", shown.shown_path)),
                    Err(error) => Some(format!("The diff cannot be shown: {error}")),
                };
                continue;
            }
            Ok(other) => {
                tracing::info!(
                    ?other,
                    id = view.id,
                    "approval dialog dismissed; it stays pending"
                );
                return;
            }
            Err(error) => {
                tracing::info!(%error, id = view.id, "the client cannot show approval dialogs; it stays pending");
                return;
            }
        };
        state.approvals.resolve(Some(view.id), approval);
        return;
    }
}

/// Where an approval's diff was written, and whether the editor opened it.
pub struct ShownDiff {
    pub uri: Option<Uri>,
    /// Workspace-relative.
    pub shown_path: String,
    pub opened: bool,
}

/// The `approval_requested` event: what the question shows, and for an
/// edit, what a client's review needs (the file, by the URI the editor
/// opened it with, and its text after the change).
fn requested_event(state: &State, view: &PendingView) -> EditorEvent {
    let (path, uri, proposed) = match &view.proposed {
        Some((path, after)) => {
            let opened = state
                .documents
                .locked()
                .get(path)
                .map(|document| document.uri.clone());
            let uri = opened.or_else(|| State::uri_of(path).map(|uri| uri.to_string()));
            let root = &state.init().root;
            let shown = path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string();
            (Some(shown), uri, Some(after.clone()))
        }
        None => (None, None, None),
    };
    EditorEvent::ApprovalRequested {
        id: view.id,
        turn: view.turn,
        tool: view.tool.clone(),
        summary: view.summary.clone(),
        reason: view.reason.clone(),
        rule: view.rule.clone(),
        diff: view.diff.clone(),
        path,
        uri,
        proposed,
    }
}

/// Writes approval `view`'s diff to `.bareagent/diffs/ID.diff` and asks the
/// editor to open it (`window/showDocument`, where the client has it).
///
/// The file is written through the workspace's resolver, which walks from
/// the root's descriptor and follows no link: a `.bareagent` or `diffs`
/// planted as a symbolic link (a cloned repository can hold one) fails the
/// write instead of leading it elsewhere, and a link at the file's own name
/// is replaced, not written through. A `.gitignore` in the directory keeps
/// the diffs (which may quote secrets) out of commits.
pub async fn show_diff(state: &State, view: &PendingView) -> Result<ShownDiff, String> {
    let Some(diff) = view.diff.clone() else {
        return Err(format!(
            "approval {} is not an edit; it has no diff",
            view.id
        ));
    };
    let paths = state.init().paths.clone();
    let dir = paths.root().join(crate::workspace::OWN_DIR).join("diffs");
    let path = dir.join(format!("{}.diff", view.id));
    let shown_path = paths.display(&path);
    let target = path.clone();
    tokio::task::spawn_blocking(move || {
        let dir = paths.create_own_dir("diffs")?;
        // Diffs quote files: out of commits whatever the user's own
        // `.bareagent/.gitignore` says (as sessions are).
        paths.write_atomically(&dir.join(".gitignore"), b"*\n")?;
        paths.write_atomically(&target, diff.as_bytes())
    })
    .await
    .map_err(|error| error.to_string())?
    .map_err(|error| error.to_string())?;
    let uri = State::uri_of(&path);
    let opened = match &uri {
        Some(uri) => state.show_document(uri.clone(), None).await,
        None => false,
    };
    Ok(ShownDiff {
        uri,
        shown_path,
        opened,
    })
}

/// The approval id in a command's arguments, if any: `[{"id": 3}]` or `[3]`.
pub fn id_argument(arguments: &[Value]) -> Option<u64> {
    let first = arguments.first()?;
    first
        .get("id")
        .and_then(Value::as_u64)
        .or_else(|| first.as_u64())
}
