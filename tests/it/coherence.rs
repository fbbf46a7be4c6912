//! One truth for the model: what `read_file` shows, `grep` and `glob` find,
//! and commands run against, whether the text sits in an editor's buffer
//! or on disk. Driven through the real language server over stdio.

use serde_json::json;

use crate::common::{sent_tool_results, workspace};
use crate::lsp::{ask, options, start, turn_end};
use crate::support::model_server::{ModelServer, Reply, Step};

#[test]
fn grep_and_glob_search_the_buffers_read_file_reads() {
    let dir = workspace(&[
        ("calc.py", "def add(a, b):\n    return a + b\n"),
        ("notes.txt", "nothing here\n"),
    ]);
    let server = ModelServer::start(vec![
        Reply::tools(vec![
            (
                "grep",
                json!({"pattern": "def product", "output_mode": "content"}),
            ),
            ("grep", json!({"pattern": "def add"})),
            ("glob", json!({"pattern": "**/*.py"})),
            ("grep", json!({"pattern": "token", "glob": "*.py"})),
            ("grep", json!({"pattern": "hunter2"})),
        ])
        .into(),
        Reply::text("Searched.").into(),
    ]);
    let mut options = options(dir.path(), &server, "default");
    options.initialization_options["permissions"] = json!({"deny": ["read(private/**)"]});
    let client = start(dir.path(), options);
    // The user's unsaved buffer renames add to product; a new file exists only in the editor.
    client.open("calc.py", "def product(a, b):\n    return a * b\n");
    client.open("fresh.py", "token = 1\n");
    client.open("fresh.txt", "token = 2\n");
    client.open("private/keys.py", "password = 'hunter2'\n");
    let started = ask(&client, json!({"prompt": "search"}));
    let end = turn_end(&client, started["turn"].as_u64().unwrap());
    assert_eq!(end["type"], "turn_finished", "{end}");

    let results = sent_tool_results(&server.requests()[1].body);
    let texts: Vec<&str> = results.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        texts[0].lines().next(),
        Some("calc.py:1:def product(a, b):"),
        "the buffer is searched"
    );
    assert!(
        texts[1].starts_with("No matches for `def add`."),
        "not the disk's old text: {}",
        texts[1]
    );
    let globbed: Vec<&str> = texts[2].lines().collect();
    assert!(
        globbed.contains(&"fresh.py") && globbed.contains(&"calc.py"),
        "{globbed:?}"
    );
    assert!(
        !globbed.iter().any(|p| p.contains("keys")),
        "a denied buffer is not listed: {globbed:?}"
    );
    assert_eq!(
        texts[3].lines().next(),
        Some("fresh.py"),
        "the glob filter applies to buffers too"
    );
    assert!(!texts[3].contains("fresh.txt"), "{}", texts[3]);
    assert!(
        texts[4].starts_with("No matches"),
        "a denied buffer is not searched: {}",
        texts[4]
    );
    assert!(
        texts[4].contains("denied by"),
        "and the answer says so: {}",
        texts[4]
    );
}

pub(crate) const CALC: &str = "def add(a, b):\n    return a + b\n";
pub(crate) const MINE_ON_DISK: &str = "def mine():\n    return 1\n";

/// The agent reads calc.py and renames add to product in it.
fn read_and_rename() -> Vec<Step> {
    vec![
        Reply::tool("read_file", json!({"path": "calc.py"})).into(),
        Reply::tool(
            "edit_file",
            json!({"path": "calc.py", "old_string": "def add", "new_string": "def product"}),
        )
        .into(),
    ]
}

/// The agent edits calc.py and mine.py (which holds the user's unsaved
/// `users()`), then runs a command that imports both.
/// After `edit_both_then_import` in an editor that saves: the command (its
/// result `ran`) saw both edits, the agent's edit of calc.py is on disk, and
/// the user's unsaved work in mine.py is not.
pub(crate) fn the_agents_edit_alone_was_saved(dir: &std::path::Path, ran: Option<(String, bool)>) {
    let ran = ran.expect("the command's result reached the model");
    assert!(
        !ran.1 && ran.0.starts_with("5 3 2\n"),
        "the command saw both edits: {ran:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("calc.py")).unwrap(),
        "def product(a, b):\n    return a + b\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("mine.py")).unwrap(),
        MINE_ON_DISK,
        "the user's unsaved work is never written"
    );
}

pub(crate) fn edit_both_then_import() -> Vec<Step> {
    vec![
        Reply::tools(vec![
            ("read_file", json!({"path": "calc.py"})),
            ("read_file", json!({"path": "mine.py"})),
        ])
        .into(),
        Reply::tools(vec![
            (
                "edit_file",
                json!({"path": "calc.py", "old_string": "def add", "new_string": "def product"}),
            ),
            (
                "edit_file",
                json!({"path": "mine.py", "old_string": "return 1", "new_string": "return 3"}),
            ),
        ])
        .into(),
        Reply::tool(
            "bash",
            json!({"command": "python3 -c 'import calc, mine; print(calc.product(2, 3), mine.mine(), mine.users())'"}),
        )
        .into(),
        Reply::text("Done.").into(),
    ]
}

/// The agent renames add to product in the open buffer, then checks it with
/// a command, then runs a "formatter" that rewrites the file in place.
fn edit_then_run_script() -> Vec<Step> {
    let mut steps = read_and_rename();
    steps.extend([
        Reply::tool(
            "bash",
            json!({"command": "python3 -c 'import calc; print(calc.product(2, 3))'"}),
        )
        .into(),
        Reply::tool(
            "bash",
            json!({"command": "python3 -c \"p='calc.py'; s=open(p).read(); open(p,'w').write(s.replace('a + b', 'b + a'))\""}),
        )
        .into(),
        Reply::text("Renamed, checked and formatted.").into(),
    ]);
    steps
}

fn modified(path: &std::path::Path) -> std::time::SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

#[test]
fn without_saving_a_command_sees_the_agents_edit_and_the_disk_is_never_written() {
    let dir = workspace(&[
        ("calc.py", CALC),
        ("notes.py", "x = 1\n"),
        ("private/key.txt", "secret\n"),
    ]);
    let before = modified(&dir.path().join("calc.py"));
    let server = ModelServer::start(edit_then_run_script());
    // Like Helix: applyEdit, but no way to ask it to save. The deny rule
    // makes the sandbox grant the workspace file by file (the harder case
    // for a mounted copy).
    let mut options = options(dir.path(), &server, "bypass");
    options.initialization_options["permissions"] = json!({"deny": ["read(private/**)"]});
    let client = start(dir.path(), options);
    let calc = client.open("calc.py", CALC);
    // The user's own unsaved work, in another file.
    client.open("notes.py", "x = 2  # unsaved\n");
    let started = ask(&client, json!({"prompt": "rename add to product"}));
    let end = turn_end(&client, started["turn"].as_u64().unwrap());
    assert_eq!(end["type"], "turn_finished", "{end}");

    let checked: (String, bool) = sent_tool_results(&server.requests()[3].body)
        .last()
        .unwrap()
        .clone();
    assert!(!checked.1, "the check passed: {}", checked.0);
    assert!(checked.0.starts_with("5\n"), "{}", checked.0);
    assert!(
        checked
            .0
            .contains("commands see the saved version of: notes.py"),
        "the model is told what the command did not see: {}",
        checked.0
    );
    let formatted: (String, bool) = sent_tool_results(&server.requests()[4].body)
        .last()
        .unwrap()
        .clone();
    assert!(
        formatted
            .0
            .contains("the command changed calc.py; the change is in its buffer"),
        "{}",
        formatted.0
    );
    assert_eq!(
        client.text(&calc).unwrap(),
        "def product(a, b):\n    return b + a\n",
        "what the command wrote came back into the buffer"
    );
    // Nothing was written behind the editor: its own save will succeed.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        CALC
    );
    assert_eq!(modified(&dir.path().join("calc.py")), before);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.py")).unwrap(),
        "x = 1\n"
    );
    assert!(
        crate::lsp::requests_of(&client, "bareagent/saveDocuments").is_empty(),
        "not asked of a client that did not offer it"
    );
}

#[test]
fn a_client_that_saves_gets_the_agents_edits_saved_but_never_the_users_unsaved_work() {
    let dir = workspace(&[("calc.py", CALC), ("mine.py", MINE_ON_DISK)]);
    let server = ModelServer::start(edit_both_then_import());
    let mut options = options(dir.path(), &server, "bypass");
    options.initialization_options["saveDocuments"] = json!(true);
    let client = start(dir.path(), options);
    let calc = client.open("calc.py", CALC);
    // The user has unsaved work in mine.py before the agent edits it.
    let mine = client.open(
        "mine.py",
        "def mine():\n    return 1\n\ndef users():\n    return 2\n",
    );
    let started = ask(&client, json!({"prompt": "edit both"}));
    let end = turn_end(&client, started["turn"].as_u64().unwrap());
    assert_eq!(end["type"], "turn_finished", "{end}");

    let saves = crate::lsp::requests_of(&client, "bareagent/saveDocuments");
    assert_eq!(saves.len(), 1, "{saves:?}");
    assert_eq!(
        saves[0]["uris"],
        json!([calc]),
        "only the file that held none of the user's work"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        "def product(a, b):\n    return a + b\n"
    );
    // The user's file is never written; the command saw its buffer anyway.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mine.py")).unwrap(),
        MINE_ON_DISK
    );
    let ran: (String, bool) = sent_tool_results(&server.requests()[3].body)
        .last()
        .unwrap()
        .clone();
    assert!(!ran.1 && ran.0.starts_with("5 3 2\n"), "{}", ran.0);
    assert!(client.text(&mine).unwrap().contains("return 3"));
}

#[test]
fn with_edits_save_never_the_result_names_the_edits_the_command_did_not_see() {
    let dir = workspace(&[("calc.py", CALC)]);
    let server = ModelServer::start(edit_then_run_script());
    let mut options = options(dir.path(), &server, "bypass");
    options.initialization_options["saveDocuments"] = json!(true);
    options.initialization_options["edits"] = json!({"save": "never"});
    let client = start(dir.path(), options);
    client.open("calc.py", CALC);
    let started = ask(&client, json!({"prompt": "rename"}));
    turn_end(&client, started["turn"].as_u64().unwrap());
    let checked: (String, bool) = sent_tool_results(&server.requests()[3].body)
        .last()
        .unwrap()
        .clone();
    assert!(
        checked.1,
        "the command ran against the disk and failed: {}",
        checked.0
    );
    assert!(
        checked
            .0
            .contains("the agent's edits to calc.py are not on disk (edits.save = \"never\")"),
        "{}",
        checked.0
    );
    assert!(crate::lsp::requests_of(&client, "bareagent/saveDocuments").is_empty());
}

#[test]
fn after_each_edit_the_editor_saves_at_once() {
    let dir = workspace(&[("calc.py", CALC)]);
    let mut script = read_and_rename();
    script.push(Reply::text("Done.").into());
    let server = ModelServer::start(script);
    let mut options = options(dir.path(), &server, "bypass");
    options.initialization_options["saveDocuments"] = json!(true);
    options.initialization_options["edits"] = json!({"save": "after-each-edit"});
    let client = start(dir.path(), options);
    client.open("calc.py", CALC);
    let started = ask(&client, json!({"prompt": "rename"}));
    turn_end(&client, started["turn"].as_u64().unwrap());
    assert_eq!(
        crate::lsp::requests_of(&client, "bareagent/saveDocuments").len(),
        1
    );
    assert!(
        std::fs::read_to_string(dir.path().join("calc.py"))
            .unwrap()
            .starts_with("def product")
    );
}

#[test]
fn replacing_a_mounted_file_fails_visibly_and_the_model_is_told_why() {
    let dir = workspace(&[("calc.py", CALC)]);
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "calc.py"})).into(),
        Reply::tool(
            "edit_file",
            json!({"path": "calc.py", "old_string": "def add", "new_string": "def product"}),
        )
        .into(),
        Reply::tool(
            "bash",
            json!({"command": "sed -i s/product/times/ calc.py"}),
        )
        .into(),
        Reply::text("Tried.").into(),
    ]);
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));
    let calc = client.open("calc.py", CALC);
    let started = ask(&client, json!({"prompt": "rename"}));
    turn_end(&client, started["turn"].as_u64().unwrap());
    let (text, is_error) = sent_tool_results(&server.requests()[3].body)
        .last()
        .unwrap()
        .clone();
    assert!(is_error, "{text}");
    assert!(text.contains("use edit_file instead"), "{text}");
    assert!(client.text(&calc).unwrap().starts_with("def product"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        CALC
    );
}

#[test]
fn a_client_that_saves_keeps_the_chat_file_on_disk_in_step_with_its_buffer() {
    let chat_text = "# chat\n\n## You\n\nsay hi\n";
    let dir = workspace(&[(".bareagent/chat.md", chat_text)]);
    let server = ModelServer::start(vec![Reply::text("Hi there.").into()]);
    let mut options = options(dir.path(), &server, "default");
    options.initialization_options["saveDocuments"] = json!(true);
    let client = start(dir.path(), options);
    let chat = client.open(".bareagent/chat.md", chat_text);
    let started = ask(&client, serde_json::Value::Null);
    turn_end(&client, started["turn"].as_u64().unwrap());
    let on_disk = dir.path().join(".bareagent/chat.md");
    client.wait_until(
        crate::lsp::LONG,
        "the chat's disk copy to hold the reply",
        |c| {
            let disk = std::fs::read_to_string(&on_disk).unwrap_or_default();
            disk.contains("Hi there.") && c.text(&chat).as_deref() == Some(disk.as_str())
        },
    );
}
