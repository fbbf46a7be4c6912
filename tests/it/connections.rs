//! A session keeps one connection to the model API: five turns in the
//! language server and five prompts of an ACP session reach the scripted
//! model server over one TCP connection. The server keeps connections alive
//! as the APIs do, so a second connection is the agent's doing (a new HTTP
//! client, and against a real API a TLS handshake, per turn).

use serde_json::{Value, json};

use crate::acp::{drive, of_type, python};
use crate::common::workspace;
use crate::lsp::{ask, options, start, turn_end};
use crate::support::model_server::{ModelServer, Reply, Step};

const TURNS: usize = 5;

fn answers() -> Vec<Step> {
    (1..=TURNS)
        .map(|n| Reply::text(&format!("answer {n}")).into())
        .collect()
}

/// The turns were one session's (the last request carries every earlier
/// question and answer), and it opened one connection to the model server.
fn assert_one_session_on_one_connection(server: &ModelServer) {
    let requests = server.requests();
    assert_eq!(requests.len(), TURNS);
    let messages = requests[TURNS - 1].body["messages"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(messages, 2 * TURNS - 1, "{}", requests[TURNS - 1].body);
    let on: Vec<usize> = requests.iter().map(|r| r.connection).collect();
    assert_eq!(
        server.connections(),
        1,
        "connections accepted in {TURNS} turns (each request came on: {on:?})"
    );
}

#[test]
fn five_turns_in_the_language_server_use_one_connection() {
    let dir = workspace(&[]);
    let server = ModelServer::start(answers());
    let client = start(dir.path(), options(dir.path(), &server, "default"));
    for n in 1..=TURNS {
        let turn = ask(&client, json!(format!("question {n}")))["turn"]
            .as_u64()
            .expect("a turn id");
        let end = turn_end(&client, turn);
        assert_eq!(end["type"], "turn_finished", "{end}");
    }
    assert_one_session_on_one_connection(&server);
    assert_eq!(client.shutdown().code(), Some(0));
}

#[test]
fn five_prompts_of_an_acp_session_use_one_connection() {
    let Some(python) = python() else { return };
    let dir = workspace(&[]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(answers());
    let mut steps = vec![json!({"new": {}})];
    steps.extend((1..=TURNS).map(|n| json!({"prompt": format!("question {n}")})));
    let transcript = drive(&python, &root, &server, json!({"fs": true, "steps": steps}));
    let stops: Vec<&Value> = of_type(&transcript, "prompt_response")
        .into_iter()
        .map(|e| &e["response"]["stopReason"])
        .collect();
    assert_eq!(stops, vec!["end_turn"; TURNS], "{transcript:#?}");
    assert_one_session_on_one_connection(&server);
}
