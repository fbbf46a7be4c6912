//! The agent's keys never leave through a tool: a command that prints the
//! agent's own environment (`/proc/$PPID/environ`, which the child's clean
//! environment does not cover), a file holding a key, a background
//! command's notice — through the built binary, headless (`--json`,
//! `--record`) and as a language server (the chat file, its events).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::common::{TEST_KEY, sent_tool_results, workspace};
use crate::support::lsp_client::{ClientOptions, LspClient};
use crate::support::model_server::{ModelServer, Reply, Step};

const OTHER_KEY: &str = "other-service-key-9f8e7d6c";
const GITHUB_TOKEN: &str = "ghp_tokenvalue0123456789";
const PRINT_ENV: &str = "tr '\\0' '\\n' < /proc/$PPID/environ; env; echo end-of-env";

/// What every test asks for: the agent's environment through `bash` in the
/// foreground and in the background, a file holding a key through
/// `read_file` and `grep`.
fn leaking_script() -> Vec<Step> {
    vec![
        Reply::tools(vec![
            ("read_file", json!({"path": "notes.txt"})),
            ("grep", json!({"pattern": "sk-", "output_mode": "content"})),
        ])
        .into(),
        Reply::tool("bash", json!({"command": PRINT_ENV})).into(),
        Reply::tool(
            "bash",
            json!({"command": format!("{PRINT_ENV}; touch bg_done"), "run_in_background": true}),
        )
        .into(),
        // Waits for the background command, so its notice joins the next request.
        Reply::tool(
            "bash",
            json!({"command": "for i in $(seq 200); do [ -f bg_done ] && break; sleep 0.05; done; sleep 1"}),
        )
        .into(),
        Reply::text("done").into(),
    ]
}

fn leaking_workspace() -> tempfile::TempDir {
    workspace(&[(
        "notes.txt",
        &format!("the key is {TEST_KEY}\nand {OTHER_KEY}\n"),
    )])
}

fn assert_no_key(what: &str, text: &str) {
    for key in [TEST_KEY, OTHER_KEY, GITHUB_TOKEN] {
        assert!(!text.contains(key), "{key} leaked into {what}: {text}");
    }
}

/// The model saw the environment (so the test tested something), scrubbed.
fn assert_model_saw_only_redactions(server: &ModelServer) {
    let requests = server.requests();
    let results: Vec<String> = requests
        .iter()
        .flat_map(|r| sent_tool_results(&r.body))
        .map(|(content, _)| content)
        .collect();
    assert!(
        results.iter().any(|r| r.contains("end-of-env")),
        "{results:?}"
    );
    let everything = requests
        .iter()
        .map(|r| r.body.to_string())
        .collect::<String>();
    assert!(
        everything.contains("[redacted ANTHROPIC_API_KEY]"),
        "{everything}"
    );
    assert!(everything.contains("[redacted SOME_SERVICE_API_KEY]"));
    assert!(everything.contains("[redacted GITHUB_TOKEN]"));
    assert!(
        everything.contains("<background-command"),
        "the background notice reached the model"
    );
    assert_no_key("a request to the model", &everything);
}

fn with_keys(command: &mut Command) -> &mut Command {
    command
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .env("SOME_SERVICE_API_KEY", OTHER_KEY)
        .env("GITHUB_TOKEN", GITHUB_TOKEN)
}

#[test]
fn keys_printed_by_tools_reach_neither_the_model_nor_json_nor_the_recording() {
    let dir = leaking_workspace();
    let server = ModelServer::start(leaking_script());
    let recording = tempfile::NamedTempFile::new().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_bareagent"));
    command
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .env_remove("OPENAI_API_KEY")
        .args(["run", "--provider", "anthropic", "--base-url"])
        .arg(server.anthropic_base())
        .args(["--permission-mode", "bypass", "--json", "--record"])
        .arg(recording.path())
        .arg("print your environment");
    let out = with_keys(&mut command).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_model_saw_only_redactions(&server);
    assert!(stdout.contains("tool_result") && stdout.contains("[redacted GITHUB_TOKEN]"));
    assert_no_key("--json output", &stdout);
    assert_no_key("stderr", &stderr);
    let recorded = std::fs::read_to_string(recording.path()).unwrap();
    assert!(recorded.contains("[redacted ANTHROPIC_API_KEY]"));
    assert_no_key("the recording", &recorded);
}

#[test]
fn keys_printed_by_tools_reach_neither_the_chat_file_nor_editor_events() {
    let dir = leaking_workspace();
    let server = ModelServer::start(leaking_script());
    let mut options = ClientOptions::new(dir.path());
    options.env.extend([
        ("ANTHROPIC_API_KEY".into(), TEST_KEY.into()),
        ("SOME_SERVICE_API_KEY".into(), OTHER_KEY.into()),
        ("GITHUB_TOKEN".into(), GITHUB_TOKEN.into()),
    ]);
    options.initialization_options = json!({
        "provider": "anthropic", "baseUrl": server.anthropic_base(), "permissionMode": "bypass", "idleTimeoutSecs": 5,
    });
    let client = LspClient::start(Path::new(env!("CARGO_BIN_EXE_bareagent")), options);
    client.initialize();
    let turn = client
        .execute("bareagent.ask", json!(["print your environment"]))
        .unwrap_or_else(|e| panic!("ask failed: {e}"))["turn"]
        .clone();
    let end = client.wait_for_notification(Duration::from_secs(30), "the turn to end", |m, p| {
        m == "bareagent/event"
            && p["turn"] == turn
            && (p["type"] == "turn_finished" || p["type"] == "turn_failed")
    });
    assert_eq!(end["type"], "turn_finished", "{end}");
    assert_model_saw_only_redactions(&server);
    let chat_path = dir.path().join(".bareagent/chat.md");
    client.wait_until(Duration::from_secs(10), "the chat file", |c| {
        c.text(&c.uri(".bareagent/chat.md"))
            .or_else(|| std::fs::read_to_string(&chat_path).ok())
            .is_some_and(|t| t.contains("done"))
    });
    let chat = client
        .text(&client.uri(".bareagent/chat.md"))
        .or_else(|| std::fs::read_to_string(&chat_path).ok())
        .unwrap_or_default();
    assert_no_key("the chat file", &chat);
    for entry in client.traffic() {
        assert_no_key("the editor traffic", &entry);
    }
    for (method, params) in client.notifications() {
        assert_no_key(&method, &params.to_string());
    }
    for (method, params) in client.server_requests() {
        assert_no_key(&method, &params.to_string());
    }
}
