//! A Server-Sent Events parser that takes bytes in chunks cut anywhere.
//!
//! It follows the WHATWG event-stream rules that the model APIs rely on:
//! lines end in `\n`, `\r\n` or `\r` (a `\r\n` split across two chunks is one
//! line end), `:` starts a comment, `data` lines join with `\n`, a blank line
//! dispatches, an event without data is dropped, and an unfinished event at
//! the end of the stream is discarded. Written here rather than taken from a
//! crate so it works on plain byte chunks (no `http-body` version coupling)
//! and can be property-tested and fuzzed in isolation.

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; `None` means the default type, `message`.
    pub event: Option<String>,
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a leading `\n` now is part of that line end.
    after_cr: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next chunk, pushing every event it completes onto `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        for &byte in chunk {
            if std::mem::take(&mut self.after_cr) && byte == b'\n' {
                continue;
            }
            match byte {
                b'\n' => self.end_line(out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(out);
                }
                _ => self.line.push(byte),
            }
        }
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        let line = String::from_utf8_lossy(&line);
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {} // `id`, `retry` and unknown fields mean nothing to a model API.
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if std::mem::take(&mut self.has_data) {
            out.push(SseEvent {
                event,
                data: std::mem::take(&mut self.data),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, &mut out);
        }
        out
    }

    const SAMPLE: &str = "event: message_start\ndata: {\"a\":1}\n\n: keep-alive comment\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\ndata: line one\ndata: line two\n\nevent: empty\n\ndata:no-space\nid: 7\n\ndata: 你好 🦀\n\nevent: unfinished\ndata: lost";

    fn expected() -> Vec<SseEvent> {
        let ev = |event: Option<&str>, data: &str| SseEvent {
            event: event.map(str::to_string),
            data: data.to_string(),
        };
        vec![
            ev(Some("message_start"), "{\"a\":1}"),
            ev(Some("ping"), "{\"type\": \"ping\"}"),
            ev(None, "line one\nline two"),
            ev(None, "no-space"),
            ev(None, "你好 🦀"),
        ]
    }

    #[test]
    fn parses_the_sample_in_one_chunk() {
        assert_eq!(parse_all(&[SAMPLE.as_bytes()]), expected());
    }

    proptest! {
        /// Any split of the byte stream, with any of the three line endings,
        /// yields the same events as the whole stream at once.
        #[test]
        fn any_chunking_and_line_ending_gives_the_same_events(
            cuts in proptest::collection::vec(0usize..=SAMPLE.len() * 2, 0..12),
            ending in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        ) {
            let text = SAMPLE.replace('\n', ending);
            let bytes = text.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for cut in cuts {
                chunks.push(&bytes[start..cut]);
                start = cut;
            }
            chunks.push(&bytes[start..]);
            prop_assert_eq!(parse_all(&chunks), expected());
        }

        /// Arbitrary bytes never panic the parser.
        #[test]
        fn arbitrary_bytes_do_not_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse_all(&[&bytes]);
        }
    }
}
