//! Messages that arrive from outside the loop while it runs: finished
//! background commands, a user's follow-up. The loop drains the inbox at the
//! top of every iteration, so the model sees them on its next call, and the
//! loop never needs to know where they came from — only whether one is the
//! user's, because a user's message must not wait for the next turn: the
//! loop goes on with it rather than end the turn (see `agent::run_loop`).
//!
//! A leaf: `tools` (background commands) fills it and `agent` drains it, so
//! it depends on neither, and neither depends on the other through it.

use crate::sync::Locked;
use std::sync::{Arc, Mutex};

/// One thing that arrived, in arrival order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// A notice for the model (a background command's end), as text.
    Notice(String),
    /// A prompt the user sent while the turn ran.
    User(String),
}

#[derive(Clone, Default)]
pub struct Inbox {
    queue: Arc<Mutex<Vec<Arrival>>>,
}

impl Inbox {
    pub fn new() -> Self {
        Self::default()
    }

    /// A notice for the model.
    pub fn push(&self, text: impl Into<String>) {
        self.lock().push(Arrival::Notice(text.into()));
    }

    /// A prompt from the user, for the running turn.
    pub fn push_user(&self, prompt: impl Into<String>) {
        self.lock().push(Arrival::User(prompt.into()));
    }

    pub fn drain(&self) -> Vec<Arrival> {
        std::mem::take(&mut *self.lock())
    }

    /// Whether a user's prompt waits (notices alone do not keep a turn going).
    pub fn has_user_message(&self) -> bool {
        self.lock().iter().any(|a| matches!(a, Arrival::User(_)))
    }

    /// Removes and returns the user's prompts, in order; notices stay.
    pub fn take_user_messages(&self) -> Vec<String> {
        let mut queue = self.lock();
        let (user, rest): (Vec<Arrival>, Vec<Arrival>) = std::mem::take(&mut *queue)
            .into_iter()
            .partition(|a| matches!(a, Arrival::User(_)));
        *queue = rest;
        user.into_iter()
            .filter_map(|a| match a {
                Arrival::User(prompt) => Some(prompt),
                Arrival::Notice(_) => None,
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arrival>> {
        // A panic while holding this lock cannot leave the Vec half-updated.
        self.queue.locked()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_messages_are_taken_in_order_and_notices_stay() {
        let inbox = Inbox::new();
        inbox.push_user("first");
        inbox.push("notice");
        inbox.push_user("second");
        assert!(inbox.has_user_message());
        assert_eq!(inbox.take_user_messages(), ["first", "second"]);
        assert!(!inbox.has_user_message());
        assert_eq!(inbox.drain(), [Arrival::Notice("notice".into())]);
    }
}
