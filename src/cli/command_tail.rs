//! A running command, live on stderr: a spinner with the elapsed time and
//! the last few lines of its output, replaced in place as more comes, and
//! cleared when the command ends (its result then says how it ended and
//! shows its last lines, as before). Drawn only on a terminal.
//!
//! Each line is cut to the terminal's width, so that no line wraps and the
//! redraw always knows how many rows to clear; a carriage return (a
//! progress bar's) starts its line over, as a terminal would show it.
//! While anything is drawn live, the terminal does not echo keys (see
//! [`EchoOff`]): an echoed Enter would move the cursor under the drawing
//! and leave a stale copy of it behind.

use std::collections::VecDeque;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Lines of output shown while the command runs.
const TAIL_LINES: usize = 5;

const TEMPLATE: &str = "  {spinner} running {elapsed}{msg}";

/// The live view of one running command.
pub struct CommandTail {
    bar: ProgressBar,
    /// The last whole lines, oldest first.
    lines: VecDeque<String>,
    /// The line being written.
    partial: String,
    /// Columns of the terminal.
    width: usize,
}

impl CommandTail {
    /// Starts drawing on stderr, `width` columns wide.
    pub fn start(width: usize) -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(TEMPLATE) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(100));
        CommandTail {
            bar,
            lines: VecDeque::new(),
            partial: String::new(),
            width,
        }
    }

    /// More output from the command.
    pub fn push(&mut self, text: &str) {
        for piece in text.split_inclusive('\n') {
            let ends = piece.ends_with('\n');
            let body = match ends {
                true => piece.trim_end_matches('\n').trim_end_matches('\r'),
                false => piece,
            };
            self.extend_partial(body);
            if ends {
                let line = std::mem::take(&mut self.partial);
                self.lines.push_back(line);
                if self.lines.len() > TAIL_LINES {
                    self.lines.pop_front();
                }
            }
        }
        self.bar.set_message(self.message());
    }

    /// Adds to the line being written, keeping only what its row can show:
    /// what follows its last carriage return, one row's worth of it. A
    /// command that never ends a line (`yes | tr -d '\n'`) costs no more.
    fn extend_partial(&mut self, body: &str) {
        let body = match body.rfind('\r') {
            Some(at) => {
                self.partial.clear();
                &body[at + 1..]
            }
            None => body,
        };
        let kept = self.partial.chars().count();
        let room = self.width.saturating_sub(kept);
        self.partial.push_str(crate::text::prefix(body, room));
    }

    /// The tail below the spinner: one row per line, none wrapping.
    fn message(&self) -> String {
        let partial = (!self.partial.is_empty()).then_some(&self.partial);
        let shown: Vec<&String> = self.lines.iter().chain(partial).collect();
        let skip = shown.len().saturating_sub(TAIL_LINES);
        shown[skip..]
            .iter()
            .map(|line| format!("\n    │ {}", self.row(line)))
            .collect()
    }

    /// A line as one row: what follows its last carriage return, made
    /// visible, cut to the width.
    fn row(&self, line: &str) -> String {
        let line = line.rsplit('\r').next().unwrap_or_default();
        let shown = super::diff_view::visible_lines(line);
        let room = self.width.saturating_sub(7).max(10);
        let (kept, cut) = super::diff_view::cut_to_columns(&shown, room);
        if cut > 0 {
            format!("{}…", super::diff_view::cut_to_columns(kept, room - 1).0)
        } else {
            kept.to_string()
        }
    }

    /// Runs `write` with the drawing out of the way.
    pub fn suspend(&self, write: impl FnOnce()) {
        self.bar.suspend(write);
    }

    /// The command ended: the drawing is cleared.
    pub fn clear(self) {
        self.bar.finish_and_clear();
    }
}

/// While held, stdin's terminal does not echo what is typed (the typed
/// keys still wait to be read). Only the echo flag is touched, and put
/// back only if this turned it off, so a mode someone else set (the line
/// editor's raw mode) is left as it is.
pub struct EchoOff {
    turned_off: bool,
}

impl EchoOff {
    pub fn new() -> Self {
        use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
        let stdin = std::io::stdin();
        let turned_off = match tcgetattr(&stdin) {
            Ok(mut modes) if modes.local_modes.contains(LocalModes::ECHO) => {
                modes.local_modes.remove(LocalModes::ECHO);
                tcsetattr(&stdin, OptionalActions::Now, &modes).is_ok()
            }
            _ => false,
        };
        EchoOff { turned_off }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
        if !self.turned_off {
            return;
        }
        let stdin = std::io::stdin();
        if let Ok(mut modes) = tcgetattr(&stdin) {
            modes.local_modes.insert(LocalModes::ECHO);
            let _ = tcsetattr(&stdin, OptionalActions::Now, &modes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines_each_on_one_row() {
        let mut tail = CommandTail::start(20);
        tail.push("one\ntwo\nthree\nfour\n");
        tail.push("five\nsix\n50%\r100% \u{1b}[2J");
        assert_eq!(
            tail.message(),
            "\n    │ three\n    │ four\n    │ five\n    │ six\n    │ 100% \\u{1b}[…"
        );
        tail.clear();
    }

    /// Output that never ends a line is kept to what its row shows, and
    /// a line ended `\r\n` is its text.
    #[test]
    fn a_line_that_never_ends_costs_one_row() {
        let mut tail = CommandTail::start(20);
        for _ in 0..1000 {
            tail.push(&"y".repeat(1000));
        }
        assert_eq!(tail.partial.chars().count(), 20);
        tail.push("\r\nwindows line\r\n");
        assert_eq!(tail.lines.back().map(String::as_str), Some("windows line"));
        tail.clear();
    }
}
