//! The JSON-RPC/LSP framers: the client's (`language_servers::framing`,
//! reading what a language server sends) and the server's (`lsp::pump`,
//! checking what the editor sends before tower-lsp-server sees it).
//!
//! What must hold:
//! - the client's encode → decode is the identity, frame after frame, and
//!   any bytes end in frames or an error, never a hang or a huge buffer;
//! - what the pump passes to the server is whole frames, each a JSON-RPC
//!   message tower-lsp-server decodes (one it cannot would stop the
//!   server), and a stream of good frames passes unchanged;
//! - every error answer the pump writes is JSON-RPC with an id the editor
//!   can match (its own, or null).
#![no_main]

use std::sync::OnceLock;

use bareagent::fuzzing::forward_editor_frames;
use bareagent::language_servers::framing::{self, Frame, FramingError};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tokio::io::BufReader;
use tower_lsp_server::jsonrpc;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    runtime().block_on(async {
        match mode % 3 {
            0 => client_reads(bytes).await,
            1 => round_trip(bytes).await,
            _ => pump(bytes, mode & 0x80 != 0).await,
        }
    });
});

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
    })
}

/// Any bytes: frames until the stream ends or fails.
async fn client_reads(bytes: &[u8]) {
    let mut input = BufReader::new(bytes);
    for _ in 0..=bytes.len() {
        match framing::read(&mut input).await {
            Ok(_) => {}
            Err(FramingError::Closed | FramingError::NoLength | FramingError::TooLarge(_)) => {
                return;
            }
            Err(error) => panic!("{error}"),
        }
    }
    panic!("more frames than bytes");
}

/// The JSON values in `bytes` (a stream of them), each as one message.
/// Values holding a fraction are left out: serde_json's default parser
/// reads some back a bit off (its `float_roundtrip` feature is not on),
/// which is serde_json's, not the framing's.
fn values(bytes: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Value>()
        .map_while(Result::ok)
        .filter(|value| !has_fraction(value))
        .take(16)
        .collect()
}

fn has_fraction(value: &Value) -> bool {
    match value {
        Value::Number(number) => number.is_f64(),
        Value::Array(items) => items.iter().any(has_fraction),
        Value::Object(fields) => fields.values().any(has_fraction),
        _ => false,
    }
}

/// A JSON-RPC 2.0 message by the specification, that the server decodes:
/// a request or notification (a method, structured params, an id that is a
/// string, an integer or null, or none) or a response (an id, and a result
/// or an error). The server's own decoding alone is looser: it takes an
/// object with neither for a response.
fn is_json_rpc(message: &Value) -> bool {
    let id_ok = |id: &Value| id.is_string() || id.is_i64() || id.is_null();
    let Some(object) = message.as_object() else {
        return false;
    };
    let shape = match object.get("method") {
        Some(method) => {
            method.is_string()
                && object.get("id").is_none_or(id_ok)
                && object
                    .get("params")
                    .is_none_or(|p| p.is_object() || p.is_array() || p.is_null())
        }
        None => {
            object.get("id").is_some_and(id_ok)
                && (object.contains_key("result") || object.contains_key("error"))
        }
    };
    let text = message.to_string();
    shape
        && object.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && (serde_json::from_str::<jsonrpc::Request>(&text).is_ok()
            || serde_json::from_str::<jsonrpc::Response>(&text).is_ok())
}

/// `messages` framed by the client's writer, one after the other.
async fn framed(messages: &[Value]) -> Vec<u8> {
    let mut wire = Vec::new();
    for message in messages {
        framing::write(&mut wire, message)
            .await
            .expect("a write to memory");
    }
    wire
}

async fn round_trip(bytes: &[u8]) {
    let messages = values(bytes);
    let wire = framed(&messages).await;
    let mut input = BufReader::new(wire.as_slice());
    for message in &messages {
        match framing::read(&mut input).await {
            Ok(Frame::Message(read)) => assert_eq!(&read, message),
            other => panic!("{message} came back as {other:?}"),
        }
    }
    assert!(matches!(
        framing::read(&mut input).await,
        Err(FramingError::Closed)
    ));
}

/// The pump on any bytes, or (`as_frames`) on the JSON values in them, each
/// framed as an editor frames it.
async fn pump(bytes: &[u8], as_frames: bool) {
    let (input, sent) = if as_frames {
        let messages = values(bytes);
        (framed(&messages).await, Some(messages))
    } else {
        (bytes.to_vec(), None)
    };
    let (errors, mut answers) = tokio::sync::mpsc::unbounded_channel();
    let mut to_server = Vec::new();
    forward_editor_frames(input.as_slice(), &mut to_server, errors).await;
    let mut passed = Vec::new();
    let mut output = BufReader::new(to_server.as_slice());
    loop {
        match framing::read(&mut output).await {
            Ok(Frame::Message(message)) => passed.push(message),
            Ok(Frame::NotJson(why)) => {
                panic!("the server was passed a body that is not JSON: {why}")
            }
            Err(FramingError::Closed) => break,
            Err(error) => panic!("the server was passed a broken frame: {error}"),
        }
    }
    for message in &passed {
        let text = message.to_string();
        let decodes = serde_json::from_str::<jsonrpc::Request>(&text).is_ok()
            || serde_json::from_str::<jsonrpc::Response>(&text).is_ok();
        assert!(
            decodes,
            "the server was passed {text}, which it cannot decode"
        );
    }
    while let Ok(answer) = answers.try_recv() {
        assert_eq!(answer["jsonrpc"], "2.0");
        assert!(answer["error"]["code"].is_i64(), "{answer}");
        let id = &answer["id"];
        assert!(id.is_null() || id.is_string() || id.is_i64(), "{answer}");
    }
    if let Some(sent) = sent {
        let good: Vec<&Value> = sent.iter().filter(|m| is_json_rpc(m)).collect();
        if good.len() == sent.len() {
            assert_eq!(
                passed.iter().collect::<Vec<_>>(),
                good,
                "good frames changed"
            );
        }
    }
}
