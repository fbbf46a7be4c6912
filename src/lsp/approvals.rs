//! Questions waiting for the user. Each approval is pending until something
//! answers it: the editor's `window/showMessageRequest` dialog (where the
//! client has one), a code action, or a command. A dialog that is dismissed,
//! or a client that answers with an error (Helix up to 25.07 says -32601),
//! leaves the approval pending — never allowed. Cancelling the turn, or
//! dropping its future, takes its approvals away.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tower_lsp_server::ls_types::{MessageActionItem, MessageType};

use super::state::State;
use crate::permission::{Approval, Approver, DENIED_BY_USER, Question};

/// The dialog's buttons, in order.
pub const ALLOW_ONCE: &str = "Allow once";
pub const ALLOW_FOR_SESSION: &str = "Allow for session";
pub const REJECT: &str = "Reject";

#[derive(Clone, Debug)]
pub struct PendingView {
    pub id: u64,
    pub turn: u64,
    pub tool: String,
    pub summary: String,
    pub reason: String,
    pub rule: String,
}

struct Pending {
    view: PendingView,
    reply: oneshot::Sender<Approval>,
}

#[derive(Default)]
pub struct Approvals {
    pending: Mutex<Vec<Pending>>,
    next_id: Mutex<u64>,
    /// One dialog at a time: editors show them poorly stacked. Within a
    /// session the gate already asks one question at a time
    /// (`permission::serial`); this orders the dialogs of different
    /// sessions, whose approvals all stay pending (and answerable by code
    /// action) meanwhile.
    dialog: tokio::sync::Mutex<()>,
}

impl Approvals {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn list(&self) -> Vec<PendingView> {
        self.lock().iter().map(|p| p.view.clone()).collect()
    }

    pub fn is_pending(&self, id: u64) -> bool {
        self.lock().iter().any(|p| p.view.id == id)
    }

    fn add(&self, view: PendingView) -> oneshot::Receiver<Approval> {
        let (reply, receiver) = oneshot::channel();
        self.lock().push(Pending { view, reply });
        receiver
    }

    fn next_id(&self) -> u64 {
        let mut next = self.next_id.lock().unwrap_or_else(|p| p.into_inner());
        *next += 1;
        *next
    }

    /// Answers approval `id`, or the oldest when `id` is `None`. Returns what was answered.
    pub fn resolve(&self, id: Option<u64>, answer: Approval) -> Option<PendingView> {
        let mut pending = self.lock();
        let index = match id {
            Some(id) => pending.iter().position(|p| p.view.id == id)?,
            None if pending.is_empty() => return None,
            None => 0,
        };
        let entry = pending.remove(index);
        let _ = entry.reply.send(answer);
        Some(entry.view)
    }

    /// Drops every approval of a turn (it was cancelled or ended).
    pub fn clear_turn(&self, turn: u64) -> usize {
        let mut pending = self.lock();
        let before = pending.len();
        pending.retain(|p| p.view.turn != turn);
        before - pending.len()
    }

    fn remove(&self, id: u64) {
        self.lock().retain(|p| p.view.id != id);
    }
}

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
            state
                .event(json!({"type": "approval_resolved", "id": id}))
                .await;
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
        };
        let answer = approvals.add(view.clone());
        let _guard = PendingGuard {
            state: self.state.clone(),
            id: view.id,
        };
        self.state
            .event(json!({
                "type": "approval_requested", "id": view.id, "turn": view.turn, "tool": view.tool,
                "summary": view.summary, "reason": view.reason, "rule": view.rule,
            }))
            .await;
        self.state.publish_approvals().await;
        if self.state.init().can_ask {
            tokio::spawn(show_dialog(self.state.clone(), view.clone()));
        }
        answer
            .await
            .unwrap_or_else(|_| Approval::Reject(DENIED_BY_USER.into()))
    }
}

/// The text the user judges an approval by.
pub fn describe(view: &PendingView) -> String {
    format!(
        "bareagent wants to run {} {} ({}).",
        view.tool, view.summary, view.reason
    )
}

/// Shows one dialog (after any other open one). An answer resolves the
/// approval; no answer, `null` or an error leaves it pending.
async fn show_dialog(state: Arc<State>, view: PendingView) {
    let _one_at_a_time = state.approvals.dialog.lock().await;
    if !state.approvals.is_pending(view.id) {
        return;
    }
    // "Always" names the rule it saves, so the user sees what they grant.
    let always = format!("Allow always: {}", view.rule);
    let actions = [ALLOW_ONCE, ALLOW_FOR_SESSION, always.as_str(), REJECT]
        .map(|title| MessageActionItem {
            title: title.to_string(),
            properties: Default::default(),
        })
        .to_vec();
    let dialog =
        state
            .client
            .show_message_request(MessageType::WARNING, describe(&view), Some(actions));
    // Answered elsewhere (a code action, a command, a cancel): stop waiting,
    // so the next question is not stuck behind a dialog nobody needs.
    let answered_elsewhere = async {
        while state.approvals.is_pending(view.id) {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    };
    let answer = tokio::select! {
        answer = dialog => answer,
        () = answered_elsewhere => return,
    };
    let approval = match answer {
        Ok(Some(item)) if item.title == ALLOW_ONCE => Approval::AllowOnce,
        Ok(Some(item)) if item.title == ALLOW_FOR_SESSION => Approval::AllowForSession,
        Ok(Some(item)) if item.title == always => Approval::AllowAlways,
        Ok(Some(item)) if item.title == REJECT => Approval::Reject(DENIED_BY_USER.into()),
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
}

/// The approval id in a command's arguments, if any: `[{"id": 3}]` or `[3]`.
pub fn id_argument(arguments: &[Value]) -> Option<u64> {
    let first = arguments.first()?;
    first
        .get("id")
        .and_then(Value::as_u64)
        .or_else(|| first.as_u64())
}
