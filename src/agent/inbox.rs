//! Messages that arrive from outside the loop while it runs: finished
//! background commands, a user's follow-up. The loop drains the inbox at the
//! top of every iteration, so the model sees them on its next call, and the
//! loop never needs to know where they came from.

use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
pub struct Inbox {
    queue: Arc<Mutex<Vec<String>>>,
}

impl Inbox {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&self, text: impl Into<String>) {
        self.lock().push(text.into());
    }

    pub fn drain(&self) -> Vec<String> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        // A panic while holding this lock cannot leave the Vec half-updated.
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
