//! Incremental document sync (`lsp::documents`) and position conversion
//! (`position`): a document opened with any text, then any `didChange`
//! edits, in UTF-8 or UTF-16 positions, against the same edits applied to
//! a plain `String` by an independent reading of the LSP rules.
//!
//! What must hold: after every edit the rope's text is the string's; the
//! end position is the string's; and positions round-trip: a char index
//! (not between the `\r` and `\n` of one line break) gives a position that
//! gives that index back.
#![no_main]

use bareagent::fuzzing::{Change, Document};
use bareagent::position::{Encoding, Pos, char_index, position};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    text: String,
    utf8: bool,
    edits: Vec<Edit>,
}

#[derive(Arbitrary, Debug)]
struct Edit {
    /// `None`: the whole document is replaced.
    range: Option<((u8, u8), (u8, u8))>,
    text: String,
}

fuzz_target!(|input: Input| {
    let encoding = if input.utf8 {
        Encoding::Utf8
    } else {
        Encoding::Utf16
    };
    let mut document = Document::new("file:///f".into(), &input.text, 1);
    let mut expected = input.text.clone();
    for edit in input.edits.iter().take(16) {
        let range = edit
            .range
            .map(|((l1, c1), (l2, c2))| (pos(l1, c1), pos(l2, c2)));
        document.apply(
            &Change {
                range,
                text: &edit.text,
            },
            encoding,
        );
        match range {
            None => expected = edit.text.clone(),
            Some((start, end)) => {
                let start = offset(&expected, start, encoding);
                let end = offset(&expected, end, encoding).max(start);
                expected.replace_range(start..end, &edit.text);
            }
        }
        assert_eq!(document.text(), expected, "after {edit:?}");
        assert_eq!(document.end(encoding), end_of(&expected, encoding));
    }
    let rope = &document.rope;
    for index in 0..=rope.len_chars().min(512) {
        let inside_crlf = index > 0
            && index < rope.len_chars()
            && rope.char(index - 1) == '\r'
            && rope.char(index) == '\n';
        if inside_crlf {
            continue;
        }
        let at = position(rope, index, encoding);
        assert_eq!(
            char_index(rope, at, encoding),
            index,
            "index {index} via {at:?}"
        );
        assert_eq!(offset(&expected, at, encoding), byte_of(&expected, index));
    }
});

fn pos(line: u8, character: u8) -> Pos {
    Pos {
        line: u32::from(line % 16),
        character: u32::from(character),
    }
}

/// Where each line starts and where its text ends (before its line
/// break), in bytes: lines end at `\r\n`, `\n` or `\r`.
fn lines(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        if bytes[i] == b'\n' || bytes[i] == b'\r' {
            out.push((start, i));
            if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            start = i + 1;
        }
        i += 1;
    }
    out.push((start, bytes.len()));
    out
}

/// The byte offset of an LSP position: past the end of its line is the
/// line's end, past the last line the text's end; inside a character
/// (a byte of it, or the second half of a surrogate pair) is its start.
fn offset(text: &str, at: Pos, encoding: Encoding) -> usize {
    let lines = lines(text);
    let Some(&(start, end)) = lines.get(at.line as usize) else {
        return text.len();
    };
    let mut units = 0;
    for (i, c) in text[start..end].char_indices() {
        units += match encoding {
            Encoding::Utf8 => c.len_utf8(),
            Encoding::Utf16 => c.len_utf16(),
        };
        if units > at.character as usize {
            return start + i;
        }
    }
    end
}

fn end_of(text: &str, encoding: Encoding) -> Pos {
    let lines = lines(text);
    let (start, end) = lines[lines.len() - 1];
    let units: usize = match encoding {
        Encoding::Utf8 => end - start,
        Encoding::Utf16 => text[start..end].encode_utf16().count(),
    };
    Pos {
        line: (lines.len() - 1) as u32,
        character: units as u32,
    }
}

fn byte_of(text: &str, char_index: usize) -> usize {
    text.char_indices()
        .nth(char_index)
        .map_or(text.len(), |(at, _)| at)
}
