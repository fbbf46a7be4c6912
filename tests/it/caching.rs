//! Prompt caching: what each request carries so the provider can serve its
//! prefix from the cache, checked on the bytes the scripted server
//! received, and what share of a long session's input the cache serves
//! (Anthropic's cache simulated from the requests, `prompt_cache.rs`).

use bareagent::agent::Message;
use bareagent::events::AgentEvent;
use bareagent::history::Usage;
use serde_json::{Value, json};

use crate::common::{Api, TurnOptions, continue_turn, provider, workspace};
use crate::support::model_server::{ModelServer, RecordedRequest, Reply, Step};

/// The breakpoint exactly as the provider writes it.
const BREAKPOINT: &str = r#","cache_control":{"type":"ephemeral"}"#;

/// `turns` turns of `calls` read_file calls and an answer each.
fn script(turns: usize, calls: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    for turn in 0..turns {
        for call in 0..calls {
            let path = format!("notes/{}.txt", (turn * calls + call) % 4);
            steps.push(Reply::tool("read_file", json!({ "path": path })).into());
        }
        steps.push(Reply::text(&format!("Turn {turn} done.")).into());
    }
    steps
}

fn notes() -> tempfile::TempDir {
    let line = "A line of notes that the agent reads again and again.\n";
    let text = line.repeat(40);
    workspace(&[
        ("notes/0.txt", &text),
        ("notes/1.txt", &text),
        ("notes/2.txt", &text),
        ("notes/3.txt", &text),
    ])
}

/// Runs `turns` turns against `api`, each a new prompt on the history.
async fn session(api: Api, server: &ModelServer, turns: usize) -> Vec<Usage> {
    let dir = notes();
    let provider = provider(api, server);
    let mut messages = Vec::new();
    let mut calls = Vec::new();
    for turn in 0..turns {
        messages.push(Message::user_text(format!("Turn {turn}: read the notes.")));
        let done = continue_turn(&provider, dir.path(), messages, TurnOptions::default()).await;
        done.result.expect("turn");
        calls.extend(done.sink.events().into_iter().filter_map(|e| match e {
            AgentEvent::Usage { call, .. } => Some(call),
            _ => None,
        }));
        messages = done.messages;
    }
    calls
}

/// The raw text of the body's `key` member: from after `"key":` to the
/// next top-level member (the provider writes no spaces).
fn member<'b>(raw: &'b str, key: &str, next: &str) -> &'b str {
    let start = raw
        .find(&format!("\"{key}\":"))
        .unwrap_or_else(|| panic!("no {key} in {raw}"))
        + key.len()
        + 3;
    let end = raw[start..]
        .find(&format!(",\"{next}\":"))
        .map_or(raw.len() - 1, |at| start + at);
    &raw[start..end]
}

fn breakpoints(request: &RecordedRequest) -> usize {
    request.raw_body.matches(BREAKPOINT).count()
}

#[tokio::test]
async fn every_anthropic_request_after_the_first_reads_a_byte_identical_prefix() {
    let server = ModelServer::start(script(4, 4));
    let calls = session(Api::Anthropic, &server, 4).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 20);
    for (i, request) in requests.iter().enumerate() {
        // What we compare is what was sent: the parsed body writes back to
        // the same bytes.
        assert_eq!(
            serde_json::to_string(&request.body).unwrap(),
            request.raw_body
        );
        let count = breakpoints(request);
        let messages = request.body["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        assert_eq!(last["role"], "user");
        assert!(
            last["content"].as_array().unwrap().last().unwrap()["cache_control"].is_object(),
            "request {i}: the moving end carries a breakpoint"
        );
        assert!(
            request.body["system"][0]["cache_control"].is_object(),
            "request {i}"
        );
        let tools = request.body["tools"].as_array().unwrap();
        assert!(tools.last().unwrap()["cache_control"].is_object());
        assert!(
            tools[..tools.len() - 1]
                .iter()
                .all(|t| t.get("cache_control").is_none())
        );
        if i == 0 {
            assert_eq!(count, 3, "tools, system, the prompt");
            continue;
        }
        assert_eq!(count, 4, "request {i}: at most four, and all four used");
        // The prefix: tools, system and every earlier message, byte for
        // byte once the breakpoints (which move) are taken out.
        let before = requests[i - 1].raw_body.replace(BREAKPOINT, "");
        let now = request.raw_body.replace(BREAKPOINT, "");
        assert_eq!(
            member(&before, "tools", "stream"),
            member(&now, "tools", "stream")
        );
        assert_eq!(
            member(&before, "system", "messages"),
            member(&now, "system", "messages")
        );
        let earlier = member(&before, "messages", "tools");
        let earlier = &earlier[..earlier.len() - 1]; // without its closing `]`
        assert!(
            member(&now, "messages", "tools").starts_with(earlier),
            "request {i} changed an earlier message"
        );
        // The previous request's moving end is marked again, so this one
        // reads what that one wrote.
        let previous_end = requests[i - 1].body["messages"].as_array().unwrap().len() - 1;
        let block = messages[previous_end]["content"]
            .as_array()
            .unwrap()
            .last()
            .unwrap();
        assert!(block["cache_control"].is_object(), "request {i}");
    }
    assert_eq!(calls.len(), 20);
}

#[tokio::test]
async fn openai_requests_keep_their_prefix_byte_for_byte() {
    let server = ModelServer::start(script(4, 4));
    session(Api::OpenAi, &server, 4).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 20);
    for i in 1..requests.len() {
        let (before, now) = (&requests[i - 1].raw_body, &requests[i].raw_body);
        assert_eq!(
            member(before, "tools", "stream"),
            member(now, "tools", "stream")
        );
        let earlier = member(before, "messages", "tools");
        let earlier = &earlier[..earlier.len() - 1];
        assert!(
            member(now, "messages", "tools").starts_with(earlier),
            "request {i} changed the prefix:\n{earlier}\n{now}"
        );
        assert_eq!(requests[i].body["messages"][0]["role"], "system");
    }
}

/// `bareagent run` against an OpenAI-compatible server: whether it sends
/// `prompt_cache_key`, and the same one on every call of the run.
#[test]
fn the_prompt_cache_key_is_sent_where_the_settings_say_and_never_changes() {
    // (setting in config.toml, sent to this local server)
    let cases = [(None, false), (Some(true), true), (Some(false), false)];
    for (setting, sent) in cases {
        let dir = notes();
        let config = dir.path().join(".no-user-config/bareagent");
        std::fs::create_dir_all(&config).unwrap();
        if let Some(on) = setting {
            std::fs::write(
                config.join("config.toml"),
                format!("prompt_cache_key = {on}\n"),
            )
            .unwrap();
        }
        let server = ModelServer::start(script(1, 2));
        let out = crate::common::bareagent(dir.path())
            .args(["run", "--provider", "openai", "--base-url"])
            .arg(server.openai_base())
            .env("OPENAI_API_KEY", crate::common::TEST_KEY)
            .arg("read the notes")
            .output()
            .unwrap();
        crate::common::assert_succeeded(&out);
        let keys: Vec<Value> = server
            .requests()
            .iter()
            .map(|r| r.body["prompt_cache_key"].clone())
            .collect();
        assert_eq!(keys.len(), 3);
        // The real system prompt and tools: the same bytes on every call.
        let requests = server.requests();
        for pair in requests.windows(2) {
            let (before, now) = (&pair[0].raw_body, &pair[1].raw_body);
            assert_eq!(
                member(before, "tools", "stream"),
                member(now, "tools", "stream")
            );
            let earlier = member(before, "messages", "tools");
            assert!(member(now, "messages", "tools").starts_with(&earlier[..earlier.len() - 1]));
        }
        if sent {
            assert!(
                keys[0]
                    .as_str()
                    .is_some_and(|k| k.starts_with("bareagent-"))
            );
            assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
            assert!(
                !keys[0].as_str().unwrap().contains("tmp"),
                "the key does not show the path"
            );
        } else {
            assert!(keys.iter().all(Value::is_null), "{setting:?}: {keys:?}");
        }
    }
}

/// The closing note's figure: a scripted 50-turn session (a read and an
/// answer each turn, 100 requests) against Anthropic's cache as simulated
/// from the requests. Prints the share of input tokens read from the cache.
#[tokio::test]
async fn in_a_50_turn_session_nearly_all_input_is_read_from_the_cache() {
    let server = ModelServer::start(script(50, 1));
    server.simulate_prompt_cache();
    let calls = session(Api::Anthropic, &server, 50).await;
    assert_eq!(calls.len(), 100);
    let mut total = Usage::default();
    for call in &calls {
        total += *call;
    }
    let input =
        total.input_tokens + total.cache_creation_input_tokens + total.cache_read_input_tokens;
    let share = total.cache_read_input_tokens as f64 / input as f64;
    eprintln!(
        "50 turns, {} requests: {input} input tokens, {} read from the cache ({:.1}%), {} written, {} uncached",
        calls.len(),
        total.cache_read_input_tokens,
        share * 100.0,
        total.cache_creation_input_tokens,
        total.input_tokens,
    );
    // Every request after the first reads everything the one before sent.
    for (i, call) in calls.iter().enumerate().skip(1) {
        assert!(call.cache_read_input_tokens > 0, "request {i}: {call:?}");
        assert!(
            call.input_tokens < 50,
            "request {i}: only the tail is new: {call:?}"
        );
    }
    assert!(share > 0.9, "{share}");
}
