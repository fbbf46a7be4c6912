//! OpenAI's Responses API as its own wire, over real HTTP against the
//! scripted server: what every request carries back (reasoning items
//! exactly, each function call with its output, no ids the API did not
//! keep), across a resumed and a compacted session, the effort from
//! config.toml, and a table of malformed answers that each end with a
//! valid history and a clear message.

use std::path::Path;
use std::sync::Arc;

use bareagent::history::{ContentBlock, check_history};
use bareagent::provider::responses::Responses;
use bareagent::provider::{Credentials, OpenAiResponses, Provider};
use serde_json::{Value, json};

use crate::common::{
    TEST_KEY, TurnOptions, assert_succeeded, bareagent, run_turn, user_config, workspace,
};
use crate::compaction::{big_file, is_summary};
use crate::support::model_server::{Block, Fault, ModelServer, RecordedRequest, Reply, Step};

/// A reasoning model, so requests carry `reasoning` and `include`.
const MODEL: &str = "gpt-5";

/// Step `k` of a tool turn: a reasoning item `rs_k` (summary and encrypted
/// content) and a read of `notes/k.txt`. Returns the reply and its call id.
fn reasoned_read(k: usize) -> (Reply, String) {
    let reply = Reply::tool("read_file", json!({"path": format!("notes/{k}.txt")}))
        .with_reasoning_item(
            &format!("rs_{k}"),
            &[&format!("Step {k}: read the next note.")],
            Some(&format!("gAAAA-encrypted-{k}")),
        );
    let Block::ToolUse { id, .. } = &reply.blocks[0] else {
        unreachable!("a tool reply")
    };
    let id = id.clone();
    (reply, id)
}

fn notes() -> tempfile::TempDir {
    workspace(&[
        ("notes/0.txt", "zero\n"),
        ("notes/1.txt", "one\n"),
        ("notes/2.txt", "two\n"),
        ("notes/3.txt", "three\n"),
    ])
}

/// `bareagent run` on the OpenAI provider at the scripted server.
fn run(dir: &Path, server: &ModelServer, extra: &[&str], prompt: &str) -> std::process::Output {
    bareagent(dir)
        .args([
            "run",
            "--provider",
            "openai",
            "--model",
            MODEL,
            "--base-url",
        ])
        .arg(server.openai_base())
        .args(["--permission-mode", "bypass"])
        .args(extra)
        .arg(prompt)
        .env("OPENAI_API_KEY", TEST_KEY)
        .output()
        .expect("bareagent run")
}

/// The input items of a request.
fn input(request: &RecordedRequest) -> Vec<Value> {
    request.body["input"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("no input array: {}", request.body))
}

/// What the API refuses in a stateless request, as a list of faults: an
/// id on an item the API did not keep (only a reasoning item, with its
/// encrypted content, may carry one), a call without its output or an
/// output without its call, an item type we never send.
fn refusals(input: &[Value]) -> Vec<String> {
    let mut faults = Vec::new();
    let calls: Vec<&Value> = input
        .iter()
        .filter(|i| i["type"] == "function_call")
        .map(|i| &i["call_id"])
        .collect();
    let outputs: Vec<&Value> = input
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| &i["call_id"])
        .collect();
    if calls != outputs {
        faults.push(format!("calls {calls:?} answered by {outputs:?}"));
    }
    for item in input {
        match item["type"].as_str() {
            Some("reasoning")
                if item["encrypted_content"]
                    .as_str()
                    .is_some_and(|s| !s.is_empty()) => {}
            Some("reasoning") => faults.push(format!("reasoning without content: {item}")),
            Some("message" | "function_call" | "function_call_output") => {
                if item.get("id").is_some() {
                    faults.push(format!("an id the API did not keep: {item}"));
                }
            }
            _ => faults.push(format!("an item we never send: {item}")),
        }
    }
    faults
}

/// The reasoning items and calls of an input (the outputs are the tools'
/// text; [`refusals`] checks each follows its call).
fn carried(input: &[Value]) -> Vec<Value> {
    input
        .iter()
        .filter(|i| i["type"] == "reasoning" || i["type"] == "function_call")
        .cloned()
        .collect()
}

/// What step `k` leaves in every later request: its reasoning item
/// exactly, its call and the call's output.
fn carried_by(k: usize, call_id: &str) -> Vec<Value> {
    vec![
        json!({"type": "reasoning", "id": format!("rs_{k}"), "summary": [{"type": "summary_text", "text": format!("Step {k}: read the next note.")}], "encrypted_content": format!("gAAAA-encrypted-{k}")}),
        json!({"type": "function_call", "call_id": call_id, "name": "read_file", "arguments": format!("{{\"path\":\"notes/{k}.txt\"}}")}),
    ]
}

/// Checks every request of a run of reasoned reads (`calls`, in order):
/// request n carries back steps 0..n exactly, each call's output after it,
/// and nothing the API refuses.
fn assert_carried(requests: &[RecordedRequest], before: &[Value], calls: &[String]) {
    for (n, request) in requests.iter().enumerate() {
        assert_eq!(request.path, "/v1/responses");
        let items = input(request);
        assert_eq!(refusals(&items), Vec::<String>::new(), "request {n}");
        let mut want = before.to_vec();
        for (k, call_id) in calls.iter().enumerate().take(n) {
            want.extend(carried_by(k, call_id));
        }
        assert_eq!(carried(&items), want, "request {n}");
    }
}

/// Four reads with reasoning, then an answer: a five-step turn.
fn five_steps() -> (Vec<Step>, Vec<String>) {
    let mut steps = Vec::new();
    let mut calls = Vec::new();
    for k in 0..4 {
        let (reply, id) = reasoned_read(k);
        steps.push(reply.into());
        calls.push(id);
    }
    steps.push(
        Reply::text("All four notes read.")
            .with_reasoning_item("rs_4", &["Done."], Some("gAAAA-encrypted-4"))
            .into(),
    );
    (steps, calls)
}

#[test]
fn a_five_step_tool_turn_carries_back_its_reasoning_and_calls_exactly() {
    // Streamed, and answered whole.
    for extra in [&[][..], &["--no-stream"][..]] {
        five_steps_then_resumed(extra);
    }
}

fn five_steps_then_resumed(extra: &[&str]) {
    let dir = notes();
    user_config(dir.path(), "wire = \"responses\"\neffort = \"high\"\n");
    let (steps, calls) = five_steps();
    let server = ModelServer::start(steps);
    let out = run(dir.path(), &server, extra, "read the notes");
    assert_succeeded(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("All four notes read."));
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    assert_carried(&requests, &[], &calls);
    for request in &requests {
        let body = &request.body;
        assert_eq!(body.get("stream").is_some(), extra.is_empty());
        assert_eq!(body["store"], false);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        // The effort from config.toml, and a summary to show as thinking.
        assert_eq!(
            body["reasoning"],
            json!({"effort": "high", "summary": "auto"})
        );
        assert_eq!(body["parallel_tool_calls"], true);
        assert!(body["instructions"].as_str().is_some_and(|s| !s.is_empty()));
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["tools"][0]["strict"], false);
        assert!(body["max_output_tokens"].as_u64().is_some());
    }
    // The tools and instructions are the same bytes on every call (the
    // cached prefix), and each input extends the one before.
    for pair in requests.windows(2) {
        assert_eq!(pair[0].body["tools"], pair[1].body["tools"]);
        assert_eq!(pair[0].body["instructions"], pair[1].body["instructions"]);
        let (before, now) = (input(&pair[0]), input(&pair[1]));
        assert_eq!(before[..], now[..before.len()]);
    }

    // Resumed: the first request of the next run carries the whole turn back.
    let (reply, next_call) = reasoned_read(0);
    let server = ModelServer::start(vec![reply.into(), Reply::text("Again.").into()]);
    let out = run(
        dir.path(),
        &server,
        &[extra, &["--continue"]].concat(),
        "read them again",
    );
    assert_succeeded(&out);
    let requests = server.requests();
    let mut before: Vec<Value> = Vec::new();
    for (k, call_id) in calls.iter().enumerate() {
        before.extend(carried_by(k, call_id));
    }
    before.push(json!({"type": "reasoning", "id": "rs_4", "summary": [{"type": "summary_text", "text": "Done."}], "encrypted_content": "gAAAA-encrypted-4"}));
    assert_carried(&requests, &before, &[next_call]);
}

#[test]
fn without_an_effort_the_model_picks_and_a_model_that_does_not_reason_gets_no_reasoning() {
    // (config.toml, model, the reasoning object sent; None: none at all)
    let cases = [
        (
            "wire = \"responses\"\n",
            MODEL,
            Some(json!({"summary": "auto"})),
        ),
        (
            "wire = \"responses\"\nthinking = \"off\"\n",
            MODEL,
            Some(json!({"effort": "minimal", "summary": "auto"})),
        ),
        ("wire = \"responses\"\neffort = \"high\"\n", "gpt-4.1", None),
    ];
    for (config, model, want) in cases {
        let dir = notes();
        user_config(dir.path(), config);
        let server = ModelServer::start(vec![Reply::text("Hi.").into()]);
        let out = bareagent(dir.path())
            .args([
                "run",
                "--provider",
                "openai",
                "--model",
                model,
                "--base-url",
            ])
            .arg(server.openai_base())
            .arg("hello")
            .env("OPENAI_API_KEY", TEST_KEY)
            .output()
            .unwrap();
        assert_succeeded(&out);
        let body = &server.requests()[0].body;
        assert_eq!(body.get("reasoning").cloned(), want, "{config} {model}");
        assert_eq!(
            body.get("include").is_some(),
            want.is_some(),
            "{config} {model}"
        );
    }
}

#[test]
fn a_compacted_session_still_sends_only_what_the_api_takes() {
    let dir = workspace(&[
        ("big.txt", &big_file()),
        (".bareagent/config.toml", "[context]\nwindow = 20000\n"),
    ]);
    user_config(dir.path(), "wire = \"responses\"\n");
    let mut script: Vec<Step> = (0..5)
        .map(|k| {
            Reply::tool("read_file", json!({"path": "big.txt"}))
                .with_reasoning_item(&format!("rs_{k}"), &["Read it."], Some("gAAAA"))
                .into()
        })
        .collect();
    script.push(Reply::text("done").into());
    let server = ModelServer::start(script);
    server.answer_matching(is_summary, Reply::text("SUMMARY: big.txt was read."));
    let out = run(dir.path(), &server, &[], "read big.txt");
    assert_succeeded(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("(context compacted: about "), "{stderr}");
    let requests = server.requests();
    assert!(requests.iter().any(|r| is_summary(&r.body)));
    for (n, request) in requests.iter().enumerate() {
        assert_eq!(
            refusals(&input(request)),
            Vec::<String>::new(),
            "request {n}"
        );
    }
    // After the summary, the kept steps' reasoning still goes back.
    let last = input(requests.last().unwrap());
    assert!(last.iter().any(|i| i["type"] == "reasoning"), "{last:?}");
}

/// The Responses provider at the scripted server, for library-level turns.
fn provider(server: &ModelServer) -> Arc<dyn Provider> {
    Arc::new(
        OpenAiResponses::with_wire(
            Responses::default(),
            &server.openai_base(),
            Credentials::api_key(TEST_KEY.to_string()),
            MODEL,
            crate::common::test_settings(),
        )
        .expect("provider"),
    )
}

/// A hand-written stream: each `(type, data)` as the API frames it.
fn raw(events: &[Value]) -> String {
    events
        .iter()
        .map(|data| {
            format!(
                "event: {}\ndata: {data}\n\n",
                data["type"].as_str().unwrap()
            )
        })
        .collect()
}

fn text_delta(text: &str) -> Value {
    json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": text})
}

/// How an attack row's turn must end.
enum Ends {
    /// With this answer.
    Answer(&'static str),
    /// With an error that says this.
    Error(&'static str),
}

#[tokio::test]
async fn malformed_answers_end_with_a_valid_history_and_a_clear_message() {
    let unknown_item = json!({"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "x"}});
    let found = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Found it.", "annotations": []}]});
    let rows: Vec<(&str, Vec<Step>, Ends)> = vec![
        (
            "an event cut off mid-JSON, then the end",
            vec![Fault::RawStream(raw(&[text_delta("Half")]) + "event: response.output_text.delta\ndata: {\"type\":\"response.outp").into()],
            Ends::Error("response.completed"),
        ),
        (
            "an item type this code does not know",
            vec![Fault::RawStream(raw(&[
                json!({"type": "response.output_item.added", "output_index": 0, "item": unknown_item}),
                json!({"type": "response.future_thing", "output_index": 0}),
                json!({"type": "response.output_item.done", "output_index": 0, "item": unknown_item}),
                json!({"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Found it."}),
                json!({"type": "response.completed", "response": {"status": "completed", "output": [unknown_item, found]}}),
            ]))
            .into()],
            Ends::Answer("Found it."),
        ),
        (
            "a reasoning item without content",
            vec![
                Reply::tool("read_file", json!({"path": "notes/0.txt"}))
                    .with_reasoning_item("rs_bare", &[], None)
                    .into(),
                Reply::text("Read.").into(),
            ],
            Ends::Answer("Read."),
        ),
        (
            "a function call whose arguments are not JSON",
            vec![
                Reply::raw_tool("read_file", "{\"path\": ").into(),
                Reply::text("Fixed.").into(),
            ],
            Ends::Answer("Fixed."),
        ),
        (
            "a 429 with OpenAI's error body, then the answer",
            vec![
                Fault::RateLimited {
                    retry_after_secs: 0,
                }
                .into(),
                Reply::text("After the wait.").into(),
            ],
            Ends::Answer("After the wait."),
        ),
        (
            "response.failed mid-stream",
            vec![Fault::ErrorEvent { after_text: true }.into()],
            Ends::Error("Overloaded (server_error)"),
        ),
        (
            "a stream that ends before response.completed",
            vec![Fault::EndsEarly {
                reply: Reply::text("An answer that never ends properly."),
                after_text: true,
            }
            .into()],
            Ends::Error("the stream ended before response.completed"),
        ),
        (
            "an error event mid-stream",
            vec![Fault::RawStream(raw(&[
                text_delta("Hel"),
                json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": null}),
            ]))
            .into()],
            Ends::Error("Slow down"),
        ),
        (
            "an incomplete response with nothing usable",
            vec![Fault::RawStream(raw(&[
                json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "Hmm"}),
                json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}}),
            ]))
            .into()],
            Ends::Error("incomplete (max_output_tokens)"),
        ),
    ];
    for (name, script, ends) in rows {
        let dir = notes();
        let server = ModelServer::start(script);
        let turn = run_turn(&provider(&server), dir.path(), "go", TurnOptions::default()).await;
        assert_eq!(check_history(&turn.messages), Ok(()), "{name}");
        for (n, request) in server.requests().iter().enumerate() {
            assert_eq!(
                refusals(&input(request)),
                Vec::<String>::new(),
                "{name}: request {n}"
            );
        }
        match ends {
            Ends::Answer(text) => {
                assert!(turn.result.is_ok(), "{name}: {:?}", turn.result.err());
                let last = turn.messages.last().expect("an answer");
                assert_eq!(last.text(), text, "{name}");
                assert!(
                    last.content
                        .iter()
                        .all(|b| matches!(b, ContentBlock::Text { .. })),
                    "{name}: {last:?}"
                );
            }
            Ends::Error(says) => {
                let error = match &turn.result {
                    Ok(outcome) => panic!("{name}: ended well: {outcome:?}"),
                    Err(error) => error.to_string(),
                };
                assert!(error.contains(says), "{name}: {error}");
            }
        }
    }
}
