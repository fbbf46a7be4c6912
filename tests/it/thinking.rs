//! Thinking on the Anthropic wire, over real HTTP with the real binary:
//! every request of a tool turn carries back the thinking blocks the model
//! wrote (signed, and redacted) exactly as they came, before the tool call
//! they led to, in a fresh, a continued and a compacted session; the
//! thinking and effort parameters and `max_tokens` follow the model; a 400
//! that names a refused parameter is one line that says which setting to
//! change, after exactly one request.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::{assert_succeeded, bareagent, run_against_model, user_config, workspace};
use crate::compaction::{SUMMARY, big_file, is_summary};
use crate::support::model_server::{Fault, ModelServer, RecordedRequest, Reply, Step};

/// Thinks on a budget, between tool calls with the interleaving beta.
const MODEL: &str = "claude-sonnet-4-5";

/// Thinking with what JSON must escape: quotes, a newline, non-ASCII.
fn thought(step: usize) -> String {
    format!("Step {step}: read \"notes/{step}.txt\" next — then\n∴ go on.")
}

fn signature(step: usize) -> String {
    format!("EqQBCkgIBxABGAIqQ{step}Ws+/Zm9vYmFy==")
}

const REDACTED: &str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP";

/// The thinking blocks step `step` of [`tool_turn`] opens with, as the API
/// sent them: the third step has a redacted block before its signed one.
fn thinking_of(step: usize) -> Vec<Value> {
    let signed =
        json!({"type": "thinking", "thinking": thought(step), "signature": signature(step)});
    if step == 2 {
        vec![
            json!({"type": "redacted_thinking", "data": REDACTED}),
            signed,
        ]
    } else {
        vec![signed]
    }
}

/// `reply` as step `step`: opening with [`thinking_of`] that step.
fn thinking_first(reply: Reply, step: usize) -> Step {
    let reply = reply.with_thinking(&thought(step), &signature(step));
    if step == 2 {
        reply.with_redacted_thinking(REDACTED).into()
    } else {
        reply.into()
    }
}

/// Steps `first..first + calls` read a note each, thinking first; the
/// step after answers, thinking first too.
fn tool_turn(first: usize, calls: usize) -> Vec<Step> {
    let mut steps: Vec<Step> = (first..first + calls)
        .map(|step| {
            let path = format!("notes/{}.txt", step % 4);
            thinking_first(Reply::tool("read_file", json!({ "path": path })), step)
        })
        .collect();
    let last = first + calls;
    steps.push(thinking_first(
        Reply::text(&format!("Read {calls} notes.")),
        last,
    ));
    steps
}

fn notes() -> tempfile::TempDir {
    let text = "A note.\n".repeat(20);
    workspace(&[
        ("notes/0.txt", &text),
        ("notes/1.txt", &text),
        ("notes/2.txt", &text),
        ("notes/3.txt", &text),
    ])
}

fn run(dir: &Path, server: &ModelServer, args: &[&str]) -> Command {
    let mut command = bareagent(dir);
    run_against_model(&mut command, server)
        .args(["--permission-mode", "bypass"])
        .args(args);
    command
}

fn output(mut command: Command) -> Output {
    command.output().expect("bareagent runs")
}

fn assistants(request: &RecordedRequest) -> Vec<Vec<Value>> {
    request.body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["content"].as_array().expect("content").clone())
        .collect()
}

fn is_thinking(block: &Value) -> bool {
    matches!(
        block["type"].as_str(),
        Some("thinking" | "redacted_thinking")
    )
}

/// Every assistant message `request` carries, the `steps[i]`-th step's
/// answer, opens with exactly that step's thinking blocks (value for value,
/// and each signature byte for byte in the raw body), followed by the
/// tool call or text they led to and no other thinking; no message of the
/// user's carries thinking.
fn assert_thinking_goes_back(request: &RecordedRequest, steps: &[usize]) {
    let sent = assistants(request);
    assert_eq!(sent.len(), steps.len(), "{}", request.raw_body);
    for (content, &step) in sent.iter().zip(steps) {
        let want = thinking_of(step);
        assert_eq!(&content[..want.len()], want, "step {step}");
        let rest = &content[want.len()..];
        assert!(
            matches!(
                rest.first().and_then(|b| b["type"].as_str()),
                Some("tool_use" | "text")
            ),
            "step {step}: {content:?}"
        );
        assert!(!rest.iter().any(is_thinking), "step {step}: {content:?}");
        let raw = format!("\"signature\":\"{}\"", signature(step));
        assert!(request.raw_body.contains(&raw), "step {step}: {raw}");
    }
    for message in request.body["messages"].as_array().expect("messages") {
        if message["role"] == "user"
            && let Some(blocks) = message["content"].as_array()
        {
            assert!(!blocks.iter().any(is_thinking), "{message}");
        }
    }
}

/// What a budget model's request asks: a budget, the beta, its own limit.
fn assert_thinks_on_a_budget(request: &RecordedRequest) {
    assert_eq!(
        request.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 16_000})
    );
    assert_eq!(
        request.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
    assert_eq!(request.body["max_tokens"], 64_000);
}

#[test]
fn a_tool_turn_sends_back_every_thinking_block_as_it_came_and_so_does_a_continued_session() {
    let dir = notes();
    let server = ModelServer::start(tool_turn(0, 4));
    let out = output(run(
        dir.path(),
        &server,
        &["--model", MODEL, "read the notes"],
    ));
    assert_succeeded(&out);
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    for (index, request) in requests.iter().enumerate() {
        assert_thinks_on_a_budget(request);
        let steps: Vec<usize> = (0..index).collect();
        assert_thinking_goes_back(request, &steps);
    }

    // Continued from disk: the history read back still carries it all.
    for step in tool_turn(5, 1) {
        server.push(step);
    }
    let out = output(run(
        dir.path(),
        &server,
        &["--model", MODEL, "--continue", "once more"],
    ));
    assert_succeeded(&out);
    let requests = server.requests();
    assert_eq!(requests.len(), 7);
    assert_thinking_goes_back(&requests[5], &[0, 1, 2, 3, 4]);
    assert_thinking_goes_back(&requests[6], &[0, 1, 2, 3, 4, 5]);
}

#[test]
fn a_compacted_session_keeps_each_kept_tool_call_with_its_thinking() {
    let dir = workspace(&[("big.txt", &big_file())]);
    // A window the reads fill in a few steps: the session compacts.
    user_config(dir.path(), "[context]\nwindow = 30000\ncompact_at = 0.5\n");
    let mut script: Vec<Step> = (0..8)
        .map(|step| thinking_first(Reply::tool("read_file", json!({"path": "big.txt"})), step))
        .collect();
    script.push(thinking_first(Reply::text("Read it."), 8));
    let server = ModelServer::start(script);
    server.answer_matching(is_summary, Reply::text(SUMMARY));
    let out = output(run(
        dir.path(),
        &server,
        &["--model", MODEL, "read big.txt"],
    ));
    assert_succeeded(&out);

    let requests = server.requests();
    let compacted: Vec<&RecordedRequest> = requests
        .iter()
        .filter(|r| !is_summary(&r.body))
        .filter(|r| r.raw_body.contains("conversation-summary"))
        .collect();
    assert!(!compacted.is_empty(), "it never compacted");
    for request in compacted {
        // Each kept answer still opens with its own thinking: the step is
        // told by the signature it carries.
        let steps: Vec<usize> = assistants(request)
            .iter()
            .map(|content| {
                (0..9)
                    .find(|&step| content.starts_with(&thinking_of(step)))
                    .unwrap_or_else(|| panic!("an answer without its thinking: {content:?}"))
            })
            .collect();
        assert!(!steps.is_empty());
        assert_thinking_goes_back(request, &steps);
    }
}

#[test]
fn a_refused_parameter_is_one_line_that_names_the_setting_after_one_request() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Fault::RefusedParameter.into(),
        Reply::text("never asked").into(),
    ]);
    let out = output(run(
        dir.path(),
        &server,
        &["--model", "claude-opus-4-7", "hello"],
    ));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("does not take"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains("claude-opus-4-7 does not take `thinking = adaptive`"),
        "{stderr}"
    );
    assert!(said[0].contains("set `thinking = \"off\"`"), "{stderr}");
    assert_eq!(server.requests().len(), 1, "{stderr}");
    assert_eq!(
        server.requests()[0].body["thinking"],
        json!({"type": "adaptive"})
    );
}

#[test]
fn max_tokens_and_the_effort_from_config_toml_follow_the_model() {
    // (model, effort in config.toml, max_tokens, thinking, output_config)
    let cases = [
        (
            "claude-opus-4-1",
            None,
            32_000,
            json!({"type": "enabled", "budget_tokens": 16_000}),
            Value::Null,
        ),
        (
            "claude-opus-4-7",
            Some("xhigh"),
            128_000,
            json!({"type": "adaptive"}),
            json!({"effort": "xhigh"}),
        ),
        // 4.6 has no xhigh: the nearest level below.
        (
            "claude-opus-4-6",
            Some("xhigh"),
            128_000,
            json!({"type": "adaptive"}),
            json!({"effort": "high"}),
        ),
    ];
    for (model, effort, max_tokens, thinking, output_config) in cases {
        let dir = workspace(&[]);
        if let Some(effort) = effort {
            user_config(dir.path(), &format!("effort = \"{effort}\"\n"));
        }
        let server = ModelServer::start(vec![Reply::text("hi").into()]);
        let out = output(run(dir.path(), &server, &["--model", model, "hello"]));
        assert_succeeded(&out);
        let body = &server.requests()[0].body;
        assert_eq!(body["max_tokens"], max_tokens, "{model}");
        assert_eq!(body["thinking"], thinking, "{model}");
        assert_eq!(body["output_config"], output_config, "{model}");
    }
}
