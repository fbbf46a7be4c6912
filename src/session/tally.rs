//! What a turn did, counted from its events as they pass to the front
//! end's sink: the model calls and their usage, and the lines each changed
//! file gained and lost. Counted from `FileChanged`, which every file tool
//! emits whoever called it — the model, or a sub-agent (whose events reach
//! its parent) — so no front end guesses from a tool's name and input.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::events::{AgentEvent, EventSink, Spend};
use crate::provider::Usage;
use crate::sync::Locked;

/// Lines a turn added to and removed from one file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCounts {
    pub added: usize,
    pub removed: usize,
}

/// The counts so far.
#[derive(Clone, Debug, Default)]
pub struct Counted {
    pub usage: Usage,
    /// The turn's, as its last usage event said.
    pub spend: Spend,
    pub calls: u32,
    /// By path as the tools show it.
    pub changed: BTreeMap<String, LineCounts>,
}

/// Passes every event on to `inner`, counting as it goes.
pub struct Tally<'a> {
    inner: &'a dyn EventSink,
    counted: Mutex<Counted>,
}

impl<'a> Tally<'a> {
    pub fn new(inner: &'a dyn EventSink) -> Self {
        Tally {
            inner,
            counted: Mutex::default(),
        }
    }

    pub fn counted(&self) -> Counted {
        self.counted.locked().clone()
    }
}

impl EventSink for Tally<'_> {
    fn emit(&self, event: AgentEvent) {
        match &event {
            AgentEvent::Usage { call, spend, .. } => {
                let mut counted = self.counted.locked();
                counted.usage += *call;
                counted.spend = *spend;
                counted.calls += 1;
            }
            AgentEvent::FileChanged { path, diff, .. } => {
                let lines = line_counts(diff);
                let mut counted = self.counted.locked();
                let entry = counted.changed.entry(path.clone()).or_default();
                entry.added += lines.added;
                entry.removed += lines.removed;
            }
            _ => {}
        }
        self.inner.emit(event);
    }
}

/// The lines a unified diff adds and removes: those of its hunks, so the
/// `---`/`+++` header is never taken for a line.
pub fn line_counts(diff: &str) -> LineCounts {
    let mut counts = LineCounts::default();
    let mut in_hunks = false;
    for line in diff.lines() {
        if line.starts_with("@@") {
            in_hunks = true;
        } else if in_hunks && line.starts_with('+') {
            counts.added += 1;
        } else if in_hunks && line.starts_with('-') {
            counts.removed += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_counts_its_hunks_lines_not_its_header() {
        let diff = crate::diff::unified(
            "a.txt",
            crate::diff::Before::Text("one\n--two\nthree\n"),
            "one\n++2\nthree\nfour\n",
        );
        assert_eq!(
            line_counts(&diff),
            LineCounts {
                added: 2,
                removed: 1
            }
        );
    }
}
