//! Each tool through the loop, driven by the scripted model over real HTTP:
//! the model asks, the real tool runs in a temp workspace, and the result is
//! what the model receives.

use std::time::Duration;

use bareagent::history::check_history;
use serde_json::{Value, json};

use crate::common::*;
use crate::support::model_server::{ModelServer, Reply, Step};

/// Runs one response's calls and returns their results, as the model got them.
async fn results_of(dir: &std::path::Path, calls: Vec<(&str, Value)>) -> Vec<(String, bool)> {
    let server = ModelServer::start(vec![Reply::tools(calls).into(), Reply::text("ok").into()]);
    let provider = provider(Api::Anthropic, &server);
    let turn = run_turn(&provider, dir, "go", TurnOptions::default()).await;
    turn.result.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(check_history(&turn.messages), Ok(()));
    let sent = sent_tool_results(&server.requests()[1].body);
    // The sink shows results as they finish (parallel calls in any order);
    // the model gets them in the order of its calls.
    let (mut shown, mut got) = (turn.sink.tool_results(), sent.clone());
    shown.sort();
    got.sort();
    assert_eq!(shown, got, "what the sink showed is what the model got");
    sent
}

fn gitignored_tree() -> tempfile::TempDir {
    let dir = workspace(&[
        (".gitignore", "target/\n*.log\n"),
        ("src/main.rs", "fn main() {\n    println!(\"needle\");\n}\n"),
        ("src/lib.rs", "// NEEDLE in caps\npub fn f() {}\n"),
        ("src/deep/mod.rs", "mod needle;\n"),
        ("target/debug/out.rs", "needle in a build dir\n"),
        ("debug.log", "needle in a log\n"),
        (".hidden/secret.rs", "needle hidden\n"),
        ("README.md", "no match here\n"),
    ]);
    // A binary file with the needle in it: grep must skip it.
    std::fs::write(dir.path().join("src/blob.bin"), b"needle\x00\x01\x02binary").unwrap();
    dir
}

/// A text file that is not UTF-8 is read as text, with its encoding
/// named, and edited in that encoding: never called binary, never turned
/// into UTF-8, never corrupted. A name that is not UTF-8 is shown escaped.
#[tokio::test]
async fn a_file_in_another_encoding_is_read_and_edited_in_it() {
    use std::os::unix::ffi::OsStrExt;
    let dir = workspace(&[]);
    let menu = dir.path().join("menu.txt");
    std::fs::write(&menu, b"caf\xe9 cr\xe8me\n").unwrap();
    let odd_name = std::ffi::OsStr::from_bytes(b"r\xe9sum\xe9.txt");
    std::fs::write(dir.path().join(odd_name), b"x").unwrap();
    let read = results_of(
        dir.path(),
        vec![
            ("read_file", json!({"path": "menu.txt"})),
            ("glob", json!({"pattern": "*.txt"})),
            (
                "grep",
                json!({"pattern": "x", "output_mode": "files_with_matches"}),
            ),
        ],
    )
    .await;
    assert!(!read[0].1, "{}", read[0].0);
    assert!(read[0].0.contains("café crème"), "{}", read[0].0);
    assert!(
        read[0].0.contains("windows-1252 text, not UTF-8"),
        "{}",
        read[0].0
    );
    assert!(read[1].0.contains(r"r\xE9sum\xE9.txt"), "{}", read[1].0);
    assert!(read[2].0.contains(r"r\xE9sum\xE9.txt"), "{}", read[2].0);

    let edit =
        |old: &str, new: &str| json!({"path": "menu.txt", "old_string": old, "new_string": new});
    let kept = results_of(dir.path(), vec![("edit_file", edit("café", "thé"))]).await;
    assert!(!kept[0].1, "{}", kept[0].0);
    assert_eq!(std::fs::read(&menu).unwrap(), b"th\xe9 cr\xe8me\n");

    let refused = results_of(dir.path(), vec![("edit_file", edit("thé", "thé ☕"))]).await;
    assert!(refused[0].1, "{}", refused[0].0);
    assert!(
        refused[0].0.contains("cannot hold `☕`"),
        "{}",
        refused[0].0
    );
    assert_eq!(std::fs::read(&menu).unwrap(), b"th\xe9 cr\xe8me\n");
}

#[tokio::test]
async fn glob_respects_gitignore_and_hidden_files() {
    let dir = gitignored_tree();
    let results = results_of(
        dir.path(),
        vec![
            ("glob", json!({"pattern": "**/*.rs"})),
            ("glob", json!({"pattern": "*.rs", "path": "src"})),
            ("glob", json!({"pattern": ".hidden/*.rs"})),
            ("glob", json!({"pattern": "**/*.py"})),
            ("glob", json!({"pattern": "**/*.rs", "path": "../"})),
        ],
    )
    .await;
    let all: Vec<&str> = results[0].0.lines().collect();
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["src/deep/mod.rs", "src/lib.rs", "src/main.rs"],
        "{all:?}"
    );
    let top: Vec<&str> = results[1].0.lines().collect();
    assert!(
        top.contains(&"src/main.rs") && !top.contains(&"src/deep/mod.rs"),
        "`*` stays in one directory: {top:?}"
    );
    assert_eq!(
        results[2].0, ".hidden/secret.rs",
        "a pattern naming a hidden dir finds it"
    );
    assert!(results[3].0.starts_with("No files match"));
    assert!(results[4].1 && results[4].0.contains("outside the workspace"));
}

#[tokio::test]
async fn glob_lists_newest_first_and_caps_with_a_note() {
    let dir = workspace(&[]);
    for i in 0..210 {
        std::fs::write(dir.path().join(format!("f{i:03}.txt")), "x").unwrap();
    }
    let newest = dir.path().join("f000.txt");
    std::fs::File::options()
        .write(true)
        .open(&newest)
        .unwrap()
        .set_modified(std::time::SystemTime::now() + Duration::from_secs(60))
        .unwrap();
    let results = results_of(dir.path(), vec![("glob", json!({"pattern": "*.txt"}))]).await;
    let lines: Vec<&str> = results[0].0.lines().collect();
    assert_eq!(lines[0], "f000.txt", "newest first");
    assert_eq!(lines.len(), 201);
    assert!(lines[200].contains("10 more files match"), "{}", lines[200]);
}

#[tokio::test]
async fn todo_write_reaches_the_user() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::tool(
            "todo_write",
            json!({"todos": [
                {"content": "read the code", "status": "completed"},
                {"content": "fix the bug", "status": "in_progress"},
                {"content": "run the tests", "status": "pending"},
            ]}),
        )
        .into(),
        Reply::text("planned").into(),
    ]);
    let provider = provider(Api::OpenAi, &server);
    let turn = run_turn(&provider, dir.path(), "plan", TurnOptions::default()).await;
    turn.result.unwrap();
    assert_eq!(
        turn.sink.tool_results()[0].0,
        "Todo list updated: 1 pending, 1 in progress, 1 completed."
    );
    let shown = turn.sink.events().into_iter().find_map(|e| match e {
        bareagent::events::AgentEvent::Todos { todos } => Some(todos),
        _ => None,
    });
    assert_eq!(shown.unwrap().len(), 3);
}

/// Whether a process is running: it exists and is not a zombie (a killed
/// orphan stays a zombie until init reaps it, which in a container may be never).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

pub fn read_pid(dir: &std::path::Path, name: &str) -> i32 {
    std::fs::read_to_string(dir.join(name))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = workspace(&[]);
    let command = "echo $$ > leader.pid; (sleep 60; echo never) & echo $! > child.pid; sleep 60";
    let results = results_of(
        dir.path(),
        vec![("bash", json!({"command": command, "timeout_ms": 500}))],
    )
    .await;
    assert!(
        results[0].1 && results[0].0.starts_with("Error: timed out after 0 s"),
        "{:?}",
        results[0]
    );
    let (leader, child) = (
        read_pid(dir.path(), "leader.pid"),
        read_pid(dir.path(), "child.pid"),
    );
    // Give the kernel a moment to reap the group after SIGKILL.
    for _ in 0..50 {
        if !alive(leader) && !alive(child) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(leader), "leader {leader} survived");
    assert!(!alive(child), "background child {child} survived");
}

#[tokio::test]
async fn ten_megabytes_of_output_come_back_as_head_and_tail() {
    let dir = workspace(&[]);
    let command = "echo START; head -c 10000000 /dev/zero | tr '\\0' 'x'; echo; echo END";
    let results = results_of(dir.path(), vec![("bash", json!({"command": command}))]).await;
    let (text, is_error) = &results[0];
    assert!(!is_error);
    assert!(text.starts_with("START\nxxxx"), "{}", &text[..40]);
    assert!(text.ends_with("xxx\nEND\n"));
    assert!(text.contains("bytes of output left out"));
    assert!(text.chars().count() < 30_200, "{}", text.chars().count());
}

#[tokio::test]
async fn background_output_reaches_the_model_in_a_later_iteration() {
    let dir = workspace(&[]);
    let inbox = bareagent::agent::Inbox::new();
    let server = ModelServer::start(vec![
        Reply::tool(
            "bash",
            json!({"command": "sleep 0.2; echo built-ok", "run_in_background": true}),
        )
        .into(),
        Reply::tool("bash", json!({"command": "sleep 2"})).into(),
        Reply::text("saw it").into(),
    ]);
    let provider = provider(Api::Anthropic, &server);
    let options = TurnOptions {
        inbox: Some(inbox),
        ..Default::default()
    };
    let turn = run_turn(&provider, dir.path(), "build in the background", options).await;
    turn.result.unwrap();
    assert!(
        turn.sink.tool_results()[0]
            .0
            .starts_with("Started in the background as bash_1")
    );
    let requests = server.requests();
    let as_text = |i: usize| requests[i].body["messages"].to_string();
    assert!(
        !as_text(1).contains("<background-command"),
        "not before it finished"
    );
    assert!(
        as_text(2).contains("<background-command id=\\\"bash_1\\\" status=\\\"exit code 0\\\">"),
        "{}",
        as_text(2)
    );
    assert!(as_text(2).contains("built-ok"));
    assert_eq!(check_history(&turn.messages), Ok(()));
}

#[tokio::test]
async fn bash_output_and_kill_bash_manage_a_background_command() {
    let dir = workspace(&[]);
    let inbox = bareagent::agent::Inbox::new();
    let script: Vec<Step> = vec![
        Reply::tool(
            "bash",
            json!({"command": "echo $$ > bg.pid; echo first; sleep 60", "run_in_background": true}),
        )
        .into(),
        Reply::tool("bash", json!({"command": "sleep 0.6"})).into(),
        Reply::tool("bash_output", json!({"id": "bash_1"})).into(),
        Reply::tool("kill_bash", json!({"id": "bash_1"})).into(),
        Reply::tool("bash", json!({"command": "sleep 0.6"})).into(),
        Reply::tools(vec![
            ("bash_output", json!({"id": "bash_1"})),
            ("bash_output", json!({"id": "bash_9"})),
        ])
        .into(),
        Reply::text("done").into(),
    ];
    let server = ModelServer::start(script);
    let provider = provider(Api::Anthropic, &server);
    let options = TurnOptions {
        inbox: Some(inbox),
        ..Default::default()
    };
    let turn = run_turn(&provider, dir.path(), "go", options).await;
    turn.result.unwrap();
    let results = turn.sink.tool_results();
    assert!(
        results[2].0.contains("still running") && results[2].0.contains("first"),
        "{:?}",
        results[2]
    );
    assert!(
        results[3].0.starts_with("Killed bash_1"),
        "{:?}",
        results[3]
    );
    assert!(
        results[5].0.contains("finished: cancelled"),
        "{:?}",
        results[5]
    );
    assert!(results[6].1 && results[6].0.contains("no background command `bash_9`"));
    assert!(!alive(read_pid(dir.path(), "bg.pid")));
}
