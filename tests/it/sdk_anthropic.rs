//! The scripted server's Anthropic answers, as Anthropic's own Python SDK
//! reads them (tests/sdk/anthropic_fixtures.py): text, tool use, signed
//! and redacted thinking, whole and streamed, and the error bodies. What
//! the server sends is what the SDK's types and stream accumulation take,
//! so a test passing against it says something about the real API.

use std::path::PathBuf;
use std::process::Command;

use serde_json::json;

use crate::support::model_server::{Fault, ModelServer, Reply, Step};

/// The Python with the `anthropic` SDK, or `None` when the test must skip.
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

// The same values as the script's.
const THOUGHT: &str = "Read \"a.txt\" first \u{2014} then\nanswer.";
const SIGNATURE: &str = "EqQBCkgIBxABGAIqQFm9vYmFy+/sig==";
const REDACTED: &str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP";

/// The script's calls in order: each answer twice (whole, then streamed),
/// then the faults.
fn script() -> Vec<Step> {
    let read = || Reply::tool("read_file", json!({"path": "a.txt"}));
    let answers = [
        Reply::text("Hello from the fixture."),
        read(),
        Reply::text("Done.").with_thinking(THOUGHT, SIGNATURE),
        read()
            .with_thinking(THOUGHT, SIGNATURE)
            .with_redacted_thinking(REDACTED),
    ];
    let mut steps: Vec<Step> = answers
        .into_iter()
        .flat_map(|reply| [reply.clone().into(), reply.into()])
        .collect();
    steps.extend([
        Fault::RefusedParameter.into(),
        Fault::RefusedParameter.into(),
        Fault::ContextTooLong.into(),
        Fault::RateLimited {
            retry_after_secs: 0,
        }
        .into(),
        Fault::Overloaded.into(),
        Fault::ServerError.into(),
        Fault::ErrorEvent { after_text: true }.into(),
    ]);
    steps
}

#[test]
fn the_anthropic_sdk_reads_every_answer_and_error_the_server_sends() {
    let Some(python) = sdk_python() else { return };
    let script = script();
    let steps = script.len();
    let server = ModelServer::start(script);
    let fixtures =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/anthropic_fixtures.py");
    let out = Command::new(python)
        .arg(fixtures)
        .arg(server.anthropic_base())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok: ")).count(),
        steps,
        "{stdout}"
    );
    assert_eq!(server.requests().len(), steps, "{stdout}");
    assert_eq!(server.remaining(), 0);
}
