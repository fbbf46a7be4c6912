//! `edit_file`: replace an exact string in a file, refusing when the match is
//! missing or ambiguous, and keeping the file's line endings.
//!
//! Models see files through `read_file`, which shows lines without their
//! `\r`. So in a file whose every line ends in CRLF, the edit is made on the
//! LF form and CRLF is put back afterwards: the model's `\n` strings match,
//! and the file stays CRLF. Tabs, trailing newline and everything outside the
//! match are untouched.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::change::edit_text;
use super::{Change, FileChange, Tool, ToolContext, ToolError, edit_action};
use crate::permission::Action;
use crate::workspace::PathResolver;

pub struct EditFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// File path, relative to the workspace root (or absolute inside it).
    pub path: String,
    /// The exact text to replace, including indentation; it must occur exactly once unless `replace_all` is set.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one. Default false.
    #[serde(default)]
    pub replace_all: bool,
}

#[async_trait]
impl Tool for EditFile {
    type Input = Input;
    const NAME: &'static str = "edit_file";
    const DESCRIPTION: &'static str = "Replace `old_string` with `new_string` in a file. Read the file first: `old_string` must match \
        the file exactly (whitespace and indentation included) and occur once, unless `replace_all` is true; include \
        surrounding lines to make it unique. Returns a summary with +/- line counts, or an error showing the nearest lines.";

    fn action(&self, input: &Input, paths: &PathResolver) -> Result<Action, ToolError> {
        let (added, removed) = line_delta(&input.old_string, &input.new_string);
        edit_action(
            Self::NAME,
            &input.path,
            format!("(+{added} -{removed})"),
            paths,
        )
    }

    async fn change(
        &self,
        input: &Input,
        cx: &ToolContext<'_, '_>,
    ) -> Option<Result<Change, ToolError>> {
        Some(plan(input, cx).await.map(|(change, _)| change.into()))
    }

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let (change, (count, first_line)) = plan(&input, cx).await?;
        change.apply(cx).await?;
        let (added, removed) = line_delta(&input.old_string, &input.new_string);
        let times = match count {
            1 => "1 occurrence".to_string(),
            n => format!("{n} occurrences"),
        };
        Ok(format!(
            "Edited {}: replaced {times} at line {first_line} (+{added} -{removed} lines).",
            change.shown()
        ))
    }
}

/// The change the call makes, from the text the workspace reads now, with
/// the number of replacements and the line of the first.
async fn plan(
    input: &Input,
    cx: &ToolContext<'_, '_>,
) -> Result<(FileChange, (usize, usize)), ToolError> {
    edit_text(cx, &input.path, |text| {
        let edited = apply_edit(
            text,
            &input.old_string,
            &input.new_string,
            input.replace_all,
        )
        .map_err(|error| error.to_string())?;
        Ok((edited.text, (edited.count, edited.first_line)))
    })
    .await
}

#[derive(Debug, PartialEq)]
pub struct Edited {
    pub text: String,
    pub count: usize,
    /// 1-based line of the first replacement.
    pub first_line: usize,
}

/// Why an edit does not apply to a text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EditError {
    #[error("old_string is empty; to create or overwrite a file use write_file")]
    EmptyOld,
    #[error("old_string and new_string are the same; nothing would change")]
    Unchanged,
    #[error(
        "old_string was not found in the file (0 matches). It must match exactly, including whitespace, \
         indentation (tabs vs spaces) and line breaks; read the file again and copy the text.{nearest}"
    )]
    NotFound {
        /// The lines most like it, as a note (or empty).
        nearest: String,
    },
    #[error(
        "old_string occurs {count} times (at lines {lines}); include more surrounding lines to make it unique, or set replace_all to true"
    )]
    Ambiguous { count: usize, lines: String },
}

/// The pure edit, separated from I/O so its rules are easy to test.
pub fn apply_edit(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Edited, EditError> {
    if old.is_empty() {
        return Err(EditError::EmptyOld);
    }
    if old == new {
        return Err(EditError::Unchanged);
    }
    let crlf = is_all_crlf(text);
    let (text, old, new) = if crlf {
        (
            text.replace("\r\n", "\n"),
            old.replace("\r\n", "\n"),
            new.replace("\r\n", "\n"),
        )
    } else {
        (text.to_string(), old.to_string(), new.to_string())
    };
    let starts: Vec<usize> = text.match_indices(&old).map(|(at, _)| at).collect();
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    match starts.len() {
        0 => {
            return Err(EditError::NotFound {
                nearest: nearest_lines(&text, &old),
            });
        }
        1 => {}
        n if !replace_all => {
            let lines: Vec<String> = starts
                .iter()
                .take(10)
                .map(|&at| line_of(at).to_string())
                .collect();
            return Err(EditError::Ambiguous {
                count: n,
                lines: lines.join(", "),
            });
        }
        _ => {}
    }
    let first_line = line_of(starts[0]);
    let mut edited = text.replace(&old, &new);
    if crlf {
        edited = edited.replace('\n', "\r\n");
    }
    Ok(Edited {
        text: edited,
        count: starts.len(),
        first_line,
    })
}

/// Every line end is `\r\n` (and there is at least one).
fn is_all_crlf(text: &str) -> bool {
    let lf = text.matches('\n').count();
    lf > 0 && text.matches("\r\n").count() == lf
}

/// Added and removed line counts of replacing `old` by `new`.
pub(crate) fn line_delta(old: &str, new: &str) -> (usize, usize) {
    crate::diff::line_counts(old, new)
}

/// Where something like the missing string is, as a note (or empty): the
/// lines that match `old`'s first non-blank line once whitespace is ignored,
/// or, failing that, the lines sharing the most words with it.
fn nearest_lines(text: &str, old: &str) -> String {
    let mut message = String::new();
    let Some(probe) = old.lines().map(str::trim).find(|line| !line.is_empty()) else {
        return message;
    };
    let squash = |s: &str| s.split_whitespace().collect::<String>();
    let probe_squashed = squash(probe);
    let lines: Vec<&str> = text.lines().collect();
    let mut nearest: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| !probe_squashed.is_empty() && squash(line).contains(&probe_squashed))
        .map(|(index, _)| index)
        .take(3)
        .collect();
    if nearest.is_empty() {
        let words: Vec<&str> = probe
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| w.len() > 1)
            .collect();
        let score = |line: &str| words.iter().filter(|word| line.contains(*word)).count();
        if let Some((index, best)) = lines
            .iter()
            .enumerate()
            .map(|(i, l)| (i, score(l)))
            .max_by_key(|&(i, s)| (s, std::cmp::Reverse(i)))
            && best > 0
        {
            nearest.push(index);
        }
    }
    if nearest.is_empty() {
        return message;
    }
    message.push_str("\nThe nearest lines in the file:");
    for index in nearest {
        message.push('\n');
        for (number, line) in lines
            .iter()
            .enumerate()
            .skip(index.saturating_sub(1))
            .take(3)
        {
            let mut shown = line.to_string();
            crate::text::truncate_chars(&mut shown, 200);
            message.push_str(&format!("{:>6}\t{shown}\n", number + 1));
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_a_unique_match() {
        let edited = apply_edit("a\nb\nc\n", "b", "B", false).unwrap();
        assert_eq!(
            edited,
            Edited {
                text: "a\nB\nc\n".into(),
                count: 1,
                first_line: 2
            }
        );
    }

    #[test]
    fn crlf_files_stay_crlf_with_lf_strings() {
        let text = "fn main() {\r\n\tlet x = 1;\r\n}\r\n";
        let edited = apply_edit(
            text,
            "\tlet x = 1;\n}",
            "\tlet x = 2;\n\tlet y = 3;\n}",
            false,
        )
        .unwrap();
        assert_eq!(
            edited.text,
            "fn main() {\r\n\tlet x = 2;\r\n\tlet y = 3;\r\n}\r\n"
        );
    }

    #[test]
    fn mixed_line_endings_are_left_alone() {
        let text = "a\r\nb\nc\r\n";
        let edited = apply_edit(text, "b", "B", false).unwrap();
        assert_eq!(edited.text, "a\r\nB\nc\r\n");
    }

    #[test]
    fn no_trailing_newline_stays_that_way() {
        assert_eq!(apply_edit("x = 1", "1", "2", false).unwrap().text, "x = 2");
    }

    #[test]
    fn ambiguous_matches_are_refused_with_their_lines() {
        let error = apply_edit("x\ny\nx\n", "x", "z", false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("occurs 2 times (at lines 1, 3)"), "{error}");
        let edited = apply_edit("x\ny\nx\n", "x", "z", true).unwrap();
        assert_eq!((edited.text.as_str(), edited.count), ("z\ny\nz\n", 2));
    }

    #[test]
    fn a_missing_match_shows_the_nearest_lines() {
        let text = "fn main() {\n\tsay(\"hi\");\n}\n";
        // Spaces where the file has a tab: not found, but the line is shown.
        let error = apply_edit(text, "    say(\"hi\");", "x", false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("0 matches"), "{error}");
        assert!(error.contains("     2\t\tsay(\"hi\");"), "{error}");
        let error = apply_edit(text, "fn mian() {", "x", false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("nearest lines"), "{error}");
    }

    #[test]
    fn empty_and_identical_strings_are_refused() {
        assert!(
            apply_edit("a", "", "b", false)
                .unwrap_err()
                .to_string()
                .contains("write_file")
        );
        assert!(
            apply_edit("a", "a", "a", false)
                .unwrap_err()
                .to_string()
                .contains("same")
        );
    }
}
