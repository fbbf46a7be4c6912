//! The frames between the editor and the server. tower-lsp-server stops
//! serving after one frame it cannot decode (invalid JSON, invalid UTF-8, a
//! non-JSON-RPC object), so every frame passes through here first: good ones
//! go on, bad ones are logged and dropped — answered with an error when they
//! carry an id — and a wrong `Content-Length` costs one message, not the
//! session: reading resynchronises at the next header.
//!
//! The answers we write ourselves share stdout with the server's, so one
//! writer task owns stdout and writes whole frames only.

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

const HEADER: &[u8] = b"Content-Length:";
/// A frame larger than this is refused: no legitimate LSP message is.
const MAX_FRAME: usize = 256 * 1024 * 1024;

/// Reads framed messages from the editor and forwards the valid ones.
/// Ends when the editor closes its end (the server then shuts down).
pub async fn forward_input(
    mut input: impl AsyncRead + Unpin,
    mut server: impl AsyncWrite + Unpin,
    errors: mpsc::UnboundedSender<Value>,
) {
    let mut buffer: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match next_frame(&mut buffer) {
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
                    if let Some(id) = problem.id {
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
            Frame::NeedMore => match input.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            },
        }
    }
}

enum Frame {
    Complete(Vec<u8>),
    Skip(&'static str),
    NeedMore,
}

/// Takes one frame off the front of `buffer`, if it holds a whole one.
fn next_frame(buffer: &mut Vec<u8>) -> Frame {
    let Some(header_end) = find(buffer, b"\r\n\r\n") else {
        // Garbage before any header would otherwise grow without end.
        if buffer.len() > 64 * 1024 && find(buffer, HEADER).is_none() {
            buffer.clear();
            return Frame::Skip("64 KiB without a header");
        }
        return Frame::NeedMore;
    };
    let header = String::from_utf8_lossy(&buffer[..header_end]).to_string();
    let length = header.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse::<usize>().ok())?
    });
    let Some(length) = length.filter(|&n| n <= MAX_FRAME) else {
        // No usable length: drop this header and look for the next one.
        let resume = find(&buffer[1..], HEADER).map_or(header_end + 4, |at| at + 1);
        buffer.drain(..resume.min(buffer.len()));
        return Frame::Skip("a header without a valid Content-Length");
    };
    let start = header_end + 4;
    if buffer.len() < start + length {
        return Frame::NeedMore;
    }
    let body = buffer[start..start + length].to_vec();
    buffer.drain(..start + length);
    Frame::Complete(body)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

struct Problem {
    id: Option<Value>,
    code: i64,
    message: String,
}

/// Whether a body is a JSON-RPC 2.0 message tower-lsp-server can decode.
fn check(body: &[u8]) -> Result<(), Problem> {
    let problem = |id, code, message: &str| Problem {
        id,
        code,
        message: message.to_string(),
    };
    let text = std::str::from_utf8(body)
        .map_err(|_| problem(None, -32700, "the message is not valid UTF-8"))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|_| problem(None, -32700, "the message is not valid JSON"))?;
    let Some(object) = value.as_object() else {
        return Err(problem(None, -32600, "the message is not a JSON object"));
    };
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned();
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(problem(
            id,
            -32600,
            "not a JSON-RPC 2.0 message (\"jsonrpc\": \"2.0\" is missing)",
        ));
    }
    let is_call = object.get("method").is_some_and(Value::is_string);
    let is_response =
        id.is_some() && (object.contains_key("result") || object.contains_key("error"));
    if !is_call && !is_response {
        return Err(problem(
            id,
            -32600,
            "neither a request, a notification nor a response",
        ));
    }
    if is_call
        && object
            .get("params")
            .is_some_and(|p| !p.is_object() && !p.is_array() && !p.is_null())
    {
        return Err(problem(id, -32602, "params must be an object or an array"));
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
        while let Frame::Complete(body) = next_frame(&mut buffer) {
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
            match next_frame(&mut bytes) {
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
                Frame::NeedMore => return out,
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
}
