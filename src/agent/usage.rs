//! The one place a turn's usage is added up: the loop's own model calls and
//! those of its sub-agents, which arrive as [`AgentEvent::Usage`] events
//! through the sink the sub-agent was given. Every usage event the user sees
//! carries this tally's running total, its cost at the model's price and
//! how full the context of the agent's own last call is.

use std::sync::Mutex;

use super::LoopConfig;
use crate::events::{AgentEvent, EventSink, Spend};
use crate::history::Usage;
use crate::provider::Price;
use crate::sync::Locked;

/// A sink in front of the agent's own: it adds up usage and passes on the
/// rest unchanged.
pub(super) struct UsageTally<'a> {
    total: Mutex<(Usage, Spend)>,
    price: Option<Price>,
    window: Option<u64>,
    sink: &'a dyn EventSink,
}

impl<'a> UsageTally<'a> {
    pub(super) fn new(sink: &'a dyn EventSink, config: &LoopConfig) -> Self {
        UsageTally {
            total: Mutex::default(),
            price: config.price,
            window: config.context_window,
            sink,
        }
    }

    /// Counts one model call's usage and shows it with the new total.
    /// `own`: the agent's call, whose prompt is its context (a sub-agent's
    /// context is its own).
    pub(super) fn add(&self, call: Usage, own: bool) {
        let call_cost_usd = self.price.map(|price| price.cost(&call));
        let (total, spend) = {
            let mut guard = self.total.locked();
            let (total, spend) = &mut *guard;
            *total += call;
            let mut next = spend.then(&Spend {
                cost_usd: call_cost_usd,
                ..Spend::default()
            });
            if own {
                next = next.with_context(&call, self.window);
            }
            *spend = next;
            (*total, *spend)
        };
        self.sink.emit(AgentEvent::Usage {
            call,
            total,
            call_cost_usd,
            spend,
        });
    }

    pub(super) fn total(&self) -> Usage {
        self.total.locked().0
    }
}

impl EventSink for UsageTally<'_> {
    fn command_output(&self, chunk: &str) {
        self.sink.command_output(chunk);
    }

    fn emit(&self, event: AgentEvent) {
        match event {
            // A sub-agent's call: its total is its own, ours is made here.
            AgentEvent::Usage { call, .. } => self.add(call, false),
            other => self.sink.emit(other),
        }
    }
}
