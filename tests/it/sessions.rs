//! Sessions survive the agent: `bareagent run` killed (SIGKILL) at each
//! point of a turn goes on with `--continue`, the history the model is then
//! sent being valid and complete up to the kill; a restarted language
//! server resumes the workspace's last conversation, and its chat file says
//! so; a torn last line is forgiven, any other damage refused; and a link
//! planted where the files go leads nothing out of the workspace.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use bareagent::agent::{ContentBlock, Message, Role, check_history};
use serde_json::{Value, json};

use crate::common::{bareagent, run_against_model, workspace};
use crate::lsp::{ask, options, start, turn_end};
use crate::support::model_server::{Hold, ModelServer, Reply, Step};

const WAIT: Duration = Duration::from_secs(20);

/// Polls `done` until it holds, or fails saying `what` was awaited.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn run_command(dir: &Path, server: &ModelServer, extra: &[&str]) -> std::process::Command {
    let mut command = bareagent(dir);
    run_against_model(&mut command, server)
        .args(["--permission-mode", "bypass"])
        .args(extra);
    command
}

fn spawn(dir: &Path, server: &ModelServer, prompt: &str) -> Child {
    run_command(dir, server, &["--json", prompt])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn bareagent run")
}

fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(".bareagent/sessions"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// The history in a request body (the Anthropic wire is history-shaped).
fn sent_history(body: &Value) -> Vec<Message> {
    serde_json::from_value(body["messages"].clone()).expect("messages")
}

/// A history as a line: `user[text:a] assistant[tool_use:bash] …`, tool
/// results as `result` or `error`.
fn shape(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|m| {
            let blocks: Vec<String> = m
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text { text } => format!("text:{text}"),
                    ContentBlock::ToolUse { name, .. } => format!("tool_use:{name}"),
                    ContentBlock::ToolResult { is_error, .. } => {
                        if *is_error { "error" } else { "result" }.to_string()
                    }
                    other => format!("{other:?}"),
                })
                .collect();
            let role = if m.role == Role::User {
                "user"
            } else {
                "assistant"
            };
            format!("{role}[{}]", blocks.join(","))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `--continue "go on"` against a model that answers once; the history it
/// was sent, and the run's stderr.
fn continue_run(dir: &Path, extra: &[&str]) -> (Vec<Message>, String) {
    let server = ModelServer::start(vec![Reply::text("Going on.").into()]);
    let out = run_command(dir, &server, extra)
        .arg("go on")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{stderr}");
    (sent_history(&requests[0].body), stderr)
}

/// (where the kill strikes, the first run's script, what to wait for before
/// the kill, the history `--continue` sends)
type KillCase = (
    &'static str,
    Box<dyn Fn(&Path, &Hold) -> Vec<Step>>,
    Box<dyn Fn(&Path, &ModelServer) -> bool>,
    &'static str,
);

#[test]
fn a_run_killed_anywhere_in_a_turn_continues_with_a_valid_complete_history() {
    let cases: Vec<KillCase> = vec![
        (
            "mid-stream",
            Box::new(|_, _| {
                let deltas = (0..400).map(|n| format!("word{n} ")).collect();
                let gap = Duration::from_millis(20)..=Duration::from_millis(20);
                vec![Reply::paced_text(deltas, gap).into()]
            }),
            Box::new(|_, server| !server.deltas_written().is_empty()),
            "user[text:first,text:go on]",
        ),
        (
            "mid-tool",
            Box::new(|_, _| {
                let command = "echo started > marker && sleep 60";
                vec![Reply::tool("bash", json!({"command": command})).into()]
            }),
            Box::new(|dir, _| dir.join("marker").exists()),
            "user[text:first] assistant[tool_use:bash] user[error,text:go on]",
        ),
        (
            "between iterations",
            Box::new(|_, hold| {
                vec![
                    Reply::tool("read_file", json!({"path": "a.txt"})).into(),
                    Reply::text("never sent").held(hold).into(),
                ]
            }),
            Box::new(|_, server| server.requests().len() == 2),
            "user[text:first] assistant[tool_use:read_file] user[result,text:go on]",
        ),
        (
            "after the turn",
            Box::new(|_, _| vec![Reply::text("Done first.").into()]),
            Box::new(|dir, _| {
                // The turn's end is its last record.
                session_files(dir).first().is_some_and(|file| {
                    std::fs::read_to_string(file)
                        .is_ok_and(|t| t.ends_with("\"type\":\"turn_end\"}\n"))
                })
            }),
            "user[text:first] assistant[text:Done first.] user[text:go on]",
        ),
    ];
    for (point, script, ready, expected) in cases {
        let dir = workspace(&[("a.txt", "alpha\n")]);
        let hold = Hold::new();
        let server = ModelServer::start(script(dir.path(), &hold));
        let mut child = spawn(dir.path(), &server, "first");
        wait_until(point, || ready(dir.path(), &server));
        child.kill().unwrap();
        child.wait().unwrap();
        hold.release();

        let (history, stderr) = continue_run(dir.path(), &["--continue"]);
        assert_eq!(check_history(&history), Ok(()), "{point}: {history:?}");
        assert_eq!(shape(&history), expected, "{point}\n{stderr}");
        assert!(stderr.contains("resuming session"), "{point}: {stderr}");
        if point == "mid-tool" {
            let ContentBlock::ToolResult { content, .. } = &history[2].content[0] else {
                panic!("{history:?}")
            };
            assert!(content.starts_with("Interrupted"), "{content}");
            assert!(stderr.contains("marked interrupted"), "{stderr}");
        }
        if point == "between iterations" {
            let ContentBlock::ToolResult { content, .. } = &history[2].content[0] else {
                panic!("{history:?}")
            };
            assert!(content.contains("alpha"), "{content}");
        }
        // One session, continued: a third run sees the second's answer too.
        assert_eq!(session_files(dir.path()).len(), 1, "{point}");
        let (again, _) = continue_run(dir.path(), &["--continue"]);
        assert_eq!(
            shape(&again),
            format!("{expected} assistant[text:Going on.] user[text:go on]"),
            "{point}"
        );
    }
}

#[test]
fn a_new_run_starts_a_new_session_and_resume_picks_one_by_id() {
    let dir = workspace(&[]);
    for prompt in ["one", "two"] {
        let server = ModelServer::start(vec![Reply::text(&format!("said {prompt}")).into()]);
        let out = run_command(dir.path(), &server, &[prompt])
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_eq!(
            shape(&sent_history(&server.requests()[0].body)),
            format!("user[text:{prompt}]")
        );
    }
    let files = session_files(dir.path());
    assert_eq!(files.len(), 2, "{files:?}");
    let first = files[0].file_stem().unwrap().to_str().unwrap().to_string();
    let (history, _) = continue_run(dir.path(), &["--resume", &first]);
    assert_eq!(
        shape(&history),
        "user[text:one] assistant[text:said one] user[text:go on]"
    );

    // The list: the one used last first (the older, just resumed), with
    // the first prompt and the turns; `--continue` takes that one too.
    let out = bareagent(dir.path()).arg("sessions").output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(
        lines[0].starts_with(&first) && lines[0].ends_with("one"),
        "{listed}"
    );
    assert!(lines[0].contains("  2 turns"), "{listed}");
    assert!(
        lines[1].ends_with("two") && lines[1].contains("  1 turns"),
        "{listed}"
    );
    let (history, _) = continue_run(dir.path(), &["--continue"]);
    assert!(
        shape(&history).starts_with("user[text:one]"),
        "{}",
        shape(&history)
    );

    let rm = |id: &str| {
        bareagent(dir.path())
            .args(["sessions", "rm", id])
            .output()
            .unwrap()
    };
    assert!(rm(&first).status.success());
    assert_eq!(session_files(dir.path()).len(), 1);
    let again = rm(&first);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("no session"));
    // Not a path: an id that climbs out is refused before any file is touched.
    let climbing = rm("../../a");
    assert!(String::from_utf8_lossy(&climbing.stderr).contains("not a session id"));
    let gitignore = std::fs::read_to_string(dir.path().join(".bareagent/sessions/.gitignore"));
    assert_eq!(gitignore.unwrap(), "*\n");
}

#[test]
fn a_torn_last_line_is_ignored_and_cut_but_a_damaged_line_refuses_the_session() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Reply::text("Done first.").into()]);
    assert!(
        run_command(dir.path(), &server, &["first"])
            .output()
            .unwrap()
            .status
            .success()
    );
    let file = session_files(dir.path()).remove(0);
    let whole = std::fs::read_to_string(&file).unwrap();

    // A write cut by a crash: the last line has no newline.
    std::fs::write(&file, format!("{whole}{{\"type\":\"message\",\"mess")).unwrap();
    let (history, stderr) = continue_run(dir.path(), &["--continue"]);
    assert_eq!(
        shape(&history),
        "user[text:first] assistant[text:Done first.] user[text:go on]"
    );
    assert!(stderr.contains("torn last line"), "{stderr}");
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(
        after.starts_with(&whole) && !after.contains("\"mess\n"),
        "{after}"
    );
    for line in after.lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }

    // A damaged line inside: refused, naming the line; the file is kept.
    let damaged = after.replacen("\"role\":\"assistant\"", "\"role\":\"assist", 1);
    std::fs::write(&file, &damaged).unwrap();
    let server = ModelServer::start(vec![Reply::text("no").into()]);
    let out = run_command(dir.path(), &server, &["--continue", "go on"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("line 4: its integrity tag does not match"),
        "{stderr}"
    );
    assert!(server.requests().is_empty());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), damaged);
}

/// Sessions stay out of commits whatever `.bareagent/sessions/.gitignore`
/// held before: (what it held, whether the file is the same one after).
/// One that already ignores everything is left alone, not rewritten.
#[test]
fn the_sessions_gitignore_always_ends_ignoring_everything() {
    use std::os::unix::fs::MetadataExt;
    let cases: [(Option<&str>, bool); 4] = [
        (None, false),
        (Some("*\n"), true),
        // The user's, or a repository's that would commit the sessions.
        (Some("!*.jsonl\n"), false),
        // Cut short by a crash while it was first written.
        (Some(""), false),
    ];
    for (before, same_file) in cases {
        let dir = workspace(&[]);
        let ignore = dir.path().join(".bareagent/sessions/.gitignore");
        let inode = before.map(|text| {
            std::fs::create_dir_all(ignore.parent().unwrap()).unwrap();
            std::fs::write(&ignore, text).unwrap();
            std::fs::metadata(&ignore).unwrap().ino()
        });
        let server = ModelServer::start(vec![Reply::text("Done.").into()]);
        let out = run_command(dir.path(), &server, &["hello"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{before:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(&ignore).unwrap(),
            "*\n",
            "{before:?}"
        );
        assert_eq!(session_files(dir.path()).len(), 1, "{before:?}");
        let after = std::fs::metadata(&ignore).unwrap().ino();
        assert_eq!(
            inode == Some(after),
            same_file,
            "{before:?}: replaced or not"
        );
    }
}

/// A repository can hold links where sessions go; nothing is written or
/// read through one. (link, points at a directory, a session is saved)
#[test]
fn sessions_never_go_through_a_planted_link() {
    let cases: [(&str, bool, bool); 3] = [
        (".bareagent", true, false),
        (".bareagent/sessions", true, false),
        (".bareagent/sessions/.gitignore", false, true),
    ];
    for (link, to_dir, saved) in cases {
        let dir = workspace(&[]);
        let (outside, victim) = crate::common::plant_link(dir.path(), link, to_dir);

        let server = ModelServer::start(vec![Reply::text("Done.").into()]);
        let out = run_command(dir.path(), &server, &["hello"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{link}: {stderr}");
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "precious\n",
            "{link}"
        );
        let written: Vec<_> = std::fs::read_dir(outside.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(written, ["victim"], "{link}: written outside");
        assert_eq!(
            !session_files(dir.path()).is_empty(),
            saved,
            "{link}: {stderr}"
        );
        if !saved {
            assert!(
                stderr.contains("cannot write the session file"),
                "{link}: {stderr}"
            );
        }
    }

    // A session file planted as a link to a session outside is not read.
    let dir = workspace(&[]);
    let outside = tempfile::tempdir().unwrap();
    let theirs = outside.path().join("s.jsonl");
    std::fs::write(&theirs, "{\"type\":\"header\",\"version\":1,\"id\":\"x\",\"created\":\"c\",\"workspace\":\"/\"}\n{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"planted\"}]}}\n").unwrap();
    std::fs::create_dir_all(dir.path().join(".bareagent/sessions")).unwrap();
    let id = "20260101T000000000-link";
    std::os::unix::fs::symlink(
        &theirs,
        dir.path().join(format!(".bareagent/sessions/{id}.jsonl")),
    )
    .unwrap();
    let server = ModelServer::start(vec![Reply::text("no").into()]);
    let out = run_command(dir.path(), &server, &["--resume", id, "go on"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert!(server.requests().is_empty());
}

fn chat_on_disk(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(".bareagent/chat.md")).unwrap_or_default()
}

#[test]
fn a_restarted_language_server_resumes_the_conversation_and_its_chat_says_so() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Reply::text("Noted: 42.").into()]);
    let client = start(dir.path(), options(dir.path(), &server, "default"));
    let turn = ask(&client, json!({"prompt": "remember 42"}))["turn"]
        .as_u64()
        .unwrap();
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    assert_eq!(client.shutdown().code(), Some(0));
    let id = session_files(dir.path())[0]
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();

    // Restarted: resumed, and said in the chat before anything is asked.
    let server = ModelServer::start(vec![Reply::text("It was 42.").into()]);
    let client = start(dir.path(), options(dir.path(), &server, "default"));
    wait_until("the resume notice", || {
        chat_on_disk(dir.path()).contains("Resumed conversation")
    });
    assert!(chat_on_disk(dir.path()).contains(&format!("Resumed conversation `{id}` (2 messages")));
    let listed = client.execute("bareagent.resume", json!([])).unwrap();
    assert_eq!(listed["current"], id.as_str(), "{listed}");
    assert_eq!(
        listed["sessions"][0]["firstPrompt"], "remember 42",
        "{listed}"
    );
    let turn = ask(&client, json!({"prompt": "which number?"}))["turn"]
        .as_u64()
        .unwrap();
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    let history = sent_history(&server.requests()[0].body);
    assert_eq!(
        shape(&history),
        "user[text:remember 42] assistant[text:Noted: 42.] user[text:which number?]"
    );
    // The chat shows the same conversation the model was sent, in order.
    let chat = chat_on_disk(dir.path());
    let at = |text: &str| {
        chat.find(text)
            .unwrap_or_else(|| panic!("{text} not in {chat}"))
    };
    assert!(at("remember 42") < at("Noted: 42.") && at("Noted: 42.") < at("Resumed conversation"));
    assert!(
        at("Resumed conversation") < at("which number?") && at("which number?") < at("It was 42.")
    );
    assert_eq!(client.shutdown().code(), Some(0));
    assert_eq!(session_files(dir.path()).len(), 1);

    // `resume: "never"`: a new conversation, and the chat says that plainly.
    let server = ModelServer::start(vec![Reply::text("Which number?").into()]);
    let mut opts = options(dir.path(), &server, "default");
    opts.initialization_options["resume"] = json!("never");
    let client = start(dir.path(), opts);
    wait_until("the new-conversation notice", || {
        chat_on_disk(dir.path()).contains("A new conversation starts")
    });
    let turn = ask(&client, json!({"prompt": "which number?"}))["turn"]
        .as_u64()
        .unwrap();
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    assert_eq!(
        shape(&sent_history(&server.requests()[0].body)),
        "user[text:which number?]"
    );

    // And `bareagent.resume {"id"}` brings the first one back.
    let resumed = client
        .execute("bareagent.resume", json!([{"id": id}]))
        .unwrap();
    assert_eq!(resumed["messages"], 4, "{resumed}");
    server.push(Reply::text("42.").into());
    let turn = ask(&client, json!({"prompt": "and now?"}))["turn"]
        .as_u64()
        .unwrap();
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    assert_eq!(
        shape(&sent_history(&server.requests()[1].body)),
        "user[text:remember 42] assistant[text:Noted: 42.] user[text:which number?] assistant[text:It was 42.] user[text:and now?]"
    );
    assert_eq!(client.shutdown().code(), Some(0));
}

/// The opener sessions append through: a link at the file's own name is
/// refused whether the file is new or old, and the file it points at is
/// left as it was. (create a new file?)
#[test]
fn appending_never_writes_through_a_link_at_the_files_name() {
    use std::io::Write;
    for create_new in [true, false] {
        let dir = workspace(&[]);
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        let link = dir.path().join(".bareagent/sessions/s.jsonl");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let paths = bareagent::workspace::PathResolver::new(dir.path()).unwrap();
        let link = paths.root().join(".bareagent/sessions/s.jsonl");
        let opened = paths.open_append(&link, create_new);
        if let Ok(mut file) = opened {
            let _ = file.write_all(b"record\n");
            panic!("create_new {create_new}: opened through the link");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    }
}

/// A compaction is recorded with the history it made: `--continue` sends
/// the compacted history (the summary), not what it replaced.
#[test]
fn a_continued_session_starts_from_its_last_compaction() {
    use crate::compaction::{SUMMARY, five_reads_that_compact};
    let (dir, server) = five_reads_that_compact();
    let out = run_command(dir.path(), &server, &["read big.txt"])
        .output()
        .unwrap();
    crate::common::assert_succeeded(&out);
    let file = std::fs::read_to_string(&session_files(dir.path())[0]).unwrap();
    assert!(
        file.contains("\"type\":\"compaction\",\"before_tokens\":"),
        "{file}"
    );
    // Without the record, the continued history would start again from
    // the prompt the summary replaced.
    let (history, _) = continue_run(dir.path(), &["--continue"]);
    assert_eq!(check_history(&history), Ok(()));
    let start: String = shape(&history).chars().take(300).collect();
    assert!(history[0].text().contains(SUMMARY), "{start}");
    assert!(
        history.iter().all(|m| m.text() != "read big.txt"),
        "{start}"
    );
    assert_eq!(history[history.len() - 1].text(), "go on");
}

/// A session file that came with the repository (git checks files out
/// 0644) is never resumed — by `--continue` or by the language server at
/// start — as it would put its history before the model as the user's own;
/// once the user makes it theirs (`chmod 600`), it is.
#[test]
fn a_session_file_that_came_with_the_repository_is_not_resumed() {
    use std::os::unix::fs::PermissionsExt;
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Reply::text("planted reply").into()]);
    let out = run_command(dir.path(), &server, &["planted prompt"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let file = session_files(dir.path()).remove(0);
    let id = file.file_stem().unwrap().to_str().unwrap().to_string();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();

    // (how it is resumed, whether it is now the user's). The server's own
    // new session is newer: the last case names the planted one.
    for (how, mine) in [("--continue", false), ("lsp", false), ("--resume", true)] {
        if mine {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let server = ModelServer::start(vec![Reply::text("ok").into()]);
        let history = if how == "lsp" {
            let client = start(dir.path(), options(dir.path(), &server, "bypass"));
            let turn = ask(&client, json!("go on"))["turn"].as_u64().unwrap();
            turn_end(&client, turn);
            sent_history(&server.requests()[0].body)
        } else {
            let args: Vec<&str> = match how {
                "--resume" => vec![how, &id, "go on"],
                _ => vec![how, "go on"],
            };
            let out = run_command(dir.path(), &server, &args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert_eq!(out.status.success(), mine, "{how} mine={mine}: {stderr}");
            if !mine {
                // Still the user's (their record has it): told how to make it private again.
                assert!(
                    stderr.contains("readable by others (mode 644)")
                        && stderr.contains(&format!("`chmod 600 .bareagent/sessions/{id}.jsonl`")),
                    "{stderr}"
                );
                assert!(server.requests().is_empty(), "nothing was sent");
                continue;
            }
            sent_history(&server.requests()[0].body)
        };
        let planted = shape(&history).contains("planted");
        assert_eq!(planted, mine, "{how} mine={mine}: {}", shape(&history));
    }
}
