//! The scripted server's OpenAI answers (Responses API and Chat
//! Completions, whole and streamed) as OpenAI's official Python SDK reads
//! them: tests/sdk/openai_fixtures.py fetches each from the running server
//! and checks it with the SDK's own models and stream accumulators.

use std::process::Command;

use serde_json::{Value, json};

use crate::support::model_server::{Block, ModelServer, Reply, Step};

/// The SDK's Python, or `None` when the test must skip.
fn sdk_python() -> Option<String> {
    match std::env::var("BAREAGENT_SDK_PYTHON") {
        Ok(path) if !path.is_empty() => Some(path),
        _ => {
            crate::support::peers::missing(
                crate::support::peers::Peer::ProviderSdks,
                "BAREAGENT_SDK_PYTHON is not set",
            );
            None
        }
    }
}

/// A reply with usage the SDK can check.
fn counted(reply: Reply) -> Reply {
    Reply {
        input_tokens: 120,
        output_tokens: 30,
        cache_read_input_tokens: 100,
        ..reply
    }
}

/// A scripted answer and what the SDK must read in it.
fn text_answer(reasoning: bool) -> (Reply, Value) {
    let mut reply = counted(Reply::text("Hello from the scripted server."));
    if reasoning {
        reply = reply.with_reasoning_item(
            "rs_text",
            &["First I think.", "Then I answer."],
            Some("gAAAA-text"),
        );
    }
    let want = json!({
        "types": ["reasoning", "message"],
        "reasoning_id": "rs_text",
        "summary": ["First I think.", "Then I answer."],
        "encrypted": "gAAAA-text",
        "text": "Hello from the scripted server.",
        "input_tokens": 120,
        "cached_tokens": 100,
        "reasoning_tokens": reply.reasoning_tokens,
    });
    (reply, want)
}

fn call_answer(reasoning: bool) -> (Reply, Value) {
    let mut reply = counted(Reply::tool("read_file", json!({"path": "notes/a.txt"})));
    if reasoning {
        reply = reply.with_reasoning_item("rs_call", &["I need the file."], Some("gAAAA-call"));
    }
    let Block::ToolUse { id, .. } = &reply.blocks[0] else {
        unreachable!("a tool reply")
    };
    let want = json!({
        "types": ["reasoning", "function_call"],
        "reasoning_id": "rs_call",
        "summary": ["I need the file."],
        "encrypted": "gAAAA-call",
        "call_id": id,
        "arguments": {"path": "notes/a.txt"},
        "input_tokens": 120,
        "cached_tokens": 100,
        "reasoning_tokens": reply.reasoning_tokens,
    });
    (reply, want)
}

/// A custom (freeform) tool call, as Codex's `apply_patch` is answered:
/// the Responses API only.
fn custom_call_answer() -> (Reply, Value) {
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch\n";
    let reply = counted(Reply::custom_tool("apply_patch", patch)).with_reasoning_item(
        "rs_patch",
        &["I edit it."],
        Some("gAAAA-patch"),
    );
    let Block::CustomToolUse { id, .. } = &reply.blocks[0] else {
        unreachable!("a custom tool reply")
    };
    let want = json!({
        "types": ["reasoning", "custom_tool_call"],
        "reasoning_id": "rs_patch",
        "summary": ["I edit it."],
        "encrypted": "gAAAA-patch",
        "call_id": id,
        "name": "apply_patch",
        "input": patch,
        "input_tokens": 120,
        "cached_tokens": 100,
        "reasoning_tokens": reply.reasoning_tokens,
    });
    (reply, want)
}

#[test]
fn the_openai_sdk_reads_every_answer_the_scripted_server_gives() {
    let Some(python) = sdk_python() else {
        return;
    };
    let responses = [text_answer(true), call_answer(true), custom_call_answer()];
    let chat = [text_answer(false), call_answer(false)];
    // The order the script asks: each API's answers whole, then streamed.
    let mut script: Vec<Step> = Vec::new();
    for answers in [&responses[..], &chat[..]] {
        for _ in 0..2 {
            script.extend(answers.iter().map(|(reply, _)| Step::from(reply.clone())));
        }
    }
    let server = ModelServer::start(script);
    let wanted = json!({
        "responses": responses.iter().map(|(_, want)| want).collect::<Vec<_>>(),
        "chat": chat.iter().map(|(_, want)| want).collect::<Vec<_>>(),
    });
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/openai_fixtures.py");
    let out = Command::new(python)
        .arg(fixtures)
        .arg(server.openai_base())
        .arg(wanted.to_string())
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [vec!["/v1/responses"; 6], vec!["/v1/chat/completions"; 4]].concat(),
    );
    assert_eq!(server.remaining(), 0);
}
