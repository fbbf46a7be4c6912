//! Command output kept within bounds: the first bytes and the last bytes,
//! however much a command prints. A command that prints 10 MB costs a few
//! hundred KB here, and the model sees the head and the tail with a marker
//! saying how much was left out between them.

use std::collections::VecDeque;

/// What the model sees of a command's output at most, in characters.
pub const MAX_OUTPUT_CHARS: usize = 30_000;
/// Bytes kept at each end: enough for half the chars even if all are 4 bytes.
const KEEP_BYTES: usize = MAX_OUTPUT_CHARS / 2 * 4;

#[derive(Debug, Default)]
pub struct OutputBuffer {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// Every byte ever pushed.
    total: usize,
}

impl OutputBuffer {
    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len();
        let room = KEEP_BYTES.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        let rest = &rest[rest.len().saturating_sub(KEEP_BYTES)..];
        let overflow = (self.tail.len() + rest.len()).saturating_sub(KEEP_BYTES);
        self.tail.drain(..overflow);
        self.tail.extend(rest);
    }

    /// The whole output if it fits in `max_chars`, else its head and tail
    /// with a marker between, cut on UTF-8 boundaries.
    pub fn render(&self, max_chars: usize) -> String {
        let tail_bytes: Vec<u8> = self.tail.iter().copied().collect();
        let kept_everything = self.head.len() + tail_bytes.len() == self.total;
        let mut whole = String::from_utf8_lossy(&self.head).into_owned();
        if kept_everything {
            whole.push_str(&String::from_utf8_lossy(&tail_bytes));
            if whole.chars().count() <= max_chars {
                return whole;
            }
        }
        let half = max_chars / 2;
        let head: String = String::from_utf8_lossy(&self.head)
            .chars()
            .take(half)
            .collect();
        let tail_text = String::from_utf8_lossy(skip_partial_char(&tail_bytes)).into_owned();
        let tail_chars = tail_text.chars().count();
        let tail: String = tail_text
            .chars()
            .skip(tail_chars.saturating_sub(half))
            .collect();
        let elided = self.total.saturating_sub(head.len() + tail.len());
        format!("{head}\n\n[… {elided} bytes of output left out …]\n\n{tail}")
    }

    /// Output after byte offset `from` (as far as it is still kept), and the
    /// offset to ask from next time.
    pub fn since(&self, from: usize) -> (String, usize) {
        if from >= self.total {
            return (String::new(), self.total);
        }
        let tail_start = self.total - self.tail.len();
        let mut text = String::new();
        if from < self.head.len() {
            text.push_str(&String::from_utf8_lossy(&self.head[from..]));
        }
        let from_tail = from.max(tail_start).max(self.head.len());
        if from_tail > from.max(self.head.len()) {
            text.push_str(&format!(
                "\n[… {} bytes left out …]\n",
                from_tail - from.max(self.head.len())
            ));
        }
        let tail: Vec<u8> = self
            .tail
            .iter()
            .skip(from_tail.saturating_sub(tail_start))
            .copied()
            .collect();
        text.push_str(&String::from_utf8_lossy(&tail));
        let mut text_cut = text;
        if crate::text::truncate_chars(&mut text_cut, MAX_OUTPUT_CHARS) {
            text_cut.push_str("\n[… cut; read again for more …]");
        }
        (text_cut, self.total)
    }
}

/// Skips UTF-8 continuation bytes at the start (the tail may begin mid-character).
fn skip_partial_char(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .take(3)
        .take_while(|&&b| b & 0xC0 == 0x80)
        .count();
    &bytes[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut buffer = OutputBuffer::default();
        buffer.push(b"hello ");
        buffer.push("wörld\n".as_bytes());
        assert_eq!(buffer.render(MAX_OUTPUT_CHARS), "hello wörld\n");
        assert_eq!(buffer.since(6).0, "wörld\n");
    }

    #[test]
    fn huge_output_keeps_head_and_tail_in_bounded_memory() {
        let mut buffer = OutputBuffer::default();
        let line = "é line of output that goes on\n".as_bytes();
        for _ in 0..400_000 {
            buffer.push(line);
        }
        buffer.push(b"THE END\n");
        assert!(buffer.total > 10_000_000);
        assert!(buffer.head.len() + buffer.tail.len() <= 2 * KEEP_BYTES);
        let shown = buffer.render(MAX_OUTPUT_CHARS);
        assert!(shown.starts_with("é line of output"));
        assert!(shown.ends_with("THE END\n"));
        assert!(shown.contains("bytes of output left out"));
        assert!(shown.chars().count() <= MAX_OUTPUT_CHARS + 100);
        assert!(std::str::from_utf8(shown.as_bytes()).is_ok());
        assert!(!shown.contains('\u{FFFD}'), "cut on a character boundary");
    }
}
