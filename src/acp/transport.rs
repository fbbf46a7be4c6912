//! The lines on stdin and stdout. The SDK reads lines itself, but a line
//! that is not UTF-8 would end its connection; here such a line is decoded
//! lossily (and logged), so the SDK answers it as the malformed frame it is
//! and the agent keeps serving. Stdout carries the protocol and nothing else.

use futures_util::{Sink, Stream};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};

/// The SDK's line transport over our stdin and stdout.
pub fn stdio() -> agent_client_protocol::Lines<
    impl Sink<String, Error = std::io::Error> + Send + 'static,
    impl Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    agent_client_protocol::Lines::new(outgoing(), lines(tokio::io::stdin()))
}

/// The frames of `input`: its lines without their ends, blank ones left
/// out, each decoded lossily where it is not UTF-8.
pub(crate) fn lines(
    input: impl AsyncRead + Unpin + Send + 'static,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static {
    let reader = BufReader::new(input);
    futures_util::stream::unfold(reader, |mut reader| async move {
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            match reader.read_until(b'\n', &mut bytes).await {
                Ok(0) => return None,
                Ok(_) => {}
                Err(error) => return Some((Err(error), reader)),
            }
            while matches!(bytes.last(), Some(b'\n' | b'\r')) {
                bytes.pop();
            }
            // Blank lines between frames are not frames.
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let line = match String::from_utf8(std::mem::take(&mut bytes)) {
                Ok(line) => line,
                Err(error) => {
                    tracing::warn!("a line on stdin is not UTF-8; decoded lossily");
                    String::from_utf8_lossy(error.as_bytes()).into_owned()
                }
            };
            return Some((Ok(line), reader));
        }
    })
}

fn outgoing() -> impl Sink<String, Error = std::io::Error> + Send + 'static {
    futures_util::sink::unfold(tokio::io::stdout(), |mut stdout, line: String| async move {
        let mut frame = line.into_bytes();
        frame.push(b'\n');
        stdout.write_all(&frame).await?;
        stdout.flush().await?;
        Ok::<_, std::io::Error>(stdout)
    })
}
