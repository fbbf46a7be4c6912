//! Positions in a text as the Language Server Protocol counts them:
//! (line, character) where "character" counts UTF-8 bytes or UTF-16 code
//! units, and lines end at `\n`, `\r\n` or `\r` only (ropey is built with
//! just those line breaks). A position past the end of its line means the
//! line's end; a line past the last means the text's end — clamped, never a
//! panic. The language server (the editor's buffers) and the `code` tool
//! (what other language servers answer) both count this way.

use ropey::Rope;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

/// A position as LSP sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: u32,
    pub character: u32,
}

fn line_len_chars(rope: &Rope, line: usize) -> usize {
    let slice = rope.line(line);
    let len = slice.len_chars();
    let ends_crlf = len >= 2 && slice.char(len - 2) == '\r' && slice.char(len - 1) == '\n';
    let ends_single = len >= 1 && matches!(slice.char(len - 1), '\n' | '\r');
    len - if ends_crlf {
        2
    } else {
        usize::from(ends_single)
    }
}

/// The rope char index of an LSP position, clamped to the document.
pub fn char_index(rope: &Rope, pos: Pos, encoding: Encoding) -> usize {
    let line = pos.line as usize;
    if line >= rope.len_lines() {
        return rope.len_chars();
    }
    let line_start = rope.line_to_char(line);
    let line_end = line_start + line_len_chars(rope, line);
    let target = match encoding {
        Encoding::Utf16 => {
            let start_cu = rope.char_to_utf16_cu(line_start);
            let end_cu = rope.char_to_utf16_cu(line_end);
            rope.utf16_cu_to_char((start_cu + pos.character as usize).min(end_cu))
        }
        Encoding::Utf8 => {
            let start_byte = rope.char_to_byte(line_start);
            let end_byte = rope.char_to_byte(line_end);
            rope.byte_to_char((start_byte + pos.character as usize).min(end_byte))
        }
    };
    target.clamp(line_start, line_end)
}

/// The LSP position of a rope char index.
pub fn position(rope: &Rope, char_idx: usize, encoding: Encoding) -> Pos {
    let char_idx = char_idx.min(rope.len_chars());
    let line = rope.char_to_line(char_idx);
    let line_start = rope.line_to_char(line);
    let character = match encoding {
        Encoding::Utf16 => rope.char_to_utf16_cu(char_idx) - rope.char_to_utf16_cu(line_start),
        Encoding::Utf8 => rope.char_to_byte(char_idx) - rope.char_to_byte(line_start),
    };
    Pos {
        line: line as u32,
        character: character as u32,
    }
}
