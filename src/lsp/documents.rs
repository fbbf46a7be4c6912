//! The editor's open buffers, as ropes, kept in step with `didOpen` and
//! incremental `didChange`, their positions in the negotiated encoding
//! (`crate::position`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ropey::Rope;

pub use crate::position::{Encoding, Pos, char_index, position};

#[derive(Clone, Debug)]
pub struct Document {
    pub uri: String,
    pub rope: Rope,
    pub version: i32,
}

/// One content change of a `didChange`: a range (or `None`, the whole
/// document) and its new text.
#[derive(Clone, Copy, Debug)]
pub struct Change<'a> {
    pub range: Option<(Pos, Pos)>,
    pub text: &'a str,
}

impl Document {
    pub fn new(uri: String, text: &str, version: i32) -> Self {
        Document {
            uri,
            rope: Rope::from_str(text),
            version,
        }
    }

    pub fn apply(&mut self, change: &Change<'_>, encoding: Encoding) {
        match change.range {
            None => self.rope = Rope::from_str(change.text),
            Some((start, end)) => {
                let start = char_index(&self.rope, start, encoding);
                let end = char_index(&self.rope, end, encoding).max(start);
                self.rope.remove(start..end);
                self.rope.insert(start, change.text);
            }
        }
    }

    pub fn text(&self) -> String {
        self.rope.to_string()
    }

    /// The position of the document's end.
    pub fn end(&self, encoding: Encoding) -> Pos {
        position(&self.rope, self.rope.len_chars(), encoding)
    }
}

/// Chars of a line, without its line break.
/// The path a file URI names, as documents are keyed: by real paths, as
/// the tools resolve them (the directory's links resolved).
pub fn path_of(uri: &tower_lsp_server::ls_types::Uri) -> Option<PathBuf> {
    let path = uri.to_file_path()?.into_owned();
    Some(match path.parent().and_then(|p| p.canonicalize().ok()) {
        Some(parent) => parent.join(path.file_name().unwrap_or_default()),
        None => path,
    })
}

/// The open documents, by their file path (as the tools resolve paths),
/// and the path of each URI (so a `didChange` needs no file-system call).
#[derive(Debug, Default)]
pub struct Documents {
    by_path: HashMap<PathBuf, Document>,
    paths: HashMap<String, PathBuf>,
}

impl Documents {
    pub fn open(&mut self, path: PathBuf, document: Document) {
        self.paths.insert(document.uri.clone(), path.clone());
        self.by_path.insert(path, document);
    }

    pub fn close(&mut self, path: &Path) {
        if let Some(document) = self.by_path.remove(path) {
            self.paths.remove(&document.uri);
        }
    }

    /// The path of an open document's URI.
    pub fn path_for(&self, uri: &str) -> Option<&PathBuf> {
        self.paths.get(uri)
    }

    /// The open document with this URI.
    pub fn by_uri_mut(&mut self, uri: &str) -> Option<&mut Document> {
        let path = self.paths.get(uri)?;
        self.by_path.get_mut(path)
    }

    pub fn get(&self, path: &Path) -> Option<&Document> {
        self.by_path.get(path)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&PathBuf, &Document)> {
        self.by_path.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pos(line: u32, character: u32) -> Pos {
        Pos { line, character }
    }

    #[test]
    fn utf8_and_utf16_positions_with_cjk_and_emoji() {
        let rope = Rope::from_str("a😀b\n中文x\r\nlast");
        // 😀 is 2 UTF-16 units and 4 UTF-8 bytes; 中 is 1 unit and 3 bytes.
        assert_eq!(char_index(&rope, pos(0, 3), Encoding::Utf16), 2); // before b
        assert_eq!(char_index(&rope, pos(0, 5), Encoding::Utf8), 2);
        assert_eq!(char_index(&rope, pos(1, 2), Encoding::Utf16), 6); // before x
        assert_eq!(char_index(&rope, pos(1, 6), Encoding::Utf8), 6);
        assert_eq!(position(&rope, 2, Encoding::Utf16), pos(0, 3));
        assert_eq!(position(&rope, 2, Encoding::Utf8), pos(0, 5));
        assert_eq!(position(&rope, 6, Encoding::Utf8), pos(1, 6));
    }

    #[test]
    fn out_of_range_positions_clamp() {
        let rope = Rope::from_str("ab\r\ncd");
        assert_eq!(
            char_index(&rope, pos(0, 99), Encoding::Utf16),
            2,
            "line end, before the CRLF"
        );
        assert_eq!(
            char_index(&rope, pos(7, 0), Encoding::Utf16),
            6,
            "past the last line: the end"
        );
        assert_eq!(char_index(&rope, pos(1, 99), Encoding::Utf8), 6);
        let empty = Rope::from_str("");
        assert_eq!(char_index(&empty, pos(3, 3), Encoding::Utf8), 0);
    }

    #[test]
    fn crlf_and_lone_cr_are_line_breaks_but_u2028_is_not() {
        let rope = Rope::from_str("a\rb\r\nc\u{2028}d");
        assert_eq!(rope.len_lines(), 3);
        assert_eq!(
            char_index(&rope, pos(2, 3), Encoding::Utf16),
            rope.len_chars()
        );
    }

    /// A reference model: the same edit on a String, by UTF-16 positions.
    fn reference_apply(text: &mut String, start: Pos, end: Pos, new: &str) {
        let offset = |p: Pos| -> usize {
            let rope = Rope::from_str(text);
            rope.char_to_byte(char_index(&rope, p, Encoding::Utf16))
        };
        let (s, e) = (offset(start), offset(end));
        text.replace_range(s..e.max(s), new);
    }

    #[test]
    fn ten_thousand_incremental_edits_match_a_reference_string() {
        let seed_text = "fn main() {\n    say(\"héllo 世界 😀\");\r\n}\n".repeat(200);
        let mut document = Document::new("file:///x".into(), &seed_text, 1);
        let mut reference = seed_text.clone();
        let mut rng = 0x2545F4914F6CDD1Du64;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n.max(1)
        };
        let pieces = ["", "x", "\n", "日本", "🦀", "\r\n", "abc def", "\t"];
        for _ in 0..10_000 {
            let lines = document.rope.len_lines() as u64;
            let start = pos(next(lines + 1) as u32, next(40) as u32);
            let end = pos(start.line + next(2) as u32, next(40) as u32);
            let (start, end) = if (end.line, end.character) < (start.line, start.character) {
                (start, start)
            } else {
                (start, end)
            };
            let text = pieces[next(pieces.len() as u64) as usize];
            // Positions are normalised to char boundaries by the rope first,
            // so both sides see the same edit.
            let s = position(
                &document.rope,
                char_index(&document.rope, start, Encoding::Utf16),
                Encoding::Utf16,
            );
            let e = position(
                &document.rope,
                char_index(&document.rope, end, Encoding::Utf16),
                Encoding::Utf16,
            );
            document.apply(
                &Change {
                    range: Some((s, e)),
                    text,
                },
                Encoding::Utf16,
            );
            reference_apply(&mut reference, s, e, text);
        }
        assert_eq!(document.text(), reference);
    }

    proptest! {
        #[test]
        fn positions_round_trip(text in "[a-z😀中\r\n ]{0,60}", at in 0usize..80) {
            let rope = Rope::from_str(&text);
            let at = at.min(rope.len_chars());
            for encoding in [Encoding::Utf8, Encoding::Utf16] {
                let p = position(&rope, at, encoding);
                // A char index right after a \r of a \r\n maps into the line break; it clamps back.
                let back = char_index(&rope, p, encoding);
                prop_assert!(back <= at);
            }
        }
    }
}
