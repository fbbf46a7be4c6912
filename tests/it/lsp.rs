//! The language server over real stdio, driven by a test client that
//! answers like an editor, with the scripted model server behind it.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{TEST_KEY, workspace};
use crate::support::lsp_client::{
    ApplyEditBehaviour, ClientOptions, LspClient, MessageRequestAnswer,
};
use crate::support::model_server::{Fault, ModelServer, Reply, Step};
use crate::tools::{alive, read_pid};

pub(crate) const LONG: Duration = Duration::from_secs(20);

pub(crate) fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_bareagent"))
}

pub(crate) fn options(root: &Path, server: &ModelServer, mode: &str) -> ClientOptions {
    let mut options = ClientOptions::new(root);
    options.env.extend([
        ("ANTHROPIC_API_KEY".into(), TEST_KEY.into()),
        ("BAREAGENT_LOG".into(), "info".into()),
    ]);
    options.initialization_options = json!({
        "provider": "anthropic", "baseUrl": server.anthropic_base(), "permissionMode": mode, "idleTimeoutSecs": 5,
    });
    options
}

/// The user's config lives in `home` (not the developer's own).
pub(crate) fn with_user_config(options: &mut ClientOptions, home: &Path) {
    let home = home.display().to_string();
    options.env.push(("XDG_CONFIG_HOME".into(), home));
}

pub(crate) fn start(root: &Path, options: ClientOptions) -> LspClient {
    let client = LspClient::start(binary(), options);
    client.initialize();
    let _ = root;
    client
}

pub(crate) fn ask(client: &LspClient, prompt: Value) -> Value {
    let arguments = if prompt.is_null() {
        json!([])
    } else {
        json!([prompt])
    };
    client
        .request(
            "workspace/executeCommand",
            json!({"command": "bareagent.ask", "arguments": arguments}),
        )
        .unwrap_or_else(|e| panic!("ask failed: {e}"))
}

pub(crate) fn is_event(method: &str, params: &Value, kind: &str) -> bool {
    method == "bareagent/event" && params["type"] == kind
}

/// Waits for the turn to end; returns the finishing event.
pub(crate) fn turn_end(client: &LspClient, turn: u64) -> Value {
    client.wait_for_notification(LONG, "the turn to end", |method, params| {
        method == "bareagent/event"
            && params["turn"] == turn
            && (params["type"] == "turn_finished" || params["type"] == "turn_failed")
    })
}

pub(crate) fn events_of(client: &LspClient, kind: &str) -> Vec<Value> {
    client
        .notifications()
        .into_iter()
        .filter(|(m, p)| is_event(m, p, kind))
        .map(|(_, p)| p)
        .collect()
}

pub(crate) fn requests_of(client: &LspClient, method: &str) -> Vec<Value> {
    client
        .server_requests()
        .into_iter()
        .filter(|(m, _)| m == method)
        .map(|(_, p)| p)
        .collect()
}

pub(crate) const ON_DISK: &str = "def greet(name):\n    return 'hi ' + name\n";
pub(crate) const UNSAVED: &str = "def greet(name):\n    return 'Hello, ' + nme  # unsaved\n";

fn greet_script() -> Vec<Step> {
    vec![
        Reply::tool("read_file", json!({"path": "greet.py"}))
            .with_text_first("Reading it.")
            .into(),
        Reply::tool(
            "edit_file",
            json!({"path": "greet.py", "old_string": "+ nme", "new_string": "+ name"}),
        )
        .into(),
        Reply::text("Fixed the typo in your unsaved buffer.").into(),
    ]
}

#[test]
fn a_full_turn_reads_the_buffer_edits_through_the_editor_asks_and_streams_to_the_chat() {
    let dir = workspace(&[
        ("greet.py", ON_DISK),
        (".bareagent/chat.md", "# chat\n\n## You\n\nFix greet.py\n"),
    ]);
    let server = ModelServer::start(greet_script());
    let client = start(dir.path(), options(dir.path(), &server, "default"));
    let greet = client.open("greet.py", UNSAVED);
    let chat = client.open(".bareagent/chat.md", "# chat\n\n## You\n\nFix greet.py\n");

    // The prompt comes from the chat file, through its code action.
    let actions = client.code_actions(&chat, 4);
    let send = actions
        .iter()
        .find(|a| a["title"] == "Send to agent")
        .expect("a Send to agent action");
    let started = client
        .request("workspace/executeCommand", send["command"].clone())
        .unwrap();
    let turn = started["turn"].as_u64().unwrap();
    let end = turn_end(&client, turn);
    assert_eq!(end["type"], "turn_finished", "{end}");

    // It read the unsaved buffer, not the disk.
    let read = &crate::common::sent_tool_results(&server.requests()[1].body)[0].0;
    assert!(read.contains("nme  # unsaved"), "{read}");
    assert_eq!(
        server.requests()[0].body["messages"][0]["content"][0]["text"],
        "Fix greet.py"
    );
    // It asked, with the three actions, saying what would happen.
    let asked = requests_of(&client, "window/showMessageRequest");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap()
            .contains("edit_file greet.py (+1 -1)"),
        "{}",
        asked[0]
    );
    let titles: Vec<&str> = asked[0]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Allow once",
            "Allow for session",
            "Allow always: edit_file(./greet.py)",
            "Reject",
            "Show diff"
        ]
    );
    // The edit went through applyEdit, at the version the agent read, and stays unsaved.
    let edits = requests_of(&client, "workspace/applyEdit");
    let greet_edit = edits
        .iter()
        .find(|e| e["edit"]["documentChanges"][0]["textDocument"]["uri"] == greet)
        .expect("an edit of greet.py");
    assert_eq!(
        greet_edit["edit"]["documentChanges"][0]["textDocument"]["version"],
        1
    );
    assert_eq!(
        client.text(&greet).unwrap(),
        "def greet(name):\n    return 'Hello, ' + name  # unsaved\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("greet.py")).unwrap(),
        ON_DISK
    );
    // The chat shows the exchange, and the reply streamed in as events.
    client.wait_until(LONG, "the chat to show the answer", |c| {
        c.text(&chat).is_some_and(|t| {
            t.contains("Fixed the typo in your unsaved buffer.") && t.trim_end().ends_with("## You")
        })
    });
    let text = client.text(&chat).unwrap();
    assert!(text.contains("## Agent\n\nReading it."), "{text}");
    assert!(text.contains("- `read_file` greet.py"), "{text}");
    assert!(text.contains("**Edited:** `greet.py` (+1 −1)"), "{text}");
    let deltas: String = events_of(&client, "text_delta")
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(deltas, "Reading it.Fixed the typo in your unsaved buffer.");
    assert!(events_of(&client, "approval_requested").len() == 1);
    // A one-line status at the end.
    client.wait_for_notification(LONG, "the final status", |m, p| {
        m == "window/showMessage"
            && p["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("bareagent: done")
    });
    assert_eq!(client.shutdown().code(), Some(0));
}

fn approve_through_code_action(client: &LspClient, any_uri: &str) {
    client.wait_for_notification(LONG, "an approval request", |m, p| {
        is_event(m, p, "approval_requested")
    });
    let actions = client.code_actions(any_uri, 0);
    let allow = actions
        .iter()
        .find(|a| a["title"].as_str().unwrap().starts_with("Allow: edit_file"))
        .unwrap_or_else(|| panic!("{actions:?}"));
    client
        .request("workspace/executeCommand", allow["command"].clone())
        .unwrap();
}

#[test]
fn without_message_requests_the_approval_waits_for_a_code_action() {
    for answer in [
        None,
        Some(MessageRequestAnswer::MethodNotFound),
        Some(MessageRequestAnswer::Null),
    ] {
        let dir = workspace(&[("greet.py", ON_DISK), ("other.rs", "fn main() {}\n")]);
        let server = ModelServer::start(greet_script());
        let mut opts = options(dir.path(), &server, "default");
        match &answer {
            None => opts.show_message_request = false, // Helix-like: no capability
            Some(answer) => opts.default_message_answer = answer.clone(),
        }
        let client = start(dir.path(), opts);
        let greet = client.open("greet.py", UNSAVED);
        let other = client.open("other.rs", "fn main() {}\n");
        let turn = ask(&client, json!({"prompt": "fix it"}))["turn"]
            .as_u64()
            .unwrap();
        // Pending: shown as a diagnostic on the chat file, never allowed by itself.
        let diagnostics = client.wait_for_notification(LONG, "the approval diagnostic", |m, p| {
            m == "textDocument/publishDiagnostics"
                && p["uri"].as_str().unwrap_or("").ends_with("chat.md")
                && !p["diagnostics"].as_array().unwrap().is_empty()
        });
        assert!(
            diagnostics["diagnostics"][0]["message"]
                .as_str()
                .unwrap()
                .contains("Approval needed"),
            "{diagnostics}"
        );
        // The dialog's answer (if there was a dialog) has been judged: the
        // server logs that the approval stays pending, and says so.
        if answer.is_some() {
            client.wait_until(LONG, "the dialog's answer to be judged", |c| {
                c.stderr().contains("it stays pending")
            });
        }
        let status = client.execute("bareagent.status", json!([])).unwrap();
        assert_eq!(
            status["pendingApprovals"].as_array().map(Vec::len),
            Some(1),
            "{answer:?}: still pending: {status}"
        );
        assert_eq!(
            client.text(&greet).unwrap(),
            UNSAVED,
            "{answer:?}: nothing happened before the answer"
        );
        approve_through_code_action(&client, &other);
        assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
        assert!(
            client.text(&greet).unwrap().contains("+ name"),
            "{answer:?}"
        );
        client.wait_for_notification(LONG, "the diagnostic cleared", |m, p| {
            m == "textDocument/publishDiagnostics"
                && p["diagnostics"].as_array().is_some_and(|d| d.is_empty())
        });
    }
}

#[test]
fn a_stale_edit_is_refused_and_retried_after_reading_again() {
    let dir = workspace(&[("notes.txt", "alpha\nbeta\n")]);
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "notes.txt"})).into(),
        // The edit comes after the user typed.
        Reply::tool(
            "edit_file",
            json!({"path": "notes.txt", "old_string": "beta", "new_string": "BETA"}),
        )
        .with_delay(800)
        .into(),
        Reply::tool("read_file", json!({"path": "notes.txt"})).into(),
        Reply::tool(
            "edit_file",
            json!({"path": "notes.txt", "old_string": "beta", "new_string": "BETA"}),
        )
        .into(),
        Reply::text("done").into(),
    ]);
    let client = start(dir.path(), options(dir.path(), &server, "accept-edits"));
    let notes = client.open("notes.txt", "alpha\nbeta\n");
    let turn = ask(&client, json!("capitalise beta"))["turn"]
        .as_u64()
        .unwrap();
    client.wait_for_notification(LONG, "the first read", |m, p| is_event(m, p, "tool_result"));
    client.type_at_end(&notes, "gamma (typed by the user)\n");
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    let results: Vec<Value> = events_of(&client, "tool_result");
    assert_eq!(results[1]["is_error"], true, "{results:?}");
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("changed in the editor since you last read it"),
        "{}",
        results[1]
    );
    assert_eq!(results[3]["is_error"], false, "{results:?}");
    assert_eq!(
        client.text(&notes).unwrap(),
        "alpha\nBETA\ngamma (typed by the user)\n"
    );
}

/// What bareagent keeps in the workspace (the chat, the session) stays out
/// of the user's `git status`; the project's settings, meant to be
/// committed, do not; and a `.bareagent/.gitignore` the user wrote is kept.
#[test]
fn the_agents_own_files_stay_out_of_git_status() {
    for users_own in [None, Some("chat.md\n")] {
        let mut files = vec![(".bareagent/config.toml", "model = \"m\"\n")];
        if let Some(text) = users_own {
            files.push((".bareagent/.gitignore", text));
        }
        let dir = workspace(&files);
        crate::mcp::git(dir.path(), &["init", "-q"]);
        let server = ModelServer::start(vec![Reply::text("Hello.").into()]);
        let client = start(dir.path(), options(dir.path(), &server, "bypass"));
        client.execute("bareagent.openChat", json!([])).unwrap();
        let turn = ask(&client, json!("hi"))["turn"].as_u64().unwrap();
        assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
        assert!(dir.path().join(".bareagent/chat.md").exists());
        assert!(dir.path().join(".bareagent/sessions").is_dir());
        let status = std::process::Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=all"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        // (The test's user state lives in the workspace too: not ours to judge.)
        let status: String = String::from_utf8_lossy(&status.stdout)
            .lines()
            .filter(|line| !line.contains(".no-user-"))
            .map(|line| format!("{line}\n"))
            .collect();
        let expected = match users_own {
            None => "?? .bareagent/config.toml\n",
            Some(_) => "?? .bareagent/.gitignore\n?? .bareagent/config.toml\n",
        };
        assert_eq!(status, expected, "{users_own:?}");
        if let Some(text) = users_own {
            let kept = std::fs::read_to_string(dir.path().join(".bareagent/.gitignore")).unwrap();
            assert_eq!(kept, text);
        }
    }
}

#[test]
fn user_typing_in_the_chat_while_the_reply_streams_is_kept() {
    let dir = workspace(&[]);
    // The stream pauses for two seconds after its first delta, mid-reply.
    let reply = Reply::text("First part of the answer, then after a pause the second part.");
    let server = ModelServer::start(vec![
        Fault::Stall {
            reply,
            after_text: true,
            secs: 2,
        }
        .into(),
    ]);
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));
    client.execute("bareagent.openChat", json!([])).unwrap();
    let chat = client.open(
        ".bareagent/chat.md",
        &std::fs::read_to_string(dir.path().join(".bareagent/chat.md")).unwrap(),
    );
    let turn = ask(&client, json!("a long answer please"))["turn"]
        .as_u64()
        .unwrap();
    client.wait_until(LONG, "the first delta in the chat", |c| {
        c.text(&chat)
            .is_some_and(|t| t.contains("## Agent\n\nFirst") && !t.contains("second part."))
    });
    // The user types above the conversation while the reply is still streaming.
    client.edit(&chat, (0, 0), (0, 0), "NOTE FROM THE USER\n");
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    client.wait_until(LONG, "the rest of the reply", |c| {
        c.text(&chat).is_some_and(|t| t.contains("second part."))
    });
    let text = client.text(&chat).unwrap();
    assert!(
        text.starts_with("NOTE FROM THE USER\n# bareagent"),
        "{text}"
    );
    assert!(
        text.contains("## You\n\na long answer please\n\n## Agent\n\nFirst part of the answer, then after a pause the second part."),
        "{text}"
    );
    assert!(
        requests_of(&client, "workspace/applyEdit").len() >= 2,
        "streamed in more than one edit"
    );
}

#[test]
fn cancel_by_command_and_by_progress_cancel() {
    for by_progress in [false, true] {
        let dir = workspace(&[]);
        let server = ModelServer::start(vec![
            Reply::tool("bash", json!({"command": "echo $$ > pid; sleep 60"})).into(),
            Reply::text("never").into(),
        ]);
        let client = start(dir.path(), options(dir.path(), &server, "bypass"));
        let turn = ask(&client, json!("sleep"))["turn"].as_u64().unwrap();
        client.wait_until(LONG, "the command to write its pid", |_| {
            pid_written(dir.path())
        });
        if by_progress {
            let begin = client.wait_for_notification(LONG, "progress begin", |m, p| {
                m == "$/progress" && p["value"]["kind"] == "begin"
            });
            assert_eq!(begin["value"]["cancellable"], true);
            client.notify(
                "window/workDoneProgress/cancel",
                json!({"token": begin["token"]}),
            );
        } else {
            let answer = client.execute("bareagent.cancel", json!([])).unwrap();
            assert_eq!(answer["cancelled"], turn);
        }
        let end = turn_end(&client, turn);
        assert_eq!(end["type"], "turn_failed");
        assert_eq!(end["message"], "cancelled");
        let pid = read_pid(dir.path(), "pid");
        client.wait_until(LONG, "the command to die", |_| !alive(pid));
        client.wait_for_notification(LONG, "progress end", |m, p| {
            m == "$/progress" && p["value"]["kind"] == "end"
        });
        let status = client.execute("bareagent.status", json!([])).unwrap();
        assert_eq!(status["sessions"][0]["running"], Value::Null, "{status}");
        assert_eq!(server.requests().len(), 1);
    }
}

#[test]
fn edits_land_at_the_right_place_in_utf8_and_utf16() {
    let text = "// 日本語 😀 emoji\nlet greeting = \"世界\"; // 🦀\nlet x = 1;\n";
    for encodings in [
        vec!["utf-8".to_string(), "utf-16".to_string()],
        vec!["utf-16".to_string()],
        vec![],
    ] {
        let dir = workspace(&[("main.rs", text)]);
        let server = ModelServer::start(vec![
            Reply::tools(vec![
                ("edit_file", json!({"path": "main.rs", "old_string": "\"世界\"; // 🦀", "new_string": "\"🌍 world\"; // 🦀🦀"})),
                ("edit_file", json!({"path": "main.rs", "old_string": "x = 1", "new_string": "x = 2"})),
            ])
            .into(),
            Reply::text("ok").into(),
        ]);
        let mut opts = options(dir.path(), &server, "bypass");
        opts.position_encodings = encodings.clone();
        let client = start(dir.path(), opts);
        let expected = if encodings.contains(&"utf-8".to_string()) {
            "utf-8"
        } else {
            "utf-16"
        };
        assert_eq!(client.encoding(), expected);
        let uri = client.open("main.rs", text);
        // A user edit after the emoji, in the negotiated encoding, first.
        // "// 日本語 😀": 3 + 9 + 1 + 4 bytes, or 3 + 3 + 1 + 2 UTF-16 units.
        let after_emoji = if expected == "utf-8" { 17 } else { 9 };
        client.edit(&uri, (0, after_emoji), (0, after_emoji), "!");
        let turn = ask(&client, json!("edit"))["turn"].as_u64().unwrap();
        assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
        assert_eq!(
            client.text(&uri).unwrap(),
            "// 日本語 😀! emoji\nlet greeting = \"🌍 world\"; // 🦀🦀\nlet x = 2;\n",
            "{encodings:?}"
        );
    }
}

#[test]
fn ten_thousand_incremental_edits_keep_the_servers_copy_identical() {
    let original: String = (0..400)
        .map(|i| format!("line {i}: some text ü 中 😀\n"))
        .collect();
    let dir = workspace(&[("big.txt", &original)]);
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "big.txt", "limit": 5000})).into(),
        Reply::text("read").into(),
    ]);
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));
    let uri = client.open("big.txt", &original);
    let mut seed = 7u64;
    for i in 0..10_000u32 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let line = ((seed >> 33) % 400) as u32;
        let character = ((seed >> 20) % 30) as u32;
        let text = ["x", "", "é", "🎉", "\n", "ab"][(i % 6) as usize];
        let end_char = character + ((seed >> 10) % 3) as u32;
        client.edit(&uri, (line, character), (line, end_char), text);
    }
    let turn = ask(&client, json!("read big.txt"))["turn"]
        .as_u64()
        .unwrap();
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    let read = &crate::common::sent_tool_results(&server.requests()[1].body)[0].0;
    let numbered: String = client
        .text(&uri)
        .unwrap()
        .lines()
        .enumerate()
        .map(|(i, line)| format!("{:>6}\t{line}\n", i + 1))
        .collect();
    assert_eq!(read, &numbered);
}

#[test]
fn malformed_messages_get_errors_or_are_dropped_and_the_server_keeps_serving() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![]);
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));
    let status = || client.execute("bareagent.status", json!([]));
    client.send_raw(b"Content-Length: 9\r\n\r\n{not json");
    client.send_raw(b"Content-Length: 4\r\n\r\n\xff\xfe\xfd\xfc");
    client.send_raw(b"Content-Length: 26\r\n\r\n{\"id\": 777, \"hello\": true}");
    let body = r#"{"jsonrpc":"2.0","id":778,"method":"workspace/executeCommand","params":{"command":"bareagent.status"}}"#;
    client.send_raw(format!("Content-Length: {}\r\n\r\n{body}", body.len() + 25).as_bytes());
    assert!(status().is_ok(), "still serving after bad frames");
    assert!(status().is_ok());
    // Bad params, an unknown command, an unknown method, nothing to
    // approve: errors, not crashes. (method, params, code, message part)
    let bad: [(&str, Value, i64, &str); 4] = [
        (
            "workspace/executeCommand",
            json!({"command": 5}),
            -32602,
            "",
        ),
        (
            "workspace/executeCommand",
            json!({"command": "bareagent.nope"}),
            -32602,
            "unknown command",
        ),
        ("textDocument/nonsense", json!({}), -32601, ""),
        (
            "workspace/executeCommand",
            json!({"command": "bareagent.approve"}),
            -32602,
            "no approval is pending",
        ),
    ];
    for (method, params, code, message) in bad {
        let error = client.request(method, params.clone()).unwrap_err();
        assert_eq!(error["code"], code, "{method} {params}: {error}");
        assert!(
            error["message"].as_str().unwrap().contains(message),
            "{method} {params}: {error}"
        );
    }
    // A change for a document that is not open, positions out of range.
    client.notify("textDocument/didChange", json!({"textDocument": {"uri": "file:///nowhere.txt", "version": 3}, "contentChanges": [{"text": "x"}]}));
    let uri = client.open("a.txt", "one\n");
    client.notify("textDocument/didChange", json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": 99, "character": 99}, "end": {"line": 120, "character": 0}}, "text": "tail"}]}));
    assert!(status().is_ok());
    // The non-JSON-RPC object with an id got an error answer with that id.
    let answered = client.response(777, Duration::from_secs(2));
    assert!(
        matches!(answered, Some(Err(ref e)) if e["code"] == -32600),
        "{answered:?}"
    );
    assert!(client.is_running());
    assert!(
        client.stderr().contains("dropped a bad frame"),
        "logged: {}",
        client.stderr()
    );
    assert_eq!(client.shutdown().code(), Some(0));
}

#[test]
fn five_turns_waiting_for_approval_do_not_block_requests_or_cancellation() {
    let dir = workspace(&[]);
    let mut script: Vec<Step> = (0..5)
        .map(|i| Reply::tool("bash", json!({"command": format!("echo session {i}")})).into())
        .collect();
    script.extend((0..5).map(|_| Step::from(Reply::text("rejected, stopping"))));
    let server = ModelServer::start(script);
    let mut opts = options(dir.path(), &server, "default");
    opts.default_message_answer = MessageRequestAnswer::NeverAnswer;
    let client = start(dir.path(), opts);
    let mut turns = Vec::new();
    for i in 0..5 {
        let answer = ask(
            &client,
            json!({"prompt": "run it", "session": format!("s{i}")}),
        );
        turns.push(answer["turn"].as_u64().unwrap());
    }
    client.wait_until(LONG, "five pending approvals", |c| {
        events_of(c, "approval_requested").len() == 5
    });
    // The server still answers, and honours $/cancelRequest.
    for _ in 0..3 {
        let status = client.execute("bareagent.status", json!([])).unwrap();
        assert_eq!(status["pendingApprovals"].as_array().unwrap().len(), 5);
    }
    let id = client.request_async(
        "workspace/executeCommand",
        json!({"command": "bareagent.status"}),
    );
    client.notify("$/cancelRequest", json!({"id": id}));
    assert!(
        client.response(id, Duration::from_secs(5)).is_some(),
        "answered or cancelled, not stuck"
    );
    // Each dialog task is spawned as its approval is announced; since the
    // fifth, the server has answered four requests on its one runtime thread,
    // so a second dialog, had one been sent, came before those answers.
    assert_eq!(
        requests_of(&client, "window/showMessageRequest").len(),
        1,
        "one dialog at a time"
    );
    for _ in 0..5 {
        client.execute("bareagent.reject", json!([])).unwrap();
    }
    for turn in turns {
        assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    }
}

#[test]
fn shutdown_cancels_turns_and_kills_their_commands_and_closing_stdin_ends_the_server() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({"command": "echo $$ > pid; sleep 60"})).into(),
    ]);
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));
    ask(&client, json!("sleep"));
    client.wait_until(LONG, "the command to write its pid", |_| {
        pid_written(dir.path())
    });
    let pid = read_pid(dir.path(), "pid");
    assert_eq!(client.shutdown().code(), Some(0));
    client.wait_until(LONG, "the command to die", |_| !alive(pid));

    let server = ModelServer::start(vec![]);
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));
    let status = client.close_stdin_and_wait(Duration::from_secs(10));
    assert_eq!(status.and_then(|s| s.code()), Some(0));
}

#[test]
fn fix_with_agent_and_ask_about_selection_code_actions() {
    let dir = workspace(&[("lib.rs", "fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n")]);
    let server = ModelServer::start(vec![Reply::text("It subtracts; it should add.").into()]);
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));
    let uri = client.open("lib.rs", "fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n");
    let range = json!({"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 9}});
    let diagnostic = json!({"range": range, "message": "add subtracts", "source": "clippy"});
    let actions = client
        .request("textDocument/codeAction", json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": [diagnostic]}}))
        .unwrap();
    let titles: Vec<&str> = actions
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        ["Fix with agent: add subtracts", "Ask agent about selection"]
    );
    let fix = client
        .request("workspace/executeCommand", actions[0]["command"].clone())
        .unwrap();
    assert_eq!(
        turn_end(&client, fix["turn"].as_u64().unwrap())["type"],
        "turn_finished"
    );
    let prompt = &server.requests()[0].body["messages"][0]["content"][0]["text"];
    assert_eq!(
        prompt,
        "Fix this problem in lib.rs at line 2: add subtracts"
    );
    // The selection is quoted into the chat, for the user to ask about.
    client
        .request("workspace/executeCommand", actions[1]["command"].clone())
        .unwrap();
    client.wait_until(LONG, "the quote in the chat", |_| {
        std::fs::read_to_string(dir.path().join(".bareagent/chat.md"))
            .is_ok_and(|t| t.contains("About `lib.rs`, lines 2–2:\n\n```rs\na - b\n```"))
    });
}

#[test]
fn settings_come_from_initialization_options_and_configuration_and_keys_are_ignored() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Reply::text("hi").into()]);
    let mut opts = options(dir.path(), &server, "bypass");
    opts.initialization_options["apiKey"] = json!("sk-should-be-ignored");
    opts.configuration = json!({"model": "from-configuration"});
    let client = start(dir.path(), opts);
    let turn = ask(&client, json!("hello"))["turn"].as_u64().unwrap();
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    let request = &server.requests()[0];
    assert_eq!(request.body["model"], "from-configuration");
    assert_eq!(request.header("x-api-key"), Some(TEST_KEY));
    assert!(
        client
            .stderr()
            .contains("keys are read from the environment only")
    );
}

/// A malformed editor setting is dropped alone, never the deny rules with
/// it; a permission setting that cannot be read stops turns with a clear
/// error rather than run without it.
#[test]
fn a_malformed_setting_never_takes_the_deny_rules_with_it() {
    // (settings over the "bypass" options, what the turn ends with, what the bash call got)
    let cases: [(Value, &str, &str); 2] = [
        (
            json!({"permissions": {"deny": ["bash"]}, "maxIterations": "many"}),
            "turn_finished",
            "Denied by the permission rule `bash`",
        ),
        (
            json!({"permissionMode": "yolo"}),
            "turn_failed",
            "cannot be read (`permissionMode`",
        ),
    ];
    for (settings, ending, said) in cases {
        let dir = workspace(&[]);
        let server = ModelServer::start(vec![
            Reply::tool("bash", json!({"command": "echo ran"})).into(),
            Reply::text("done").into(),
        ]);
        let mut opts = options(dir.path(), &server, "bypass");
        for (key, value) in settings.as_object().unwrap() {
            opts.initialization_options[key] = value.clone();
        }
        let client = start(dir.path(), opts);
        let turn = ask(&client, json!("run it"))["turn"].as_u64().unwrap();
        let end = turn_end(&client, turn);
        assert_eq!(end["type"], ending, "{settings}: {end}");
        let told = match ending {
            "turn_failed" => end["message"].as_str().unwrap().to_string(),
            _ => crate::common::sent_tool_results(&server.requests()[1].body)[0]
                .0
                .clone(),
        };
        assert!(told.contains(said), "{settings}: {told}");
        assert!(
            !told.contains("ran\n"),
            "{settings}: the command ran: {told}"
        );
    }
}

#[test]
fn files_not_open_are_created_and_edited_through_the_editor() {
    for resource_operations in [true, false] {
        let dir = workspace(&[("old.txt", "one\ntwo\n")]);
        let server = ModelServer::start(vec![
            Reply::tools(vec![
                (
                    "write_file",
                    json!({"path": "src/new.txt", "content": "fresh\n"}),
                ),
                (
                    "edit_file",
                    json!({"path": "old.txt", "old_string": "two", "new_string": "TWO"}),
                ),
                ("read_file", json!({"path": "old.txt"})),
            ])
            .into(),
            Reply::text("ok").into(),
        ]);
        let mut opts = options(dir.path(), &server, "bypass");
        opts.resource_operations = resource_operations;
        let client = start(dir.path(), opts);
        let turn = ask(&client, json!("make files"))["turn"].as_u64().unwrap();
        assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
        let results = events_of(&client, "tool_result");
        assert!(
            results.iter().all(|r| r["is_error"] == false),
            "{results:?}"
        );
        let edits = requests_of(&client, "workspace/applyEdit");
        let old = client.uri("old.txt");
        // An existing file not open in the editor: a versionless edit; the
        // editor holds the change, unsaved; the agent reads it back.
        let edit = edits
            .iter()
            .find(|e| e.to_string().contains(&old))
            .expect("an edit of old.txt");
        assert_eq!(
            edit["edit"]["documentChanges"][0]["textDocument"]["version"],
            Value::Null,
            "{edit}"
        );
        assert_eq!(client.text(&old).unwrap(), "one\nTWO\n");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("old.txt")).unwrap(),
            "one\ntwo\n"
        );
        assert!(
            results[2]["content"].as_str().unwrap().contains("TWO"),
            "the read saw the edit: {}",
            results[2]
        );
        let new = client.uri("src/new.txt");
        if resource_operations {
            let create = edits
                .iter()
                .find(|e| e.to_string().contains("\"create\""))
                .expect("a create operation");
            assert_eq!(create["edit"]["documentChanges"][0]["kind"], "create");
            assert!(
                create["edit"]["documentChanges"][0]["options"].is_null(),
                "never ignoreIfExists: {create}"
            );
            assert_eq!(client.text(&new).unwrap(), "fresh\n");
        } else {
            // No resource operations: a new file is written to disk.
            assert!(!edits.iter().any(|e| e.to_string().contains(&new)));
            assert_eq!(
                std::fs::read_to_string(dir.path().join("src/new.txt")).unwrap(),
                "fresh\n"
            );
        }
    }
}

/// A file not open in the editor and not UTF-8: the editor might decode
/// it otherwise, so an edit placed on our text could land elsewhere in its;
/// it is written on disk instead, in its own encoding, and no edit is sent.
#[test]
fn a_file_not_open_and_not_utf8_is_edited_on_disk_in_its_encoding() {
    let dir = workspace(&[]);
    let menu = dir.path().join("menu.txt");
    std::fs::write(&menu, b"caf\xe9\n").unwrap();
    let server = ModelServer::start(vec![
        Reply::tool(
            "edit_file",
            json!({"path": "menu.txt", "old_string": "café", "new_string": "thé"}),
        )
        .into(),
        Reply::text("ok").into(),
    ]);
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));
    let turn = ask(&client, json!("edit"))["turn"].as_u64().unwrap();
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    let result = &events_of(&client, "tool_result")[0];
    assert_eq!(result["is_error"], false, "{result}");
    assert!(requests_of(&client, "workspace/applyEdit").is_empty());
    assert_eq!(std::fs::read(&menu).unwrap(), b"th\xe9\n");
}

#[test]
fn an_edit_the_editor_refuses_or_silently_skips_is_an_error_for_the_model() {
    for behaviour in [ApplyEditBehaviour::Refuse, ApplyEditBehaviour::NeovimLike] {
        let dir = workspace(&[]);
        let server = ModelServer::start(vec![
            Reply::tool(
                "edit_file",
                json!({"path": "a.txt", "old_string": "x", "new_string": "y"}),
            )
            .into(),
            Reply::text("could not").into(),
        ]);
        let mut opts = options(dir.path(), &server, "bypass");
        opts.apply_edit = behaviour.clone();
        let client = start(dir.path(), opts);
        let uri = client.open("a.txt", "x\n");
        if matches!(behaviour, ApplyEditBehaviour::NeovimLike) {
            // The server believes version 5; the editor is at 1, so it skips
            // the edit — and still answers `applied: true`, as Neovim does.
            client.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": 5}, "contentChanges": []}),
            );
        }
        let turn = ask(&client, json!("edit"))["turn"].as_u64().unwrap();
        assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
        let result = &events_of(&client, "tool_result")[0];
        assert_eq!(result["is_error"], true, "{behaviour:?}: {result}");
        let text = result["content"].as_str().unwrap();
        assert!(
            text.contains("read it again") || text.contains("read the file again"),
            "{text}"
        );
        assert_eq!(client.text(&uri).unwrap(), "x\n");
    }
}

/// Every text the user's messages of a model request hold.
pub(crate) fn user_texts(body: &Value) -> Vec<String> {
    let mut texts = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        if message["role"] != "user" {
            continue;
        }
        match &message["content"] {
            Value::String(text) => texts.push(text.clone()),
            content => texts.extend(
                content
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b["text"].as_str().map(str::to_string)),
            ),
        }
    }
    texts
}

#[test]
fn a_new_session_during_a_turn_stays_empty_and_never_runs_two_turns_at_once() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({"command": "echo old"})).into(),
        Reply::tool("bash", json!({"command": "echo new"})).into(),
    ]);
    let mut opts = options(dir.path(), &server, "default");
    // Both turns wait for an approval nobody gives: each is mid-turn as
    // long as the test needs.
    opts.default_message_answer = MessageRequestAnswer::NeverAnswer;
    // The chat is open and every edit of it refused: a cancelled turn takes
    // a while (retries) to write its footer, so the new turn usually starts
    // before the old one ends. Either order must hold.
    opts.apply_edit = ApplyEditBehaviour::Refuse;
    let client = start(dir.path(), opts);
    client.open(".bareagent/chat.md", "# chat\n");
    let asking = |c: &LspClient, turn: u64| {
        events_of(c, "approval_requested")
            .iter()
            .any(|e| e["turn"] == turn)
    };
    let old = ask(&client, json!("old prompt"))["turn"].as_u64().unwrap();
    client.wait_until(LONG, "the old turn to ask", |c| asking(c, old));

    let cleared = client.execute("bareagent.newSession", json!([])).unwrap();
    assert_eq!(cleared["cleared"], true);
    let started = ask(&client, json!("new prompt"));
    assert_eq!(started["queued"], false, "{started}");
    let new = started["turn"].as_u64().unwrap();
    turn_end(&client, old);
    client.wait_until(LONG, "the new turn to ask", |c| asking(c, new));

    // Whether the old turn ended before or after the new one started, the
    // new session's history is the new prompt alone…
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        user_texts(&requests[1].body),
        vec!["new prompt".to_string()]
    );
    // …and the new turn is still the session's: a third ask joins it.
    let third = ask(&client, json!("third prompt"));
    assert_eq!(third["queued"], true, "a second turn started: {third}");
    assert_eq!(third["turn"], new);
    let status = client.execute("bareagent.status", json!([])).unwrap();
    let main = status["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "main")
        .cloned()
        .unwrap();
    assert_eq!(main["running"], new, "{status}");

    client.execute("bareagent.cancel", json!([])).unwrap();
    turn_end(&client, new);
    assert_eq!(server.requests().len(), 2, "no other turn called the model");
    assert_eq!(client.shutdown().code(), Some(0));
}

#[test]
fn a_session_asks_one_question_at_a_time_in_call_order() {
    let (dir, server) = crate::approvals::two_sensitive_reads();
    let mut opts = options(dir.path(), &server, "default");
    opts.default_message_answer = MessageRequestAnswer::NeverAnswer;
    let client = start(dir.path(), opts);
    let pending = || {
        client.execute("bareagent.status", json!([])).unwrap()["pendingApprovals"]
            .as_array()
            .unwrap()
            .clone()
    };
    let turn = ask(&client, json!("read both"))["turn"].as_u64().unwrap();
    for (n, path) in [".env", "config/.env.local"].iter().enumerate() {
        client.wait_until(LONG, "the next question", |c| {
            events_of(c, "approval_requested").len() > n
        });
        let asked = &events_of(&client, "approval_requested")[n];
        assert_eq!(asked["summary"], *path, "{asked}");
        let open = pending();
        assert_eq!(open.len(), 1, "one question at a time: {open:?}");
        assert_eq!(open[0]["id"], asked["id"]);
        client
            .execute("bareagent.approve", json!([{"id": asked["id"]}]))
            .unwrap();
    }
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    let sent = crate::common::sent_tool_results(&server.requests()[1].body);
    assert!(sent.iter().all(|(_, is_error)| !is_error), "{sent:?}");
}

/// "Allow for session" from a chat view: `bareagent.approveSession` adds
/// the rule for the session, so the same command is not asked again; a
/// question that is not an edit has no review fields.
#[test]
fn approve_session_allows_the_same_command_for_the_rest_of_the_session() {
    let dir = workspace(&[]);
    let echo = || Reply::tool("bash", json!({"command": "echo hi"})).into();
    let server = ModelServer::start(vec![echo(), echo(), Reply::text("done").into()]);
    let mut opts = options(dir.path(), &server, "default");
    opts.default_message_answer = MessageRequestAnswer::NeverAnswer;
    let client = start(dir.path(), opts);
    let turn = ask(&client, json!("echo twice"))["turn"].as_u64().unwrap();
    client.wait_until(LONG, "the question", |c| {
        !events_of(c, "approval_requested").is_empty()
    });
    let asked = events_of(&client, "approval_requested")[0].clone();
    assert_eq!(
        (&asked["path"], &asked["uri"], &asked["proposed"]),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    let answer = client
        .execute("bareagent.approveSession", json!([{"id": asked["id"]}]))
        .unwrap();
    assert_eq!(answer["resolved"], asked["id"], "{answer}");
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    assert_eq!(
        events_of(&client, "approval_requested").len(),
        1,
        "asked once"
    );
    let sent = crate::common::sent_tool_results(&server.requests()[2].body);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(
        sent.iter()
            .all(|(text, is_error)| text.starts_with("hi") && !is_error),
        "both ran: {sent:?}"
    );
    assert_eq!(client.shutdown().code(), Some(0));
}

/// In the editor: the untrusted project's widening settings are ignored and
/// the user is told once; `bareagent.trustWorkspace`, confirmed in the
/// editor's dialog, records the trust, and the next session applies them.
#[test]
fn trust_workspace_in_the_editor() {
    let dir = workspace(&[(
        ".bareagent/config.toml",
        "[permissions]\nallow = [\"bash(echo:*)\"]\n",
    )]);
    let config_home = tempfile::tempdir().unwrap();
    let bash = || Reply::tool("bash", json!({"command": "echo trusted"})).into();
    let server = ModelServer::start(vec![
        bash(),
        Reply::text("first").into(),
        bash(),
        Reply::text("second").into(),
        bash(),
        Reply::text("third").into(),
    ]);
    let mut opts = options(dir.path(), &server, "default");
    with_user_config(&mut opts, config_home.path());
    // Rejects the bash question; then confirms the trust dialog.
    opts.message_answers = vec![
        MessageRequestAnswer::Pick("Reject".into()),
        MessageRequestAnswer::Pick("Reject".into()),
        MessageRequestAnswer::Pick("Trust".into()),
    ];
    opts.default_message_answer = MessageRequestAnswer::Pick("Reject".into());
    let client = start(dir.path(), opts);
    let notice = |client: &LspClient| {
        client
            .notifications()
            .into_iter()
            .filter(|(m, p)| {
                m == "window/showMessage"
                    && p["message"].as_str().unwrap_or("").contains("not trusted")
            })
            .count()
    };
    for round in 0..2 {
        let turn = ask(&client, json!({"prompt": "go"}))["turn"]
            .as_u64()
            .unwrap();
        turn_end(&client, turn);
        let sent = crate::common::sent_tool_results(&server.requests()[2 * round + 1].body);
        assert!(
            sent[0].1,
            "round {round}: the untrusted allow rule let bash run: {sent:?}"
        );
    }
    assert_eq!(notice(&client), 1, "told once, not every turn");

    let answer = client
        .execute("bareagent.trustWorkspace", json!([]))
        .unwrap();
    assert_eq!(answer["trusted"], true, "{answer}");
    let text = std::fs::read_to_string(config_home.path().join("bareagent/config.toml")).unwrap();
    assert!(text.contains("trusted = true"), "{text}");

    client.execute("bareagent.newSession", json!([])).unwrap();
    let turn = ask(&client, json!({"prompt": "go"}))["turn"]
        .as_u64()
        .unwrap();
    turn_end(&client, turn);
    let sent = crate::common::sent_tool_results(&server.requests()[5].body);
    assert_eq!(sent[0], ("trusted\n".to_string(), false), "trusted now");
    assert_eq!(client.shutdown().code(), Some(0));
}

/// The agent rewrites its own settings (asked, and allowed once): the rules
/// it wrote do not reach the running session; a new session reads them.
#[test]
fn settings_the_agent_changed_are_not_reloaded_into_its_session() {
    let dir = workspace(&[(".bareagent/config.toml", "# project settings\n")]);
    let config_home = tempfile::tempdir().unwrap();
    let trust = crate::common::bareagent(dir.path())
        .env("XDG_CONFIG_HOME", config_home.path())
        .arg("trust")
        .output()
        .unwrap();
    assert!(trust.status.success());
    let bash = || Reply::tool("bash", json!({"command": "echo escalated"})).into();
    let server = ModelServer::start(vec![
        Reply::tool(
            "write_file",
            json!({"path": ".bareagent/config.toml", "content": "[permissions]\nallow = [\"bash(echo:*)\"]\n"}),
        )
        .into(),
        bash(),
        Reply::text("done").into(),
        bash(),
        Reply::text("done").into(),
    ]);
    let mut opts = options(dir.path(), &server, "accept-edits");
    with_user_config(&mut opts, config_home.path());
    // The write asks (a power file, even in accept-edits): allowed once.
    // Every later question is rejected.
    opts.message_answers = vec![MessageRequestAnswer::Pick("Allow once".into())];
    opts.default_message_answer = MessageRequestAnswer::Pick("Reject".into());
    let client = start(dir.path(), opts);
    let turn = ask(&client, json!({"prompt": "go"}))["turn"]
        .as_u64()
        .unwrap();
    turn_end(&client, turn);
    let asked = requests_of(&client, "window/showMessageRequest").len();
    assert_eq!(asked, 2, "the write and the command both asked");
    let sent = crate::common::sent_tool_results(&server.requests()[2].body);
    assert!(
        sent.last().is_some_and(|r| r.1),
        "the rule the agent wrote let bash run: {sent:?}"
    );
    // The edit sits in the editor's buffer; the user saves it.
    std::fs::write(
        dir.path().join(".bareagent/config.toml"),
        "[permissions]\nallow = [\"bash(echo:*)\"]\n",
    )
    .unwrap();

    client.execute("bareagent.newSession", json!([])).unwrap();
    let turn = ask(&client, json!({"prompt": "again"}))["turn"]
        .as_u64()
        .unwrap();
    turn_end(&client, turn);
    let sent = crate::common::sent_tool_results(&server.requests()[4].body);
    assert_eq!(
        sent[0],
        ("escalated\n".to_string(), false),
        "a new session reads the file"
    );
    assert_eq!(client.shutdown().code(), Some(0));
}

/// The specification's exit codes: `exit` after `shutdown` is 0, `exit`
/// without it is 1; an editor closing stdin is a clean end (0).
#[test]
fn exit_without_shutdown_is_exit_code_one() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![]);
    let client = start(dir.path(), options(dir.path(), &server, "default"));
    client.notify("exit", Value::Null);
    let status = client
        .wait_for_exit(LONG)
        .expect("the server exits on `exit`");
    assert_eq!(status.code(), Some(1), "exit without shutdown");

    let client = start(dir.path(), options(dir.path(), &server, "default"));
    assert_eq!(client.shutdown().code(), Some(0), "exit after shutdown");

    let client = start(dir.path(), options(dir.path(), &server, "default"));
    let status = client.close_stdin_and_wait(LONG).expect("exits on EOF");
    assert_eq!(status.code(), Some(0), "stdin closed");
}

/// `didSave` is advertised, so it is handled: no warning on every save.
#[test]
fn did_save_is_handled_quietly() {
    let dir = workspace(&[("a.txt", "a\n")]);
    let server = ModelServer::start(vec![]);
    let client = start(dir.path(), options(dir.path(), &server, "default"));
    let uri = format!("file://{}", dir.path().join("a.txt").display());
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "text", "version": 1, "text": "a\n"}}),
    );
    client.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    );
    // Answered in order after the notifications: they were handled by then.
    client.execute("bareagent.status", json!([])).unwrap();
    assert_eq!(client.shutdown().code(), Some(0));
    let log = client.stderr();
    assert!(!log.contains("didSave"), "{log}");
}

#[test]
fn a_planted_bareagent_link_does_not_lead_the_chat_out_of_the_workspace() {
    let outside = tempfile::tempdir().unwrap();
    let dir = workspace(&[("a.py", "x = 1\n")]);
    std::os::unix::fs::symlink(outside.path(), dir.path().join(".bareagent")).unwrap();
    let server = ModelServer::start(vec![Reply::text("Hello.").into()]);
    let mut options = options(dir.path(), &server, "default");
    // A client that cannot edit: the chat is written on disk by the server.
    options.apply_edit = ApplyEditBehaviour::Refuse;
    let client = start(dir.path(), options);
    let started = ask(&client, json!({"prompt": "hi"}));
    let end = turn_end(&client, started["turn"].as_u64().unwrap());
    assert_eq!(end["type"], "turn_finished", "{end}");
    let opened = client.execute("bareagent.openChat", json!([]));
    assert!(
        opened.is_err(),
        "creating the chat through the link is refused: {opened:?}"
    );
    let written: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert!(
        written.is_empty(),
        "nothing was written outside: {written:?}"
    );
}

/// Whether the command has written its whole pid (the file exists as soon as
/// the shell opens it, before the number is in it).
fn pid_written(dir: &std::path::Path) -> bool {
    std::fs::read_to_string(dir.join("pid"))
        .is_ok_and(|text| text.ends_with('\n') && text.trim().parse::<i32>().is_ok())
}

/// A handler whose disk work is stalled never stalls the others: with the
/// user's session key a FIFO (its open waits for a writer, as a slow or
/// hung file system would), `bareagent.ask` waits on making the session
/// file, and `bareagent.status` is answered meanwhile — the key is loaded
/// off the runtime's thread and outside the sessions' lock. Once the FIFO
/// is written, the ask goes on.
#[test]
fn the_server_answers_while_a_handlers_disk_work_is_stalled() {
    let dir = workspace(&[]);
    let state = dir.path().join("state");
    let key = state.join("bareagent/session-key");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&key)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    let server = ModelServer::start(vec![Reply::text("hello").into()]);
    let mut options = options(dir.path(), &server, "default");
    options
        .env
        .push(("XDG_STATE_HOME".into(), state.display().to_string()));
    let client = start(dir.path(), options);
    let asked = client.request_async(
        "workspace/executeCommand",
        json!({"command": "bareagent.ask", "arguments": ["hi"]}),
    );
    // The ask is stalled on the key: no model request, no answer, yet
    // status answers (the client's request panics after its timeout).
    let status = client.execute("bareagent.status", json!([])).unwrap();
    assert!(status["sessions"].is_array(), "{status}");
    assert!(client.response(asked, Duration::ZERO).is_none());
    assert!(server.requests().is_empty());
    // The key's reader is let go (32 bytes, but no regular file: the
    // session is saved with a key of its own, and the ask goes on).
    use std::io::Write;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&key)
        .and_then(|mut fifo| fifo.write_all(&[7; 32]))
        .unwrap();
    let answer = client
        .response(asked, LONG)
        .expect("the ask answers")
        .unwrap();
    let turn = answer["turn"].as_u64().expect("a turn");
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
}
