//! `read_file`: a file's lines, numbered like `cat -n`, a window at a time.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, file_action};
use crate::permission::{Action, ActionKind};
use crate::text::truncate_chars;
use crate::workspace::{MAX_TEXT_BYTES, PathResolver, SNIFF_BYTES, WorkspaceError};

pub struct ReadFile;

pub const DEFAULT_LIMIT: usize = 2000;
pub const MAX_LINE_CHARS: usize = 2000;
/// A whole answer beyond this is cut (with a note): 2000 lines of 2000 chars
/// would be 4 MB, far more than any model should get at once.
const MAX_OUTPUT_CHARS: usize = 100_000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// File path, relative to the workspace root (or absolute inside it).
    pub path: String,
    /// First line to show, counting from 1. Default 1.
    #[serde(default)]
    pub offset: Option<usize>,
    /// How many lines to show. Default 2000.
    #[serde(default)]
    pub limit: Option<usize>,
}

#[async_trait]
impl Tool for ReadFile {
    type Input = Input;
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read a text file of the workspace. Use it before editing a file, and to study code. \
        Returns the lines numbered like `cat -n` (number, tab, line), up to 2000 lines from `offset`; \
        lines over 2000 characters are cut, and a note at the end says how to read further.";

    fn action(&self, input: &Input, paths: &PathResolver) -> Result<Action, ToolError> {
        file_action(Self::NAME, ActionKind::Read, &input.path, None, paths)
    }

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let path = cx.workspace().paths().resolve(&input.path)?;
        let offset = input.offset.unwrap_or(1);
        let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
        // A file on disk over the cap is read a window at a time, never
        // whole (its buffer in an editor, if any, is not consulted).
        let paths = cx.workspace().paths().clone();
        let (on_disk, large) = (path.clone(), paths.clone());
        let window =
            tokio::task::spawn_blocking(move || read_window(&large, &on_disk, offset, limit))
                .await
                .map_err(|error| ToolError::failed(error.to_string()))?;
        if let Some(window) = window {
            return window;
        }
        let file = cx.workspace().read_text(&path).await?;
        cx.reads.saw(&path, &file.text, file.version);
        let lines = number_lines(&file.text, offset, limit)?;
        Ok(match file.encoding {
            Some(encoding) => format!("{lines}\n{}", encoding.note()),
            None => lines,
        })
    }
}

/// Lines `offset..offset+limit` (1-based) with numbers, plus a note on what was left out.
pub fn number_lines(text: &str, offset: usize, limit: usize) -> Result<String, ToolError> {
    if text.is_empty() {
        return Ok("(the file is empty)".to_string());
    }
    let total = text.lines().count();
    let offset = offset.max(1);
    if offset > total {
        return Err(ToolError::failed(format!(
            "offset {offset} is past the end of the file ({total} lines)"
        )));
    }
    let lines = text.lines().map(|l| (std::borrow::Cow::Borrowed(l), None));
    let window = Window::of(lines.skip(offset - 1).take(limit.max(1)), offset);
    let more = window.last_shown < total;
    Ok(window.finish(more, &format!("of {total}")))
}

/// Numbered lines from `offset` on, until the output cap.
struct Window {
    out: String,
    offset: usize,
    last_shown: usize,
    cut_lines: usize,
}

impl Window {
    /// `lines`: each line's text, and its whole length in bytes where
    /// only part of it was read.
    fn of<'a>(
        lines: impl Iterator<Item = (std::borrow::Cow<'a, str>, Option<usize>)>,
        offset: usize,
    ) -> Window {
        let mut window = Window {
            out: String::new(),
            offset,
            last_shown: offset - 1,
            cut_lines: 0,
        };
        for (index, (line, read_in_part)) in lines.enumerate() {
            let number = offset + index;
            let mut line = line.strip_suffix('\r').unwrap_or(&line).to_string();
            let whole = match read_in_part {
                Some(bytes) => format!("{bytes} bytes"),
                None => format!("{} chars", line.chars().count()),
            };
            if truncate_chars(&mut line, MAX_LINE_CHARS) {
                line.push_str(&format!(" … [line cut: {whole} in all]"));
                window.cut_lines += 1;
            }
            let numbered = format!("{number:>6}\t{line}\n");
            if window.out.len() + numbered.len() > MAX_OUTPUT_CHARS && window.last_shown >= offset {
                break;
            }
            window.out.push_str(&numbered);
            window.last_shown = number;
        }
        window
    }

    /// The lines, then what was left out: the lines after (`more`; `of`
    /// says of what), the long lines cut.
    fn finish(mut self, more: bool, of: &str) -> String {
        if more {
            self.out.push_str(&format!(
                "\n(Showing lines {}-{} {of}. To read on, call read_file with offset={}.)\n",
                self.offset,
                self.last_shown,
                self.last_shown + 1
            ));
        }
        if self.cut_lines > 0 {
            self.out.push_str(&format!(
                "({} long line(s) were cut at {MAX_LINE_CHARS} characters.)\n",
                self.cut_lines
            ));
        }
        self.out
    }
}

/// A window of a file on disk over [`MAX_TEXT_BYTES`], read a line at a
/// time (each line kept to a few times [`MAX_LINE_CHARS`], the rest
/// skipped), stopping after the window: memory stays within the output cap
/// whatever the file's size. `None`: the file is within the cap (or not on
/// disk), to be read whole.
fn read_window(
    paths: &PathResolver,
    path: &std::path::Path,
    offset: usize,
    limit: usize,
) -> Option<Result<String, ToolError>> {
    let file = paths.open_file(path).ok()?;
    let size = file.metadata().ok()?.len();
    if size <= MAX_TEXT_BYTES {
        return None;
    }
    let shown = paths.display(path);
    Some(window_of_large(
        file,
        &shown,
        size,
        offset.max(1),
        limit.max(1),
    ))
}

fn window_of_large(
    file: std::fs::File,
    shown: &str,
    size: u64,
    offset: usize,
    limit: usize,
) -> Result<String, ToolError> {
    use std::io::BufRead;
    let io = |e: std::io::Error| ToolError::failed(format!("`{shown}`: {e}"));
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
    let head = reader.fill_buf().map_err(io)?;
    if head[..head.len().min(SNIFF_BYTES)].contains(&0) {
        return Err(WorkspaceError::Binary(shown.to_string()).into());
    }
    let mut kept: Vec<(String, Option<usize>)> = Vec::new();
    let mut number = 0;
    let mut line = Vec::new();
    let mut more = false;
    let mut kept_bytes = 0;
    loop {
        line.clear();
        let taken = read_line_kept(&mut reader, &mut line, MAX_LINE_CHARS * 4).map_err(io)?;
        if taken == 0 {
            break;
        }
        number += 1;
        if number < offset {
            continue;
        }
        if kept.len() == limit || kept_bytes > MAX_OUTPUT_CHARS {
            more = true;
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\n').unwrap_or(&text).to_string();
        kept_bytes += text.len();
        kept.push((text, (taken > line.len()).then_some(taken)));
    }
    if number < offset {
        return Err(ToolError::failed(format!(
            "offset {offset} is past the end of the file ({number} lines)"
        )));
    }
    let last_kept = offset + kept.len() - 1;
    let window = Window::of(
        kept.into_iter()
            .map(|(text, whole)| (std::borrow::Cow::Owned(text), whole)),
        offset,
    );
    let more = more || window.last_shown < last_kept;
    Ok(window.finish(
        more,
        &format!("of `{shown}`, {size} bytes: over 10 MiB, so it is read a window at a time"),
    ))
}

/// Reads one line (newline included) into `line`, keeping at most `keep`
/// bytes of it and skipping the rest; the bytes the line took (0 at the end).
fn read_line_kept(
    reader: &mut impl std::io::BufRead,
    line: &mut Vec<u8>,
    keep: usize,
) -> std::io::Result<usize> {
    let mut taken = 0;
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(taken);
        }
        let (used, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buffer.len(), false),
        };
        let room = keep.saturating_sub(line.len()).min(used);
        line.extend_from_slice(&buffer[..room]);
        reader.consume(used);
        taken += used;
        if done {
            return Ok(taken);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_lines_and_strips_carriage_returns() {
        let out = number_lines("a\r\n\tb\r\n", 1, 10).unwrap();
        assert_eq!(out, "     1\ta\n     2\t\tb\n");
    }

    #[test]
    fn windows_and_says_how_to_read_on() {
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let out = number_lines(&text, 3, 2).unwrap();
        assert!(out.starts_with("     3\tline 3\n     4\tline 4\n"), "{out}");
        assert!(out.contains("Showing lines 3-4 of 10"), "{out}");
        assert!(out.contains("offset=5"), "{out}");
        assert!(
            number_lines(&text, 11, 5)
                .unwrap_err()
                .to_string()
                .contains("past the end")
        );
    }

    #[test]
    fn long_lines_are_cut_on_char_boundaries() {
        let text = "é".repeat(MAX_LINE_CHARS + 5);
        let out = number_lines(&text, 1, 1).unwrap();
        assert!(out.contains(&format!("[line cut: {} chars in all]", MAX_LINE_CHARS + 5)));
        assert!(out.contains("1 long line(s) were cut"));
    }

    #[test]
    fn default_limit_is_2000_lines() {
        let text = "x\n".repeat(2500);
        let out = number_lines(&text, 1, DEFAULT_LIMIT).unwrap();
        assert!(out.contains("  2000\tx\n"));
        assert!(!out.contains("  2001\tx"));
        assert!(
            out.contains("Showing lines 1-2000 of 2500"),
            "{}",
            &out[out.len() - 200..]
        );
    }
}
