//! The approvals waiting for an answer, as data: what each asks, and the
//! channel its answer goes back on. Knows nothing of the editor; the
//! dialogs and code actions that answer them are in `approvals.rs`.

use std::sync::Mutex;

use tokio::sync::oneshot;

use crate::permission::Approval;
use crate::sync::Locked;

#[derive(Clone, Debug)]
pub struct PendingView {
    pub id: u64,
    pub turn: u64,
    pub tool: String,
    pub summary: String,
    pub reason: String,
    pub rule: String,
    /// For an edit: the unified diff of the change.
    pub diff: Option<String>,
    /// For an edit: the file and its whole text after the change, for a
    /// client's review (its diff view of the buffer against this).
    pub proposed: Option<(std::path::PathBuf, String)>,
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
    pub(super) dialog: tokio::sync::Mutex<()>,
    /// Woken whenever an approval stops being pending.
    settled: tokio::sync::Notify,
}

impl Approvals {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Pending>> {
        self.pending.locked()
    }

    pub fn list(&self) -> Vec<PendingView> {
        self.lock().iter().map(|p| p.view.clone()).collect()
    }

    pub fn is_pending(&self, id: u64) -> bool {
        self.lock().iter().any(|p| p.view.id == id)
    }

    /// Returns once approval `id` is no longer pending (answered anywhere,
    /// its turn cancelled or ended).
    pub async fn settled(&self, id: u64) {
        loop {
            let woken = self.settled.notified();
            tokio::pin!(woken);
            // Registered before the check: a resolve in between still wakes it.
            woken.as_mut().enable();
            if !self.is_pending(id) {
                return;
            }
            woken.await;
        }
    }

    /// Approval `id`, or the oldest when `id` is `None`.
    pub fn get(&self, id: Option<u64>) -> Option<PendingView> {
        let pending = self.lock();
        match id {
            Some(id) => pending.iter().find(|p| p.view.id == id),
            None => pending.first(),
        }
        .map(|p| p.view.clone())
    }

    pub(super) fn add(&self, view: PendingView) -> oneshot::Receiver<Approval> {
        let (reply, receiver) = oneshot::channel();
        self.lock().push(Pending { view, reply });
        receiver
    }

    pub(super) fn next_id(&self) -> u64 {
        let mut next = self.next_id.locked();
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
        drop(pending);
        self.settled.notify_waiters();
        let _ = entry.reply.send(answer);
        Some(entry.view)
    }

    /// Drops every approval of a turn (it was cancelled or ended).
    pub fn clear_turn(&self, turn: u64) -> usize {
        let mut pending = self.lock();
        let before = pending.len();
        pending.retain(|p| p.view.turn != turn);
        let cleared = before - pending.len();
        drop(pending);
        self.settled.notify_waiters();
        cleared
    }

    pub(super) fn remove(&self, id: u64) {
        self.lock().retain(|p| p.view.id != id);
        self.settled.notify_waiters();
    }
}

/// The text the user judges an approval by.
pub fn describe(view: &PendingView) -> String {
    format!(
        "bareagent wants to run {} {} ({}).",
        view.tool, view.summary, view.reason
    )
}
