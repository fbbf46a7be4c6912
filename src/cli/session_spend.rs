//! What a chat's session has spent so far, for `/cost`: the usage its
//! model calls reported and what they cost, added up turn by turn. A
//! turn's figures are the loop's own tally (the running total each
//! [`AgentEvent::Usage`] carries), so `/cost` and the line after each turn
//! add up the same numbers; they are joined by [`Spend::then`], as the
//! language server joins a session's turns.

use std::sync::{Arc, Mutex};

use super::output::TurnSink;
use crate::events::{AgentEvent, EventSink, Spend, usage_line};
use crate::history::Usage;
use crate::provider::Price;
use crate::sync::Locked;

/// A sink in front of the terminal's: it keeps the turn's last totals and
/// passes every event on unchanged.
pub struct SessionSpend {
    sink: Arc<dyn TurnSink>,
    totals: Mutex<Totals>,
}

#[derive(Default)]
struct Totals {
    /// The session's, up to the last turn that ended.
    session: (Usage, Spend),
    /// The running turn's, as its last usage event said.
    turn: (Usage, Spend),
}

impl SessionSpend {
    pub fn new(sink: Arc<dyn TurnSink>) -> Self {
        SessionSpend {
            sink,
            totals: Mutex::default(),
        }
    }

    fn totals(&self) -> std::sync::MutexGuard<'_, Totals> {
        self.totals.locked()
    }

    /// A session that starts with `usage` already spent (a resumed one),
    /// at the cost its file records; its context is unknown until the
    /// next call.
    pub fn start(&self, usage: Usage, cost_usd: Option<f64>) {
        let spend = Spend {
            cost_usd,
            ..Spend::default()
        };
        *self.totals() = Totals {
            session: (usage, spend),
            turn: Default::default(),
        };
    }

    /// The running turn ended, whatever its outcome: its figures join the
    /// session's.
    pub fn end_turn(&self) {
        let mut totals = self.totals();
        let (usage, spend) = std::mem::take(&mut totals.turn);
        totals.session.0 += usage;
        totals.session.1 = totals.session.1.then(&spend);
    }

    /// A model call outside a turn (`/compact`'s summary), at `price`.
    pub fn add_call(&self, call: Usage, price: Option<Price>) {
        let mut totals = self.totals();
        totals.session.0 += call;
        totals.session.1 = totals.session.1.then(&priced(&call, price));
    }

    /// The session's figures so far, as the line after a turn shows them.
    pub fn line(&self) -> String {
        let totals = self.totals();
        usage_line(&totals.session.0, &totals.session.1)
    }
}

/// What `usage` cost at `price` (unknown without one), no context.
fn priced(usage: &Usage, price: Option<Price>) -> Spend {
    Spend {
        cost_usd: price.map(|price| crate::events::round_usd(price.cost(usage))),
        ..Spend::default()
    }
}

impl EventSink for SessionSpend {
    fn command_output(&self, chunk: &str) {
        self.sink.command_output(chunk);
    }

    fn emit(&self, event: AgentEvent) {
        if let AgentEvent::Usage { total, spend, .. } = &event {
            self.totals().turn = (*total, *spend);
        }
        self.sink.emit(event);
    }
}

/// The usage of calls made outside a turn, for [`SessionSpend::add_call`].
pub struct CallsOutsideTurns<'a> {
    pub spend: &'a SessionSpend,
    pub price: Option<Price>,
}

impl EventSink for CallsOutsideTurns<'_> {
    fn emit(&self, event: AgentEvent) {
        if let AgentEvent::Usage { call, .. } = event {
            self.spend.add_call(call, self.price);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::output::TerminalSink;

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    fn turn_event(total: Usage, cost: f64) -> AgentEvent {
        AgentEvent::Usage {
            call: total,
            total,
            call_cost_usd: Some(cost),
            spend: Spend {
                cost_usd: Some(cost),
                ..Spend::default()
            },
        }
    }

    /// Turns add up; within a turn only the last running total counts
    /// (each event carries the turn's total so far, not one call's).
    #[test]
    fn turns_add_up_by_their_last_totals() {
        let spend = SessionSpend::new(Arc::new(TerminalSink::new(true)));
        let price = Price {
            input: 1.0,
            output: 2.0,
            cache_write: None,
            cache_read: None,
        };
        spend.start(usage(1_000_000, 0), Some(1.0));
        spend.emit(turn_event(usage(10, 1), 0.5));
        spend.emit(turn_event(usage(20, 2), 1.0));
        spend.end_turn();
        spend.add_call(usage(0, 500_000), Some(price));
        let line = spend.line();
        assert!(
            line.starts_with("1,000,020 in · 0 cache write · 0 cache read · 500,002 out · $3.0000"),
            "{line}"
        );
        spend.end_turn();
        assert_eq!(spend.line(), line, "an empty turn adds nothing");
    }
}
