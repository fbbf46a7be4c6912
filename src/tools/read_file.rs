//! `read_file`: a file's lines, numbered like `cat -n`, a window at a time.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, file_action};
use crate::permission::{Action, ActionKind};
use crate::text::truncate_chars;
use crate::workspace::PathResolver;

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
        let file = cx.workspace().read_text(&path).await?;
        cx.reads.saw(&path, &file.text, file.version);
        number_lines(
            &file.text,
            input.offset.unwrap_or(1),
            input.limit.unwrap_or(DEFAULT_LIMIT),
        )
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
    let mut out = String::new();
    let mut last_shown = offset - 1;
    let mut cut_lines = 0;
    for (index, line) in text.lines().enumerate().skip(offset - 1).take(limit.max(1)) {
        let mut line = line.strip_suffix('\r').unwrap_or(line).to_string();
        let full_chars = line.chars().count();
        if truncate_chars(&mut line, MAX_LINE_CHARS) {
            line.push_str(&format!(" … [line cut: {full_chars} chars in all]"));
            cut_lines += 1;
        }
        let numbered = format!("{:>6}\t{line}\n", index + 1);
        if out.len() + numbered.len() > MAX_OUTPUT_CHARS && last_shown >= offset {
            break;
        }
        out.push_str(&numbered);
        last_shown = index + 1;
    }
    if last_shown < total {
        out.push_str(&format!(
            "\n(Showing lines {offset}-{last_shown} of {total}. To read on, call read_file with offset={}.)\n",
            last_shown + 1
        ));
    }
    if cut_lines > 0 {
        out.push_str(&format!(
            "({cut_lines} long line(s) were cut at {MAX_LINE_CHARS} characters.)\n"
        ));
    }
    Ok(out)
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
