//! One truth for the model: what `read_file` shows, `grep` and `glob` find,
//! and commands run against, whether the text sits in an editor's buffer
//! or on disk. Driven through the real language server over stdio.

use serde_json::json;

use crate::common::{sent_tool_results, workspace};
use crate::lsp::{ask, options, start, turn_end};
use crate::support::model_server::{ModelServer, Reply};

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
