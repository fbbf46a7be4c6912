//! The model's answers as a terminal shows markdown: headings, emphasis,
//! lists, block quotes, tables drawn with lines, code blocks highlighted,
//! every paragraph wrapped at word boundaries to the terminal's width.
//!
//! Streamed without flicker: nothing printed is ever redrawn. Text is
//! rendered a complete line at a time (a table when its last row has come,
//! a code block line by line as each line closes), so what is on the
//! screen is final; the line still being written is not printed until it
//! ends (the terminal sink shows its tail on the spinner's line meanwhile).
//! A paragraph the model broke over several lines is wrapped line by line.
//!
//! Model text may carry escape sequences: every piece of it passes
//! [`visible`](super::diff_view::visible_lines) before our own styling is
//! added, so it shows and never steers the terminal.
//!
//! Only used where stdout is a terminal and `NO_COLOR` is not set; the
//! text is printed as it came elsewhere (and with `--json`, untouched).

use std::sync::OnceLock;

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

use super::diff_view::{cut_to_columns, visible_lines as visible, width_of as columns};

const RESET: &str = "\x1b[0m";

/// Streamed markdown in, rendered lines out.
pub struct MarkdownStream {
    width: usize,
    /// The line being written: no newline yet.
    partial: String,
    block: Block,
    /// The last line printed was blank: blank lines are not doubled.
    blank: bool,
}

enum Block {
    Text,
    /// Inside a fenced code block: its fence, and the highlighter.
    Code {
        fence: String,
        highlighter: Box<Option<HighlightLines<'static>>>,
    },
    /// A table's lines so far.
    Table(Vec<String>),
}

impl MarkdownStream {
    /// Lines are wrapped to `width` columns.
    pub fn new(width: usize) -> Self {
        MarkdownStream {
            width: width.max(20),
            partial: String::new(),
            block: Block::Text,
            blank: true,
        }
    }

    /// Takes the next piece of the answer; returns what is ready to print
    /// (whole lines, each ending with a newline; empty if none is).
    pub fn push(&mut self, text: &str) -> String {
        self.partial.push_str(text);
        let mut out = String::new();
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            out.push_str(&self.line(line.trim_end_matches(['\n', '\r'])));
        }
        out
    }

    /// The line being written, so far.
    pub fn partial(&self) -> &str {
        &self.partial
    }

    /// The answer ended (or a tool call cut it): the rest, rendered.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            out.push_str(&self.line(line.trim_end_matches('\r')));
        }
        if let Block::Table(rows) = std::mem::replace(&mut self.block, Block::Text) {
            out.push_str(&self.table(&rows));
        }
        self.blank = true;
        out
    }

    /// One whole line of the source.
    fn line(&mut self, line: &str) -> String {
        let mut out = String::new();
        if let Block::Code { fence, highlighter } = &mut self.block {
            if line.trim() == fence.as_str() || closes(line.trim(), fence) {
                self.block = Block::Text;
                self.blank = false;
                return out;
            }
            out.push_str(&code_line(line, Option::as_mut(&mut **highlighter)));
            out.push('\n');
            return out;
        }
        if let Block::Table(rows) = &mut self.block {
            if line.trim_start().starts_with('|') {
                rows.push(line.to_string());
                return out;
            }
            let rows = std::mem::take(rows);
            self.block = Block::Text;
            out.push_str(&self.table(&rows));
        }
        let trimmed = line.trim_start();
        if let Some(fence) = opening_fence(trimmed) {
            let language = trimmed[fence.len()..].trim();
            self.block = Block::Code {
                fence,
                highlighter: Box::new(highlighter(language)),
            };
            return out;
        }
        if trimmed.starts_with('|') {
            self.block = Block::Table(vec![line.to_string()]);
            return out;
        }
        if trimmed.is_empty() {
            if !self.blank {
                out.push('\n');
            }
            self.blank = true;
            return out;
        }
        self.blank = false;
        for rendered in render_line(line, self.width) {
            out.push_str(&rendered);
            out.push('\n');
        }
        out
    }

    fn table(&mut self, rows: &[String]) -> String {
        self.blank = false;
        let source = rows.join("\n");
        table(&source, self.width)
            .into_iter()
            .map(|line| line + "\n")
            .collect()
    }
}

/// ```` ``` ```` or `~~~` (three or more) opening a code block.
fn opening_fence(line: &str) -> Option<String> {
    for mark in ['`', '~'] {
        let count = line.chars().take_while(|c| *c == mark).count();
        if count >= 3 {
            return Some(mark.to_string().repeat(count));
        }
    }
    None
}

/// A line of only the fence's character, at least as many.
fn closes(line: &str, fence: &str) -> bool {
    let mark = fence.chars().next().unwrap_or('`');
    line.len() >= fence.len() && line.chars().all(|c| c == mark)
}

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn theme() -> &'static Theme {
    static THEME: OnceLock<Option<Theme>> = OnceLock::new();
    static PLAIN: OnceLock<Theme> = OnceLock::new();
    THEME
        .get_or_init(|| ThemeSet::load_defaults().themes.remove("base16-ocean.dark"))
        .as_ref()
        .unwrap_or_else(|| PLAIN.get_or_init(Theme::default))
}

/// A highlighter for `language` (a fence's info string: `rust`, `py`,
/// `sh`), or none for a language it does not know.
fn highlighter(language: &str) -> Option<HighlightLines<'static>> {
    let token = language.split_whitespace().next()?;
    let syntax = syntaxes().find_syntax_by_token(token)?;
    Some(HighlightLines::new(syntax, theme()))
}

/// A code line, indented two columns, coloured by its highlighter (dim
/// without one); never wrapped, never cut.
fn code_line(line: &str, highlighter: Option<&mut HighlightLines<'static>>) -> String {
    let mut out = String::from("  ");
    let with_newline = format!("{line}\n");
    let ranges = highlighter.and_then(|h| h.highlight_line(&with_newline, syntaxes()).ok());
    match ranges {
        Some(ranges) => {
            for (style, text) in ranges {
                let text = text.trim_end_matches('\n');
                if text.is_empty() {
                    continue;
                }
                let c = style.foreground;
                out.push_str(&foreground(c.r, c.g, c.b));
                out.push_str(&visible(text));
            }
            out.push_str(RESET);
        }
        None => out.push_str(&format!("\x1b[2m{}{RESET}", visible(line))),
    }
    out
}

/// The escape for a foreground colour: 24-bit where the terminal says it
/// takes it (`COLORTERM`), else the nearest of the 256-colour cube, which
/// every terminal that has colour at all shows.
fn foreground(r: u8, g: u8, b: u8) -> String {
    static TRUE_COLOUR: OnceLock<bool> = OnceLock::new();
    let true_colour = *TRUE_COLOUR.get_or_init(|| {
        std::env::var("COLORTERM").is_ok_and(|value| value == "truecolor" || value == "24bit")
    });
    if true_colour {
        format!("\x1b[38;2;{r};{g};{b}m")
    } else {
        let step = |value: u8| (u16::from(value) * 5 + 127) / 255;
        format!("\x1b[38;5;{}m", 16 + 36 * step(r) + 6 * step(g) + step(b))
    }
}

/// How a run of text is drawn.
#[derive(Clone, Copy, Default, PartialEq)]
struct Style {
    bold: bool,
    italic: bool,
    strike: bool,
    code: bool,
    link: bool,
    dim: bool,
}

impl Style {
    fn sgr(self) -> String {
        let mut codes = Vec::new();
        if self.bold {
            codes.push("1");
        }
        if self.dim {
            codes.push("2");
        }
        if self.italic {
            codes.push("3");
        }
        if self.link {
            codes.push("4");
        }
        if self.strike {
            codes.push("9");
        }
        if self.code {
            codes.push("36");
        }
        if codes.is_empty() {
            String::new()
        } else {
            format!("\x1b[{}m", codes.join(";"))
        }
    }
}

/// A piece of text in one style; `text` is already made visible.
#[derive(Clone)]
struct Run {
    text: String,
    style: Style,
}

/// One source line (a paragraph's, a heading, a list item, a quote, a
/// rule), rendered and wrapped to `width`.
fn render_line(line: &str, width: usize) -> Vec<String> {
    // Nesting is the source's indentation: a line is rendered alone.
    let indent = line.len() - line.trim_start_matches(' ').len();
    let mut lead = " ".repeat(indent.min(width / 2));
    let mut hang = lead.clone();
    let mut runs: Vec<Run> = Vec::new();
    let mut styles = vec![Style::default()];
    let mut link: Option<String> = None;
    let mut rule = false;
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(line.trim_start_matches(' '), options) {
        let current = styles.last().copied().unwrap_or_default();
        match event {
            Event::Start(tag) => {
                let mut next = current;
                match tag {
                    Tag::Heading { level, .. } => {
                        next.bold = true;
                        next.link = level == HeadingLevel::H1;
                    }
                    Tag::Emphasis => next.italic = true,
                    Tag::Strong => next.bold = true,
                    Tag::Strikethrough => next.strike = true,
                    Tag::Link { dest_url, .. } => {
                        next.link = true;
                        link = Some(dest_url.to_string());
                    }
                    Tag::BlockQuote(_) => {
                        lead.push_str("│ ");
                        hang.push_str("│ ");
                        next.dim = true;
                    }
                    Tag::List(start) => {
                        styles.push(next);
                        let bullet = match start {
                            Some(n) => format!("{n}. "),
                            None => "• ".to_string(),
                        };
                        lead.push_str(&bullet);
                        hang.push_str(&" ".repeat(bullet.chars().count()));
                        continue;
                    }
                    _ => {}
                }
                styles.push(next);
            }
            Event::End(end) => {
                styles.pop();
                if let TagEnd::Link = end
                    && let Some(url) = link.take()
                {
                    let shown: String = runs.iter().map(|r| r.text.as_str()).collect();
                    if !url.is_empty() && !shown.ends_with(url.as_str()) {
                        runs.push(Run {
                            text: format!(" ({})", visible(&url)),
                            style: Style {
                                dim: true,
                                ..Style::default()
                            },
                        });
                    }
                }
            }
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => runs.push(Run {
                text: visible(&text),
                style: current,
            }),
            Event::Code(text) => runs.push(Run {
                text: visible(&text),
                style: Style {
                    code: true,
                    ..current
                },
            }),
            Event::SoftBreak | Event::HardBreak => runs.push(Run {
                text: " ".into(),
                style: current,
            }),
            Event::TaskListMarker(done) => runs.push(Run {
                text: if done { "☑ " } else { "☐ " }.into(),
                style: current,
            }),
            Event::Rule => rule = true,
            _ => {}
        }
    }
    if rule {
        return vec![format!("\x1b[2m{}{RESET}", "─".repeat(width.min(80)))];
    }
    wrap(&runs, &lead, &hang, width)
}

/// Lays `runs` out in lines of at most `width` columns, breaking at
/// spaces (a word longer than a line is broken where the line ends): the
/// first line after `lead`, the others after `hang`.
fn wrap(runs: &[Run], lead: &str, hang: &str, width: usize) -> Vec<String> {
    // Words: pieces between spaces, each a list of styled parts.
    let mut words: Vec<Vec<Run>> = vec![Vec::new()];
    for run in runs {
        for (index, piece) in run.text.split(' ').enumerate() {
            if index > 0 {
                words.push(Vec::new());
            }
            if !piece.is_empty()
                && let Some(word) = words.last_mut()
            {
                word.push(Run {
                    text: piece.to_string(),
                    style: run.style,
                });
            }
        }
    }
    let mut lines = Vec::new();
    let mut line = String::from(lead);
    let mut used = columns(lead);
    let mut empty = true;
    // At least ten columns after a deep indent, never more than given (a
    // table's cell is sized to fit its row).
    let room = |prefix: &str| width.saturating_sub(columns(prefix)).max(10.min(width));
    for word in words.into_iter().filter(|w| !w.is_empty()) {
        let size: usize = word.iter().map(|r| columns(&r.text)).sum();
        let prefix = if lines.is_empty() { lead } else { hang };
        if !empty && used + 1 + size > columns(prefix) + room(prefix) {
            lines.push(std::mem::take(&mut line));
            line = hang.to_string();
            used = columns(hang);
            empty = true;
        }
        if !empty {
            line.push(' ');
            used += 1;
        }
        for part in word {
            let limit = columns(hang) + room(hang);
            let mut text = part.text.as_str();
            // A word longer than the line: cut where the line ends.
            while used + columns(text) > limit {
                let mut fits = cut_to_columns(text, limit.saturating_sub(used))
                    .0
                    .to_string();
                if fits.is_empty() {
                    // Not even one character fits: at least one per line.
                    fits = text.chars().take(1).collect();
                }
                line.push_str(&styled(&fits, part.style));
                lines.push(std::mem::take(&mut line));
                line = hang.to_string();
                used = columns(hang);
                text = &text[fits.len()..];
            }
            line.push_str(&styled(text, part.style));
            used += columns(text);
        }
        empty = false;
    }
    if !empty || lines.is_empty() {
        lines.push(line);
    }
    lines
}

fn styled(text: &str, style: Style) -> String {
    let sgr = style.sgr();
    if sgr.is_empty() || text.is_empty() {
        text.to_string()
    } else {
        format!("{sgr}{text}{RESET}")
    }
}

/// `line` of markdown as its plain words, on one line: no markup, no
/// styling, nothing that steers the terminal (a table's row stays as written).
pub fn plain(line: &str) -> String {
    render_line(line, usize::MAX / 4)
        .iter()
        .map(|row| strip_sgr(row))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A table drawn with lines, its columns shrunk to fit `width` (cells
/// wrapped inside them), the header bold.
fn table(source: &str, width: usize) -> Vec<String> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header_rows = 0;
    let mut cell = String::new();
    for event in Parser::new_ext(source, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::TableRow) | Event::Start(Tag::TableHead) => rows.push(Vec::new()),
            Event::End(TagEnd::TableHead) => header_rows = rows.len(),
            Event::End(TagEnd::TableCell) => {
                if let Some(row) = rows.last_mut() {
                    row.push(visible(cell.trim()));
                }
                cell.clear();
            }
            Event::Text(text) | Event::Code(text) | Event::InlineHtml(text) => cell.push_str(&text),
            Event::SoftBreak | Event::HardBreak => cell.push(' '),
            _ => {}
        }
    }
    if rows.is_empty() {
        // Not a table after all (no delimiter row): its lines as text.
        return source
            .lines()
            .flat_map(|line| render_line(line, width))
            .collect();
    }
    let count = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths: Vec<usize> = (0..count)
        .map(|i| {
            rows.iter()
                .filter_map(|row| row.get(i))
                .map(|c| columns(c))
                .max()
                .unwrap_or(0)
                .max(1)
        })
        .collect();
    // `│ a │ b │`: 3 columns a cell, and 1.
    let room = width.saturating_sub(3 * count + 1).max(count * 3);
    while widths.iter().sum::<usize>() > room {
        let Some(widest) = (0..count).max_by_key(|i| widths[*i]) else {
            break;
        };
        if widths[widest] <= 3 {
            break;
        }
        widths[widest] -= 1;
    }
    let border = |left: &str, mid: &str, right: &str| {
        let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
        format!("\x1b[2m{left}{}{right}{RESET}", parts.join(mid))
    };
    let mut out = vec![border("┌", "┬", "┐")];
    for (index, row) in rows.iter().enumerate() {
        let cells: Vec<Vec<String>> = (0..count)
            .map(|i| {
                let text = row.get(i).map(String::as_str).unwrap_or("");
                let runs = [Run {
                    text: text.to_string(),
                    style: Style {
                        bold: index < header_rows,
                        ..Style::default()
                    },
                }];
                wrap(&runs, "", "", widths[i])
            })
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for line in 0..height {
            let mut shown = String::from("\x1b[2m│\x1b[0m");
            for (i, cell) in cells.iter().enumerate() {
                let text = cell.get(line).map(String::as_str).unwrap_or("");
                let pad = widths[i].saturating_sub(columns(&strip_sgr(text)));
                shown.push_str(&format!(" {text}{} \x1b[2m│\x1b[0m", " ".repeat(pad)));
            }
            out.push(shown);
        }
        if index + 1 == header_rows {
            out.push(border("├", "┼", "┤"));
        }
    }
    out.push(border("└", "┴", "┘"));
    out
}

/// `text` without our own styling (its width is what shows).
fn strip_sgr(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(markdown: &str, width: usize) -> Vec<String> {
        let mut stream = MarkdownStream::new(width);
        let mut out = String::new();
        // One character at a time, as the worst stream would.
        for c in markdown.chars() {
            out.push_str(&stream.push(&c.to_string()));
        }
        out.push_str(&stream.finish());
        out.lines().map(strip_sgr).collect()
    }

    #[test]
    fn blocks_render_and_wrap_at_words() {
        let markdown = "# Title\n\nSome **bold** and `code` words that wrap here.\n\n- one\n  - nested item\n1. first\n\n> quoted\n\n---\n| a | bb |\n|---|---|\n| 1 | two words |\nafter\n```rust\nfn main() {}\n```\n";
        assert_eq!(
            shown(markdown, 24),
            vec![
                "Title",
                "",
                "Some bold and code words",
                "that wrap here.",
                "",
                "• one",
                "  • nested item",
                "1. first",
                "",
                "│ quoted",
                "",
                &"─".repeat(24),
                "┌───┬───────────┐",
                "│ a │ bb        │",
                "├───┼───────────┤",
                "│ 1 │ two words │",
                "└───┴───────────┘",
                "after",
                "  fn main() {}",
            ]
        );
    }

    /// A table wider than the terminal is narrowed to fit it, every row.
    #[test]
    fn a_wide_table_fits_a_narrow_terminal() {
        let header = "| one | two | three | four | five | six |\n";
        let rule = "|---|---|---|---|---|---|\n";
        let row = "| alpha beta | gamma delta | epsilon | zeta eta | theta | iota kappa |\n";
        let rows = shown(&format!("{header}{rule}{row}\nafter\n"), 40);
        for line in &rows {
            assert!(
                unicode_width::UnicodeWidthStr::width(line.as_str()) <= 40,
                "{line:?} in {rows:#?}"
            );
        }
    }

    #[test]
    fn a_partial_line_waits_and_a_word_too_long_is_cut() {
        let mut stream = MarkdownStream::new(20);
        assert_eq!(stream.push("half a li"), "");
        assert_eq!(stream.partial(), "half a li");
        assert_eq!(strip_sgr(&stream.push("ne\n")), "half a line\n");
        let long = shown(&"x".repeat(45), 20);
        assert_eq!(long, vec!["x".repeat(20), "x".repeat(20), "x".repeat(5)]);
    }

    #[test]
    fn model_text_cannot_steer_the_terminal_through_markdown() {
        for markdown in [
            "**\x1b[2Jbold**\n",
            "| \x1b]0;t\x07 |\n|---|\n| x |\n",
            "```sh\necho \x1b[H\n```\n",
            "```\nplain \u{202e}\n```\n",
            "# \r\x1b[1A\n",
        ] {
            let mut stream = MarkdownStream::new(40);
            let out = stream.push(markdown) + &stream.finish();
            let ours = out
                .replace(RESET, "")
                .split('\x1b')
                .skip(1)
                .all(|sequence| sequence.starts_with('[') && sequence.contains('m'));
            assert!(ours, "{markdown:?} → {out:?}");
            assert!(!out.contains('\r') && !out.contains('\u{202e}'), "{out:?}");
            assert!(
                out.contains("\\u{1b}") || out.contains("\\u{202e}") || out.contains("\\u{d}"),
                "{out:?}"
            );
        }
    }
}
