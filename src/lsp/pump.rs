//! The frames between the editor and the server. tower-lsp-server stops
//! serving after one frame it cannot decode (invalid JSON, invalid UTF-8, a
//! non-JSON-RPC object), so every frame passes through here first: good ones
//! go on, bad ones are logged and dropped — answered with an error when they
//! carry an id — and a wrong `Content-Length` costs one message, not the
//! session: reading resynchronises at the next header.
//!
//! What passes is exactly what tower-lsp-server can decode: a request's id
//! must be a string, an integer that fits in i64, or null (anything else gets
//! `-32600` with `id: null`, as JSON-RPC 2.0 says for an id it cannot read),
//! and the last check decodes the body with the server's own types.
//!
//! A body must arrive whole within [`BODY_DEADLINE`] of its header and be at
//! most [`MAX_FRAME`] bytes: an overstated `Content-Length` would otherwise
//! make every later request wait for bytes that never come.
//!
//! The answers we write ourselves share stdout with the server's, so one
//! writer task owns stdout and writes whole frames only.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tower_lsp_server::jsonrpc;

const HEADER: &[u8] = b"Content-Length:";
/// A frame larger than this is refused and the stream resynchronised at the
/// next header. The largest real messages are `didOpen`/`didChange` of a
/// whole file; 64 MiB is far above any source file an editor opens, and low
/// enough that a lying header cannot make us hold hundreds of MiB.
const MAX_FRAME: usize = 64 * 1024 * 1024;
/// How long a frame's body may take to arrive, counted from its header. An
/// editor writes a frame at once into a local pipe, so even 64 MiB arrives
/// in well under a second; a body still short after this was overstated.
/// Counted from the header, not from the last byte: an editor that keeps
/// sending requests keeps bytes flowing into the overstated body, and a
/// no-progress timer would never fire.
const BODY_DEADLINE: Duration = Duration::from_secs(5);

/// Reads framed messages from the editor and forwards the valid ones.
/// Ends when the editor closes its end (the server then shuts down).
pub async fn forward_input(
    mut input: impl AsyncRead + Unpin,
    mut server: impl AsyncWrite + Unpin,
    errors: mpsc::UnboundedSender<Value>,
) {
    let mut buffer: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    // When the body of the frame at the front of `buffer` must be in.
    let mut body_due: Option<Instant> = None;
    loop {
        let frame = next_frame(&mut buffer, MAX_FRAME);
        if !matches!(frame, Frame::BodyPending) {
            body_due = None;
        }
        match frame {
            Frame::Complete(body) => match check(&body) {
                Ok(()) => {
                    let header = format!("Content-Length: {}\r\n\r\n", body.len());
                    if server.write_all(header.as_bytes()).await.is_err()
                        || server.write_all(&body).await.is_err()
                    {
                        return;
                    }
                    let _ = server.flush().await;
                }
                Err(problem) => {
                    tracing::warn!(problem = %problem.message, "dropped a bad frame from the editor");
                    if let Some(id) = problem.answer_id {
                        let _ = errors.send(json!({
                            "jsonrpc": "2.0", "id": id,
                            "error": {"code": problem.code, "message": problem.message},
                        }));
                    }
                    // A body that holds another header was cut by a wrong
                    // Content-Length: start again from that header.
                    if let Some(at) = find(&body, HEADER) {
                        let mut rest = body[at..].to_vec();
                        rest.extend_from_slice(&buffer);
                        buffer = rest;
                    }
                }
            },
            Frame::Skip(reason) => tracing::warn!(reason, "skipped bytes that were not a frame"),
            Frame::NeedHeader => match input.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            },
            Frame::BodyPending => {
                let due = *body_due.get_or_insert_with(|| Instant::now() + BODY_DEADLINE);
                match tokio::time::timeout_at(due, input.read(&mut chunk)).await {
                    Ok(Ok(0) | Err(_)) => return,
                    Ok(Ok(n)) => buffer.extend_from_slice(&chunk[..n]),
                    Err(_) => {
                        let got = drop_pending_frame(&mut buffer);
                        tracing::warn!(
                            seconds = BODY_DEADLINE.as_secs(),
                            bytes_received = got,
                            "dropped a frame whose body did not arrive in time (its Content-Length overstates it); reading on from the next header"
                        );
                    }
                }
            }
        }
    }
}

enum Frame {
    Complete(Vec<u8>),
    Skip(&'static str),
    /// No complete header yet.
    NeedHeader,
    /// The header is in; its body is not complete yet.
    BodyPending,
}

/// Takes one frame off the front of `buffer`, if it holds a whole one. A
/// header announcing more than `max` bytes is skipped.
fn next_frame(buffer: &mut Vec<u8>, max: usize) -> Frame {
    let Some(header_end) = find(buffer, b"\r\n\r\n") else {
        // Garbage before any header would otherwise grow without end.
        if buffer.len() > 64 * 1024 && find(buffer, HEADER).is_none() {
            buffer.clear();
            return Frame::Skip("64 KiB without a header");
        }
        return Frame::NeedHeader;
    };
    let header = String::from_utf8_lossy(&buffer[..header_end]).to_string();
    let length = header.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse::<usize>().ok())?
    });
    let Some(length) = length.filter(|&n| n <= max) else {
        // No usable length: drop this header and look for the next one.
        let resume = find(&buffer[1..], HEADER).map_or(header_end + 4, |at| at + 1);
        buffer.drain(..resume.min(buffer.len()));
        return Frame::Skip("a header without a valid Content-Length");
    };
    let start = header_end + 4;
    if buffer.len() < start + length {
        return Frame::BodyPending;
    }
    let body = buffer[start..start + length].to_vec();
    buffer.drain(..start + length);
    Frame::Complete(body)
}

/// Drops the frame at the front of `buffer`, whose body never came whole:
/// what follows its header up to the next header goes too (the next
/// message, if any, starts there). Returns how many body bytes had come.
fn drop_pending_frame(buffer: &mut Vec<u8>) -> usize {
    let body_start = find(buffer, b"\r\n\r\n").map_or(0, |end| end + 4);
    let got = buffer.len() - body_start.min(buffer.len());
    let resume = find(&buffer[1..], HEADER).map_or(buffer.len(), |at| at + 1);
    buffer.drain(..resume);
    got
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

struct Problem {
    /// The id to answer with (`null` when it cannot be read); `None` when the
    /// message must not be answered (a notification, a response).
    answer_id: Option<Value>,
    code: i64,
    message: String,
}

/// An id tower-lsp-server can hold: a string, an integer within i64, null.
fn is_valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_null()
}

/// The shapes tower-lsp-server decodes a frame into (its own `Message` is
/// private): a body that decodes as neither would stop the server.
#[derive(Deserialize)]
#[serde(untagged)]
#[allow(dead_code)] // only decoded, to know that it decodes
enum Decodable {
    Response(jsonrpc::Response),
    Request(jsonrpc::Request),
}

/// Whether a body is a JSON-RPC 2.0 message tower-lsp-server can decode.
fn check(body: &[u8]) -> Result<(), Problem> {
    let problem = |answer_id, code, message: &str| Problem {
        answer_id,
        code,
        message: message.to_string(),
    };
    let text = std::str::from_utf8(body)
        .map_err(|_| problem(Some(Value::Null), -32700, "the message is not valid UTF-8"))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|_| problem(Some(Value::Null), -32700, "the message is not valid JSON"))?;
    let Some(object) = value.as_object() else {
        return Err(problem(
            Some(Value::Null),
            -32600,
            "the message is not a JSON object",
        ));
    };
    let is_call = object.get("method").is_some_and(Value::is_string);
    let looks_like_response = !object.contains_key("method")
        && (object.contains_key("result") || object.contains_key("error"));
    // What to answer with: nothing to a response or a notification, else
    // the id when it can be read, null when it cannot.
    let answer_id = match object.get("id") {
        _ if looks_like_response => None,
        None => None,
        Some(id) if is_valid_id(id) => Some(id.clone()),
        Some(_) => Some(Value::Null),
    };
    if let Some(id) = object.get("id").filter(|id| !is_valid_id(id)) {
        return Err(problem(
            answer_id,
            -32600,
            &format!("the id {id} is not a string, an integer within 64 bits, or null"),
        ));
    }
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(problem(
            answer_id,
            -32600,
            "not a JSON-RPC 2.0 message (\"jsonrpc\": \"2.0\" is missing)",
        ));
    }
    let is_response = object.contains_key("id") && looks_like_response;
    if !is_call && !is_response {
        return Err(problem(
            answer_id,
            -32600,
            "neither a request, a notification nor a response",
        ));
    }
    if is_call
        && object
            .get("params")
            .is_some_and(|p| !p.is_object() && !p.is_array() && !p.is_null())
    {
        return Err(problem(
            answer_id,
            -32602,
            "params must be an object or an array",
        ));
    }
    // Anything the checks above missed: the server's own decoding decides,
    // on the text as the server will read it.
    if serde_json::from_str::<Decodable>(text).is_err() {
        return Err(problem(
            answer_id,
            -32600,
            "the message does not decode as a JSON-RPC request, notification or response",
        ));
    }
    Ok(())
}

/// Owns stdout: copies the server's frames and our error answers, whole.
pub async fn write_output(
    mut from_server: impl AsyncRead + Unpin,
    mut errors: mpsc::UnboundedReceiver<Value>,
    mut output: impl AsyncWrite + Unpin,
) {
    let mut buffer: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let (mut server_open, mut errors_open) = (true, true);
    while server_open || errors_open {
        // The server's own frames: trusted, so no size limit.
        while let Frame::Complete(body) = next_frame(&mut buffer, usize::MAX) {
            if write_frame(&mut output, &body).await.is_err() {
                return;
            }
        }
        tokio::select! {
            read = from_server.read(&mut chunk), if server_open => match read {
                Ok(0) | Err(_) => server_open = false,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            },
            error = errors.recv(), if errors_open => match error {
                Some(error) if write_frame(&mut output, error.to_string().as_bytes()).await.is_err() => return,
                Some(_) => {}
                None => errors_open = false,
            },
        }
    }
}

async fn write_frame(output: &mut (impl AsyncWrite + Unpin), body: &[u8]) -> std::io::Result<()> {
    output
        .write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes())
        .await?;
    output.write_all(body).await?;
    output.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    fn frames(mut bytes: Vec<u8>) -> Vec<Result<String, String>> {
        let mut out = Vec::new();
        loop {
            match next_frame(&mut bytes, MAX_FRAME) {
                Frame::Complete(body) => match check(&body) {
                    Ok(()) => out.push(Ok(String::from_utf8(body).unwrap())),
                    Err(problem) => {
                        out.push(Err(problem.message));
                        if let Some(at) = find(&body, HEADER) {
                            let mut rest = body[at..].to_vec();
                            rest.extend_from_slice(&bytes);
                            bytes = rest;
                        }
                    }
                },
                Frame::Skip(_) => {}
                Frame::NeedHeader | Frame::BodyPending => return out,
            }
        }
    }

    const GOOD: &str = r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#;

    #[test]
    fn good_frames_pass_and_bad_ones_are_dropped() {
        let mut bytes = frame(GOOD);
        bytes.extend(frame("{not json"));
        bytes.extend(b"Content-Length: 4\r\n\r\n\xff\xfe\xfd\xfc".to_vec());
        bytes.extend(frame(r#"{"hello":"world"}"#));
        bytes.extend(frame("[1,2]"));
        bytes.extend(frame(GOOD));
        let got = frames(bytes);
        assert_eq!(got.len(), 6);
        assert!(got[0].is_ok() && got[5].is_ok());
        assert!(got[1..5].iter().all(Result::is_err), "{got:?}");
    }

    #[test]
    fn a_wrong_content_length_costs_one_message() {
        // Too long: the bad body swallows the next header, which is found again.
        let mut bytes = format!("Content-Length: {}\r\n\r\n{GOOD}", GOOD.len() + 30).into_bytes();
        bytes.extend(frame(GOOD));
        let got = frames(bytes);
        assert_eq!(got.iter().filter(|r| r.is_ok()).count(), 1, "{got:?}");
        // Too short: the body is cut; the rest is skipped up to the next header.
        let mut bytes = format!("Content-Length: {}\r\n\r\n{GOOD}", GOOD.len() - 5).into_bytes();
        bytes.extend(frame(GOOD));
        let got = frames(bytes);
        assert_eq!(got.last().unwrap().as_deref(), Ok(GOOD), "{got:?}");
        // No length at all.
        let mut bytes = b"Content-Type: x\r\n\r\n".to_vec();
        bytes.extend(frame(GOOD));
        assert_eq!(frames(bytes), vec![Ok(GOOD.to_string())]);
    }

    /// Each body → `None` (passes), or `Some((code, answer id))` where an
    /// answer id of `None` means "dropped without an answer".
    #[test]
    fn ids_the_server_cannot_hold_are_answered_with_null_or_dropped() {
        let call = |id: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"x"}}"#);
        let answer = |id: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":null}}"#);
        let null = Some(Value::Null);
        /// The error code, and the id answered with (`None`: no answer).
        type Refusal = Option<(i64, Option<Value>)>;
        let cases: Vec<(String, Refusal)> = vec![
            (call("1"), None),
            (call("-7"), None),
            (call(r#""abc""#), None),
            (call("null"), None),
            (call("9223372036854775807"), None),
            (call("-9223372036854775808"), None),
            (call("1.5"), Some((-32600, null.clone()))),
            (call("1.0"), Some((-32600, null.clone()))),
            (call("1e3"), Some((-32600, null.clone()))),
            (call("true"), Some((-32600, null.clone()))),
            (call(r#"{"a":1}"#), Some((-32600, null.clone()))),
            (call("[1]"), Some((-32600, null.clone()))),
            (call("9223372036854775808"), Some((-32600, null.clone()))),
            (call("-9223372036854775809"), Some((-32600, null.clone()))),
            (call("18446744073709551616"), Some((-32600, null.clone()))),
            // Beyond f64: not JSON serde can read.
            (call("1e400"), Some((-32700, null.clone()))),
            // Answers from the editor: a bad id is dropped, never answered.
            (answer("3"), None),
            (answer("3.5"), Some((-32600, None))),
            (answer("false"), Some((-32600, None))),
            (answer("[3]"), Some((-32600, None))),
            // A bad id and no "jsonrpc": still id null.
            (
                r#"{"id":2.5,"method":"x"}"#.into(),
                Some((-32600, null.clone())),
            ),
            (
                r#"{"id":25,"method":"x"}"#.into(),
                Some((-32600, Some(json!(25)))),
            ),
            // A notification is never answered.
            (
                r#"{"jsonrpc":"2.0","method":"x","params":5}"#.into(),
                Some((-32602, None)),
            ),
            (r#"{"jsonrpc":"2.0","method":"x","params":{}}"#.into(), None),
            // An error object of the wrong shape still decodes (tower-lsp
            // reads it as a call without a method and answers -32601).
            (
                r#"{"jsonrpc":"2.0","id":4,"error":{"code":1.5,"message":"m"}}"#.into(),
                None,
            ),
        ];
        for (body, expected) in cases {
            let got = check(body.as_bytes()).err().map(|p| (p.code, p.answer_id));
            assert_eq!(got, expected, "{body}");
        }
    }

    #[test]
    fn a_dropped_pending_frame_resumes_at_the_next_header() {
        let mut bytes = b"Content-Length: 999\r\n\r\n{\"jsonrpc\"".to_vec();
        bytes.extend(frame(GOOD));
        assert!(matches!(
            next_frame(&mut bytes, MAX_FRAME),
            Frame::BodyPending
        ));
        assert_eq!(drop_pending_frame(&mut bytes), 10 + frame(GOOD).len());
        assert_eq!(frames(bytes), vec![Ok(GOOD.to_string())]);
        // Nothing after it: everything goes.
        let mut bytes = b"Content-Length: 999\r\n\r\n{".to_vec();
        drop_pending_frame(&mut bytes);
        assert!(bytes.is_empty());
        // Larger than the limit: skipped at once, not waited for.
        let mut bytes = format!("Content-Length: {}\r\n\r\n", MAX_FRAME + 1).into_bytes();
        bytes.extend(frame(GOOD));
        assert_eq!(frames(bytes), vec![Ok(GOOD.to_string())]);
    }
}
