//! The user sees the change before allowing it: an edit's approval carries
//! the unified diff of the change, computed from the text the tool reads —
//! on a terminal (coloured, cut to a screen), with `--json`, and in the
//! editor (the dialog, "Show diff", code actions, events) — and edits
//! applied without asking print their diff unless `--quiet`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::approvals::{Output, on_a_terminal_of, wait_exit};
use crate::common::{run_against_model, workspace};
use crate::lsp::{
    ON_DISK, UNSAVED, ask, events_of, is_event, options, requests_of, start, turn_end,
};
use crate::support::lsp_client::MessageRequestAnswer;
use crate::support::model_server::{ModelServer, Reply, Step};

const LONG: Duration = Duration::from_secs(20);

const GREET: &str = "def greet(name):\n    return 'hi ' + name\n";
const GREETED: &str = "def greet(name):\n    return 'Hello, ' + name\n";
const GREET_DIFF: &str = "--- a/greet.py\n+++ b/greet.py\n@@ -1,2 +1,2 @@\n def greet(name):\n-    return 'hi ' + name\n+    return 'Hello, ' + name\n";

/// One `edit_file` of greet.py replacing `old` with `new`, then `answer`.
fn edit_greet_py(old: &str, new: &str, answer: &str) -> Vec<Step> {
    vec![
        Reply::tool(
            "edit_file",
            json!({"path": "greet.py", "old_string": old, "new_string": new}),
        )
        .into(),
        Reply::text(answer).into(),
    ]
}

fn edit_greet() -> Vec<Step> {
    edit_greet_py("'hi '", "'Hello, '", "Done.")
}

/// `bareagent run` against `server`, colour left to the test.
fn run(dir: &Path, server: &ModelServer, extra: &[&str]) -> Command {
    let mut command = crate::common::bareagent(dir);
    run_against_model(&mut command, server)
        .args(extra)
        .arg("greet politely")
        .env_remove("NO_COLOR");
    command
}

/// Answers a `--json` question on the agent's stdin.
fn decide(stdin: &mut impl Write, request: &Value, decision: &str) {
    writeln!(
        stdin,
        "{}",
        json!({"id": request["id"], "decision": decision})
    )
    .unwrap();
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn of_type(text: &str, kind: &str) -> Vec<Value> {
    json_lines(text)
        .into_iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

#[test]
fn on_a_terminal_the_edit_question_shows_the_diff_coloured_unless_no_color() {
    let red = "\x1b[31m-    return 'hi ' + name\x1b[0m\n";
    let green = "\x1b[32m+    return 'Hello, ' + name\x1b[0m\n";
    let cyan = "\x1b[36m@@ -1,2 +1,2 @@\x1b[0m\n";
    // NO_COLOR → coloured? (The convention: set and not empty turns colour off.)
    for (no_color, coloured) in [(None, true), (Some("1"), false), (Some(""), true)] {
        let dir = workspace(&[("greet.py", GREET)]);
        let server = ModelServer::start(edit_greet());
        let mut command = run(dir.path(), &server, &[]);
        if let Some(value) = no_color {
            command.env("NO_COLOR", value);
        }
        let (mut master, mut child, terminal) = on_a_terminal_of(command, 0);
        let shown = terminal
            .wait_for("the question", |t| t.contains("[N] no:"))
            .replace("\r\n", "\n");
        let question = shown
            .find("Allow edit_file greet.py")
            .unwrap_or_else(|| panic!("{shown}"));
        let answer_line = shown.find("  [y] once").expect(&shown);
        let between = &shown[question..answer_line];
        if coloured {
            for painted in [red, green, cyan] {
                assert!(between.contains(painted), "{no_color:?}: {between:?}");
            }
        } else {
            assert!(between.contains(GREET_DIFF), "{no_color:?}: {between:?}");
            assert!(!between.contains('\x1b'), "{no_color:?}: {between:?}");
        }
        master.write_all(b"y\n").unwrap();
        assert!(wait_exit(&mut child).success(), "{}", terminal.text());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("greet.py")).unwrap(),
            GREETED
        );
        // Allowed after seeing it: not printed a second time.
        let after = terminal.text().replace("\r\n", "\n");
        assert_eq!(
            after.matches("+++ b/greet.py").count(),
            1,
            "{no_color:?}: {after}"
        );
    }
}

#[test]
fn a_long_diff_is_cut_to_the_terminal_with_a_count_of_the_rest() {
    let content: String = (1..=100).map(|n| format!("line {n}\n")).collect();
    // Terminal rows → last line shown and the count; 0 rows: the size is
    // unknown, so 40. Three of the rows go to the question and the count.
    for (rows, last, more) in [(24u16, 18, 82), (0, 34, 66)] {
        let dir = workspace(&[]);
        let server = ModelServer::start(vec![
            Reply::tool("write_file", json!({"path": "a.txt", "content": content})).into(),
            Reply::text("Done.").into(),
        ]);
        let mut command = run(dir.path(), &server, &[]);
        command.env("NO_COLOR", "1");
        let (mut master, mut child, terminal) = on_a_terminal_of(command, rows);
        let shown = terminal
            .wait_for("the question", |t| t.contains("[N] no:"))
            .replace("\r\n", "\n");
        let head = "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1,100 @@\n";
        let lines: String = (1..=last).map(|n| format!("+line {n}\n")).collect();
        let expected = format!("{head}{lines}… {more} more lines\n  [y] once");
        assert!(shown.contains(&expected), "{rows} rows: {shown}");
        master.write_all(b"n\n").unwrap();
        assert!(wait_exit(&mut child).success(), "{}", terminal.text());
        assert!(!dir.path().join("a.txt").exists());
    }
}

/// `bareagent run --json` up to its first approval request: the child, its
/// stdin and stdout, and the request.
fn first_json_approval(
    dir: &Path,
    server: &ModelServer,
) -> (std::process::Child, std::process::ChildStdin, Output, Value) {
    let mut child = run(dir, server, &["--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = Output::collect(child.stdout.take().unwrap());
    let text = stdout.wait_for("the approval request", |t| {
        !of_type(t, "approval_request").is_empty()
    });
    let request = of_type(&text, "approval_request").remove(0);
    (child, stdin, stdout, request)
}

#[test]
fn with_json_the_approval_request_carries_the_whole_diff() {
    let dir = workspace(&[("greet.py", GREET)]);
    let server = ModelServer::start(edit_greet());
    let (mut child, mut stdin, stdout, request) = first_json_approval(dir.path(), &server);
    assert_eq!(request["diff"], GREET_DIFF, "{request}");
    assert_eq!(request["kind"], "edit", "{request}");
    decide(&mut stdin, &request, "allow");
    assert!(wait_exit(&mut child).success());
    let text = stdout.wait_for("the final event", |t| !of_type(t, "final").is_empty());
    let changed = of_type(&text, "file_changed");
    assert_eq!(
        changed,
        [json!({"type": "file_changed", "path": "greet.py", "diff": GREET_DIFF, "asked": true})]
    );
}

/// What the user allowed is what is written: a file that changes while the
/// question waits is not edited, and the model is told to read it again.
#[test]
fn a_file_that_changed_while_the_user_was_asked_is_not_edited() {
    let dir = workspace(&[("greet.py", GREET)]);
    let server = ModelServer::start(edit_greet());
    let (mut child, mut stdin, stdout, request) = first_json_approval(dir.path(), &server);
    assert_eq!(request["diff"], GREET_DIFF, "{request}");
    // The user changes a line of the diff's context meanwhile: the same
    // edit would still apply, but it is no longer the change shown.
    let theirs = "def greet(name):  # theirs\n    return 'hi ' + name\n";
    std::fs::write(dir.path().join("greet.py"), theirs).unwrap();
    decide(&mut stdin, &request, "allow");
    assert!(wait_exit(&mut child).success());
    let text = stdout.wait_for("the final event", |t| !of_type(t, "final").is_empty());
    let result = of_type(&text, "tool_result").remove(0);
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("changed while the user was being asked"),
        "{result}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("greet.py")).unwrap(),
        theirs
    );
    assert!(of_type(&text, "file_changed").is_empty(), "{text}");
}

#[test]
fn edits_applied_without_asking_print_their_diff_unless_quiet() {
    for quiet in [false, true] {
        let dir = workspace(&[("greet.py", GREET)]);
        let server = ModelServer::start(edit_greet());
        let mut args = vec!["--permission-mode", "accept-edits"];
        if quiet {
            args.push("--quiet");
        }
        let out = run(dir.path(), &server, &args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("greet.py")).unwrap(),
            GREETED
        );
        // stderr is a pipe here: no colour.
        assert_eq!(
            stderr.contains(GREET_DIFF),
            !quiet,
            "quiet {quiet}: {stderr}"
        );
        assert_eq!(
            stderr.contains("+++ b/greet.py"),
            !quiet,
            "quiet {quiet}: {stderr}"
        );
    }
}

// ---------------------------------------------------------------------------
// The language server
// ---------------------------------------------------------------------------

/// The edit of `lsp::greet_script`, as a diff of the unsaved buffer.
const BUFFER_DIFF: &str = "--- a/greet.py\n+++ b/greet.py\n@@ -1,2 +1,2 @@\n def greet(name):\n-    return 'Hello, ' + nme  # unsaved\n+    return 'Hello, ' + name  # unsaved\n";

fn fix_the_buffer() -> Vec<Step> {
    edit_greet_py("+ nme", "+ name", "Fixed.")
}

fn titles(request: &Value) -> Vec<String> {
    request["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_dialog_shows_the_buffers_diff_and_show_diff_opens_it_then_asks_again() {
    let dir = workspace(&[("greet.py", ON_DISK)]);
    let server = ModelServer::start(fix_the_buffer());
    let mut opts = options(dir.path(), &server, "default");
    opts.message_answers = vec![
        MessageRequestAnswer::Pick("Show diff".into()),
        MessageRequestAnswer::Pick("Allow once".into()),
    ];
    let client = start(dir.path(), opts);
    let greet = client.open("greet.py", UNSAVED);
    let turn = ask(&client, json!({"prompt": "fix it"}))["turn"]
        .as_u64()
        .unwrap();
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");

    // The diff is of the unsaved buffer, not of the disk.
    let requested = events_of(&client, "approval_requested");
    assert_eq!(requested.len(), 1, "{requested:?}");
    assert_eq!(requested[0]["diff"], BUFFER_DIFF, "{}", requested[0]);
    // What a client's review shows: the buffer beside its text after the edit.
    assert_eq!(requested[0]["path"], "greet.py");
    assert_eq!(requested[0]["uri"], greet.as_str());
    assert_eq!(
        requested[0]["proposed"],
        "def greet(name):\n    return 'Hello, ' + name  # unsaved\n"
    );
    let id = requested[0]["id"].as_u64().unwrap();

    // Asked, shown the diff, asked again with the same question.
    let asked = requests_of(&client, "window/showMessageRequest");
    assert_eq!(asked.len(), 2, "{asked:?}");
    let message = asked[0]["message"].as_str().unwrap();
    assert!(message.contains("edit_file greet.py"), "{message}");
    assert!(message.contains(BUFFER_DIFF), "{message}");
    assert_eq!(asked[1]["message"], asked[0]["message"]);
    assert_eq!(
        titles(&asked[0]),
        [
            "Allow once",
            "Allow for session",
            "Allow always: edit_file(./greet.py)",
            "Reject",
            "Show diff"
        ]
    );
    let diff_file = dir.path().join(format!(".bareagent/diffs/{id}.diff"));
    let diff_uri = client.uri(&format!(".bareagent/diffs/{id}.diff"));
    // In that order: the dialog, the diff opened, the dialog again.
    let order: Vec<String> = client
        .server_requests()
        .into_iter()
        .filter_map(|(method, params)| match method.as_str() {
            "window/showMessageRequest" => Some("ask".to_string()),
            "window/showDocument" if params["uri"] == diff_uri.as_str() => {
                Some("show diff".to_string())
            }
            _ => None,
        })
        .collect();
    assert_eq!(order, ["ask", "show diff", "ask"]);
    assert_eq!(std::fs::read_to_string(&diff_file).unwrap(), BUFFER_DIFF);
    assert_eq!(
        client.text(&greet).unwrap(),
        "def greet(name):\n    return 'Hello, ' + name  # unsaved\n"
    );
    assert_eq!(client.shutdown().code(), Some(0));
}

/// Starts a turn whose edit waits for approval in an editor without
/// dialogs; returns the client and the approval's id.
fn pending_edit(dir: &Path, server: &ModelServer) -> (crate::support::lsp_client::LspClient, u64) {
    let mut opts = options(dir, server, "default");
    opts.show_message_request = false;
    let client = start(dir, opts);
    client.open("greet.py", UNSAVED);
    ask(&client, json!({"prompt": "fix it"}));
    let requested = client.wait_for_notification(LONG, "the approval", |m, p| {
        is_event(m, p, "approval_requested")
    });
    let id = requested["id"].as_u64().unwrap();
    (client, id)
}

fn show_diff(client: &crate::support::lsp_client::LspClient, id: u64) -> Result<Value, Value> {
    client.execute("bareagent.showDiff", json!([{"id": id}]))
}

#[test]
fn the_approval_code_actions_offer_show_diff() {
    let dir = workspace(&[("greet.py", ON_DISK), ("other.rs", "fn main() {}\n")]);
    let server = ModelServer::start(fix_the_buffer());
    let (client, id) = pending_edit(dir.path(), &server);
    let other = client.open("other.rs", "fn main() {}\n");
    let actions = client.code_actions(&other, 0);
    let show = actions
        .iter()
        .find(|a| a["title"] == "Show diff: edit_file greet.py (+1 -1)")
        .unwrap_or_else(|| panic!("{actions:?}"));
    let answer = client
        .request("workspace/executeCommand", show["command"].clone())
        .unwrap();
    assert_eq!(answer["shown"], true, "{answer}");
    assert_eq!(answer["path"], format!(".bareagent/diffs/{id}.diff"));
    let diff_uri = client.uri(&format!(".bareagent/diffs/{id}.diff"));
    assert!(
        requests_of(&client, "window/showDocument")
            .iter()
            .any(|p| p["uri"] == diff_uri.as_str())
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(format!(".bareagent/diffs/{id}.diff"))).unwrap(),
        BUFFER_DIFF
    );
    // Showing is not answering: still pending, then allowed.
    assert!(
        client
            .text(&client.uri("greet.py"))
            .unwrap()
            .contains("nme")
    );
    client
        .execute("bareagent.approve", json!([{"id": id}]))
        .unwrap();
    client.wait_until(LONG, "the edit", |c| {
        c.text(&c.uri("greet.py"))
            .is_some_and(|t| t.contains("+ name"))
    });
}

/// A repository can hold symbolic links where the diff file goes; the
/// write never follows one out of the workspace.
#[test]
fn show_diff_never_writes_through_a_planted_link() {
    // (link inside the workspace → its target outside, whether it points
    // at a directory, whether showing still succeeds)
    let cases: [(&str, bool, bool); 4] = [
        (".bareagent", true, false),
        (".bareagent/diffs", true, false),
        (".bareagent/diffs/1.diff", false, true),
        (".bareagent/diffs/.gitignore", false, true),
    ];
    for (link, to_dir, shows) in cases {
        let dir = workspace(&[("greet.py", ON_DISK)]);
        let (outside, victim) = crate::common::plant_link(dir.path(), link, to_dir);

        let server = ModelServer::start(fix_the_buffer());
        let (client, id) = pending_edit(dir.path(), &server);
        assert_eq!(id, 1, "the case's file name assumes the first approval");
        let answer = show_diff(&client, id);
        assert_eq!(answer.is_ok(), shows, "{link}: {answer:?}");
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "precious\n",
            "{link}"
        );
        for name in ["diffs", "1.diff", ".gitignore"] {
            assert!(
                !outside.path().join(name).exists(),
                "{link}: {name} was written outside"
            );
        }
        if shows {
            let written = dir.path().join(".bareagent/diffs/1.diff");
            assert!(written.symlink_metadata().unwrap().is_file(), "{link}");
            assert_eq!(std::fs::read_to_string(written).unwrap(), BUFFER_DIFF);
        }
        drop(client);
    }
}

const SECRET_ENV: &str = "API_TOKEN=hunter2-secret\n";

fn edit_env(old: &str, new: &str) -> Step {
    Reply::tool(
        "edit_file",
        json!({"path": ".env", "old_string": old, "new_string": new}),
    )
    .into()
}

/// An edit whose change cannot be computed still asks (the model has not
/// been allowed to read the file, so the question must come first), says
/// why there is no diff, and quotes nothing of the file.
#[test]
fn an_edit_that_cannot_apply_asks_without_a_diff_and_without_quoting_the_file() {
    let dir = workspace(&[(".env", SECRET_ENV)]);
    let server = ModelServer::start(vec![
        edit_env("API_TOKEN=guess", "API_TOKEN=x"),
        Reply::text("Done.").into(),
    ]);
    let (mut child, mut stdin, stdout, request) = first_json_approval(dir.path(), &server);
    assert_eq!(request["diff"], Value::Null, "{request}");
    let reason = request["reason"].as_str().unwrap();
    assert!(
        reason.contains("the change cannot be shown: .env: old_string was not found"),
        "{reason}"
    );
    assert!(!reason.contains("hunter2"), "{reason}");
    decide(&mut stdin, &request, "reject");
    assert!(wait_exit(&mut child).success());
    let text = stdout.wait_for("the final event", |t| !of_type(t, "final").is_empty());
    assert!(!text.contains("hunter2"), "{text}");
    let sent = crate::common::sent_tool_results(&server.requests()[1].body);
    assert!(sent[0].1 && !sent[0].0.contains("hunter2"), "{sent:?}");
}

/// The user sees every change, whoever made it: a sub-agent's edit applied
/// without asking is printed like the agent's own.
#[test]
fn a_sub_agents_edit_applied_without_asking_prints_its_diff() {
    let dir = workspace(&[("greet.py", GREET)]);
    let mut script = vec![
        Reply::tool(
            "task",
            json!({"description": "greet", "prompt": "make greet say Hello", "kind": "general"}),
        )
        .into(),
    ];
    script.extend(edit_greet());
    script.push(Reply::text("The sub-agent did it.").into());
    let server = ModelServer::start(script);
    let out = run(dir.path(), &server, &["--permission-mode", "accept-edits"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("greet.py")).unwrap(),
        GREETED
    );
    assert!(stderr.contains(GREET_DIFF), "{stderr}");
}

/// "Show diff" writes the diff into the workspace, where the model could
/// read it: after the user rejects an edit of `.env`, reading its diff asks
/// like reading `.env` does, and nothing of it reaches the model.
#[test]
fn the_diff_of_a_rejected_edit_cannot_be_read_unasked() {
    let dir = workspace(&[(".env", SECRET_ENV)]);
    let server = ModelServer::start(vec![
        edit_env("hunter2-secret", "rotated"),
        Reply::tool("read_file", json!({"path": ".bareagent/diffs/1.diff"})).into(),
        Reply::tool("grep", json!({"pattern": "hunter2", "path": ".bareagent"})).into(),
        Reply::text("Done.").into(),
    ]);
    let mut opts = options(dir.path(), &server, "default");
    opts.message_answers = vec![
        MessageRequestAnswer::Pick("Show diff".into()),
        MessageRequestAnswer::Pick("Reject".into()),
        MessageRequestAnswer::Pick("Reject".into()),
    ];
    let client = start(dir.path(), opts);
    let turn = ask(&client, json!({"prompt": "rotate the token"}))["turn"]
        .as_u64()
        .unwrap();
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    let diff = std::fs::read_to_string(dir.path().join(".bareagent/diffs/1.diff")).unwrap();
    assert!(diff.contains("-API_TOKEN=hunter2-secret"), "{diff}");
    let asked = requests_of(&client, "window/showMessageRequest");
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert!(
        asked[2]["message"]
            .as_str()
            .unwrap()
            .contains("read_file .bareagent/diffs/1.diff"),
        "{}",
        asked[2]
    );
    for request in server.requests() {
        let sent = crate::common::sent_tool_results(&request.body);
        assert!(
            sent.iter()
                .all(|(content, _)| !content.contains("hunter2-secret")),
            "{sent:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".env")).unwrap(),
        "API_TOKEN=hunter2-secret\n"
    );
}
