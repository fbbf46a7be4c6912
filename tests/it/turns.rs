//! Whole turns of the real loop over real HTTP to the scripted model server
//! (the cases that need more than a fixture file in tests/fixtures/turns/),
//! for both APIs, streamed and not.

use bareagent::agent::Inbox;
use bareagent::events::AgentEvent;
use bareagent::history::check_history;
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
            &provider,
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
                let system = bareagent::agent::system_prompt(dir.path());
                assert_eq!(requests[0].body["system"][0]["text"], system.as_str());
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
            &provider,
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
    let turn = run_turn(&provider, dir.path(), "hi", options).await;
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
