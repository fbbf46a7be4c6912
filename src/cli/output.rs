//! How `bareagent run` shows a turn: streamed text on stdout and tool
//! activity on stderr, or one JSON object per line on stdout with `--json`.
//!
//! On a terminal, a spinner with the elapsed time stands on stderr while
//! the agent waits for the model (from the turn's start, and again once
//! every tool call has its result) and is cleared before anything else is
//! written. It is never drawn off a terminal or with `--json`.
//!
//! The model's thinking never takes the answer's place: while it thinks,
//! its latest line stands dimmed in the spinner's line; once it is done,
//! one line on stderr says how long it was (`(thought for 12 lines)`).
//! `--quiet` shows none of it.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};

use super::command_tail::{CommandTail, EchoOff};
use super::markdown::MarkdownStream;
use crate::agent::TurnOutcome;
use crate::events::{AgentEvent, EventSink, Spend, thousands, usage_line};
use crate::history::Usage;
use crate::sandbox::HINT_PREFIX;
use crate::sync::Locked;
use crate::text::clip;
use crate::tools::TodoStatus;

/// An event sink that can also say how the turn ended.
pub trait TurnSink: EventSink {
    /// The turn starts: its first model call is under way.
    fn started(&self);
    /// A line for the user between events (a retry, Ctrl-C).
    fn notice(&self, line: &str);
    fn finished(&self, outcome: &TurnOutcome);
    fn failed(&self, reason: &str);
}

/// After a command, this many of its last output lines are shown.
const COMMAND_TAIL_LINES: usize = 5;
/// A line of command output is cut to this many characters (it is data;
/// messages and the sandbox hint are never cut).
const OUTPUT_LINE_CHARS: usize = 160;

pub struct TerminalSink {
    state: Mutex<TerminalState>,
    /// stderr is a terminal: the spinner may be drawn.
    spinner: bool,
    /// `--quiet`: no diff of the edits applied without asking, no thinking.
    quiet: bool,
    /// stdout is a terminal that may have colour: answers are rendered
    /// markdown (see `markdown.rs`), else printed as they come.
    markdown: bool,
    stdout_terminal: bool,
}

#[derive(Default)]
struct TerminalState {
    /// stdout's cursor is mid-line: end the line before stderr speaks.
    mid_line: bool,
    /// The answer since the last tool call was streamed, so it is on screen already.
    streamed: bool,
    /// Tool calls started and not yet answered.
    running_tools: usize,
    waiting: Option<ProgressBar>,
    /// The turn's spend, as its last usage event said.
    spend: Spend,
    /// The thinking streamed since the last text or tool call.
    thought: String,
    /// The note on an unknown cost was shown (once a chat).
    said_unpriced: bool,
    /// The answer being rendered as markdown, when it is.
    answer: Option<MarkdownStream>,
    /// The command running now, drawn live, and the echo held off meanwhile.
    command: Option<(CommandTail, EchoOff)>,
}

/// Said once, under the first turn whose cost is unknown.
const UNPRICED_NOTE: &str =
    "  (cost unknown: this model has no price; add [prices.\"MODEL\"] to config.toml)";

/// The terminal's width in columns (stderr's), if it says one.
pub(super) fn stderr_width() -> Option<usize> {
    rustix::termios::tcgetwinsize(std::io::stderr())
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|cols| *cols > 0)
}

/// The line after a turn: `[2 model calls · 1,200 in · … · $0.0123]`,
/// shortened where it would not fit in `width` (the prompt's tokens in one
/// figure, an unknown cost in two words, [`UNPRICED_NOTE`] after it);
/// `/cost` has every figure.
fn turn_line(calls: usize, usage: &Usage, spend: &Spend, width: Option<usize>) -> String {
    let calls = crate::text::count(calls, "model call");
    let line = format!("[{calls} · {}]", usage_line(usage, spend));
    if width.is_none_or(|width| line.chars().count() <= width) {
        return line;
    }
    let cached = usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
    let mut parts = vec![
        calls,
        match cached {
            0 => format!("{} in", thousands(usage.input_tokens)),
            _ => format!(
                "{} in ({} via the cache)",
                thousands(usage.input_tokens + cached),
                thousands(cached)
            ),
        },
    ];
    parts.push(format!("{} out", thousands(usage.output_tokens)));
    parts.push(match spend.cost_usd {
        Some(usd) => format!("${usd:.4}"),
        None => "cost unknown".to_string(),
    });
    match (spend.context_percent, spend.context_window) {
        (Some(percent), Some(window)) => {
            parts.push(format!("context {percent:.1}% of {}k", window / 1000))
        }
        _ if spend.context_tokens > 0 => parts.push(format!(
            "context {} tokens",
            thousands(spend.context_tokens)
        )),
        _ => {}
    }
    format!("[{}]", parts.join(" · "))
}

/// The spinner's line: what it waits for, the time, the latest thought.
const SPINNER_TEMPLATE: &str = "{spinner} {prefix} {elapsed} {wide_msg:.dim}";

/// How long a thought was, in the words the terminal shows it with.
fn thought_summary(thought: &str) -> String {
    let lines = thought.trim().lines().count();
    format!(
        "  (thought for {lines} line{})",
        if lines == 1 { "" } else { "s" }
    )
}

impl TerminalSink {
    /// With the spinner when stderr is a terminal; `quiet`: no diff of the
    /// edits applied without asking.
    pub fn new(quiet: bool) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
        TerminalSink {
            state: Mutex::default(),
            spinner: std::io::stderr().is_terminal(),
            quiet,
            markdown: std::io::stdout().is_terminal() && !no_color,
            stdout_terminal: std::io::stdout().is_terminal(),
        }
    }

    /// The next piece of the answer, as markdown: the lines it completes
    /// printed (the spinner kept), the line still being written shown on
    /// the spinner's line until it ends.
    fn render(&self, state: &mut TerminalState, text: &str) {
        if !state.thought.is_empty() {
            // Says how long the thinking was, before the answer.
            Self::stop_waiting(state);
        }
        let stream = state.answer.get_or_insert_with(|| {
            let width = rustix::termios::tcgetwinsize(std::io::stdout())
                .ok()
                .map(|size| usize::from(size.ws_col))
                .filter(|cols| *cols > 0)
                .unwrap_or(80);
            MarkdownStream::new(width)
        });
        let ready = stream.push(text);
        let partial = stream.partial().to_string();
        Self::print_above(state, &ready);
        if partial.trim().is_empty() {
            if let Some(bar) = &state.waiting {
                bar.set_message("");
            }
            return;
        }
        self.start_waiting(state);
        if let Some(bar) = &state.waiting {
            bar.set_prefix("writing…");
            // Its end: what was written last.
            let chars = partial.chars().count();
            let tail: String = partial.chars().skip(chars.saturating_sub(60)).collect();
            bar.set_message(super::diff_view::visible_lines(&tail));
        }
    }

    /// The rest of the markdown answer, rendered (the answer ended, or a
    /// tool call came).
    fn finish_answer(state: &mut TerminalState) {
        if let Some(mut stream) = state.answer.take() {
            let rest = stream.finish();
            Self::print_above(state, &rest);
        }
    }

    /// The running command's live view is cleared (it ended, or the turn did).
    fn stop_command(state: &mut TerminalState) {
        if let Some((tail, echo)) = state.command.take() {
            tail.clear();
            drop(echo);
        }
    }

    /// Prints `text` on stdout, above the spinner if it stands.
    fn print_above(state: &TerminalState, text: &str) {
        if text.is_empty() {
            return;
        }
        let print = || {
            print!("{text}");
            let _ = std::io::stdout().flush();
        };
        match &state.waiting {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TerminalState> {
        self.state.locked()
    }

    fn end_line(state: &mut TerminalState) {
        if std::mem::take(&mut state.mid_line) {
            println!();
        }
    }

    fn start_waiting(&self, state: &mut TerminalState) {
        if !self.spinner || state.waiting.is_some() {
            return;
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(SPINNER_TEMPLATE) {
            bar.set_style(style);
        }
        bar.set_prefix("waiting for the model…");
        bar.enable_steady_tick(Duration::from_millis(100));
        state.waiting = Some(bar);
    }

    /// Clears the spinner before anything else is written, and says how
    /// long the thinking before it was.
    fn stop_waiting(state: &mut TerminalState) {
        if let Some(bar) = state.waiting.take() {
            bar.finish_and_clear();
        }
        let thought = std::mem::take(&mut state.thought);
        if !thought.trim().is_empty() {
            Self::end_line(state);
            eprintln!("{}", Self::dim(&thought_summary(&thought)));
        }
    }

    /// A thought goes on: its latest line stands in the spinner's line.
    fn think(&self, state: &mut TerminalState, text: &str) {
        if self.quiet {
            return;
        }
        state.thought.push_str(text);
        self.start_waiting(state);
        if let Some(bar) = &state.waiting {
            bar.set_prefix("thinking…");
            let latest = state.thought.trim_end().lines().last().unwrap_or_default();
            bar.set_message(latest.trim().to_string());
        }
    }

    /// `text` dimmed where stderr is a terminal (and `NO_COLOR` is not
    /// set); as it is elsewhere.
    fn dim(text: &str) -> String {
        if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
            format!("\x1b[2m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

impl Default for TerminalSink {
    fn default() -> Self {
        Self::new(false)
    }
}

impl EventSink for TerminalSink {
    fn command_output(&self, chunk: &str) {
        self.command_chunk(chunk);
    }

    fn emit(&self, event: AgentEvent) {
        let mut state = self.state();
        match event {
            AgentEvent::TextDelta { text } if self.markdown => {
                self.render(&mut state, &text);
                state.streamed = true;
            }
            AgentEvent::TextDelta { text } => {
                Self::stop_waiting(&mut state);
                // On a terminal (`NO_COLOR`), model text shows and never
                // steers it; into a pipe or a file, it is data, untouched.
                if self.stdout_terminal {
                    print!("{}", super::diff_view::visible_lines(&text));
                } else {
                    print!("{text}");
                }
                let _ = std::io::stdout().flush();
                state.mid_line = !text.ends_with('\n');
                state.streamed = true;
            }
            AgentEvent::Usage { spend, .. } => state.spend = spend,
            AgentEvent::ThinkingDelta { text } => self.think(&mut state, &text),
            AgentEvent::UserMessage { .. } => {}
            AgentEvent::ToolCall { name, input, .. } => {
                Self::finish_answer(&mut state);
                Self::stop_waiting(&mut state);
                Self::end_line(&mut state);
                state.streamed = false;
                state.running_tools += 1;
                eprintln!(
                    "→ {name} {}",
                    super::diff_view::visible_lines(&crate::tool_line::brief(&input))
                );
            }
            AgentEvent::ToolResult {
                name,
                content,
                is_error,
                ..
            } => {
                Self::stop_command(&mut state);
                Self::stop_waiting(&mut state);
                for line in result_lines(&name, &content, is_error) {
                    eprintln!("{line}");
                }
                state.running_tools = state.running_tools.saturating_sub(1);
                if state.running_tools == 0 {
                    // Every call has its result: the next model call is under way.
                    self.start_waiting(&mut state);
                }
            }
            AgentEvent::Todos { todos } => {
                let waiting = state.waiting.is_some();
                Self::stop_waiting(&mut state);
                Self::end_line(&mut state);
                for todo in todos {
                    let mark = match todo.status {
                        TodoStatus::Pending => "☐",
                        TodoStatus::InProgress => "▶",
                        TodoStatus::Completed => "☑",
                    };
                    eprintln!("  {mark} {}", todo.content);
                }
                if waiting {
                    self.start_waiting(&mut state);
                }
            }
            // An edit nobody was asked about: show what it did (one that
            // asked showed its diff in the question).
            AgentEvent::FileChanged { diff, asked, .. } => {
                if !asked && !self.quiet {
                    Self::stop_waiting(&mut state);
                    Self::end_line(&mut state);
                    eprint!("{}", super::diff_view::for_stderr(&diff));
                }
            }
            AgentEvent::FileTouched { path, tool, how } => {
                if !self.quiet {
                    drop(state);
                    self.notice(&format!("  ({path} {} while {tool} ran)", how.as_str()));
                }
            }
            AgentEvent::Compacted {
                before_tokens,
                after_tokens,
                how,
            } => {
                drop(state);
                self.notice(&format!(
                    "  ({})",
                    how.describe(before_tokens, after_tokens)
                ));
            }
            AgentEvent::Notice { text } => {
                drop(state);
                self.notice(&text);
            }
            AgentEvent::CompactionFailed { reason } => {
                drop(state);
                self.notice(&format!(
                    "  (compaction failed: {reason}; the history is kept as it was)"
                ));
            }
            AgentEvent::StreamFallback { reason } => {
                drop(state);
                self.notice(&format!(
                    "  (streaming failed: {reason}; asked again without streaming)"
                ));
            }
        }
    }
}

impl TerminalSink {
    /// A command started (`chunk` empty) or wrote `chunk`: its live view,
    /// on a terminal.
    fn command_chunk(&self, chunk: &str) {
        if !self.spinner || self.quiet {
            return;
        }
        let mut state = self.state();
        if state.command.is_none() {
            Self::stop_waiting(&mut state);
            Self::end_line(&mut state);
            let width = stderr_width().unwrap_or(80);
            state.command = Some((CommandTail::start(width), EchoOff::new()));
        }
        if let Some((tail, _)) = &mut state.command
            && !chunk.is_empty()
        {
            tail.push(chunk);
        }
    }
}

impl TurnSink for TerminalSink {
    fn started(&self) {
        let mut state = self.state();
        // A chat's turns share the sink: nothing of the last one carries over.
        state.streamed = false;
        state.running_tools = 0;
        state.spend = Spend::default();
        state.thought.clear();
        state.answer = None;
        self.start_waiting(&mut state);
    }

    fn notice(&self, line: &str) {
        let mut state = self.state();
        Self::end_line(&mut state);
        match (&state.waiting, &state.command) {
            (Some(bar), _) => bar.suspend(|| eprintln!("{line}")),
            (None, Some((tail, _))) => tail.suspend(|| eprintln!("{line}")),
            (None, None) => eprintln!("{line}"),
        }
    }

    fn finished(&self, outcome: &TurnOutcome) {
        let mut state = self.state();
        Self::stop_command(&mut state);
        if self.markdown && !state.streamed && !outcome.text.is_empty() {
            self.render(&mut state, &outcome.text);
        }
        Self::finish_answer(&mut state);
        Self::stop_waiting(&mut state);
        if !self.markdown && !state.streamed && !outcome.text.is_empty() {
            if self.stdout_terminal {
                print!("{}", super::diff_view::visible_lines(&outcome.text));
            } else {
                print!("{}", outcome.text);
            }
            state.mid_line = !outcome.text.ends_with('\n');
        }
        Self::end_line(&mut state);
        eprintln!(
            "{}",
            turn_line(
                outcome.iterations,
                &outcome.usage,
                &state.spend,
                stderr_width()
            )
        );
        if state.spend.cost_usd.is_none() && !std::mem::replace(&mut state.said_unpriced, true) {
            eprintln!("{}", Self::dim(UNPRICED_NOTE));
        }
    }

    fn failed(&self, reason: &str) {
        let mut state = self.state();
        Self::stop_command(&mut state);
        Self::finish_answer(&mut state);
        Self::stop_waiting(&mut state);
        Self::end_line(&mut state);
        eprintln!("bareagent: {reason}");
    }
}

/// What the terminal shows of a tool result, line by line. A command shows
/// its status and its last lines; another tool, an error's first line or a
/// one-line result whole, else its size (the model has the rest). The
/// sandbox's hint is shown whole, on its own line.
fn result_lines(tool: &str, content: &str, is_error: bool) -> Vec<String> {
    let mark = if is_error { "✗" } else { "✓" };
    // The loop's `Error: ` is for the model; the mark says it here.
    let content = content.strip_prefix("Error: ").unwrap_or(content);
    let mut lines: Vec<&str> = content.lines().collect();
    let hint = match lines.last() {
        Some(last) if last.starts_with(HINT_PREFIX) => lines.pop(),
        _ => None,
    };
    while lines.last().is_some_and(|line| line.trim().is_empty()) {
        lines.pop();
    }
    let mut shown = Vec::new();
    if tool == "bash" {
        // A failed command's result starts with how it ended (`exit code 2`).
        let status = if is_error && !lines.is_empty() {
            lines.remove(0)
        } else {
            ""
        };
        shown.push(format!("  {mark} {status}").trim_end().to_string());
        let earlier = lines.len().saturating_sub(COMMAND_TAIL_LINES);
        if earlier > 0 {
            shown.push(format!(
                "    │ … {earlier} earlier line{}",
                if earlier == 1 { "" } else { "s" }
            ));
        }
        for line in &lines[earlier..] {
            shown.push(format!("    │ {}", clip(line, OUTPUT_LINE_CHARS)));
        }
    } else {
        let summary = match (is_error, lines.len()) {
            (false, 2..) => format!("{} lines", lines.len()),
            (false, _) => clip(
                lines.first().copied().unwrap_or_default(),
                OUTPUT_LINE_CHARS,
            ),
            // A message, written to be read whole.
            (true, _) => lines.first().copied().unwrap_or_default().to_string(),
        };
        shown.push(format!("  {mark} {summary}"));
    }
    if let Some(hint) = hint {
        shown.push(format!("  {hint}"));
    }
    shown
}

/// `--json`: every event, then `final` or `error`, one object per line.
#[derive(Default)]
pub struct JsonSink {
    /// The turn's spend, as its last usage event said.
    spend: Mutex<Spend>,
}

pub(super) fn print_json_line(value: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

impl EventSink for JsonSink {
    fn emit(&self, event: AgentEvent) {
        if let AgentEvent::Usage { spend, .. } = &event {
            *self.spend.locked() = *spend;
        }
        // On stderr, as notices are: stdout holds the turn's events.
        if let AgentEvent::Notice { text } = &event {
            self.notice(text);
            return;
        }
        print_json_line(&json!(event));
    }
}

impl TurnSink for JsonSink {
    fn started(&self) {}

    /// On stderr: stdout holds only JSON events.
    fn notice(&self, line: &str) {
        eprintln!("{line}");
    }

    fn finished(&self, outcome: &TurnOutcome) {
        let spend = *self.spend.locked();
        let mut line = json!({
            "type": "final", "text": outcome.text, "usage": outcome.usage, "iterations": outcome.iterations,
        });
        if let (Some(line), Value::Object(spend)) = (line.as_object_mut(), json!(spend)) {
            line.extend(spend);
        }
        print_json_line(&line);
    }

    fn failed(&self, reason: &str) {
        print_json_line(&json!({"type": "error", "message": reason}));
        eprintln!("bareagent: {reason}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole line where it fits; else one figure for the prompt's
    /// tokens and an unknown cost in two words.
    #[test]
    fn the_turn_line_is_said_shorter_where_it_would_wrap() {
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 500,
            cache_creation_input_tokens: 2_000,
            cache_read_input_tokens: 10_000,
            ..Usage::default()
        };
        let spend = Spend {
            cost_usd: None,
            ..Spend::default()
        }
        .with_context(&usage, Some(200_000));
        let whole = turn_line(1, &usage, &spend, None);
        assert!(
            whole.starts_with("[1 model call · 1,000 in · 2,000 cache write"),
            "{whole}"
        );
        assert_eq!(
            turn_line(1, &usage, &spend, Some(whole.chars().count())),
            whole
        );
        assert_eq!(
            turn_line(1, &usage, &spend, Some(100)),
            "[1 model call · 13,000 in (12,000 via the cache) · 500 out · cost unknown · context 6.8% of 200k]"
        );
    }

    #[test]
    fn a_command_shows_its_status_and_last_lines_and_the_hint_whole() {
        let hint = format!(
            "{HINT_PREFIX}This command may have been refused by the sandbox (a hint from the error message; the kernel does not say which rule refused): /etc/x: outside the folders the sandbox lets commands write (the workspace, its temp folder and sandbox.writable); ask the user."
        );
        let numbers: Vec<String> = (1..=12).map(|n| n.to_string()).collect();
        let long = "y".repeat(400);
        let cases: Vec<(&str, String, bool, Vec<String>)> = vec![
            (
                "bash",
                numbers.join("\n"),
                false,
                vec![
                    "  ✓",
                    "    │ … 7 earlier lines",
                    "    │ 8",
                    "    │ 9",
                    "    │ 10",
                    "    │ 11",
                    "    │ 12",
                ]
                .into_iter()
                .map(String::from)
                .collect(),
            ),
            (
                "bash",
                format!(
                    "Error: exit code 1\ntouch: cannot touch '/etc/x': Permission denied\n\n{hint}"
                ),
                true,
                vec![
                    "  ✗ exit code 1".to_string(),
                    "    │ touch: cannot touch '/etc/x': Permission denied".to_string(),
                    format!("  {hint}"),
                ],
            ),
            (
                "bash",
                format!("exit code 2\n{long}"),
                true,
                vec![
                    "  ✗ exit code 2".to_string(),
                    format!("    │ {}…", "y".repeat(OUTPUT_LINE_CHARS)),
                ],
            ),
            (
                "read_file",
                "one line".into(),
                false,
                vec!["  ✓ one line".into()],
            ),
            (
                "read_file",
                "a\nb\nc".into(),
                false,
                vec!["  ✓ 3 lines".into()],
            ),
            (
                "bash",
                format!(
                    "Denied: `bash` needs approval ({long}) and there is no terminal to ask on."
                ),
                true,
                vec![format!(
                    "  ✗ Denied: `bash` needs approval ({long}) and there is no terminal to ask on."
                )],
            ),
            (
                "write_file",
                format!("Denied: {long}. Ask the user."),
                true,
                vec![format!("  ✗ Denied: {long}. Ask the user.")],
            ),
        ];
        for (tool, content, is_error, want) in cases {
            assert_eq!(
                result_lines(tool, &content, is_error),
                want,
                "{tool}: {content}"
            );
        }
    }
}
