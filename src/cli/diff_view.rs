//! How the terminal shows a diff (on stderr, where the prompt and the tool
//! lines are): cut to a screenful with a count of the lines left out,
//! coloured when stderr is a terminal and `NO_COLOR` is not set, and with
//! every character that could steer the terminal shown instead of obeyed.
//!
//! The last point is a defence: the text of a diff comes from the model and
//! from files, either of which an attacker may have written. An escape
//! sequence in it could clear the screen, move the cursor over the lines
//! that matter, or rewrite the question itself; bidirectional overrides
//! can make code read differently from what it is ("Trojan Source").

use std::io::IsTerminal;

use crate::diff;

/// Lines assumed when the terminal does not say its height.
const FALLBACK_HEIGHT: usize = 40;

/// Lines of the screen kept for what is around the diff: the question
/// above it, the count of lines cut, the answer line below.
const AROUND: usize = 3;

/// The fewest diff lines shown, however small the terminal.
const MIN_LINES: usize = 5;

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// `diff` as stderr shows it now: cut to its screen, coloured if it is a
/// terminal. Every line ends with a newline; empty for an empty diff.
pub fn for_stderr(diff: &str) -> String {
    let height = rustix::termios::tcgetwinsize(std::io::stderr())
        .ok()
        .map(|size| usize::from(size.ws_row))
        .filter(|rows| *rows > 0)
        .unwrap_or(FALLBACK_HEIGHT);
    render(
        diff,
        height.saturating_sub(AROUND).max(MIN_LINES),
        colour_on_stderr(),
    )
}

/// Colour only on a terminal, and never when `NO_COLOR` is set to
/// anything but the empty string (<https://no-color.org>).
pub fn colour_on_stderr() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    !no_color && std::io::stderr().is_terminal()
}

/// The first `max` lines of `diff`, each made safe to print and coloured
/// when `colour` is set, then a line counting the rest.
pub fn render(diff: &str, max: usize, colour: bool) -> String {
    let (shown, more) = diff::head(diff, max);
    let mut out = String::new();
    // File headers come before the first hunk; inside one, a line
    // `--- x` is a removed `-- x`.
    let mut in_hunk = false;
    for line in shown.lines() {
        // A CRLF file's lines end in `\r`: the line end, not content.
        let line = visible(line.strip_suffix('\r').unwrap_or(line));
        let paint = if line.starts_with("@@") {
            in_hunk = true;
            Some(CYAN)
        } else if !in_hunk && (line.starts_with("--- ") || line.starts_with("+++ ")) {
            Some(BOLD)
        } else if line.starts_with('+') {
            Some(GREEN)
        } else if line.starts_with('-') {
            Some(RED)
        } else {
            None
        };
        match paint.filter(|_| colour) {
            Some(code) => out.push_str(&format!("{code}{line}{RESET}\n")),
            None => out.push_str(&format!("{line}\n")),
        }
    }
    if more > 0 {
        out.push_str(&diff::more_lines(more));
        out.push('\n');
    }
    out
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
        assert_eq!(render(DIFF, 100, false), DIFF);
        assert_eq!(
            render(DASHES, 100, true),
            "\x1b[36m@@ -1 +1 @@\x1b[0m\n\x1b[31m--- x\x1b[0m\n\x1b[32m+++ y\x1b[0m\n",
            "inside a hunk, `---` is a removed line"
        );
        assert_eq!(
            render(DIFF, 100, true),
            "\x1b[1m--- a/f\x1b[0m\n\x1b[1m+++ b/f\x1b[0m\n\x1b[36m@@ -1,2 +1,2 @@\x1b[0m\n ctx\n\x1b[31m-old\x1b[0m\n\x1b[32m+new\x1b[0m\n"
        );
    }

    #[test]
    fn a_long_diff_is_cut_with_a_count() {
        assert_eq!(
            render(DIFF, 4, false),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n ctx\n… 2 more lines\n"
        );
        assert_eq!(render("", 4, true), "");
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
                render(&format!("{line}\n"), 10, false),
                format!("{shown}\n"),
                "{line:?}"
            );
        }
        // A CRLF line's own line end is not shown.
        assert_eq!(render("+a\r\n", 10, false), "+a\n");
    }
}
