//! Hostile frames over real stdio: requests whose id the server cannot hold,
//! and a `Content-Length` that overstates its body. Each is answered (an
//! error with `id: null`) or dropped, and the server keeps serving: after
//! every case a normal request gets its answer.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::workspace;
use crate::support::lsp_client::{ClientOptions, LspClient};

const WAIT: Duration = Duration::from_secs(20);

/// What the server does with one hostile frame.
#[derive(Debug)]
enum Outcome {
    /// An error answer with `id: null` and this code.
    Refused(i64),
    /// No answer; a log line says it was dropped.
    Dropped,
    /// A normal answer, with this (valid, unusual) id.
    Served(Value),
}

fn framed(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn status_with_id(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"workspace/executeCommand","params":{{"command":"bareagent.status"}}}}"#
    )
}

fn cases() -> Vec<(&'static str, Vec<u8>, Outcome)> {
    use Outcome::*;
    let id = |id: &str| framed(&status_with_id(id));
    vec![
        ("float id", id("1.5"), Refused(-32600)),
        ("integral float id", id("7.0"), Refused(-32600)),
        ("exponent id", id("1e3"), Refused(-32600)),
        ("boolean id", id("true"), Refused(-32600)),
        ("object id", id(r#"{"n":1}"#), Refused(-32600)),
        ("array id", id("[1]"), Refused(-32600)),
        (
            "id just past i64",
            id("9223372036854775808"),
            Refused(-32600),
        ),
        (
            "id just below i64",
            id("-9223372036854775809"),
            Refused(-32600),
        ),
        ("id past u64", id("18446744073709551616"), Refused(-32600)),
        ("id past f64", id("1e400"), Refused(-32700)),
        (
            "boolean id on a notification-looking call",
            framed(r#"{"jsonrpc":"2.0","id":false,"method":"initialized","params":{}}"#),
            Refused(-32600),
        ),
        (
            "params nested 100 000 deep",
            framed(&format!(
                r#"{{"jsonrpc":"2.0","id":5,"method":"x","params":{}{}}}"#,
                "[".repeat(100_000),
                "]".repeat(100_000)
            )),
            Refused(-32700),
        ),
        (
            "a response with a float id",
            framed(r#"{"jsonrpc":"2.0","id":2.5,"result":null}"#),
            Dropped,
        ),
        (
            "a response with an object id",
            framed(r#"{"jsonrpc":"2.0","id":{},"error":{"code":1,"message":"x"}}"#),
            Dropped,
        ),
        (
            "Content-Length of 64 MiB over a short body",
            format!(
                "Content-Length: {}\r\n\r\n{}",
                64 * 1024 * 1024,
                status_with_id("31")
            )
            .into_bytes(),
            Dropped,
        ),
        (
            "Content-Length a little beyond the body",
            format!(
                "Content-Length: {}\r\n\r\n{}",
                status_with_id("32").len() + 1000,
                status_with_id("32")
            )
            .into_bytes(),
            Dropped,
        ),
        (
            "Content-Length past the size limit",
            format!("Content-Length: {}\r\n\r\n", 256 * 1024 * 1024).into_bytes(),
            Dropped,
        ),
        // The edges that must still work.
        (
            "largest i64 id",
            id("9223372036854775807"),
            Served(json!(i64::MAX)),
        ),
        (
            "smallest i64 id",
            id("-9223372036854775808"),
            Served(json!(i64::MIN)),
        ),
        ("string id", id(r#""the-id""#), Served(json!("the-id"))),
    ]
}

fn refusals(client: &LspClient) -> Vec<Value> {
    client
        .orphan_responses()
        .into_iter()
        .filter(|r| r["id"].is_null() && r.get("error").is_some())
        .collect()
}

fn drop_lines(client: &LspClient) -> usize {
    client
        .stderr()
        .lines()
        .filter(|l| l.contains("dropped a") || l.contains("skipped bytes"))
        .count()
}

#[test]
fn hostile_frames_are_answered_or_dropped_and_later_requests_are_served() {
    let dir = workspace(&[]);
    let mut options = ClientOptions::new(dir.path());
    options
        .env
        .extend([("BAREAGENT_LOG".into(), "info".into())]);
    let client = LspClient::start(env!("CARGO_BIN_EXE_bareagent").as_ref(), options);
    client.initialize();
    let status = || client.execute("bareagent.status", json!([]));
    for (name, bytes, outcome) in cases() {
        let (refused_before, dropped_before) = (refusals(&client).len(), drop_lines(&client));
        client.send_raw(&bytes);
        // The next normal request gets its answer: the server is alive and
        // not waiting for the rest of a body.
        assert!(status().is_ok(), "{name}: a later request failed");
        match outcome {
            Outcome::Refused(code) => {
                client.wait_until(WAIT, name, |c| refusals(c).len() > refused_before);
                let answer = &refusals(&client)[refused_before];
                assert_eq!(answer["error"]["code"], code, "{name}: {answer}");
                assert_eq!(answer["jsonrpc"], "2.0", "{name}: {answer}");
            }
            Outcome::Dropped => {
                client.wait_until(WAIT, name, |c| drop_lines(c) > dropped_before);
            }
            Outcome::Served(id) => {
                let answered = match id.as_i64() {
                    Some(n) => client.response(n, WAIT).is_some_and(|r| r.is_ok()),
                    None => {
                        client.wait_until(WAIT, name, |c| {
                            c.orphan_responses().iter().any(|r| r["id"] == id)
                        });
                        true
                    }
                };
                assert!(answered, "{name}: no answer for id {id}");
            }
        }
        assert!(client.is_running(), "{name}: the server exited");
    }
    // Every refusal is accounted for: nothing else was answered with id null.
    assert!(status().is_ok());
    let expected = cases()
        .iter()
        .filter(|(_, _, o)| matches!(o, Outcome::Refused(_)))
        .count();
    assert_eq!(refusals(&client).len(), expected, "{:?}", refusals(&client));
    assert_eq!(client.shutdown().code(), Some(0));
}
