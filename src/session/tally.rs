//! What a turn did, counted from its events as they pass to the front
//! end's sink: the model calls and their usage, and the lines each changed
//! file gained and lost. Counted from `FileChanged`, which every file tool
//! emits whoever called it — the model, or a sub-agent (whose events reach
//! its parent) — so no front end guesses from a tool's name and input; and
//! from `FileTouched`, which an MCP tool's call emits for each file it
//! changed (without lines: what the file held before is not known).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::events::{AgentEvent, EventSink, Spend};
use crate::provider::Usage;
use crate::sync::Locked;
use crate::workspace::Touch;

/// Lines a turn added to and removed from one file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCounts {
    pub added: usize,
    pub removed: usize,
}

/// What a turn did to one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileCount {
    /// What the file tools' diffs added and removed.
    pub lines: LineCounts,
    /// The tools we cannot see into that it changed while they ran, each
    /// with how it last did.
    pub touched: BTreeMap<String, Touch>,
}

impl FileCount {
    /// For a footer: `+3 −1`, `modified while mcp__git__git_checkout ran`,
    /// or both ("while": the look around the call cannot tell who did it).
    pub fn describe(&self) -> String {
        let lines = format!("+{} −{}", self.lines.added, self.lines.removed);
        let touched: Vec<String> = self
            .touched
            .iter()
            .map(|(tool, how)| format!("{} while `{tool}` ran", how.as_str()))
            .collect();
        match (self.lines == LineCounts::default(), touched.is_empty()) {
            (_, true) => lines,
            (true, false) => touched.join(", "),
            (false, false) => format!("{lines}; {}", touched.join(", ")),
        }
    }
}

/// The counts so far.
#[derive(Clone, Debug, Default)]
pub struct Counted {
    pub usage: Usage,
    /// The turn's, as its last usage event said.
    pub spend: Spend,
    pub calls: u32,
    /// By path as the tools show it.
    pub changed: BTreeMap<String, FileCount>,
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
    fn command_output(&self, chunk: &str) {
        self.inner.command_output(chunk);
    }

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
                entry.lines.added += lines.added;
                entry.lines.removed += lines.removed;
            }
            AgentEvent::FileTouched { path, tool, how } => {
                let mut counted = self.counted.locked();
                let entry = counted.changed.entry(path.clone()).or_default();
                entry.touched.insert(tool.clone(), *how);
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

    #[test]
    fn a_files_count_says_its_lines_and_the_tools_it_changed_under() {
        let lines = LineCounts {
            added: 3,
            removed: 1,
        };
        let git = || BTreeMap::from([("mcp__git__git_checkout".to_string(), Touch::Modified)]);
        // (lines, touched, described)
        let cases = [
            (lines, BTreeMap::new(), "+3 −1"),
            (
                LineCounts::default(),
                git(),
                "modified while `mcp__git__git_checkout` ran",
            ),
            (
                lines,
                git(),
                "+3 −1; modified while `mcp__git__git_checkout` ran",
            ),
        ];
        for (lines, touched, want) in cases {
            assert_eq!(FileCount { lines, touched }.describe(), want);
        }
    }

    /// A sink that keeps nothing.
    struct Nowhere;
    impl EventSink for Nowhere {
        fn emit(&self, _: AgentEvent) {}
    }

    #[test]
    fn an_edit_and_a_touch_of_one_file_are_one_count() {
        let tally = Tally::new(&Nowhere);
        tally.emit(AgentEvent::FileChanged {
            path: "a.txt".into(),
            diff: crate::diff::unified("a.txt", crate::diff::Before::Text("a\n"), "b\n"),
            asked: false,
        });
        tally.emit(AgentEvent::FileTouched {
            path: "a.txt".into(),
            tool: "mcp__fs__write".into(),
            how: Touch::Modified,
        });
        let counted = tally.counted();
        assert_eq!(counted.changed.len(), 1);
        assert_eq!(
            counted.changed["a.txt"].describe(),
            "+1 −1; modified while `mcp__fs__write` ran"
        );
    }
}
