//! Unified diffs for people: the change an edit makes, as `diff -u` shows
//! it, and the first lines of one with a count of the lines left out.
//!
//! This module only makes text. How a diff is shown (colour on a terminal,
//! a file the editor opens) belongs to each front end; what the diff is of
//! (the text a tool would read and write) belongs to the tools.

use std::time::Duration;

use similar::TextDiff;

/// Lines of unchanged text around each change, as `diff -u` has.
const CONTEXT: usize = 3;

/// A diff of very large texts gives up minimality after this long: the
/// diff stays correct, only less tight, and nobody waits on it.
const TIME_LIMIT: Duration = Duration::from_millis(500);

/// What a file held before a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Before<'a> {
    /// It did not exist.
    Missing,
    /// It held bytes that are not text; they are replaced whole.
    Binary,
    Text(&'a str),
}

/// The unified diff of the file `path` (workspace-relative) going from
/// `before` to `after`, with `a/` and `b/` headers as git writes them.
/// Empty when nothing changes; a new or replaced binary file always has
/// its header, so that even an empty new file shows as a change.
pub fn unified(path: &str, before: Before<'_>, after: &str) -> String {
    let (old_name, old_text) = match before {
        Before::Missing => ("/dev/null".to_string(), ""),
        Before::Binary => (format!("a/{path} (binary, replaced whole)"), ""),
        Before::Text(text) => (format!("a/{path}"), text),
    };
    let new_name = format!("b/{path}");
    let diff = TextDiff::configure()
        .timeout(TIME_LIMIT)
        .diff_lines(old_text, after);
    let text = diff
        .unified_diff()
        .context_radius(CONTEXT)
        .header(&old_name, &new_name)
        .to_string();
    if text.is_empty() && before != Before::Text(after) {
        return format!("--- {old_name}\n+++ {new_name}\n");
    }
    text
}

/// Lines added and removed going from `before` to `after`, as their
/// unified diff counts them (`+` and `-` lines): what an edit's summary
/// says, so the question and the diff shown under it agree.
pub fn line_counts(before: &str, after: &str) -> (usize, usize) {
    let diff = TextDiff::configure()
        .timeout(TIME_LIMIT)
        .diff_lines(before, after);
    diff.iter_all_changes()
        .fold((0, 0), |(added, removed), change| match change.tag() {
            similar::ChangeTag::Insert => (added + 1, removed),
            similar::ChangeTag::Delete => (added, removed + 1),
            similar::ChangeTag::Equal => (added, removed),
        })
}

/// The first `max` lines of `diff`, and how many lines follow them.
pub fn head(diff: &str, max: usize) -> (&str, usize) {
    let mut end = 0;
    for (index, line) in diff.split_inclusive('\n').enumerate() {
        if index == max {
            return (&diff[..end], diff[end..].lines().count());
        }
        end += line.len();
    }
    (diff, 0)
}

/// The line that stands for what [`head`] left out.
pub fn more_lines(count: usize) -> String {
    match count {
        1 => "… 1 more line".to_string(),
        n => format!("… {n} more lines"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counts are the diff's: unchanged lines in the replaced text are
    /// context, not a removal and an addition (`+4 -1` before, `+3 -0` in the diff).
    #[test]
    fn line_counts_are_those_of_the_unified_diff() {
        let before = "def test_add():\n";
        let after = "def test_add():\n    assert add(1, 2) == 3\n\ndef test_sub():\n";
        assert_eq!(line_counts(before, after), (3, 0));
        let diff = unified("t.py", Before::Text(before), after);
        let plus = diff
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"));
        let minus = diff
            .lines()
            .filter(|l| l.starts_with('-') && !l.starts_with("---"));
        assert_eq!((plus.count(), minus.count()), (3, 0));
        assert_eq!(line_counts("'hi '", "'Hello, '"), (1, 1));
    }

    #[test]
    fn a_change_in_the_middle_has_three_lines_of_context() {
        let before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let after = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(
            unified("n.txt", Before::Text(before), after),
            "--- a/n.txt\n+++ b/n.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }

    #[test]
    fn new_binary_empty_and_unchanged_files() {
        let cases: Vec<(Before<'_>, &str, &str)> = vec![
            (
                Before::Missing,
                "hi\n",
                "--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+hi\n",
            ),
            (Before::Missing, "", "--- /dev/null\n+++ b/f\n"),
            (
                Before::Binary,
                "x\n",
                "--- a/f (binary, replaced whole)\n+++ b/f\n@@ -0,0 +1 @@\n+x\n",
            ),
            (Before::Text("same\n"), "same\n", ""),
            (
                Before::Text("a"),
                "b",
                "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n",
            ),
        ];
        for (before, after, expected) in cases {
            assert_eq!(
                unified("f", before, after),
                expected,
                "{before:?} → {after:?}"
            );
        }
    }

    #[test]
    fn head_cuts_at_a_line_and_counts_the_rest() {
        let diff = "a\nb\nc\nd\n";
        assert_eq!(head(diff, 2), ("a\nb\n", 2));
        assert_eq!(head(diff, 4), (diff, 0));
        assert_eq!(head(diff, 10), (diff, 0));
        assert_eq!(head(diff, 0), ("", 4));
        assert_eq!(head("a\nb", 1), ("a\n", 1));
        assert_eq!(more_lines(1), "… 1 more line");
        assert_eq!(more_lines(7), "… 7 more lines");
    }
}
