//! The editor's diagnostics reach the agent: pushed by a client
//! (`bareagent/diagnostics`) or carried by code-action requests, shown after
//! an edit and by the `diagnostics` tool, and never for a file the read
//! policy hides.

use serde_json::{Value, json};

use crate::common::{sent_tool_results, workspace};
use crate::lsp::{LONG, ask, options, start, turn_end};
use crate::support::model_server::{ModelServer, Reply};

const GOOD: &str = "const n: number = 1;\n";
const BROKEN: &str = "const n: number = \"one\";\n";

fn ts_error(line: u32, message: &str) -> Value {
    json!({
        "range": {"start": {"line": line, "character": 6}, "end": {"line": line, "character": 7}},
        "severity": 1, "source": "ts", "code": 2322, "message": message,
    })
}

const NOT_NUMBER: &str = "Type 'string' is not assignable to type 'number'.";

/// The client pushes: the edit waits for the editor's report on the file
/// and its result says what the editor now reports; the tool reports it too.
#[test]
fn an_edit_that_breaks_the_file_is_told_what_the_editor_now_reports() {
    let dir = workspace(&[("a.ts", GOOD)]);
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "a.ts"})).into(),
        Reply::tool(
            "edit_file",
            json!({"path": "a.ts", "old_string": "= 1", "new_string": "= \"one\""}),
        )
        .into(),
        Reply::tool("diagnostics", json!({})).into(),
        Reply::text("Broken, as asked.").into(),
    ]);
    let mut opts = options(dir.path(), &server, "accept-edits");
    opts.initialization_options["diagnostics"] = json!(true);
    // Long enough that only the report ends the wait in this test.
    opts.initialization_options["diagnosticsSettleMs"] = json!(60_000);
    let client = start(dir.path(), opts);
    let uri = client.open("a.ts", GOOD);
    client.notify(
        "bareagent/diagnostics",
        json!({"uri": uri, "diagnostics": []}),
    );
    let turn = ask(&client, json!("break it"))["turn"].as_u64().unwrap();
    client.wait_until(LONG, "the edit in the buffer", |c| {
        c.text(&uri).as_deref() == Some(BROKEN)
    });
    // As VS Code's TypeScript server does: a report soon after the change.
    client.notify(
        "bareagent/diagnostics",
        json!({"uri": uri, "diagnostics": [ts_error(0, NOT_NUMBER)]}),
    );
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");

    let requests = server.requests();
    let edited = &sent_tool_results(&requests[2].body)[1];
    assert!(!edited.1, "{edited:?}");
    assert!(
        edited.0.ends_with(&format!(
            "\nThe editor now reports in a.ts:\n  line 1:7 error (ts 2322): {NOT_NUMBER}"
        )),
        "{}",
        edited.0
    );
    let reported = &sent_tool_results(&requests[3].body)[2];
    assert_eq!(
        reported.0,
        format!("a.ts:\n  line 1:7 error (ts 2322): {NOT_NUMBER}"),
        "the tool, by default on the files read or edited"
    );
}

/// Any client: diagnostics carried by a code-action request are known to
/// the tool; a file the read policy hides is never reported on (its
/// message may quote it), whichever way it is named.
#[test]
fn code_action_diagnostics_reach_the_tool_and_hidden_files_stay_hidden() {
    let dir = workspace(&[("a.ts", BROKEN), (".env", "TOKEN=x\n")]);
    // Each case: the tool's input, what the answer must hold, what it must not.
    let cases: [(Value, &str, &str); 3] = [
        (json!({"paths": ["a.ts"]}), NOT_NUMBER, "TOKEN"),
        (json!({"all": true}), NOT_NUMBER, "TOKEN"),
        (json!({"paths": [".env"]}), "Skipped 1 file", "TOKEN"),
    ];
    let mut steps = Vec::new();
    for (input, _, _) in &cases {
        steps.push(Reply::tool("diagnostics", input.clone()).into());
    }
    steps.push(Reply::text("done").into());
    let server = ModelServer::start(steps);
    let client = start(dir.path(), options(dir.path(), &server, "default"));
    let a = client.open("a.ts", BROKEN);
    let env = client.open(".env", "TOKEN=x\n");
    for (uri, message) in [(&a, NOT_NUMBER), (&env, "TOKEN=x is not a valid line")] {
        let range =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 9}});
        let context = json!({"diagnostics": [ts_error(0, message)]});
        client
            .request(
                "textDocument/codeAction",
                json!({"textDocument": {"uri": uri}, "range": range, "context": context}),
            )
            .unwrap();
    }
    let turn = ask(&client, json!("what is broken?"))["turn"]
        .as_u64()
        .unwrap();
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    let sent = sent_tool_results(&server.requests()[cases.len()].body);
    for ((input, holds, never), (answer, is_error)) in cases.iter().zip(&sent) {
        assert!(!is_error, "{input}: {answer}");
        assert!(answer.contains(holds), "{input}: {answer}");
        assert!(!answer.contains(never), "{input} leaked: {answer}");
    }
}
