//! Parallel read-only calls, serial mutating ones, sub-agents, and
//! cancellation that leaves a history the next turn can continue.

use std::time::{Duration, Instant};

use bareagent::agent::{CANCELLED, LoopError, Message};
use bareagent::history::check_history;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::*;
use crate::support::model_server::{Hold, ModelServer, Reply};
use crate::tools::{alive, read_pid};

#[tokio::test]
async fn read_only_calls_overlap_and_mutating_calls_stay_serial() {
    let dir = workspace(&[("a.txt", "alpha\n")]);
    let hold = Hold::new();
    let server = ModelServer::start(vec![
        // Two explore sub-agents and a read, in one response: all read-only.
        Reply::tools(vec![
            (
                "task",
                json!({"description": "one", "prompt": "look at a", "kind": "explore"}),
            ),
            (
                "task",
                json!({"description": "two", "prompt": "look at b", "kind": "explore"}),
            ),
            ("read_file", json!({"path": "a.txt"})),
        ])
        .into(),
        // Each sub-agent's only model call is held until the test lets it go.
        Reply::text("sub-agent answer").held(&hold).into(),
        Reply::text("sub-agent answer").held(&hold).into(),
        // Two commands: mutating, so one after the other.
        Reply::tools(vec![
            (
                "bash",
                json!({"command": "date +%s.%N >> times; sleep 0.4; date +%s.%N >> times"}),
            ),
            (
                "bash",
                json!({"command": "date +%s.%N >> times; sleep 0.4; date +%s.%N >> times"}),
            ),
        ])
        .into(),
        Reply::text("done").into(),
    ]);
    let provider = provider(Api::Anthropic, &server);
    // Both sub-agents' model calls started before either finished: their
    // requests both arrive while the answers are held. Run one after the
    // other, the second would never arrive, and the deadline lets them go.
    let overlapped = async {
        let deadline = Instant::now() + Duration::from_secs(20);
        let both_arrived = loop {
            if server.requests().len() >= 3 {
                break true;
            }
            if Instant::now() > deadline {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        hold.release();
        hold.release();
        both_arrived
    };
    let (turn, overlapped) = tokio::join!(
        run_turn(&provider, dir.path(), "go", TurnOptions::default()),
        overlapped
    );
    let outcome = turn.result.unwrap();
    assert_eq!(check_history(&turn.messages), Ok(()));
    assert!(
        overlapped,
        "the sub-agents ran one after the other: {} requests while held",
        server.requests().len()
    );
    // Sub-agent usage counts toward the turn: 5 calls of 10 in / 5 out.
    assert_eq!(outcome.usage.input_tokens, 50);

    // Results come back in the order of the calls, whatever order they finished in.
    let results: Vec<_> = turn.messages[2].content.clone();
    let calls: Vec<String> = turn.messages[1]
        .tool_calls()
        .map(|c| c.id.to_string())
        .collect();
    let answered: Vec<String> = results
        .iter()
        .filter_map(|b| match b {
            bareagent::agent::ContentBlock::ToolResult { tool_use_id, .. } => {
                Some(tool_use_id.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(calls, answered);

    let times: Vec<f64> = std::fs::read_to_string(dir.path().join("times"))
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(times.len(), 4);
    assert!(
        times[2] >= times[1],
        "the second command started before the first ended: {times:?}"
    );
}

#[tokio::test]
async fn an_explore_sub_agent_cannot_write() {
    let dir = workspace(&[("a.txt", "keep\n")]);
    let server = ModelServer::start(vec![
        Reply::tool(
            "task",
            json!({"description": "poke", "prompt": "try to change a.txt", "kind": "explore"}),
        )
        .into(),
        // The sub-agent tries every way to write.
        Reply::tools(vec![
            ("write_file", json!({"path": "a.txt", "content": "changed"})),
            (
                "edit_file",
                json!({"path": "a.txt", "old_string": "keep", "new_string": "lose"}),
            ),
            ("bash", json!({"command": "echo changed > a.txt"})),
            ("task", json!({"description": "nest", "prompt": "x"})),
        ])
        .into(),
        Reply::text("I could not change anything.").into(),
        Reply::text("The explorer reports it is read-only.").into(),
    ]);
    let provider = provider(Api::OpenAi, &server);
    let turn = run_turn(&provider, dir.path(), "go", TurnOptions::default()).await;
    assert_eq!(
        turn.result.unwrap().text,
        "The explorer reports it is read-only."
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "keep\n"
    );
    // The sub-agent saw only read tools, and its attempts failed as unknown tools.
    let sub_request = &server.requests()[1].body;
    let tools: Vec<&str> = sub_request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read_file", "glob", "grep"]);
    let sent = sent_tool_results(&server.requests()[2].body);
    assert_eq!(sent.len(), 4);
    assert!(
        sent.iter()
            .all(|(text, is_error)| *is_error && text.contains("Unknown tool")),
        "{sent:?}"
    );
    assert_eq!(
        turn.sink.tool_results()[0].0,
        "I could not change anything."
    );
}

#[tokio::test]
async fn an_explore_sub_agent_never_asks_the_user() {
    let dir = workspace(&[(".env", "SECRET=1\n")]);
    let server = ModelServer::start(vec![
        Reply::tool(
            "task",
            json!({"description": "env", "prompt": "read .env", "kind": "explore"}),
        )
        .into(),
        Reply::tool("read_file", json!({"path": ".env"})).into(),
        Reply::text("not allowed").into(),
        Reply::text("done").into(),
    ]);
    let provider = provider(Api::Anthropic, &server);
    // Default mode: reading .env would ask. The approver would say yes, but
    // it must never be consulted from the sub-agent.
    let options = TurnOptions {
        mode: bareagent::permission::PermissionMode::Default,
        approver: Box::new(PanicApprover),
        ..Default::default()
    };
    let turn = run_turn(&provider, dir.path(), "go", options).await;
    turn.result.unwrap();
    let sent = sent_tool_results(&server.requests()[2].body);
    assert!(
        sent[0].1 && sent[0].0.contains("sub-agent cannot ask"),
        "{sent:?}"
    );
    assert!(!server.requests()[2].body.to_string().contains("SECRET=1"));
}

struct PanicApprover;

#[async_trait::async_trait]
impl bareagent::permission::Approver for PanicApprover {
    async fn ask(
        &self,
        question: &bareagent::permission::Question<'_>,
    ) -> bareagent::permission::Approval {
        panic!("asked about {:?}", question.action);
    }
}

#[tokio::test]
async fn a_cancelled_turn_kills_its_commands_and_the_next_turn_continues() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::tools(vec![
            (
                "bash",
                json!({"command": "echo $$ > leader.pid; sleep 60 & echo $! > child.pid; wait"}),
            ),
            ("bash", json!({"command": "echo never ran > second.txt"})),
        ])
        .into(),
        Reply::text("Picking up where we left off.").into(),
    ]);
    let provider = provider(Api::Anthropic, &server);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let root = dir.path().to_path_buf();
    tokio::spawn(async move {
        while !root.join("child.pid").exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let options = TurnOptions {
        cancel,
        ..Default::default()
    };
    let turn = run_turn(&provider, dir.path(), "run it", options).await;
    assert!(
        matches!(turn.result, Err(LoopError::Cancelled)),
        "{:?}",
        turn.result
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(check_history(&turn.messages), Ok(()));
    let results = turn.messages.last().unwrap().content.clone();
    for block in &results {
        let bareagent::agent::ContentBlock::ToolResult {
            content, is_error, ..
        } = block
        else {
            panic!()
        };
        assert!(*is_error && content == CANCELLED, "{content}");
    }
    assert!(
        !dir.path().join("second.txt").exists(),
        "no call starts after a cancel"
    );
    for pid in [
        read_pid(dir.path(), "leader.pid"),
        read_pid(dir.path(), "child.pid"),
    ] {
        for _ in 0..50 {
            if !alive(pid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!alive(pid), "{pid} survived the cancel");
    }

    // The next turn sends the cancelled history as it is, and goes on.
    let mut messages = turn.messages;
    bareagent::history::push_user_blocks(
        &mut messages,
        vec![bareagent::agent::ContentBlock::Text {
            text: "never mind, just answer".into(),
        }],
    );
    let turn = continue_turn(&provider, dir.path(), messages, TurnOptions::default()).await;
    assert_eq!(turn.result.unwrap().text, "Picking up where we left off.");
    let sent = sent_tool_results(&server.requests()[1].body);
    assert_eq!(
        sent,
        vec![(CANCELLED.to_string(), true), (CANCELLED.to_string(), true)]
    );
    assert_eq!(check_history(&turn.messages), Ok(()));
}

#[tokio::test]
async fn cancelling_during_the_model_call_stops_at_once() {
    let dir = workspace(&[]);
    // The answer is held until after the turn ends: the turn can only end
    // by the cancel, while the model call is still unanswered.
    let hold = Hold::new();
    let server = ModelServer::start(vec![Reply::text("too late").held(&hold).into()]);
    let provider = provider(Api::OpenAi, &server);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let in_flight = async {
        while server.requests().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        trigger.cancel();
    };
    let turn = run_turn(
        &provider,
        dir.path(),
        "q",
        TurnOptions {
            cancel,
            ..Default::default()
        },
    );
    // A turn that waited for the answer would never end: bounded, it fails.
    let bounded = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::join!(turn, in_flight).0
    });
    let turn = bounded
        .await
        .expect("the cancel ended the turn while the answer was held");
    hold.release();
    assert!(matches!(turn.result, Err(LoopError::Cancelled)));
    assert_eq!(turn.messages, vec![Message::user_text("q")]);
}

#[tokio::test]
async fn every_tool_refuses_paths_outside_the_workspace() {
    let outside = workspace(&[("secret.txt", "top secret")]);
    let dir = workspace(&[("a.txt", "x")]);
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("secret_link"),
    )
    .unwrap();
    let secret = outside.path().join("secret.txt").display().to_string();
    let escapes = [
        "../secret.txt",
        "/etc/passwd",
        secret.as_str(),
        "link/secret.txt",
        "secret_link",
        "a.txt/../../x",
        "./../../etc",
        "nul\u{0}byte",
    ];
    let mut calls = Vec::new();
    for path in escapes {
        calls.push(("read_file", json!({"path": path})));
        calls.push(("write_file", json!({"path": path, "content": "x"})));
        calls.push((
            "edit_file",
            json!({"path": path, "old_string": "a", "new_string": "b"}),
        ));
    }
    for path in ["../", "/", "link", "/etc"] {
        calls.push(("glob", json!({"pattern": "**/*", "path": path})));
        calls.push(("grep", json!({"pattern": "secret", "path": path})));
        calls.push((
            "multi_edit",
            json!({"path": format!("{path}/x"), "edits": [{"old_string": "a", "new_string": "b"}]}),
        ));
    }
    let count = calls.len();
    let server = ModelServer::start(vec![
        Reply::tools(calls).into(),
        Reply::text("refused").into(),
    ]);
    let provider = provider(Api::Anthropic, &server);
    let turn = run_turn(&provider, dir.path(), "escape", TurnOptions::default()).await;
    turn.result.unwrap();
    let results = turn.sink.tool_results();
    assert_eq!(results.len(), count);
    assert!(count >= 30);
    for (content, is_error) in &results {
        assert!(is_error, "{content}");
        assert!(!content.contains("top secret"), "{content}");
        assert!(
            content.contains("outside the workspace") || content.contains("NUL"),
            "{content}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "top secret"
    );
}

/// A call's path is resolved after the calls before it in the same response
/// ran: a link one call makes changes what the next call's path means, and
/// the deny rules must see where it leads now. (Resolved before the first
/// call ran, `alias/key.txt` would not exist yet, match no rule, and be read
/// through the new link.)
#[tokio::test]
async fn a_link_made_earlier_in_the_response_is_seen_by_the_rules() {
    const KEY: &str = "PRIVATE-KEY-7f3a";
    let make_link = "ln -s secrets alias && echo made";
    // (case, deny rule, the call that follows the link's making)
    let cases = [
        (
            "read through the new link",
            "read_file(secrets/**)",
            "read_file",
            json!({"path": "alias/key.txt"}),
        ),
        (
            "edit through the new link",
            "edit_file(secrets/**)",
            "edit_file",
            json!({"path": "alias/key.txt", "old_string": KEY, "new_string": "x"}),
        ),
    ];
    for (name, rule, tool, input) in cases {
        let dir = workspace(&[("secrets/key.txt", &format!("{KEY}\n"))]);
        let server = ModelServer::start(vec![
            Reply::tools(vec![("bash", json!({"command": make_link})), (tool, input)]).into(),
            Reply::text("done").into(),
        ]);
        let provider = provider(Api::Anthropic, &server);
        let options = TurnOptions {
            rules: bareagent::permission::RuleLists {
                deny: vec![rule.to_string()],
                ..Default::default()
            },
            ..Default::default()
        };
        let turn = run_turn(&provider, dir.path(), "go", options).await;
        turn.result.unwrap_or_else(|e| panic!("{name}: {e}"));
        let sent = sent_tool_results(&server.requests()[1].body);
        assert_eq!(sent[0].0.trim(), "made", "{name}: the link was made");
        assert!(
            sent[1].1 && sent[1].0.contains("Denied by the permission rule"),
            "{name}: {:?}",
            sent[1]
        );
        assert!(!sent[1].0.contains(KEY), "{name}: {:?}", sent[1]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("secrets/key.txt")).unwrap(),
            format!("{KEY}\n"),
            "{name}"
        );
    }
}

/// A sub-agent's model calls reach the parent as usage events, one per call,
/// and every event's total is the turn's running total (the parent's and its
/// sub-agents' calls together), ending at the turn's usage.
#[tokio::test]
async fn sub_agent_usage_arrives_as_events_with_the_turns_running_total() {
    let dir = workspace(&[("a.txt", "alpha\n")]);
    let server = ModelServer::start(vec![
        Reply::tool(
            "task",
            json!({"description": "one", "prompt": "look at a", "kind": "explore"}),
        )
        .into(),
        Reply::tool("read_file", json!({"path": "a.txt"})).into(),
        Reply::text("sub-agent answer").into(),
        Reply::text("done").into(),
    ]);
    let provider = provider(Api::Anthropic, &server);
    let turn = run_turn(&provider, dir.path(), "go", TurnOptions::default()).await;
    let outcome = turn.result.unwrap();
    let usage: Vec<_> = turn
        .sink
        .events()
        .into_iter()
        .filter_map(|event| match event {
            bareagent::events::AgentEvent::Usage { call, total, .. } => Some((call, total)),
            _ => None,
        })
        .collect();
    assert_eq!(usage.len(), server.requests().len(), "{usage:?}");
    let mut running = bareagent::history::Usage::default();
    for (call, total) in &usage {
        running += *call;
        assert_eq!(*total, running, "{usage:?}");
    }
    assert_eq!(running, outcome.usage);
    assert_eq!(outcome.usage.input_tokens, 40);
}
