//! Text files that are not UTF-8: a Latin-1 README, a Shift_JIS source
//! file, a UTF-16 file with its byte-order mark. They are read as text (the
//! encoding guessed by `chardetng`, as Firefox guesses an unlabelled page's)
//! and written back in the encoding they were in, never silently turned
//! into UTF-8 and never corrupted:
//!
//! - A file whose bytes all decode and encode back to the same bytes is
//!   *exact*: edits keep its encoding. New text its encoding cannot hold
//!   (an emoji in a Latin-1 file) is refused with the characters named,
//!   where `encoding_rs` would have written HTML character references.
//! - A file that does not decode cleanly is shown with U+FFFD where its
//!   bytes did not decode, and refused for edits: writing it back would
//!   lose those bytes.
//!
//! The encoding is the file's, found again from the disk at each write, so
//! every writer (an edit, a rename, a rewind's restore) keeps it alike.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE};

use super::SNIFF_BYTES;

/// A file's encoding when it is not UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Legacy {
    encoding: &'static Encoding,
    /// Led by a byte-order mark (kept on write).
    bom: bool,
    /// Every byte decoded, and the text encodes back to the same bytes.
    exact: bool,
}

impl Legacy {
    /// The encoding's WHATWG name (`windows-1252`, `Shift_JIS`, `UTF-16LE`).
    pub fn name(&self) -> &'static str {
        self.encoding.name()
    }

    pub fn exact(&self) -> bool {
        self.exact
    }

    /// What the model is told after the file's text.
    pub fn note(&self) -> String {
        let name = self.name();
        if self.exact {
            format!("(This file is {name} text, not UTF-8; edits keep it {name}.)")
        } else {
            format!(
                "(This file is not valid text throughout; read as {name}, some bytes did not decode and are shown as \u{FFFD}. It cannot be edited: writing it back would lose them.)"
            )
        }
    }
}

/// A file's bytes as text: `None` when they are binary (a NUL among the
/// first [`SNIFF_BYTES`], unless a UTF-16 byte-order mark says why).
pub fn decode(bytes: Vec<u8>) -> Option<(String, Option<Legacy>)> {
    if let Some((encoding, bom_length)) = Encoding::for_bom(&bytes)
        && encoding != UTF_8
    {
        let body = &bytes[bom_length..];
        let (text, malformed) = encoding.decode_without_bom_handling(body);
        let exact = !malformed && utf16(&text, encoding, false) == body;
        let legacy = Legacy {
            encoding,
            bom: true,
            exact,
        };
        return Some((text.into_owned(), Some(legacy)));
    }
    if bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
        return None;
    }
    let bytes = match String::from_utf8(bytes) {
        Ok(text) => return Some((text, None)),
        Err(error) => error.into_bytes(),
    };
    // UTF-8 with a stray byte (a broken paste, a cut download): most of
    // what is not ASCII is UTF-8, which a legacy encoding would read as
    // `Ã©` and write new text into as something else. Shown with U+FFFD
    // where it breaks, and never edited. (In a legacy file, bytes that
    // happen to spell UTF-8 are few beside those that do not.)
    let (mut spelled, mut broken) = (0, 0);
    for chunk in bytes.utf8_chunks() {
        spelled += chunk.valid().chars().filter(|c| !c.is_ascii()).count();
        broken += chunk.invalid().len();
    }
    if spelled >= broken {
        let legacy = Legacy {
            encoding: UTF_8,
            bom: false,
            exact: false,
        };
        return Some((String::from_utf8_lossy(&bytes).into_owned(), Some(legacy)));
    }
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    detector.feed(&bytes, true);
    let encoding = detector.guess(None, chardetng::Utf8Detection::Deny);
    let (text, malformed) = encoding.decode_without_bom_handling(&bytes);
    let exact = !malformed && {
        let (again, _, unmappable) = encoding.encode(&text);
        !unmappable && again == bytes
    };
    let legacy = Legacy {
        encoding,
        bom: false,
        exact,
    };
    Some((text.into_owned(), Some(legacy)))
}

/// Why a text cannot be written in a file's encoding.
#[derive(Debug, PartialEq, Eq)]
pub enum Unwritable {
    /// The file did not decode cleanly.
    Inexact,
    /// The new text has characters the encoding cannot hold (the first few).
    Unmappable(String),
}

/// `text` as bytes in the file's encoding (`None`: UTF-8).
pub fn encode(text: &str, legacy: Option<Legacy>) -> Result<Cow<'_, [u8]>, Unwritable> {
    let Some(legacy) = legacy else {
        return Ok(Cow::Borrowed(text.as_bytes()));
    };
    if !legacy.exact {
        return Err(Unwritable::Inexact);
    }
    if legacy.encoding == UTF_16LE || legacy.encoding == UTF_16BE {
        // encoding_rs decodes UTF-16 but encodes only to UTF-8.
        return Ok(Cow::Owned(utf16(text, legacy.encoding, legacy.bom)));
    }
    let (bytes, _, unmappable) = legacy.encoding.encode(text);
    if unmappable {
        let chars: String = text
            .chars()
            .filter(|c| {
                let mut one = [0; 4];
                legacy.encoding.encode(c.encode_utf8(&mut one)).2
            })
            .take(5)
            .collect();
        return Err(Unwritable::Unmappable(chars));
    }
    Ok(bytes)
}

fn utf16(text: &str, encoding: &'static Encoding, bom: bool) -> Vec<u8> {
    let big_endian = encoding == UTF_16BE;
    let unit = |u: u16| {
        if big_endian {
            u.to_be_bytes()
        } else {
            u.to_le_bytes()
        }
    };
    let mut bytes = Vec::with_capacity(text.len() * 2 + 2);
    if bom {
        bytes.extend_from_slice(&unit(0xFEFF));
    }
    for u in text.encode_utf16() {
        bytes.extend_from_slice(&unit(u));
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind of file: what it reads as, and what an edit writes back.
    #[test]
    fn each_encoding_reads_and_writes_back_as_it_was() {
        let latin1 = b"caf\xe9 cr\xe8me br\xfbl\xe9e\n".to_vec();
        let shift_jis = encoding_rs::SHIFT_JIS
            .encode("日本語のテキストです。これは漢字と仮名の文章です。\n")
            .0
            .into_owned();
        let mut utf16le = vec![0xFF, 0xFE];
        utf16le.extend("héllo\n".encode_utf16().flat_map(u16::to_le_bytes));
        let cases: [(&str, Vec<u8>, Option<&str>, &str); 4] = [
            ("utf-8", "naïve\n".as_bytes().to_vec(), None, "naïve\n"),
            (
                "latin-1",
                latin1.clone(),
                Some("windows-1252"),
                "café crème brûlée\n",
            ),
            (
                "shift_jis",
                shift_jis.clone(),
                Some("Shift_JIS"),
                "日本語のテキストです。これは漢字と仮名の文章です。\n",
            ),
            (
                "utf-16 with a bom",
                utf16le.clone(),
                Some("UTF-16LE"),
                "héllo\n",
            ),
        ];
        for (name, bytes, encoding, text) in cases {
            let (read, legacy) = decode(bytes.clone()).expect(name);
            assert_eq!(read, text, "{name}");
            assert_eq!(legacy.map(|l| l.name()), encoding, "{name}");
            assert_eq!(
                encode(&read, legacy).unwrap().as_ref(),
                &bytes[..],
                "{name}: unchanged text writes the same bytes"
            );
        }
        let (_, legacy) = decode(latin1).unwrap();
        assert_eq!(
            encode("café → ☕", legacy),
            Err(Unwritable::Unmappable("→☕".into()))
        );
        assert_eq!(encode("crème", legacy).unwrap().as_ref(), b"cr\xe8me");
    }

    #[test]
    fn binary_is_not_text_and_a_broken_file_is_not_edited() {
        assert_eq!(decode(b"\x7fELF\0\0\x01".to_vec()), None);
        // UTF-16 with its last code unit cut in half. (A broken legacy
        // file is read as windows-1252, which maps every byte: exact.)
        let mut broken = vec![0xFF, 0xFE];
        broken.extend("halb".encode_utf16().flat_map(u16::to_le_bytes));
        broken.push(b'x');
        let (text, legacy) = decode(broken).unwrap();
        assert!(text.ends_with('\u{FFFD}'), "{text}");
        assert!(legacy.is_some_and(|l| !l.exact()));
        assert_eq!(encode(&text, legacy), Err(Unwritable::Inexact));

        // UTF-8 with one stray byte is not windows-1252 text: `é` would
        // be written back as 0xE9 into a UTF-8 file.
        let (text, legacy) = decode(b"# caf\xc3\xa9\nx = 1 # \xff\n".to_vec()).unwrap();
        assert_eq!(text, "# café\nx = 1 # \u{FFFD}\n");
        assert_eq!(
            legacy.map(|l| (l.name(), l.exact())),
            Some(("UTF-8", false))
        );
        assert_eq!(encode("é", legacy), Err(Unwritable::Inexact));
    }
}
