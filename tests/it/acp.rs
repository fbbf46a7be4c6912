//! `bareagent acp` over real stdio, driven by a client on the official
//! Python ACP SDK (`tests/acp/driver.py`, `agent-client-protocol` from
//! PyPI) against the scripted model server. The driver plays an editor:
//! unsaved buffers that differ from the disk, terminals that really run,
//! scripted permission answers; it prints what the agent sent.
//!
//! The SDK's Python comes from BAREAGENT_ACP_PYTHON (`.ci/run` installs
//! it); without it these tests are skipped, unless BAREAGENT_REQUIRE_ACP
//! is set, as `.ci/run` does. The malformed-frames test needs no SDK.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{TEST_KEY, sent_tool_results, workspace};
use crate::support::model_server::{ModelServer, Reply};

const BIN: &str = env!("CARGO_BIN_EXE_bareagent");

pub(crate) fn python() -> Option<PathBuf> {
    match std::env::var_os("BAREAGENT_ACP_PYTHON") {
        Some(path) => Some(PathBuf::from(path)),
        None => {
            crate::support::peers::missing(
                crate::support::peers::Peer::AcpSdk,
                "BAREAGENT_ACP_PYTHON is not set (a python with agent-client-protocol)",
            );
            None
        }
    }
}

/// Runs the driver on `scenario` (the agent's command line added) and
/// returns its transcript.
pub(crate) fn drive(
    python: &Path,
    root: &Path,
    server: &ModelServer,
    scenario: Value,
) -> Vec<Value> {
    let home = tempfile::tempdir().expect("home");
    drive_in(python, root, server, home.path(), scenario)
}

/// [`drive`] with the user's home (settings, the record of their sessions)
/// in `home`, for runs that share it.
pub(crate) fn drive_in(
    python: &Path,
    root: &Path,
    server: &ModelServer,
    home: &Path,
    mut scenario: Value,
) -> Vec<Value> {
    let mut agent = vec![
        json!(BIN),
        json!("acp"),
        json!("--base-url"),
        json!(server.anthropic_base()),
    ];
    if let Some(extra) = scenario.get("agent_args").and_then(Value::as_array) {
        agent.extend(extra.iter().cloned());
    }
    scenario["agent"] = Value::Array(agent);
    scenario["cwd"] = json!(root);
    if let Some(config) = scenario.get("user_config").and_then(Value::as_str) {
        let dir = home.join("bareagent");
        std::fs::create_dir_all(&dir).expect("config dir");
        std::fs::write(dir.join("config.toml"), config).expect("user config");
    }
    let file = home.join("scenario.json");
    std::fs::write(&file, scenario.to_string()).expect("scenario");
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp/driver.py");
    let out = Command::new("timeout")
        .arg("120")
        .arg(python)
        .arg(driver)
        .arg(&file)
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("BAREAGENT_PROVIDER")
        .env_remove("BAREAGENT_MODEL")
        .env("XDG_CONFIG_HOME", home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("HOME", home)
        .output()
        .expect("run the driver");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "driver failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "transcript: {e}\n{}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

pub(crate) fn of_type<'t>(transcript: &'t [Value], kind: &str) -> Vec<&'t Value> {
    transcript.iter().filter(|e| e["type"] == kind).collect()
}

/// The position of the first event matching `what`, for order checks.
fn position(transcript: &[Value], what: impl Fn(&Value) -> bool) -> usize {
    transcript
        .iter()
        .position(what)
        .unwrap_or_else(|| panic!("not in the transcript: {transcript:#?}"))
}

/// The id `session/new` answered in a transcript.
pub(crate) fn session_id(transcript: &[Value]) -> String {
    of_type(transcript, "session")[0]["response"]["sessionId"]
        .as_str()
        .expect("session id")
        .to_string()
}

fn update_kind(event: &Value) -> &str {
    event["update"]["sessionUpdate"]
        .as_str()
        .unwrap_or_default()
}

fn stop_reasons(transcript: &[Value]) -> Vec<String> {
    of_type(transcript, "prompt_response")
        .iter()
        .map(|e| {
            e["response"]["stopReason"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// A client with the fs capabilities reads a Latin-1 file lossily and
/// would write it back as UTF-8: the model reads the disk's text instead,
/// and the edit is written on disk in the file's own encoding, not
/// through the client.
#[test]
fn a_file_not_in_utf8_is_read_and_written_in_its_encoding_past_the_client() {
    let Some(python) = python() else { return };
    let dir = workspace(&[]);
    let root = dir.path().canonicalize().expect("root");
    let menu = root.join("menu.txt");
    std::fs::write(&menu, b"caf\xe9\n").expect("menu");
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "menu.txt"})).into(),
        Reply::tool(
            "edit_file",
            json!({"path": "menu.txt", "old_string": "café", "new_string": "thé"}),
        )
        .into(),
        Reply::text("done").into(),
    ]);
    let transcript = drive(
        &python,
        &root,
        &server,
        json!({
            "fs": true,
            "answers": ["allow_once"],
            "steps": [{"new": {}}, {"prompt": "edit the menu"}],
        }),
    );
    let requests = server.requests();
    let read = &sent_tool_results(&requests[1].body)[0];
    assert!(
        read.0.contains("café") && read.0.contains("windows-1252"),
        "{read:?}"
    );
    let edited = &sent_tool_results(&requests[2].body)[0];
    assert!(!edited.1, "{edited:?}");
    assert!(
        of_type(&transcript, "write_text_file").is_empty(),
        "{transcript:#?}"
    );
    assert_eq!(std::fs::read(&menu).expect("menu"), b"th\xe9\n");
}

/// The editor's turn: the buffer is read (not the disk), the edit asks with
/// its diff and is written through the editor, the command runs in the
/// editor's terminal, and it all streams in order, ending with end_turn.
#[test]
fn a_turn_reads_the_buffer_asks_with_a_diff_writes_and_runs_in_the_editor() {
    let Some(python) = python() else { return };
    let dir = workspace(&[("notes.txt", "on disk\n")]);
    let root = dir.path().canonicalize().expect("root");
    let notes = root.join("notes.txt");
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "notes.txt"})).into(),
        Reply::tool(
            "edit_file",
            json!({"path": "notes.txt", "old_string": "in the buffer", "new_string": "edited"}),
        )
        .into(),
        Reply::tool("bash", json!({"command": "echo from-terminal"})).into(),
        Reply::text("all done")
            .with_thinking("pondering", "sig-1")
            .into(),
    ]);
    let transcript = drive(
        &python,
        &root,
        &server,
        json!({
            "fs": true, "terminal": true,
            "buffers": {notes.to_str().expect("path"): "in the buffer\n"},
            "answers": ["allow_once", "allow_once"],
            "steps": [{"new": {}}, {"prompt": "edit the notes"}],
        }),
    );

    // Read through the editor: the model saw the buffer's text.
    let reads = of_type(&transcript, "read_text_file");
    assert_eq!(reads[0]["path"], json!(notes), "{transcript:#?}");
    let requests = server.requests();
    let results = sent_tool_results(&requests[1].body);
    assert!(results[0].0.contains("in the buffer"), "{results:?}");
    assert!(!results[0].0.contains("on disk"), "{results:?}");

    // The edit asked with ACP diff content, first (a client that shows
    // only the first item shows the diff): old and new text; the question
    // names the call's kind, still pending.
    let asks = of_type(&transcript, "request_permission");
    assert_eq!(asks.len(), 2, "{transcript:#?}");
    let diff = &asks[0]["toolCall"]["content"][0];
    assert_eq!(diff["type"], "diff", "{:#?}", asks[0]);
    assert_eq!(asks[0]["toolCall"]["kind"], "edit", "{:#?}", asks[0]);
    assert_eq!(asks[0]["toolCall"]["status"], "pending", "{:#?}", asks[0]);
    assert_eq!(asks[1]["toolCall"]["kind"], "execute", "{:#?}", asks[1]);
    assert_eq!(diff["path"], json!(notes));
    assert_eq!(diff["oldText"], "in the buffer\n");
    assert_eq!(diff["newText"], "edited\n");
    let kinds: Vec<&str> = asks[0]["options"]
        .as_array()
        .expect("options")
        .iter()
        .filter_map(|o| o["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );

    // Written through the editor.
    let writes = of_type(&transcript, "write_text_file");
    assert_eq!(writes.len(), 1, "{transcript:#?}");
    assert_eq!(writes[0]["content"], "edited\n");

    // The command ran in the editor's terminal, and the question said so.
    let terminals = of_type(&transcript, "create_terminal");
    assert_eq!(terminals[0]["command"], "bash");
    assert_eq!(terminals[0]["args"], json!(["-c", "echo from-terminal"]));
    let asked = asks[1]["toolCall"]["content"].to_string();
    assert!(asked.contains("outside bareagent's sandbox"), "{asked}");
    let results = sent_tool_results(&requests[3].body);
    assert!(
        results
            .last()
            .is_some_and(|r| r.0.contains("from-terminal") && !r.1),
        "{results:?}"
    );
    assert!(!of_type(&transcript, "release_terminal").is_empty());

    // In order: each call shown, then asked, then done; the text; end_turn.
    let call = |tool: &'static str| {
        move |e: &Value| {
            update_kind(e) == "tool_call"
                && e["update"]["rawInput"].is_object()
                && e["update"]["title"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(tool))
        }
    };
    let read_call = position(&transcript, call("read_file"));
    let read_kind = &transcript[read_call]["update"];
    assert_eq!(read_kind["kind"], "read");
    // Every new call is pending until it runs.
    for shown in of_type(&transcript, "update")
        .into_iter()
        .filter(|e| update_kind(e) == "tool_call")
    {
        assert_eq!(shown["update"]["status"], "pending", "{shown:#?}");
    }
    assert_eq!(read_kind["locations"][0]["path"], json!(notes));
    let read_done = position(&transcript, |e| {
        update_kind(e) == "tool_call_update" && e["update"]["status"] == "completed"
    });
    let edit_call = position(&transcript, call("edit_file"));
    assert_eq!(transcript[edit_call]["update"]["kind"], "edit");
    let first_ask = position(&transcript, |e| e["type"] == "request_permission");
    let edit_id = transcript[edit_call]["update"]["toolCallId"].clone();
    let running = position(&transcript, |e| {
        update_kind(e) == "tool_call_update"
            && e["update"]["toolCallId"] == edit_id
            && e["update"]["status"] == "in_progress"
    });
    let write = position(&transcript, |e| e["type"] == "write_text_file");
    // Done, it still shows its diff (an update's content replaces the
    // last), then the result.
    let edit_done = position(&transcript, |e| {
        update_kind(e) == "tool_call_update"
            && e["update"]["toolCallId"] == edit_id
            && e["update"]["status"] == "completed"
    });
    let shown = &transcript[edit_done]["update"]["content"];
    assert_eq!(shown[0]["type"], "diff", "{shown:#}");
    assert_eq!(shown[0]["newText"], "edited\n", "{shown:#}");
    assert_eq!(shown[1]["type"], "content", "{shown:#}");
    let bash_call = position(&transcript, call("bash"));
    assert_eq!(transcript[bash_call]["update"]["kind"], "execute");
    let terminal = position(&transcript, |e| e["type"] == "create_terminal");
    let text = position(&transcript, |e| update_kind(e) == "agent_message_chunk");
    let said: String = transcript
        .iter()
        .filter(|e| update_kind(e) == "agent_message_chunk")
        .filter_map(|e| e["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(said, "all done");
    let thought: String = transcript
        .iter()
        .filter(|e| update_kind(e) == "agent_thought_chunk")
        .filter_map(|e| e["update"]["content"]["text"].as_str())
        .collect();
    assert_eq!(thought, "pondering");
    let thinking = position(&transcript, |e| update_kind(e) == "agent_thought_chunk");
    let end = position(&transcript, |e| e["type"] == "prompt_response");
    let order = [
        read_call, read_done, edit_call, first_ask, running, write, bash_call, terminal, thinking,
        text, end,
    ];
    assert!(order.is_sorted(), "{order:?}\n{transcript:#?}");
    assert_eq!(stop_reasons(&transcript), ["end_turn"]);
    assert_eq!(std::fs::read_to_string(&notes).expect("notes"), "edited\n");
}

/// session/cancel while the command runs in the editor's terminal: the
/// terminal is killed, the prompt ends `cancelled`, and the next prompt
/// sends the model a valid history (the call answered as cancelled).
#[test]
fn cancel_mid_command_ends_cancelled_with_a_valid_history() {
    let Some(python) = python() else { return };
    let dir = workspace(&[]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({"command": "sleep 30"})).into(),
        Reply::text("ok").into(),
    ]);
    let started = Instant::now();
    let transcript = drive(
        &python,
        &root,
        &server,
        json!({
            "fs": true, "terminal": true,
            "answers": ["allow_once"],
            "cancel_on_terminal": true,
            "steps": [{"new": {}}, {"prompt": "wait"}, {"prompt": "again"}],
        }),
    );
    assert_eq!(
        stop_reasons(&transcript),
        ["cancelled", "end_turn"],
        "{transcript:#?}"
    );
    assert!(
        !of_type(&transcript, "kill_terminal").is_empty(),
        "{transcript:#?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the command was not killed"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let results = sent_tool_results(&requests[1].body);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].1 && results[0].0.contains("Cancelled"),
        "{results:?}"
    );
}

/// session/cancel while a question is pending: the turn ends `cancelled`,
/// nothing runs, and the next prompt sends the model a valid history.
#[test]
fn cancel_while_asked_ends_cancelled_and_runs_nothing() {
    let Some(python) = python() else { return };
    let dir = workspace(&[]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({"command": "echo ran > ran.txt"})).into(),
        Reply::text("ok").into(),
    ]);
    let transcript = drive(
        &python,
        &root,
        &server,
        json!({
            "fs": true, "terminal": true, "cancel_on_permission": true,
            "steps": [{"new": {}}, {"prompt": "run"}, {"prompt": "again"}],
        }),
    );
    assert_eq!(
        stop_reasons(&transcript),
        ["cancelled", "end_turn"],
        "{transcript:#?}"
    );
    assert!(
        of_type(&transcript, "create_terminal").is_empty(),
        "{transcript:#?}"
    );
    assert!(!root.join("ran.txt").exists());
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let results = sent_tool_results(&requests[1].body);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].1, "{results:?}");
}

/// session/load in a new agent replays the stored session as updates.
#[test]
fn load_replays_a_stored_session() {
    let Some(python) = python() else { return };
    let dir = workspace(&[("a.txt", "alpha\n")]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "a.txt"})).into(),
        Reply::text("it says alpha").into(),
    ]);
    let home = tempfile::tempdir().expect("home");
    let first = drive_in(
        &python,
        &root,
        &server,
        home.path(),
        json!({"fs": true, "steps": [{"new": {}}, {"prompt": "what is in a.txt?"}]}),
    );
    let id = session_id(&first);

    // Loaded twice in one agent: the second replays what the first holds.
    let replayed = drive_in(
        &python,
        &root,
        &server,
        home.path(),
        json!({"fs": true, "steps": [{"load": id}, {"load": id}]}),
    );
    let shown = |events: &[Value]| -> Vec<(String, String)> {
        events
            .iter()
            .filter(|e| e["type"] == "update")
            .map(|e| {
                let u = &e["update"];
                let shown = u["content"]["text"]
                    .as_str()
                    .or(u["title"].as_str())
                    .or(u["status"].as_str());
                (
                    update_kind(e).to_string(),
                    shown.unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    let loads: Vec<usize> = replayed
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "loaded")
        .map(|(at, _)| at)
        .collect();
    assert_eq!(loads.len(), 2, "{replayed:#?}");
    let expected: Vec<(String, String)> = [
        ("user_message_chunk", "what is in a.txt?"),
        ("tool_call", "read_file a.txt"),
        ("tool_call_update", "completed"),
        ("agent_message_chunk", "it says alpha"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(shown(&replayed[..loads[0]]), expected, "{replayed:#?}");
    assert_eq!(
        shown(&replayed[loads[0]..loads[1]]),
        expected,
        "{replayed:#?}"
    );
    assert_eq!(server.requests().len(), 2, "loading asks the model nothing");

    // Another user's record of sessions does not vouch for it: refused.
    let stranger = drive(
        &python,
        &root,
        &server,
        json!({"fs": true, "steps": [{"load": id}]}),
    );
    let errors = of_type(&stranger, "error");
    assert_eq!(errors.len(), 1, "{stranger:#?}");
    assert!(of_type(&stranger, "update").is_empty(), "{stranger:#?}");
}

/// A client that offers neither fs nor terminals gets the disk and our own
/// (sandboxed) bash: no fs/* or terminal/* request reaches it.
#[test]
fn a_client_without_fs_or_terminals_gets_the_disk_and_our_bash() {
    let Some(python) = python() else { return };
    let dir = workspace(&[("notes.txt", "on disk\n")]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "notes.txt"})).into(),
        Reply::tool("bash", json!({"command": "echo own-bash"})).into(),
        Reply::tool(
            "todo_write",
            json!({"todos": [
                {"content": "look", "status": "completed"},
                {"content": "report", "status": "in_progress"},
            ]}),
        )
        .into(),
        Reply::text("done").into(),
    ]);
    let transcript = drive(
        &python,
        &root,
        &server,
        json!({
            "fs": false, "terminal": false,
            "buffers": {root.join("notes.txt").to_str().expect("path"): "in the buffer\n"},
            "answers": ["allow_once"],
            "steps": [{"new": {}}, {"prompt": "look"}],
        }),
    );
    for kind in ["read_text_file", "write_text_file", "create_terminal"] {
        assert!(
            of_type(&transcript, kind).is_empty(),
            "{kind}: {transcript:#?}"
        );
    }
    let asked = of_type(&transcript, "request_permission")[0]["toolCall"]["content"].to_string();
    assert!(!asked.contains("outside bareagent's sandbox"), "{asked}");
    let requests = server.requests();
    assert!(
        sent_tool_results(&requests[1].body)[0]
            .0
            .contains("on disk")
    );
    let results = sent_tool_results(&requests[2].body);
    assert!(
        results
            .last()
            .is_some_and(|r| r.0.contains("own-bash") && !r.1),
        "{results:?}"
    );
    // The plan from todo_write, as ACP's plan.
    let plans: Vec<&Value> = of_type(&transcript, "update")
        .into_iter()
        .filter(|e| update_kind(e) == "plan")
        .collect();
    assert_eq!(
        plans[0]["update"]["entries"],
        json!([
            {"content": "look", "priority": "medium", "status": "completed"},
            {"content": "report", "priority": "medium", "status": "in_progress"},
        ]),
        "{plans:?}"
    );
    assert_eq!(stop_reasons(&transcript), ["end_turn"]);
}

/// At the iteration cap the prompt ends with `max_turn_requests`; and MCP
/// servers the client passes that cannot start are said, not silently
/// dropped (the turn goes on without them).
#[test]
fn the_iteration_cap_ends_with_max_turn_requests() {
    let Some(python) = python() else { return };
    let dir = workspace(&[("a.txt", "a\n")]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "a.txt"})).into(),
        Reply::tool("read_file", json!({"path": "a.txt"})).into(),
    ]);
    let transcript = drive(
        &python,
        &root,
        &server,
        json!({
            "fs": true, "agent_args": ["--max-iterations", "1"],
            "steps": [{"new": {"mcp": ["files", "web"]}}, {"prompt": "loop"}],
        }),
    );
    assert_eq!(
        stop_reasons(&transcript),
        ["max_turn_requests"],
        "{transcript:#?}"
    );
    let said: String = of_type(&transcript, "update")
        .into_iter()
        .filter(|e| update_kind(e) == "agent_message_chunk")
        .map(|e| e["update"]["content"]["text"].to_string())
        .collect();
    assert!(
        said.contains("MCP server `files`") && said.contains("MCP server `web`"),
        "{said}"
    );
}

/// A 1×1 red PNG.
const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// The agent says it takes images, and a prompt's image reaches the model
/// as an image block between the prompt's texts; one it may not send
/// (SVG) refuses the prompt, and the model is never asked.
#[test]
fn a_prompts_image_reaches_the_model_as_an_image_block() {
    let Some(python) = python() else { return };
    let dir = workspace(&[]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![Reply::text("a red pixel").into()]);
    let image = |data: &str, mime: &str| json!({"image": {"data": data, "mime_type": mime}});
    let home = tempfile::tempdir().expect("home");
    let transcript = drive_in(
        &python,
        &root,
        &server,
        home.path(),
        json!({
            "steps": [
                {"new": {}},
                {"prompt": [{"text": "what is this?"}, image(RED_PIXEL_PNG, "image/png"), {"text": "one word"}]},
                {"prompt": [{"text": "and this?"}, image("PHN2Zz4=", "image/svg+xml")]},
            ],
        }),
    );
    let init = of_type(&transcript, "initialized");
    assert_eq!(
        init[0]["response"]["agentCapabilities"]["promptCapabilities"]["image"], true,
        "{init:?}"
    );
    assert_eq!(stop_reasons(&transcript), ["end_turn"], "{transcript:#?}");
    let errors = of_type(&transcript, "error");
    assert_eq!(errors.len(), 1, "{transcript:#?}");
    assert!(
        errors[0]["message"].to_string().contains("image/svg+xml")
            || errors[0]["data"].to_string().contains("image/svg+xml"),
        "{:?}",
        errors[0]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "the refused prompt asks no model");
    let messages = requests[0].body["messages"].as_array().expect("messages");
    let content = &messages.last().expect("the prompt")["content"];
    assert_eq!(content[0]["text"], "what is this?");
    assert_eq!(
        content[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": RED_PIXEL_PNG}})
    );
    assert_eq!(content[2]["text"], "one word");

    // Stored with the session, and shown again when it is loaded.
    let id = session_id(&transcript);
    let replayed = drive_in(
        &python,
        &root,
        &server,
        home.path(),
        json!({"steps": [{"load": id}]}),
    );
    let images: Vec<&Value> = of_type(&replayed, "update")
        .into_iter()
        .filter(|e| {
            update_kind(e) == "user_message_chunk" && e["update"]["content"]["type"] == "image"
        })
        .collect();
    assert_eq!(images.len(), 1, "{replayed:#?}");
    assert_eq!(images[0]["update"]["content"]["data"], RED_PIXEL_PNG);
    assert_eq!(images[0]["update"]["content"]["mimeType"], "image/png");
}

/// A refused answer (Anthropic's `stop_reason: "refusal"`) ends the prompt
/// with `refusal`, its text kept and its tool call not run; one refused
/// before any text leaves a history the next prompt continues.
#[test]
fn a_refused_answer_ends_the_prompt_with_refusal() {
    let Some(python) = python() else { return };
    let dir = workspace(&[("a.txt", "a\n")]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "a.txt"}))
            .with_text_first("I will not")
            .stopping_for("refusal")
            .into(),
        Reply::empty().stopping_for("refusal").into(),
        Reply::text("fine").into(),
    ]);
    let transcript = drive(
        &python,
        &root,
        &server,
        json!({
            "fs": true,
            "steps": [{"new": {}}, {"prompt": "one"}, {"prompt": "two"}, {"prompt": "three"}],
        }),
    );
    assert_eq!(
        stop_reasons(&transcript),
        ["refusal", "refusal", "end_turn"],
        "{transcript:#?}"
    );
    assert!(
        of_type(&transcript, "update")
            .iter()
            .all(|e| update_kind(e) != "tool_call"),
        "the refused answer's tool call is not run: {transcript:#?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let roles: Vec<&str> = requests[2].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user"],
        "{:#}",
        requests[2].body
    );
    let kept = &requests[2].body["messages"][1]["content"];
    assert_eq!(kept, &json!([{"type": "text", "text": "I will not"}]));
}

/// The MCP servers a client passes in `session/new` start with the session
/// through our MCP client: the real reference server (npm), its `echo`
/// (which it marks read-only, so nobody is asked) called by the model.
#[test]
fn the_clients_mcp_servers_give_the_model_their_tools() {
    let Some(python) = python() else { return };
    let Some(everything) = std::env::var_os("BAREAGENT_MCP_EVERYTHING") else {
        crate::support::peers::missing(
            crate::support::peers::Peer::McpServers,
            "BAREAGENT_MCP_EVERYTHING is not set",
        );
        return;
    };
    let dir = workspace(&[]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![
        Reply::tool(
            "mcp__everything__echo",
            json!({"message": "hi from the panel"}),
        )
        .into(),
        Reply::text("Echoed.").into(),
    ]);
    let mcp =
        json!({"name": "everything", "command": everything.to_string_lossy(), "args": ["stdio"]});
    let transcript = drive(
        &python,
        &root,
        &server,
        json!({
            "steps": [{"new": {"mcp": [mcp]}}, {"prompt": "echo it"}],
        }),
    );
    assert_eq!(stop_reasons(&transcript), ["end_turn"], "{transcript:#?}");
    let requests = server.requests();
    let results = crate::common::sent_tool_results(&requests[1].body);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].0.contains("hi from the panel") && !results[0].1,
        "{results:?}"
    );
    let tools = requests[0].body["tools"].to_string();
    assert!(tools.contains("mcp__everything__echo"), "{tools}");
}

/// The client's terminal is not our sandbox: a command reaches it only
/// when the user was asked about that very call and allowed it. One that a
/// rule or the mode allows without asking runs in our own sandboxed
/// process, though the client offers terminals. (Attack: an allow rule or
/// `bypass` as a way out of the sandbox.)
#[test]
fn commands_allowed_without_asking_never_run_in_the_editors_terminal() {
    let Some(python) = python() else { return };
    // (case, user config, steps before the prompt, answers, runs in the editor's terminal)
    let cases: [(&str, &str, Value, Value, bool); 4] = [
        (
            "asked and allowed",
            "",
            json!([]),
            json!(["allow_once"]),
            true,
        ),
        (
            "bypass mode",
            "",
            json!([{"set_mode": "bypass"}]),
            json!([]),
            false,
        ),
        (
            "allow rule",
            "[permissions]\nallow = [\"bash(echo sandboxed-run)\"]\n",
            json!([]),
            json!([]),
            false,
        ),
        (
            "asked and allowed always",
            "",
            json!([]),
            json!(["allow_always"]),
            true,
        ),
    ];
    for (case, config, before, answers, in_terminal) in cases {
        let dir = workspace(&[]);
        let root = dir.path().canonicalize().expect("root");
        let server = ModelServer::start(vec![
            Reply::tool("bash", json!({"command": "echo sandboxed-run"})).into(),
            Reply::text("done").into(),
        ]);
        let mut steps = vec![json!({"new": {}})];
        steps.extend(before.as_array().expect("steps").iter().cloned());
        steps.push(json!({"prompt": "run it"}));
        let transcript = drive(
            &python,
            &root,
            &server,
            json!({
                "fs": true, "terminal": true, "user_config": config,
                "answers": answers, "steps": steps,
            }),
        );
        let terminals = of_type(&transcript, "create_terminal").len();
        assert_eq!(terminals > 0, in_terminal, "{case}: {transcript:#?}");
        let results = sent_tool_results(&server.requests()[1].body);
        assert!(
            results
                .last()
                .is_some_and(|r| r.0.contains("sandboxed-run") && !r.1),
            "{case}: {results:?}"
        );
        assert_eq!(stop_reasons(&transcript), ["end_turn"], "{case}");
    }
}

/// The editor is only ever asked about paths inside the workspace: a path
/// that leaves it (`..`, absolute, through a link) is refused by the
/// resolver before any fs/* request. (Attack: the client's fs as a way to
/// read or write outside the root.)
#[test]
fn the_editor_is_never_asked_for_a_path_outside_the_workspace() {
    let Some(python) = python() else { return };
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("secret.txt"), "secret\n").expect("secret");
    let dir = workspace(&[("inside.txt", "inside\n")]);
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).expect("link");
    let root = dir.path().canonicalize().expect("root");
    let secret = outside.path().join("secret.txt");
    let secret = secret.to_str().expect("path");
    // (tool, input): each must fail without the editor hearing of it.
    let attacks = [
        ("read_file", json!({"path": "../secret.txt"})),
        ("read_file", json!({"path": secret})),
        ("read_file", json!({"path": "link/secret.txt"})),
        ("write_file", json!({"path": "../evil.txt", "content": "x"})),
        (
            "write_file",
            json!({"path": "link/evil.txt", "content": "x"}),
        ),
        (
            "edit_file",
            json!({"path": "link/secret.txt", "old_string": "secret", "new_string": "x"}),
        ),
    ];
    let calls: Vec<(&str, Value)> = attacks.iter().map(|(t, i)| (*t, i.clone())).collect();
    let server = ModelServer::start(vec![
        Reply::tools(calls).into(),
        Reply::tool("read_file", json!({"path": "inside.txt"})).into(),
        Reply::text("done").into(),
    ]);
    let transcript = drive(
        &python,
        &root,
        &server,
        json!({
            "fs": true, "terminal": true,
            "answers": ["allow_once", "allow_once", "allow_once"],
            "steps": [{"new": {}}, {"prompt": "try"}],
        }),
    );
    for event in of_type(&transcript, "read_text_file")
        .into_iter()
        .chain(of_type(&transcript, "write_text_file"))
    {
        let path = event["path"].as_str().unwrap_or_default();
        assert!(
            Path::new(path).starts_with(&root),
            "asked for {path}: {transcript:#?}"
        );
    }
    // The control: a path inside is read through the editor.
    assert_eq!(
        of_type(&transcript, "read_text_file").len(),
        1,
        "{transcript:#?}"
    );
    let results = sent_tool_results(&server.requests()[1].body);
    assert_eq!(results.len(), attacks.len(), "{results:?}");
    for ((tool, input), (text, is_error)) in attacks.iter().zip(&results) {
        assert!(
            *is_error && !text.contains("secret\n"),
            "{tool} {input}: {text}"
        );
    }
    assert!(!outside.path().join("evil.txt").exists());
    assert_eq!(std::fs::read_to_string(secret).expect("secret"), "secret\n");
}

/// `bareagent acp` in `cwd` with the user's files in `home`, for raw
/// frames: its stdin, and its stdout's lines as they come.
fn raw_agent(
    cwd: &Path,
    home: &Path,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::sync::mpsc::Receiver<String>,
) {
    let mut child = Command::new(BIN)
        .arg("acp")
        .current_dir(cwd)
        .env("XDG_CONFIG_HOME", home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    (child, stdin, lines)
}

/// Reads the agent's stdout lines until `count` JSON-RPC answers arrived
/// or the deadline passed.
fn answers(lines: &std::sync::mpsc::Receiver<String>, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    while got.len() < count {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                got.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")))
            }
            Err(_) => panic!("only {} answers: {got:#?}", got.len()),
        }
    }
    got
}

/// Malformed frames — not JSON, not JSON-RPC, not UTF-8, a batch — are
/// answered with JSON-RPC errors, bad parameters with a clear message,
/// and the agent keeps serving. No SDK needed: raw lines.
#[test]
fn malformed_frames_are_answered_and_the_agent_keeps_serving() {
    let dir = workspace(&[]);
    let home = tempfile::tempdir().expect("home");
    let (mut child, mut stdin, lines) = raw_agent(dir.path(), home.path());
    let mut send = |bytes: &[u8]| {
        stdin
            .write_all(bytes)
            .and_then(|()| stdin.write_all(b"\n"))
            .expect("write");
        stdin.flush().expect("flush");
    };
    send(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#);
    let init = answers(&lines, 1);
    assert_eq!(init[0]["result"]["protocolVersion"], 1, "{init:?}");
    assert_eq!(init[0]["result"]["agentCapabilities"]["loadSession"], true);

    // (frame, the error code it is answered with)
    let cases: &[(&[u8], i64)] = &[
        (b"not json", -32700),
        (b"{\"jsonrpc\":\"2.0\",\"id\":", -32700),
        (b"{\"foo\":1}", -32600),
        (b"[]", -32600),
        (b"\xff\xfe{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\"}", -32700),
        (br#"{"jsonrpc":"2.0","id":3,"method":"no/such/method","params":{}}"#, -32601),
        (br#"{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}"#, -32602),
        (br#"{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"/no/such/dir","mcpServers":[]}}"#, -32602),
        (br#"{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#, -32002),
    ];
    for (frame, code) in cases {
        send(frame);
        let answer = answers(&lines, 1);
        assert_eq!(
            answer[0]["error"]["code"],
            *code,
            "{}: {answer:?}",
            String::from_utf8_lossy(frame)
        );
    }
    // Still serving, with a clear word about what was refused.
    let cwd = dir.path().canonicalize().expect("root");
    let request = json!({"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd": cwd, "mcpServers":[]}});
    send(request.to_string().as_bytes());
    let answer = answers(&lines, 1);
    assert!(answer[0]["result"]["sessionId"].is_string(), "{answer:?}");
    assert_eq!(answer[0]["result"]["modes"]["currentModeId"], "default");
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "the agent did not exit at EOF");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `listed` pages of a transcript, from `from` on, as (id, title, cwd,
/// updatedAt) rows, and how many pages each `list` step took.
fn listed(transcript: &[Value]) -> Vec<Vec<(String, String, String, String)>> {
    of_type(transcript, "listed")
        .iter()
        .map(|page| {
            page["response"]["sessions"]
                .as_array()
                .expect("sessions")
                .iter()
                .map(|s| {
                    let text = |key: &str| s[key].as_str().unwrap_or_default().to_string();
                    (
                        text("sessionId"),
                        text("title"),
                        text("cwd"),
                        text("updatedAt"),
                    )
                })
                .collect()
        })
        .collect()
}

/// `session/list`, as `initialize` says it is offered: the workspace's
/// stored sessions (the ones `bareagent sessions` lists), last used first,
/// titled with their first prompt, 20 a page with `nextCursor` to the next;
/// a session prompted again moves to the top; the agent's own directory
/// without a `cwd`, none for a directory without sessions, an error for a
/// cursor it did not give.
#[test]
fn session_list_pages_through_the_workspaces_sessions_last_used_first() {
    let Some(python) = python() else { return };
    let dir = workspace(&[]);
    let root = dir.path().canonicalize().expect("root");
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    const SESSIONS: usize = 21;
    let mut replies: Vec<_> = (0..SESSIONS)
        .map(|n| Reply::text(&format!("answer {n}")).into())
        .collect();
    replies.push(Reply::text("again").into());
    let server = ModelServer::start(replies);
    let home = tempfile::tempdir().expect("home");
    let mut steps = Vec::new();
    for n in 0..SESSIONS {
        steps.push(json!({"new": {}}));
        steps.push(json!({"prompt": format!("prompt {n}\nsecond line")}));
    }
    let made = drive_in(
        &python,
        &root,
        &server,
        home.path(),
        json!({"steps": steps}),
    );
    let ids: Vec<String> = of_type(&made, "session")
        .iter()
        .map(|s| s["response"]["sessionId"].as_str().expect("id").to_string())
        .collect();
    assert_eq!(ids.len(), SESSIONS, "{made:#?}");

    // A new agent lists them; the oldest is prompted again.
    let oldest = ids[0].clone();
    let listing = drive_in(
        &python,
        &root,
        &server,
        home.path(),
        json!({"steps": [
            {"list": {}},
            {"load": oldest}, {"prompt": "and again"},
            {"list": {}},
            {"list": {"cwd": null}},
            {"list": {"cwd": elsewhere.path()}},
            {"list": {"cursor": "not-a-cursor"}},
        ]}),
    );
    let init = &of_type(&listing, "initialized")[0]["response"]["agentCapabilities"];
    assert_eq!(init["sessionCapabilities"]["list"], json!({}), "{init:#}");
    let pages = listed(&listing);
    assert_eq!(pages.len(), 7, "{listing:#?}");
    assert_eq!(
        (pages[0].len(), pages[1].len()),
        (20, 1),
        "a page of 20, then the rest"
    );
    let first: Vec<&(String, String, String, String)> = pages[0].iter().chain(&pages[1]).collect();
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    let listed_ids: Vec<String> = first.iter().map(|s| s.0.clone()).collect();
    assert_eq!(listed_ids, newest_first, "last used first, each once");
    for (n, (id, title, cwd, updated)) in first.iter().rev().enumerate() {
        assert_eq!(title, &format!("prompt {n}"), "{id}: the first line");
        assert_eq!(cwd, &root.display().to_string());
        assert!(
            updated.len() == 20 && updated.ends_with('Z') && updated.as_bytes()[10] == b'T',
            "{updated}"
        );
    }
    // Prompted again: now the first.
    let again: Vec<String> = pages[2]
        .iter()
        .chain(&pages[3])
        .map(|s| s.0.clone())
        .collect();
    assert_eq!(again[0], oldest, "{again:?}");
    assert_eq!(again.len(), SESSIONS);
    // No cwd: the agent's own directory (the workspace here).
    let own: Vec<String> = pages[4]
        .iter()
        .chain(&pages[5])
        .map(|s| s.0.clone())
        .collect();
    assert_eq!(own, again);
    assert!(pages[6].is_empty(), "another directory has none");
    let errors = of_type(&listing, "error");
    assert_eq!(errors.len(), 1, "{listing:#?}");
    assert!(
        errors[0].to_string().contains("not-a-cursor"),
        "{:#}",
        errors[0]
    );
}

/// A stored session's edits are shown again with their diffs when it is
/// loaded: an edit's replaced text and its replacement, a written file's
/// whole text.
#[test]
fn loaded_edits_are_shown_with_their_diffs() {
    let Some(python) = python() else { return };
    let dir = workspace(&[("notes.txt", "one\ntwo\n")]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![
        Reply::tool(
            "edit_file",
            json!({"path": "notes.txt", "old_string": "two", "new_string": "2"}),
        )
        .into(),
        Reply::tool(
            "write_file",
            json!({"path": "new.txt", "content": "fresh\n"}),
        )
        .into(),
        Reply::text("edited").into(),
    ]);
    let home = tempfile::tempdir().expect("home");
    let first = drive_in(
        &python,
        &root,
        &server,
        home.path(),
        json!({
            "fs": true, "answers": ["allow_once", "allow_once"],
            "steps": [{"new": {}}, {"prompt": "edit"}],
        }),
    );
    assert_eq!(stop_reasons(&first), ["end_turn"], "{first:#?}");
    let id = session_id(&first);
    let replayed = drive_in(
        &python,
        &root,
        &server,
        home.path(),
        json!({"fs": true, "steps": [{"load": id}]}),
    );
    let diffs: Vec<Value> = of_type(&replayed, "update")
        .into_iter()
        .filter(|e| update_kind(e) == "tool_call")
        .map(|e| e["update"]["content"].clone())
        .collect();
    let want = [
        json!({"type": "diff", "path": root.join("notes.txt"), "oldText": "two", "newText": "2"}),
        json!({"type": "diff", "path": root.join("new.txt"), "newText": "fresh\n"}),
    ];
    assert_eq!(
        diffs,
        want.iter().map(|d| json!([d])).collect::<Vec<_>>(),
        "{replayed:#?}"
    );
    // Their results keep showing them (an update's content replaces).
    let done: Vec<Value> = of_type(&replayed, "update")
        .into_iter()
        .filter(|e| update_kind(e) == "tool_call_update")
        .map(|e| e["update"]["content"][0].clone())
        .collect();
    assert_eq!(done, want, "{replayed:#?}");
}

/// An MCP server the client passes by URL (Streamable HTTP, as
/// `initialize` says it takes) starts with the session: the real reference
/// server on a loopback port, its `echo` called by the model.
#[test]
fn the_clients_http_mcp_servers_start_and_give_the_model_their_tools() {
    let Some(python) = python() else { return };
    let Some(everything) = crate::mcp::everything() else {
        return;
    };
    let http = crate::mcp::HttpServer::start(&everything);
    let dir = workspace(&[]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![
        Reply::tool("mcp__web__echo", json!({"message": "hi over HTTP"})).into(),
        Reply::text("Echoed.").into(),
    ]);
    let mcp = json!({"name": "web", "url": format!("http://127.0.0.1:{}/mcp", http.port)});
    let transcript = drive(
        &python,
        &root,
        &server,
        json!({"steps": [{"new": {"mcp": [mcp]}}, {"prompt": "echo it"}]}),
    );
    let init = &of_type(&transcript, "initialized")[0]["response"]["agentCapabilities"];
    assert_eq!(init["mcpCapabilities"]["http"], true, "{init:#}");
    assert_eq!(stop_reasons(&transcript), ["end_turn"], "{transcript:#?}");
    let requests = server.requests();
    let tools = requests[0].body["tools"].to_string();
    assert!(tools.contains("mcp__web__echo"), "{tools}");
    let results = sent_tool_results(&requests[1].body);
    assert!(
        results.len() == 1 && results[0].0.contains("Echo: hi over HTTP") && !results[0].1,
        "{results:?}"
    );
}

/// A session open in another agent (another editor window, a run) is not
/// loaded a second time: the error says who holds it and what to do, and
/// nothing is replayed. Once that agent ends, it loads.
#[test]
fn a_session_open_in_another_agent_is_refused_with_what_to_do() {
    let Some(python) = python() else { return };
    let dir = workspace(&[]);
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![Reply::text("hello").into()]);
    let home = tempfile::tempdir().expect("home");
    let made = drive_in(
        &python,
        &root,
        &server,
        home.path(),
        json!({"steps": [{"new": {}}, {"prompt": "hi"}]}),
    );
    let id = session_id(&made);

    // Another agent holds it open (raw frames, as an editor would send).
    let (mut holder, mut stdin, lines) = raw_agent(&root, home.path());
    let frames = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}),
        json!({"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId": id, "cwd": root, "mcpServers":[]}}),
    ];
    let deadline = Instant::now() + Duration::from_secs(20);
    for frame in frames {
        writeln!(stdin, "{frame}").expect("write");
        stdin.flush().expect("flush");
        // Its answer (after the replayed updates, for the load).
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = lines.recv_timeout(left).expect("an answer");
            let answer: Value = serde_json::from_str(&line).expect("json");
            if answer["id"] == frame["id"] {
                assert!(answer["result"].is_object(), "{answer}");
                break;
            }
        }
    }

    let refused = drive_in(
        &python,
        &root,
        &server,
        home.path(),
        json!({"steps": [{"load": id}]}),
    );
    let errors = of_type(&refused, "error");
    assert_eq!(errors.len(), 1, "{refused:#?}");
    let said = errors[0].to_string();
    assert!(
        said.contains("in use by another bareagent") && said.contains("end it first"),
        "{said}"
    );
    assert!(of_type(&refused, "update").is_empty(), "{refused:#?}");

    // Ended, it no longer holds the session.
    drop(stdin);
    assert!(holder.wait().expect("wait").success());
    let loaded = drive_in(
        &python,
        &root,
        &server,
        home.path(),
        json!({"steps": [{"load": id}]}),
    );
    assert!(of_type(&loaded, "error").is_empty(), "{loaded:#?}");
    assert_eq!(of_type(&loaded, "loaded").len(), 1, "{loaded:#?}");
}
