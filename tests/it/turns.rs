//! Whole turns of the real loop over real HTTP to the scripted model server,
//! for both APIs, streamed and not.

use bareagent::agent::{Inbox, LoopError};
use bareagent::events::AgentEvent;
use bareagent::history::check_history;
use bareagent::permission::{DenyAll, PermissionMode};
use serde_json::json;

use crate::common::*;
use crate::support::model_server::{ModelServer, Reply, Step};

const GREET: &str = "def greet(name):\n    return \"Hello, \" + nme + \"!\"\n";

fn read_edit_answer_script() -> Vec<Step> {
    vec![
        Reply::tool("read_file", json!({"path": "greet.py"})).with_text_first("Let me look.").into(),
        Reply::tool(
            "edit_file",
            json!({"path": "greet.py", "old_string": "\" + nme + \"", "new_string": "\" + name + \""}),
        )
        .into(),
        Reply::text("Fixed the typo.").into(),
    ]
}

#[tokio::test]
async fn read_edit_answer_changes_the_file_in_every_mode() {
    for (api, stream) in ALL {
        let dir = workspace(&[("greet.py", GREET)]);
        let server = ModelServer::start(read_edit_answer_script());
        let provider = provider(api, &server);
        let turn = run_turn(
            provider.as_ref(),
            dir.path(),
            "fix greet.py",
            TurnOptions {
                stream,
                ..Default::default()
            },
        )
        .await;

        let case = format!("{api:?} stream={stream}");
        let outcome = turn.result.unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(outcome.text, "Fixed the typo.", "{case}");
        assert_eq!(outcome.iterations, 3, "{case}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("greet.py")).unwrap(),
            "def greet(name):\n    return \"Hello, \" + name + \"!\"\n",
            "{case}"
        );
        assert_eq!(check_history(&turn.messages), Ok(()), "{case}");
        assert_eq!(
            turn.messages.len(),
            6,
            "{case}: user, (assistant, results) x2, assistant"
        );

        let requests = server.requests();
        assert_eq!(requests.len(), 3, "{case}");
        assert!(requests.iter().all(|r| r.is_stream() == stream), "{case}");
        // The model was shown the numbered file, then the edit's summary.
        let first = sent_tool_results(&requests[1].body);
        assert_eq!(first.len(), 1, "{case}");
        assert!(
            first[0].0.contains("     2\t    return \"Hello, \" + nme"),
            "{case}: {first:?}"
        );
        let second = sent_tool_results(&requests[2].body);
        assert!(
            second.last().unwrap().0.starts_with("Edited greet.py"),
            "{case}: {second:?}"
        );
        assert!(
            outcome.usage.output_tokens > 0 && outcome.usage.input_tokens > 0,
            "{case}"
        );
        if stream {
            assert_eq!(
                turn.sink.streamed_text(),
                "Let me look.Fixed the typo.",
                "{case}"
            );
        }
        match api {
            Api::Anthropic => {
                assert_eq!(requests[0].path, "/v1/messages");
                assert_eq!(requests[0].header("x-api-key"), Some(TEST_KEY));
                assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(requests[0].body["system"], "You are a test.");
                assert_eq!(requests[0].body["tools"][0]["name"], "read_file");
                assert!(requests[0].body["tools"][0]["input_schema"].is_object());
            }
            Api::OpenAi => {
                assert_eq!(requests[0].path, "/v1/chat/completions");
                let bearer = format!("Bearer {TEST_KEY}");
                assert_eq!(requests[0].header("authorization"), Some(bearer.as_str()));
                assert_eq!(requests[0].body["messages"][0]["role"], "system");
                assert_eq!(requests[0].body["tools"][0]["type"], "function");
                assert_eq!(requests[2].body["messages"][3]["role"], "tool");
                if stream {
                    assert_eq!(requests[0].body["stream_options"]["include_usage"], true);
                }
            }
        }
    }
}

#[tokio::test]
async fn tool_failures_become_error_results_and_the_turn_goes_on() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let dir = workspace(&[("a.txt", "alpha\n")]);
        let server = ModelServer::start(vec![
            Reply::tools(vec![
                ("no_such_tool", json!({})),
                ("read_file", json!({"pth": "a.txt"})),
                ("read_file", json!({"path": "missing.txt"})),
                ("read_file", json!({"path": "a.txt"})),
            ])
            .into(),
            Reply::raw_tool("read_file", "{\"path\": \"a.t").into(),
            Reply::text("Done despite errors.").into(),
        ]);
        let provider = provider(api, &server);
        let turn = run_turn(provider.as_ref(), dir.path(), "go", TurnOptions::default()).await;
        let outcome = turn.result.unwrap_or_else(|e| panic!("{api:?}: {e}"));
        assert_eq!(outcome.text, "Done despite errors.");
        assert_eq!(check_history(&turn.messages), Ok(()), "{api:?}");

        // In the order of the calls (the sink sees parallel reads finish in any order).
        let results: Vec<(String, bool)> = turn
            .messages
            .iter()
            .flat_map(|m| m.content.iter())
            .filter_map(|b| match b {
                bareagent::agent::ContentBlock::ToolResult {
                    content, is_error, ..
                } => Some((content.clone(), *is_error)),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), 5, "{api:?}: {results:?}");
        assert_eq!(results[0], ("Unknown tool: no_such_tool".to_string(), true));
        assert!(
            results[1].1 && results[1].0.starts_with("Invalid input for read_file"),
            "{results:?}"
        );
        assert!(
            results[1].0.contains("pth"),
            "names the wrong field: {results:?}"
        );
        assert!(
            results[2].1 && results[2].0 == "Error: `missing.txt` does not exist",
            "{results:?}"
        );
        assert!(
            !results[3].1 && results[3].0.contains("alpha"),
            "{results:?}"
        );
        assert!(
            results[4].1 && results[4].0.contains("not valid JSON"),
            "{results:?}"
        );

        // The errors reached the model, flagged, in one message per response.
        let sent = sent_tool_results(&server.requests()[1].body);
        assert_eq!(
            sent.iter().map(|(_, e)| *e).collect::<Vec<_>>(),
            [true, true, true, false],
            "{api:?}"
        );
        let sent = sent_tool_results(&server.requests()[2].body);
        assert!(
            sent[4].1 && sent[4].0.contains("not valid JSON"),
            "{api:?}: {sent:?}"
        );
    }
}

#[tokio::test]
async fn the_iteration_cap_ends_the_turn_with_a_valid_history() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let dir = workspace(&[("a.txt", "x\n")]);
        let script = (0..3)
            .map(|_| Reply::tool("read_file", json!({"path": "a.txt"})).into())
            .collect();
        let server = ModelServer::start(script);
        let provider = provider(api, &server);
        let options = TurnOptions {
            max_iterations: 3,
            ..Default::default()
        };
        let turn = run_turn(provider.as_ref(), dir.path(), "loop forever", options).await;
        let error = turn.result.expect_err("the cap must end the turn");
        assert!(
            matches!(error, LoopError::IterationCap { cap: 3 }),
            "{error:?}"
        );
        assert!(error.to_string().contains("cap of 3 iterations"), "{error}");
        assert_eq!(server.requests().len(), 3);
        assert_eq!(turn.messages.len(), 7);
        assert_eq!(check_history(&turn.messages), Ok(()));
    }
}

#[tokio::test]
async fn a_denied_edit_is_an_error_result_and_the_file_is_untouched() {
    let dir = workspace(&[("a.txt", "keep me\n")]);
    let server = ModelServer::start(vec![
        Reply::tool("write_file", json!({"path": "a.txt", "content": "gone"})).into(),
        Reply::text("The user said no.").into(),
    ]);
    let provider = provider(Api::Anthropic, &server);
    let options = TurnOptions {
        mode: PermissionMode::Default,
        approver: Box::new(DenyAll("Denied by user".into())),
        ..Default::default()
    };
    let turn = run_turn(provider.as_ref(), dir.path(), "overwrite", options).await;
    assert_eq!(turn.result.unwrap().text, "The user said no.");
    assert_eq!(
        turn.sink.tool_results(),
        vec![("Denied by user".to_string(), true)]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "keep me\n"
    );

    // Plan mode denies with its own explanation, without asking anyone.
    let server = ModelServer::start(vec![
        Reply::tool(
            "edit_file",
            json!({"path": "a.txt", "old_string": "keep", "new_string": "lose"}),
        )
        .into(),
        Reply::text("ok").into(),
    ]);
    let provider = provider_for(&server);
    let options = TurnOptions {
        mode: PermissionMode::Plan,
        ..Default::default()
    };
    let turn = run_turn(provider.as_ref(), dir.path(), "edit", options).await;
    let results = turn.sink.tool_results();
    assert!(
        results[0].1 && results[0].0.contains("plan mode"),
        "{results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "keep me\n"
    );
}

fn provider_for(server: &ModelServer) -> Box<dyn bareagent::provider::Provider> {
    provider(Api::Anthropic, server)
}

#[tokio::test]
async fn crlf_and_tab_indented_files_survive_edit_file() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let original = "fn main() {\r\n\tlet x = 1;\r\n\tprintln!(\"{x}\");\r\n}\r\n";
        let dir = workspace(&[
            ("main.rs", original),
            ("Makefile", "all:\n\techo hi\n\techo bye"),
        ]);
        let server = ModelServer::start(vec![
            Reply::tools(vec![
                ("edit_file", json!({"path": "main.rs", "old_string": "\tlet x = 1;\n\tprintln", "new_string": "\tlet x = 2;\n\tlet y = x;\n\tprintln"})),
                ("edit_file", json!({"path": "Makefile", "old_string": "\techo hi", "new_string": "\techo hello"})),
            ])
            .into(),
            Reply::text("done").into(),
        ]);
        let provider = provider(api, &server);
        let turn = run_turn(
            provider.as_ref(),
            dir.path(),
            "edit",
            TurnOptions::default(),
        )
        .await;
        turn.result.unwrap();
        assert!(
            turn.sink.tool_results().iter().all(|(_, e)| !e),
            "{:?}",
            turn.sink.tool_results()
        );
        assert_eq!(
            std::fs::read(dir.path().join("main.rs")).unwrap(),
            b"fn main() {\r\n\tlet x = 2;\r\n\tlet y = x;\r\n\tprintln!(\"{x}\");\r\n}\r\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("Makefile")).unwrap(),
            "all:\n\techo hello\n\techo bye",
            "tabs kept, no trailing newline added"
        );
    }
}

#[tokio::test]
async fn thinking_blocks_are_sent_back_unchanged() {
    let dir = workspace(&[("a.txt", "x\n")]);
    for stream in [true, false] {
        let server = ModelServer::start(vec![
            Reply::tool("read_file", json!({"path": "a.txt"}))
                .with_thinking("I should read a.txt.", "sig-abc==")
                .into(),
            Reply::text("It holds x.").into(),
        ]);
        let provider = provider(Api::Anthropic, &server);
        let turn = run_turn(
            provider.as_ref(),
            dir.path(),
            "what is in a.txt?",
            TurnOptions {
                stream,
                ..Default::default()
            },
        )
        .await;
        assert_eq!(turn.result.unwrap().text, "It holds x.");
        let second = &server.requests()[1].body;
        assert_eq!(
            second["messages"][1]["content"][0],
            json!({"type": "thinking", "thinking": "I should read a.txt.", "signature": "sig-abc=="}),
            "stream={stream}"
        );
        if stream {
            assert!(
                turn.sink.events().contains(&AgentEvent::ThinkingDelta {
                    text: "I should read a.txt.".into()
                }) || turn
                    .sink
                    .events()
                    .iter()
                    .any(|e| matches!(e, AgentEvent::ThinkingDelta { .. }))
            );
        }
    }
}

#[tokio::test]
async fn inbox_messages_reach_the_next_model_call() {
    let dir = workspace(&[("a.txt", "x\n")]);
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "a.txt"})).into(),
        Reply::text("noted").into(),
    ]);
    let provider = provider(Api::Anthropic, &server);
    let inbox = Inbox::new();
    inbox.push("<background>build finished: ok</background>");
    let options = TurnOptions {
        inbox: Some(inbox.clone()),
        ..Default::default()
    };
    let turn = run_turn(provider.as_ref(), dir.path(), "hi", options).await;
    turn.result.unwrap();
    let first = &server.requests()[0].body["messages"];
    assert_eq!(
        first.as_array().unwrap().len(),
        1,
        "joined the user's message, no second user turn"
    );
    assert_eq!(
        first[0]["content"][1]["text"],
        "<background>build finished: ok</background>"
    );
    assert_eq!(check_history(&turn.messages), Ok(()));
}
