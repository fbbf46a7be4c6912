//! Whole outputs as committed `insta` snapshots: the `bareagent run --json`
//! stream of the demo turn, and the chat file after a turn in the editor
//! (the model's thinking folded in it).
//! What changes from run to run (see `redact.rs`) is taken out first, so
//! the snapshots are stable.
//!
//! After an intended change: `INSTA_UPDATE=always cargo test --test it
//! transcripts`, then review the diff of `tests/it/snapshots/` before committing.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::common::{bareagent, run_against_model, workspace};
use crate::lsp::{ON_DISK, options, start, turn_end};
use crate::redact::{Roots, normalise};
use crate::support::model_server::{ModelServer, Reply};

#[test]
fn the_json_stream_of_a_read_edit_answer_turn() {
    let dir = workspace(&[(
        "greet.py",
        "def greet(name):\n    return \"Hello, \" + nme + \"!\"\n",
    )]);
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "greet.py"}))
            .with_text_first("I'll read greet.py first.")
            .into(),
        Reply::tool(
            "edit_file",
            json!({"path": "greet.py", "old_string": "nme", "new_string": "name"}),
        )
        .into(),
        Reply::text("Fixed the typo.").into(),
    ]);
    let out = run_against_model(&mut bareagent(dir.path()), &server)
        .args(["--json", "--permission-mode", "bypass", "--no-stream"])
        .args(["--idle-timeout", "2"])
        .arg("Fix greet.py")
        .output()
        .expect("run bareagent");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (root, mut ids) = (Roots::of(dir.path()), BTreeMap::new());
    let lines: Vec<String> = stdout
        .lines()
        .map(|line| {
            let mut event: Value = serde_json::from_str(line).expect("a JSON line");
            normalise(&mut event, &mut ids, &root);
            event.to_string()
        })
        .collect();
    insta::assert_snapshot!("run_json_stream", lines.join("\n"));
}

#[test]
fn the_chat_file_after_a_turn_in_the_editor() {
    let dir = workspace(&[
        ("greet.py", ON_DISK),
        (".bareagent/chat.md", "# chat\n\n## You\n\nFix greet.py\n"),
    ]);
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "greet.py"}))
            .with_text_first("Reading it.")
            .with_thinking("The greeting is wrong.\n\nRead the file first.", "sig")
            .into(),
        Reply::tool(
            "edit_file",
            json!({"path": "greet.py", "old_string": "'hi '", "new_string": "'Hello, '"}),
        )
        .into(),
        Reply::tool("bash", json!({"command": "echo checked"})).into(),
        Reply::text("Greets with Hello now.").into(),
    ]);
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));
    let chat = client.open(".bareagent/chat.md", "# chat\n\n## You\n\nFix greet.py\n");
    let started = client.execute("bareagent.ask", json!([])).expect("ask");
    let turn = started["turn"].as_u64().expect("a turn id");
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    client.wait_until(crate::lsp::LONG, "the chat to end with a prompt", |c| {
        c.text(&chat).is_some_and(|t| {
            t.contains("Greets with Hello now.") && t.trim_end().ends_with("## You")
        })
    });
    let text = client.text(&chat).expect("the chat's text");
    insta::assert_snapshot!(
        "chat_file_after_a_turn",
        Roots::of(dir.path()).redact(&text)
    );
    assert_eq!(client.shutdown().code(), Some(0));
}
