//! How the terminal shows a diff (on stderr, where the prompt and the tool
//! lines are): cut to a screenful — counted in the rows the terminal wraps
//! its lines into, each line cut to a few rows with a count of the
//! characters left out — with a count of the lines left out, coloured when
//! stderr is a terminal and `NO_COLOR` is not set, and with every character
//! that could steer the terminal shown instead of obeyed. A one-line
//! minified file's edit, or a 52 MB one, prints a screenful, never megabytes.
//! [`for_pager`] gives the whole diff, for a pager.
//!
//! The last point is a defence: the text of a diff comes from the model and
//! from files, either of which an attacker may have written. An escape
//! sequence in it could clear the screen, move the cursor over the lines
//! that matter, or rewrite the question itself; bidirectional overrides
//! can make code read differently from what it is ("Trojan Source").

use std::io::IsTerminal;

use unicode_width::UnicodeWidthChar;

use crate::diff;

/// Lines assumed when the terminal does not say its height.
const FALLBACK_HEIGHT: usize = 40;
/// Columns assumed when the terminal does not say its width.
const FALLBACK_WIDTH: usize = 80;

/// Lines of the screen kept for what is around the diff: the question
/// above it, the count of lines cut, the answer line below.
const AROUND: usize = 3;

/// The fewest rows shown, however small the terminal.
const MIN_LINES: usize = 5;

/// A line of the diff takes at most this many rows; the rest is counted.
const ROWS_PER_LINE: usize = 3;

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// Where a diff is shown: rows for it, and columns of each row.
#[derive(Clone, Copy, Debug)]
pub struct Screen {
    pub rows: usize,
    pub width: usize,
}

/// `diff` as stderr shows it now: cut to its screen, coloured if it is a
/// terminal. Every line ends with a newline; empty for an empty diff.
pub fn for_stderr(diff: &str) -> String {
    let size = rustix::termios::tcgetwinsize(std::io::stderr()).ok();
    let height = size
        .map(|size| usize::from(size.ws_row))
        .filter(|rows| *rows > 0)
        .unwrap_or(FALLBACK_HEIGHT);
    let width = size
        .map(|size| usize::from(size.ws_col))
        .filter(|cols| *cols > 0)
        .unwrap_or(FALLBACK_WIDTH);
    let screen = Screen {
        rows: height.saturating_sub(AROUND).max(MIN_LINES),
        width,
    };
    render(diff, Some(screen), colour_on_stderr())
}

/// The whole of `diff` for a pager (`less -R`): coloured, no line cut,
/// nothing in it able to steer the terminal.
pub fn for_pager(diff: &str) -> String {
    render(diff, None, colour_on_stderr())
}

/// Colour only on a terminal, and never when `NO_COLOR` is set to
/// anything but the empty string (<https://no-color.org>).
pub fn colour_on_stderr() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    !no_color && std::io::stderr().is_terminal()
}

/// The lines of `diff` that fit on `screen` (all of them without one),
/// each made safe to print and coloured when `colour` is set, then a line
/// counting the rest.
pub fn render(diff: &str, screen: Option<Screen>, colour: bool) -> String {
    let mut out = String::new();
    let mut rows = 0;
    let mut used = 0;
    // File headers come before the first hunk; inside one, a line
    // `--- x` is a removed `-- x`.
    let mut in_hunk = false;
    for raw in diff.split_inclusive('\n') {
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        // A CRLF file's lines end in `\r`: the line end, not content.
        let line = line.strip_suffix('\r').unwrap_or(line);
        let (kept, cut) = match screen {
            Some(screen) => cut_to_columns(line, screen.width * ROWS_PER_LINE),
            None => (line, 0),
        };
        let mut text = visible(kept);
        if cut > 0 {
            text.push_str(&format!(" … {cut} more characters"));
        }
        if let Some(screen) = screen {
            let needs = rows_of(&text, screen.width);
            if rows > 0 && rows + needs > screen.rows {
                break;
            }
            rows += needs;
        }
        used += raw.len();
        let paint = if kept.starts_with("@@") {
            in_hunk = true;
            Some(CYAN)
        } else if !in_hunk && (kept.starts_with("--- ") || kept.starts_with("+++ ")) {
            Some(BOLD)
        } else if kept.starts_with('+') {
            Some(GREEN)
        } else if kept.starts_with('-') {
            Some(RED)
        } else {
            None
        };
        match paint.filter(|_| colour) {
            Some(code) => out.push_str(&format!("{code}{text}{RESET}\n")),
            None => out.push_str(&format!("{text}\n")),
        }
    }
    let more = diff[used..].lines().count();
    if more > 0 {
        out.push_str(&diff::more_lines(more));
        out.push('\n');
    }
    out
}

/// The columns a character takes on a terminal (a tab to its next stop).
fn columns(c: char, at: usize) -> usize {
    if c == '\t' {
        8 - at % 8
    } else {
        c.width().unwrap_or(0)
    }
}

/// The start of `line` that fits in `max` columns, and how many
/// characters are left out after it.
pub(super) fn cut_to_columns(line: &str, max: usize) -> (&str, usize) {
    let mut at = 0;
    for (index, c) in line.char_indices() {
        at += columns(c, at);
        if at > max {
            return (&line[..index], line[index..].chars().count());
        }
    }
    (line, 0)
}

/// The columns `text` takes on one row of a terminal.
pub(super) fn width_of(text: &str) -> usize {
    text.chars().fold(0, |at, c| at + columns(c, at))
}

/// The rows `text` takes on a terminal `width` columns wide (one at least).
fn rows_of(text: &str, width: usize) -> usize {
    width_of(text).div_ceil(width.max(1)).max(1)
}

/// Model-written text for the terminal, line by line as [`visible`] makes
/// it: it shows, and never drives the terminal (no escape sequence, no
/// carriage return drawing over what came before).
pub fn visible_lines(text: &str) -> String {
    text.split('\n').map(visible).collect::<Vec<_>>().join("\n")
}

/// The line with every control character (tab aside) and every
/// bidirectional formatting character written as its `\u{…}` escape.
fn visible(line: &str) -> String {
    line.chars()
        .map(|c| {
            if (c.is_control() && c != '\t') || is_bidi_control(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The characters that reorder text on display: embeddings, overrides,
/// isolates and marks.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}')
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n ctx\n-old\n+new\n";

    /// `rows` rows of a terminal 80 columns wide.
    fn rows(rows: usize) -> Option<Screen> {
        Some(Screen { rows, width: 80 })
    }

    /// Rows as the terminal wraps them, and a line too long for a few rows
    /// cut with a count of what is left out; a pager gets it all.
    #[test]
    fn long_lines_count_as_the_rows_they_wrap_to_and_are_cut() {
        let screen = Some(Screen { rows: 6, width: 10 });
        let minified = format!("@@ -1 +1 @@\n-{}\n+{}\n", "a".repeat(25), "b".repeat(100));
        assert_eq!(
            render(&minified, screen, false),
            format!("@@ -1 +1 @@\n-{}\n… 1 more line\n", "a".repeat(25)),
            "3 rows for the header and the removed line; the added one would take 3 more"
        );
        let screen = Some(Screen { rows: 8, width: 10 });
        assert_eq!(
            render(&format!("+{}\n+b\n", "日".repeat(40)), screen, false),
            format!("+{} … 26 more characters\n+b\n", "日".repeat(14)),
        );
        assert_eq!(for_pager(&minified).matches('b').count(), 100);
    }

    #[test]
    fn model_text_cannot_drive_the_terminal() {
        let cases = [
            ("rm -rf /\r\u{1b}[2Kls", "rm -rf /\\u{d}\\u{1b}[2Kls"),
            ("echo a\necho b", "echo a\necho b"),
            ("cat \u{202E}txt.exe", "cat \\u{202e}txt.exe"),
            ("printf '\x07'", "printf '\\u{7}'"),
        ];
        for (text, shown) in cases {
            assert_eq!(visible_lines(text), shown, "{text:?}");
        }
    }
    const DASHES: &str = "@@ -1 +1 @@\n--- x\n+++ y\n";

    #[test]
    fn colours_by_line_kind_and_none_without_colour() {
        assert_eq!(render(DIFF, rows(100), false), DIFF);
        assert_eq!(
            render(DASHES, rows(100), true),
            "\x1b[36m@@ -1 +1 @@\x1b[0m\n\x1b[31m--- x\x1b[0m\n\x1b[32m+++ y\x1b[0m\n",
            "inside a hunk, `---` is a removed line"
        );
        assert_eq!(
            render(DIFF, rows(100), true),
            "\x1b[1m--- a/f\x1b[0m\n\x1b[1m+++ b/f\x1b[0m\n\x1b[36m@@ -1,2 +1,2 @@\x1b[0m\n ctx\n\x1b[31m-old\x1b[0m\n\x1b[32m+new\x1b[0m\n"
        );
    }

    #[test]
    fn a_long_diff_is_cut_with_a_count() {
        assert_eq!(
            render(DIFF, rows(4), false),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n ctx\n… 2 more lines\n"
        );
        assert_eq!(render("", rows(4), true), "");
    }

    /// Attacks on the terminal, as data: what a diff line holds → what is printed.
    #[test]
    fn nothing_in_a_diff_can_steer_the_terminal() {
        let cases = [
            // clear the screen and home the cursor
            ("+\x1b[2J\x1b[H", "+\\u{1b}[2J\\u{1b}[H"),
            // a carriage return to overwrite the line with something harmless-looking
            ("+rm -rf ~\r+echo hi", "+rm -rf ~\\u{d}+echo hi"),
            // backspaces over the dangerous part
            (
                "+evil\x08\x08\x08\x08fine",
                "+evil\\u{8}\\u{8}\\u{8}\\u{8}fine",
            ),
            // an OSC sequence (window title, hyperlinks) ended by BEL
            ("+\x1b]0;title\x07", "+\\u{1b}]0;title\\u{7}"),
            // the 8-bit CSI
            ("+\u{9b}2J", "+\\u{9b}2J"),
            // DEL
            ("+a\u{7f}", "+a\\u{7f}"),
            // Trojan Source: a right-to-left override and an isolate
            (
                "+if admin \u{202E} { } \u{2066}",
                "+if admin \\u{202e} { } \\u{2066}",
            ),
            // tabs and ordinary text stay as they are
            ("+\tok é 日本", "+\tok é 日本"),
        ];
        for (line, shown) in cases {
            assert_eq!(
                render(&format!("{line}\n"), rows(10), false),
                format!("{shown}\n"),
                "{line:?}"
            );
        }
        // A CRLF line's own line end is not shown.
        assert_eq!(render("+a\r\n", rows(10), false), "+a\n");
    }
}
