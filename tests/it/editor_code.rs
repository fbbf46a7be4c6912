//! `bareagent/codeIntelligence` over real stdio: the `code` tool asks the
//! editor only where the client announced it answers, the request carries
//! the LSP method and params, and the editor's answer, its error and its
//! silence each reach the model. The test client answers as scripted, the
//! way an editor whose language servers said so would (the real editors'
//! answers are tested in tests/it/vscode.rs and tests/it/neovim_code.rs).

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{sent_tool_results, workspace};
use crate::lsp::{ask, options, requests_of, start};
use crate::support::lsp_client::{CodeAnswer, LspClient};
use crate::support::model_server::{ModelServer, Reply};

const CALC: &str = "def add(a, b):\n    return a + b\n";
const MAIN: &str = "from calc import add\n\n# add is not called here\ntotal = add(1, 2)\n";

/// `references` of what is at calc.py:1:5 (`add`), by position: one request.
fn references() -> Reply {
    Reply::tool(
        "code",
        json!({"operation": "references", "path": "calc.py", "line": 1, "column": 5}),
    )
}

/// The result of the last tool call in a request to the model.
fn last_result(body: &Value) -> (String, bool) {
    sent_tool_results(body)
        .pop()
        .expect("a tool result in the request")
}

/// Waits (up to `secs`) for the turn started by `started` to end.
fn wait_turn(client: &LspClient, started: &Value, secs: u64) -> Value {
    let turn = started["turn"].clone();
    client.wait_for_notification(
        Duration::from_secs(secs),
        "the turn to end",
        |method, params| {
            method == "bareagent/event"
                && params["turn"] == turn
                && (params["type"] == "turn_finished" || params["type"] == "turn_failed")
        },
    )
}

#[test]
fn a_client_that_does_not_announce_it_is_never_asked() {
    let dir = workspace(&[("calc.py", CALC), ("main.py", MAIN)]);
    let server = ModelServer::start(vec![references().into(), Reply::text("done").into()]);
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));
    let started = ask(&client, json!({"prompt": "who calls add?"}));
    let end = wait_turn(&client, &started, 60);
    assert_eq!(end["type"], "turn_finished", "{end}");
    assert!(
        requests_of(&client, "bareagent/codeIntelligence").is_empty(),
        "asked a client that did not announce it"
    );
    assert_eq!(sent_tool_results(&server.requests()[1].body).len(), 1);
}

/// The editor's answer, then its error, then no workspace symbols, then no
/// answer at all: the model reads the references, the editor's reason, that
/// nothing matched, and the timeout.
#[test]
fn the_editors_answer_error_and_silence_reach_the_model() {
    let dir = workspace(&[("calc.py", CALC), ("main.py", MAIN)]);
    let server = ModelServer::start(vec![
        references().into(),
        references().into(),
        Reply::tool(
            "code",
            json!({"operation": "workspace_symbols", "symbol": "add", "path": "calc.py"}),
        )
        .into(),
        references().into(),
        Reply::text("done").into(),
    ]);
    let mut options = options(dir.path(), &server, "bypass");
    options.initialization_options["codeIntelligence"] = json!(true);
    let main_uri = format!("file://{}", dir.path().join("main.py").display());
    let at = |line: u32, from: u32, to: u32| json!({"start": {"line": line, "character": from}, "end": {"line": line, "character": to}});
    options.code_answers = vec![
        CodeAnswer::Result(json!([
            {"uri": main_uri, "range": at(0, 17, 20)},
            {"uri": main_uri, "range": at(3, 8, 11)},
        ])),
        CodeAnswer::Error("no language server is attached to calc.py in Neovim".into()),
        CodeAnswer::Result(Value::Null),
        CodeAnswer::NeverAnswer,
    ];
    let client = start(dir.path(), options);
    let started = ask(&client, json!({"prompt": "who calls add?"}));
    let end = wait_turn(&client, &started, 90);
    assert_eq!(end["type"], "turn_finished", "{end}");

    let asked = requests_of(&client, "bareagent/codeIntelligence");
    assert_eq!(asked.len(), 4, "{asked:#?}");
    let calc_uri = format!("file://{}", dir.path().join("calc.py").display());
    assert_eq!(asked[0]["method"], "textDocument/references", "{asked:#?}");
    assert_eq!(asked[0]["params"]["textDocument"]["uri"], calc_uri);
    assert_eq!(
        asked[0]["params"]["position"],
        json!({"line": 0, "character": 4}),
        "line and column from 1 are LSP's from 0"
    );
    assert_eq!(
        asked[0]["params"]["context"]["includeDeclaration"],
        json!(false)
    );

    let requests = server.requests();
    let answered = last_result(&requests[1].body);
    assert!(!answered.1, "{answered:?}");
    assert!(
        answered.0.contains("main.py\n") && answered.0.contains("4:9  total = add(1, 2)"),
        "the editor's locations, read as the model reads them: {answered:?}"
    );
    let refused = last_result(&requests[2].body);
    assert!(refused.1, "{refused:?}");
    assert!(
        refused.0.contains(
            "the editor could not answer: no language server is attached to calc.py in Neovim"
        ),
        "{refused:?}"
    );
    // Workspace symbols name the file whose language is wanted (an editor
    // with no server running yet opens it); no symbols is an answer.
    assert_eq!(
        asked[2],
        json!({"method": "workspace/symbol", "params": {"query": "add"}, "uri": calc_uri}),
    );
    let none = last_result(&requests[3].body);
    assert!(!none.1, "{none:?}");
    let silent = last_result(&requests[4].body);
    assert!(silent.1, "{silent:?}");
    assert!(
        silent.0.contains("the editor")
            && silent
                .0
                .contains("did not answer textDocument/references within 30 s"),
        "{silent:?}"
    );
}
