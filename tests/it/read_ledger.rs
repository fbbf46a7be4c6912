//! The edit protocol's read ledger through the real loop, headless (disk):
//! a change to a file that changed on disk since the model read it is
//! refused, and `write_file` over an existing file needs a read first.
//! Each case is a script of calls, one per model response, the result each
//! must give, and the file's text at the end.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bareagent::permission::{Approval, Approver, Question};
use serde_json::{Value, json};

use crate::common::*;
use crate::support::model_server::{ModelServer, Reply, Step};

/// What a call's result must be: success, or an error, containing the text.
#[derive(Debug)]
enum Want {
    Ok(&'static str),
    Err(&'static str),
}

struct Case {
    name: &'static str,
    calls: Vec<(&'static str, Value)>,
    want: Vec<Want>,
    /// `f.txt` at the end.
    left: &'static str,
}

/// `f.txt` holds this before each case; the "outside" change has the same
/// length, so a check by size alone would miss it.
const ORIGINAL: &str = "a = 1\n";
const OUTSIDE: &str = "printf 'b = 2\\n' > f.txt";

fn read() -> (&'static str, Value) {
    ("read_file", json!({"path": "f.txt"}))
}

fn outside_change() -> (&'static str, Value) {
    ("bash", json!({"command": OUTSIDE}))
}

fn write(content: &str) -> (&'static str, Value) {
    ("write_file", json!({"path": "f.txt", "content": content}))
}

fn edit(old: &str, new: &str) -> (&'static str, Value) {
    (
        "edit_file",
        json!({"path": "f.txt", "old_string": old, "new_string": new}),
    )
}

fn cases() -> Vec<Case> {
    use Want::*;
    vec![
        Case {
            name: "write_file over an unread file is refused",
            calls: vec![write("x\n")],
            want: vec![Err("f.txt already exists and you have not read it")],
            left: ORIGINAL,
        },
        Case {
            name: "write_file after a read replaces it",
            calls: vec![read(), write("x\n")],
            want: vec![Ok("a = 1"), Ok("Replaced f.txt")],
            left: "x\n",
        },
        Case {
            name: "write_file creates a new file without a read",
            calls: vec![("write_file", json!({"path": "new/g.txt", "content": "g\n"}))],
            want: vec![Ok("Created new/g.txt")],
            left: ORIGINAL,
        },
        Case {
            name: "a partial read counts as a read",
            calls: vec![
                ("read_file", json!({"path": "f.txt", "limit": 1})),
                write("x\n"),
            ],
            want: vec![Ok("a = 1"), Ok("Replaced f.txt")],
            left: "x\n",
        },
        Case {
            name: "edit_file after a change on disk is refused",
            calls: vec![read(), outside_change(), edit("b = 2", "c = 3")],
            want: vec![
                Ok("a = 1"),
                Ok(""),
                Err("f.txt changed since you last read it"),
            ],
            left: "b = 2\n",
        },
        Case {
            name: "write_file after a change on disk is refused",
            calls: vec![read(), outside_change(), write("x\n")],
            want: vec![Ok("a = 1"), Ok(""), Err("read it again, then edit")],
            left: "b = 2\n",
        },
        Case {
            name: "multi_edit after a change on disk is refused",
            calls: vec![
                read(),
                outside_change(),
                (
                    "multi_edit",
                    json!({"path": "f.txt", "edits": [{"old_string": "b", "new_string": "c"}]}),
                ),
            ],
            want: vec![
                Ok("a = 1"),
                Ok(""),
                Err("f.txt changed since you last read it"),
            ],
            left: "b = 2\n",
        },
        Case {
            name: "reading again after the change allows the edit",
            calls: vec![read(), outside_change(), read(), edit("b = 2", "c = 3")],
            want: vec![Ok("a = 1"), Ok(""), Ok("b = 2"), Ok("Edited f.txt")],
            left: "c = 3\n",
        },
        Case {
            name: "the agent's own writes do not make the file stale",
            calls: vec![
                read(),
                edit("a = 1", "a = 2"),
                edit("a = 2", "a = 3"),
                write("z\n"),
            ],
            want: vec![
                Ok("a = 1"),
                Ok("Edited f.txt"),
                Ok("Edited f.txt"),
                Ok("Replaced f.txt"),
            ],
            left: "z\n",
        },
        Case {
            name: "an edit without a read is still allowed (it names what it replaces)",
            calls: vec![edit("a = 1", "a = 2")],
            want: vec![Ok("Edited f.txt")],
            left: "a = 2\n",
        },
    ]
}

#[tokio::test]
async fn changes_need_the_text_the_model_saw() {
    // Every case runs; the failures are reported together.
    let mut failures = Vec::new();
    for case in cases() {
        let dir = workspace(&[("f.txt", ORIGINAL)]);
        let mut script: Vec<Step> = case
            .calls
            .iter()
            .map(|(name, input)| Reply::tool(name, input.clone()).into())
            .collect();
        script.push(Reply::text("done").into());
        let server = ModelServer::start(script);
        let provider = provider(Api::Anthropic, &server);
        let turn = run_turn(&provider, dir.path(), "go", TurnOptions::default()).await;
        turn.result
            .unwrap_or_else(|e| panic!("{}: the turn failed: {e}", case.name));
        let requests = server.requests();
        let results = sent_tool_results(&requests.last().expect("requests").body);
        assert_eq!(results.len(), case.want.len(), "{}: {results:?}", case.name);
        for (index, ((content, is_error), want)) in results.iter().zip(&case.want).enumerate() {
            let ok = match want {
                Want::Ok(text) => !is_error && content.contains(text),
                Want::Err(text) => *is_error && content.contains(text),
            };
            if !ok {
                failures.push(format!(
                    "{}: call {}: want {want:?}, got {content:?} (error: {is_error})",
                    case.name,
                    index + 1
                ));
            }
        }
        let left = std::fs::read_to_string(dir.path().join("f.txt")).expect("f.txt");
        if left != case.left {
            failures.push(format!("{}: f.txt holds {left:?}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Says yes to every question, and remembers why each was asked.
#[derive(Clone, Default)]
struct SaysYes(Arc<Mutex<Vec<String>>>);

#[async_trait]
impl Approver for SaysYes {
    async fn ask(&self, question: &Question<'_>) -> Approval {
        self.0.lock().unwrap().push(question.reason.to_string());
        Approval::AllowOnce
    }
}

/// The user's yes does not lift the ledger: the question says the change
/// cannot be shown and why, and the write is refused when run.
#[tokio::test]
async fn a_yes_does_not_write_over_an_unread_file() {
    let dir = workspace(&[("f.txt", ORIGINAL)]);
    let server = ModelServer::start(vec![
        Reply::tool("write_file", json!({"path": "f.txt", "content": "x\n"})).into(),
        Reply::text("done").into(),
    ]);
    let provider = provider(Api::Anthropic, &server);
    let approver = SaysYes::default();
    let options = TurnOptions {
        mode: bareagent::permission::PermissionMode::Default,
        approver: Box::new(approver.clone()),
        ..TurnOptions::default()
    };
    let turn = run_turn(&provider, dir.path(), "go", options).await;
    turn.result.unwrap_or_else(|e| panic!("{e}"));
    let asked = approver.0.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0]
            .contains("the change cannot be shown: f.txt already exists and you have not read it"),
        "{asked:?}"
    );
    let requests = server.requests();
    let results = sent_tool_results(&requests.last().expect("requests").body);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].1
            && results[0]
                .0
                .starts_with("Error: f.txt already exists and you have not read it"),
        "{results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        ORIGINAL
    );
}
