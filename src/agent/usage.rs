//! The one place a turn's usage is added up: the loop's own model calls and
//! those of its sub-agents, which arrive as [`AgentEvent::Usage`] events
//! through the sink the sub-agent was given. Every usage event the user sees
//! carries this tally's running total.

use std::sync::Mutex;

use crate::events::{AgentEvent, EventSink};
use crate::history::Usage;

/// A sink in front of the agent's own: it adds up usage and passes on the
/// rest unchanged.
pub(super) struct UsageTally<'a> {
    total: Mutex<Usage>,
    sink: &'a dyn EventSink,
}

impl<'a> UsageTally<'a> {
    pub(super) fn new(sink: &'a dyn EventSink) -> Self {
        UsageTally {
            total: Mutex::default(),
            sink,
        }
    }

    /// Counts one model call's usage and shows it with the new total.
    pub(super) fn add(&self, call: Usage) {
        let total = {
            let mut total = self.total.lock().unwrap_or_else(|p| p.into_inner());
            *total += call;
            *total
        };
        self.sink.emit(AgentEvent::Usage { call, total });
    }

    pub(super) fn total(&self) -> Usage {
        *self.total.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl EventSink for UsageTally<'_> {
    fn emit(&self, event: AgentEvent) {
        match event {
            // A sub-agent's call: its total is its own, ours is made here.
            AgentEvent::Usage { call, .. } => self.add(call),
            other => self.sink.emit(other),
        }
    }
}
