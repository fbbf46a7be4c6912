//! The scripted server's Chat Completions reasoning and both APIs'
//! `GET /v1/models` as the official Python SDKs read them (`openai`,
//! `anthropic`): their response models and stream accumulator are the
//! check that the fixtures are what the APIs send, fed the bytes the
//! server really writes.

use std::process::Command;

use serde_json::{Value, json};

use crate::support::model_server::{ModelServer, Reply};

/// The Python with the SDKs, or `None` (after saying so) when the test
/// must skip; `BAREAGENT_REQUIRE_SDK=1` makes a missing one a failure.
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

const SCRIPT: &str = r#"
import json, sys
try:
    import anthropic, openai
except ImportError as error:
    print(f"MISSING {error}")
    sys.exit(3)
base = sys.argv[1]
client = openai.OpenAI(base_url=base + "/v1", api_key="test-key", max_retries=0)
openai_ids = [model.id for model in client.models.list()]
claude = anthropic.Anthropic(base_url=base, api_key="test-key", max_retries=0)
# Two a page: the SDK follows has_more and last_id as Anthropic pages.
anthropic_ids = [model.id for model in claude.models.list(limit=2)]
asked = dict(model="deepseek-chat", messages=[{"role": "user", "content": "hi"}])
whole = client.chat.completions.create(**asked).choices[0].message
with client.chat.completions.stream(**asked, stream_options={"include_usage": True}) as stream:
    deltas = "".join(
        event.chunk.choices[0].delta.model_extra.get("reasoning_content", "")
        for event in stream
        if event.type == "chunk" and event.chunk.choices
    )
    streamed = stream.get_final_completion()
print(json.dumps({
    "openai_ids": openai_ids,
    "anthropic_ids": anthropic_ids,
    "whole_reasoning": whole.model_extra.get("reasoning_content"),
    "whole_calls": [call.function.name for call in whole.tool_calls or []],
    "streamed_reasoning": deltas,
    "streamed_calls": [call.function.name for call in streamed.choices[0].message.tool_calls or []],
    "reasoning_tokens": streamed.usage.completion_tokens_details.reasoning_tokens,
}))
"#;

#[test]
fn the_sdks_read_the_reasoning_and_the_model_lists() {
    let Some(python) = sdk_python() else { return };
    let reply = || {
        Reply::tool("read_file", json!({"path": "a.rs"}))
            .with_reasoning("Read a.rs first.\nThen answer.", 12)
            .into()
    };
    let server = ModelServer::start(vec![reply(), reply()]);
    let models = ["claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5"];
    server.serve_models(&models);
    let out = Command::new(&python)
        .args(["-c", SCRIPT])
        .arg(server.anthropic_base())
        .output()
        .expect("run the SDKs' Python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the SDKs refused the fixtures:\n{stdout}\n{stderr}"
    );
    let read: Value = serde_json::from_str(stdout.trim()).expect("the script's JSON");
    assert_eq!(read["openai_ids"], json!(models));
    assert_eq!(read["anthropic_ids"], json!(models), "all pages followed");
    assert_eq!(read["whole_reasoning"], "Read a.rs first.\nThen answer.");
    assert_eq!(read["streamed_reasoning"], "Read a.rs first.\nThen answer.");
    assert_eq!(read["whole_calls"], json!(["read_file"]));
    assert_eq!(read["streamed_calls"], json!(["read_file"]));
    assert_eq!(read["reasoning_tokens"], 12);
    let pages = server
        .requests()
        .iter()
        .filter(|request| request.header("anthropic-version").is_some())
        .count();
    assert_eq!(pages, 2, "three models, two a page");
}
