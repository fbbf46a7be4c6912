//! How `bareagent run` shows a turn: streamed text on stdout and tool
//! activity on stderr, or one JSON object per line on stdout with `--json`.

use std::io::Write;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::agent::TurnOutcome;
use crate::events::{AgentEvent, EventSink};
use crate::tools::TodoStatus;

/// An event sink that can also say how the turn ended.
pub trait TurnSink: EventSink {
    fn finished(&self, outcome: &TurnOutcome);
    fn failed(&self, reason: &str);
    fn as_event_sink(&self) -> &dyn EventSink;
}

#[derive(Default)]
pub struct TerminalSink {
    state: Mutex<TerminalState>,
    /// `--quiet`: no diff of the edits applied without asking.
    quiet: bool,
}

#[derive(Default)]
struct TerminalState {
    /// stdout's cursor is mid-line: end the line before stderr speaks.
    mid_line: bool,
    /// The answer since the last tool call was streamed, so it is on screen already.
    streamed: bool,
}

impl TerminalSink {
    pub fn new(quiet: bool) -> Self {
        TerminalSink {
            quiet,
            ..TerminalSink::default()
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TerminalState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn end_line(state: &mut TerminalState) {
        if std::mem::take(&mut state.mid_line) {
            println!();
        }
    }
}

impl EventSink for TerminalSink {
    fn emit(&self, event: AgentEvent) {
        let mut state = self.state();
        match event {
            AgentEvent::TextDelta { text } => {
                print!("{text}");
                let _ = std::io::stdout().flush();
                state.mid_line = !text.ends_with('\n');
                state.streamed = true;
            }
            AgentEvent::ThinkingDelta { .. } | AgentEvent::Usage { .. } => {}
            AgentEvent::ToolCall { name, input, .. } => {
                Self::end_line(&mut state);
                state.streamed = false;
                eprintln!("→ {name} {}", brief_input(&input));
            }
            AgentEvent::ToolResult {
                content, is_error, ..
            } => {
                // One line: an error's first line, a one-line result whole,
                // else just its size (the model has the rest).
                let count = content.lines().count();
                let shown = match (is_error, count) {
                    (false, 2..) => format!("{count} lines"),
                    _ => clip(content.lines().next().unwrap_or_default(), 160),
                };
                eprintln!("  {} {shown}", if is_error { "✗" } else { "✓" });
            }
            AgentEvent::Todos { todos } => {
                Self::end_line(&mut state);
                for todo in todos {
                    let mark = match todo.status {
                        TodoStatus::Pending => "☐",
                        TodoStatus::InProgress => "▶",
                        TodoStatus::Completed => "☑",
                    };
                    eprintln!("  {mark} {}", todo.content);
                }
            }
            // An edit nobody was asked about: show what it did (one that
            // asked showed its diff in the question).
            AgentEvent::FileChanged { diff, asked, .. } => {
                if !asked && !self.quiet {
                    Self::end_line(&mut state);
                    eprint!("{}", super::diff_view::for_stderr(&diff));
                }
            }
            AgentEvent::StreamFallback { reason } => {
                Self::end_line(&mut state);
                eprintln!("  (streaming failed: {reason}; asked again without streaming)");
            }
        }
    }
}

impl TurnSink for TerminalSink {
    fn finished(&self, outcome: &TurnOutcome) {
        let mut state = self.state();
        if !state.streamed && !outcome.text.is_empty() {
            print!("{}", outcome.text);
            state.mid_line = !outcome.text.ends_with('\n');
        }
        Self::end_line(&mut state);
        let u = outcome.usage;
        eprintln!(
            "[{} model calls · {} input + {} cached · {} output tokens]",
            outcome.iterations,
            u.input_tokens + u.cache_creation_input_tokens,
            u.cache_read_input_tokens,
            u.output_tokens
        );
    }

    fn failed(&self, reason: &str) {
        Self::end_line(&mut self.state());
        eprintln!("bareagent: {reason}");
    }

    fn as_event_sink(&self) -> &dyn EventSink {
        self
    }
}

/// `--json`: every event, then `final` or `error`, one object per line.
pub struct JsonSink;

pub(super) fn print_json_line(value: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

impl EventSink for JsonSink {
    fn emit(&self, event: AgentEvent) {
        print_json_line(&json!(event));
    }
}

impl TurnSink for JsonSink {
    fn finished(&self, outcome: &TurnOutcome) {
        print_json_line(&json!({
            "type": "final", "text": outcome.text, "usage": outcome.usage, "iterations": outcome.iterations,
        }));
    }

    fn failed(&self, reason: &str) {
        print_json_line(&json!({"type": "error", "message": reason}));
        eprintln!("bareagent: {reason}");
    }

    fn as_event_sink(&self) -> &dyn EventSink {
        self
    }
}

/// A tool call's input in one short line: the path when there is one.
fn brief_input(input: &Value) -> String {
    match input.get("path").and_then(Value::as_str) {
        Some(path) => path.to_string(),
        None => clip(&input.to_string(), 120),
    }
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
