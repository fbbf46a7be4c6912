//! The `edit_file` matcher (`tools::edit_file::apply_edit`, which
//! `multi_edit` applies edit by edit): any text, any old and new strings.
//!
//! What must hold: an edit that applies changes the text only inside what
//! it matched — everything before the match and after it is kept byte for
//! byte (a CRLF file is matched with its line ends read as `\n` and keeps
//! them), a unique match is replaced once, and `replace_all` replaces
//! every match and says how many; an edit refused as not found really has
//! no match, and one refused as ambiguous has several.
#![no_main]

use bareagent::fuzzing::{EditError, apply_edit};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A byte (its low bit: replace_all), then the text, the old string and
    // the new one, apart by NULs.
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(input) = std::str::from_utf8(rest) else {
        return;
    };
    let mut parts = input.split('\0');
    let mut next = || parts.next().unwrap_or_default().to_string();
    let (text, old, new) = (next(), next(), next());
    let replace_all = flags & 1 == 1;
    let result = apply_edit(&text, &old, &new, replace_all);
    // How the matcher reads the three strings: a file whose every line
    // ends in CRLF is matched as LF, and written back as CRLF.
    let lf = text.matches('\n').count();
    let crlf = lf > 0 && text.matches("\r\n").count() == lf;
    let plain = |s: &str| {
        if crlf {
            s.replace("\r\n", "\n")
        } else {
            s.to_string()
        }
    };
    let (read, old_read, new_read) = (plain(&text), plain(&old), plain(&new));
    let matches: Vec<usize> = if old_read.is_empty() {
        Vec::new()
    } else {
        read.match_indices(&old_read).map(|(at, _)| at).collect()
    };
    let edited = match result {
        Err(EditError::EmptyOld) => return assert!(old.is_empty()),
        Err(EditError::Unchanged) => return assert_eq!(old, new),
        Err(EditError::NotFound { .. }) => return assert!(matches.is_empty(), "{matches:?}"),
        Err(EditError::Ambiguous { count, .. }) => {
            assert!(!replace_all);
            return assert!(count == matches.len() && count > 1);
        }
        Ok(edited) => edited,
    };
    assert_eq!(edited.count, matches.len());
    assert!(replace_all || matches.len() == 1);
    // The text outside the first and last match, in the file's own bytes.
    let original = |at: usize| {
        at + if crlf {
            read[..at].matches('\n').count()
        } else {
            0
        }
    };
    let first = original(matches[0]);
    let last_end = original(matches[matches.len() - 1] + old_read.len());
    assert!(
        edited.text.starts_with(&text[..first]),
        "the text before the match changed: {edited:?}"
    );
    assert!(
        edited.text.ends_with(&text[last_end..]),
        "the text after the match changed: {edited:?}"
    );
    assert!(edited.text.len() >= first + (text.len() - last_end));
    let expected = read.replace(&old_read, &new_read);
    let expected = if crlf {
        expected.replace('\n', "\r\n")
    } else {
        expected
    };
    assert_eq!(edited.text, expected);
    if !crlf && matches.len() == 1 {
        let mut spliced = text.clone();
        spliced.replace_range(first..last_end, &new);
        assert_eq!(edited.text, spliced, "not the one match replaced");
    }
    let line = read[..matches[0]].matches('\n').count() + 1;
    assert_eq!(edited.first_line, line);
});
