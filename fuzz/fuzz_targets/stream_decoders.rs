//! Each wire's stream decoder and its tool-call delta accumulator, fed as
//! the provider feeds them (`provider::http`): SSE bytes through our
//! parser, events into the decoder until an error or the final response,
//! then the end of the body. The first byte picks the wire.
//!
//! What must hold: one final response at most, and nothing after it; an
//! end without one is an error, never a silent empty answer; every tool
//! call's input is a JSON object (a broken one is `{}` with the reason
//! kept for the model); and where the wire builds the answer from its
//! deltas (Chat Completions), the answer's text and reasoning are exactly
//! what was streamed.
#![no_main]

use bareagent::history::ContentBlock;
use bareagent::provider::sse::SseParser;
use bareagent::provider::{Response, SseDecoder, StreamEvent, anthropic, openai, responses};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&wire, stream)) = data.split_first() else {
        return;
    };
    match wire % 3 {
        0 => check(anthropic::StreamDecoder::default(), stream, false),
        1 => check(openai::StreamDecoder::default(), stream, true),
        _ => check(responses::StreamDecoder::default(), stream, false),
    }
});

fn check(mut decoder: impl SseDecoder, stream: &[u8], built_from_deltas: bool) {
    let mut wire = Vec::new();
    SseParser::new().feed(stream, &mut wire);
    let mut shown = Vec::new();
    let mut done = None;
    for event in wire {
        match decoder.on_event(event) {
            Ok(events) => {
                if take(events, &mut shown, &mut done) {
                    break;
                }
            }
            Err(_) => return,
        }
    }
    match decoder.on_end() {
        Ok(events) if done.is_some() => assert!(events.is_empty(), "events after the answer"),
        Ok(events) => {
            assert!(
                !events.is_empty(),
                "the stream ended with no answer and no error"
            );
            assert!(
                take(events, &mut shown, &mut done),
                "the end gave no answer"
            );
        }
        Err(error) => {
            assert!(done.is_none(), "an error after the answer: {error}");
            return;
        }
    }
    let response = done.expect("an answer");
    for block in &response.content {
        if let ContentBlock::ToolUse {
            input, input_error, ..
        } = block
        {
            assert!(input.is_object(), "a tool input that is not an object");
            if input_error.is_some() {
                assert_eq!(input, &serde_json::json!({}), "a broken input kept");
            }
        }
    }
    if built_from_deltas {
        let (text, thinking) = streamed(&shown);
        assert_eq!(
            joined(&response, false),
            text,
            "text differs from the deltas"
        );
        assert_eq!(joined(&response, true), thinking, "reasoning differs");
    }
}

/// Moves `events` into `shown` and the answer into `done`; says whether
/// the answer came (the provider stops reading there). A second answer, or
/// anything after one, fails.
fn take(
    events: Vec<StreamEvent>,
    shown: &mut Vec<StreamEvent>,
    done: &mut Option<Response>,
) -> bool {
    for event in events {
        assert!(done.is_none(), "an event after the answer");
        match event {
            StreamEvent::Done(response) => *done = Some(response),
            other => shown.push(other),
        }
    }
    done.is_some()
}

fn streamed(shown: &[StreamEvent]) -> (String, String) {
    let (mut text, mut thinking) = (String::new(), String::new());
    for event in shown {
        match event {
            StreamEvent::TextDelta(delta) => text.push_str(delta),
            StreamEvent::ThinkingDelta(delta) => thinking.push_str(delta),
            StreamEvent::Done(_) => {}
        }
    }
    (text, thinking)
}

fn joined(response: &Response, thinking: bool) -> String {
    response
        .content
        .iter()
        .filter_map(|block| match (block, thinking) {
            (ContentBlock::Text { text }, false) => Some(text.as_str()),
            (ContentBlock::Thinking { thinking, .. }, true) => Some(thinking.as_str()),
            _ => None,
        })
        .collect()
}
