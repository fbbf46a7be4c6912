//! The base protocol's framing over a server's stdio: a `Content-Length`
//! header, a blank line, then that many bytes of JSON.
//!
//! Our own, not `lsp::pump`'s: that one sits between the editor and
//! tower-lsp-server and checks frames against the server side's types; a
//! client reads whatever a server sends and decides what it means itself
//! (`connection`). A frame whose body is not JSON is handed on as such,
//! so one bad message fails the requests it answered, not the stream.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A frame larger than this is refused and the connection ended: no source
/// file's answer comes near it, and a lying header could otherwise make us
/// hold gigabytes.
const MAX_FRAME: usize = 256 * 1024 * 1024;

/// What one read gave.
#[derive(Debug)]
pub enum Frame {
    /// A body that parsed as JSON.
    Message(serde_json::Value),
    /// A body that did not parse: why.
    NotJson(String),
}

/// Why the stream ended.
#[derive(Debug, thiserror::Error)]
pub enum FramingError {
    #[error("the server closed its output")]
    Closed,
    #[error("cannot read from the server: {0}")]
    Io(#[from] std::io::Error),
    #[error("the server sent a header without Content-Length")]
    NoLength,
    #[error("the server announced a message of {0} bytes")]
    TooLarge(usize),
}

/// Reads the next frame.
pub async fn read(input: &mut (impl AsyncBufRead + Unpin)) -> Result<Frame, FramingError> {
    let mut length = None;
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).await? == 0 {
            return Err(FramingError::Closed);
        }
        // Bytes, not text: a header that is not UTF-8 is one we do not
        // know (skipped like any other), not the end of the connection.
        let line = String::from_utf8_lossy(&line);
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            // Blank lines before a header (some servers end a body with a
            // newline) are not the end of one.
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let length = length.ok_or(FramingError::NoLength)?;
    if length > MAX_FRAME {
        return Err(FramingError::TooLarge(length));
    }
    let mut body = vec![0u8; length];
    input.read_exact(&mut body).await.map_err(|error| {
        if error.kind() == std::io::ErrorKind::UnexpectedEof {
            FramingError::Closed
        } else {
            FramingError::Io(error)
        }
    })?;
    Ok(match serde_json::from_slice(&body) {
        Ok(value) => Frame::Message(value),
        Err(error) => Frame::NotJson(error.to_string()),
    })
}

/// Writes one message as a frame.
pub async fn write(
    output: &mut (impl AsyncWrite + Unpin),
    message: &serde_json::Value,
) -> std::io::Result<()> {
    let body = serde_json::to_vec(message)?;
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(&body);
    output.write_all(&frame).await?;
    output.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_a_bad_body_is_one_bad_frame() {
        let mut bytes = Vec::new();
        write(&mut bytes, &serde_json::json!({"a": "é"}))
            .await
            .unwrap();
        bytes.extend_from_slice(b"Content-Length: 5\r\nContent-Type: x\r\n\r\n{nope");
        write(&mut bytes, &serde_json::json!([1])).await.unwrap();
        let mut input = tokio::io::BufReader::new(bytes.as_slice());
        assert!(matches!(read(&mut input).await, Ok(Frame::Message(v)) if v["a"] == "é"));
        assert!(matches!(read(&mut input).await, Ok(Frame::NotJson(_))));
        assert!(matches!(read(&mut input).await, Ok(Frame::Message(v)) if v[0] == 1));
        assert!(matches!(read(&mut input).await, Err(FramingError::Closed)));
    }

    /// Found by fuzzing (fuzz/fuzz_targets/lsp_framing.rs): a header line
    /// that was not UTF-8 ended the connection as an I/O error.
    #[tokio::test]
    async fn a_header_that_is_not_utf8_is_skipped() {
        let bytes = b"X-Junk: \xff\xfe\r\nContent-Length: 2\r\n\r\n[]";
        let mut input = tokio::io::BufReader::new(&bytes[..]);
        assert!(
            matches!(read(&mut input).await, Ok(Frame::Message(v)) if v == serde_json::json!([]))
        );
    }
}
