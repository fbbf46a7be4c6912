//! The SSE parser (`provider::sse`) on any bytes: the events do not depend
//! on where the stream is cut into chunks, and they are the ones a plain
//! reading of the whole stream by the WHATWG rules gives.
#![no_main]

use bareagent::provider::sse::{SseEvent, SseParser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, stream)) = data.split_first() else {
        return;
    };
    let whole = parse(&[stream]);
    // Chunks of 1 to 16 bytes: a `\r\n` and a UTF-8 sequence fall apart.
    let chunks: Vec<&[u8]> = stream.chunks(usize::from(cut % 16) + 1).collect();
    assert_eq!(parse(&chunks), whole, "chunking changed the events");
    assert_eq!(whole, reference(stream), "differs from the plain reading");
    for event in &whole {
        assert!(!event.data.contains('\r'), "a line end inside data");
        assert!(
            !event
                .event
                .as_deref()
                .is_some_and(|e| e.contains(['\r', '\n'])),
            "a line end inside an event type"
        );
    }
});

fn parse(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    for chunk in chunks {
        parser.feed(chunk, &mut out);
    }
    out
}

/// The event-stream rules read off the whole stream at once: split into
/// lines at `\r\n`, `\n` or `\r`; the last piece, unterminated, is no line.
fn reference(stream: &[u8]) -> Vec<SseEvent> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < stream.len() {
        match stream[i] {
            b'\r' | b'\n' => {
                lines.push(&stream[start..i]);
                if stream[i] == b'\r' && stream.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let mut events = Vec::new();
    let (mut event, mut data): (Option<String>, Option<String>) = (None, None);
    for line in lines {
        let line = String::from_utf8_lossy(line);
        if line.is_empty() {
            if let Some(data) = data.take() {
                events.push(SseEvent {
                    event: event.take(),
                    data,
                });
            }
            event = None;
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.find(':') {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (&line[..], ""),
        };
        match field {
            "event" => event = Some(value.to_string()),
            "data" => match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_string()),
            },
            _ => {}
        }
    }
    events
}
