//! A model that repeats a `tool_use` id (local OpenAI-compatible servers
//! do) still gets a valid next request: every id once, each answered by
//! exactly one result — read from the wire, in both APIs, streamed or not.

use bareagent::history::check_history;
use serde_json::{Value, json};

use crate::common::*;
use crate::support::model_server::{Block, ModelServer, Reply};

/// The tool call ids and the result ids of a request body, in order.
fn ids_on_the_wire(body: &Value) -> (Vec<String>, Vec<String>) {
    let (mut uses, mut results) = (Vec::new(), Vec::new());
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    for message in body["messages"].as_array().expect("messages") {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            uses.push(text(&call["id"]));
        }
        if message["role"] == "tool" {
            results.push(text(&message["tool_call_id"]));
        }
        for block in message["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("tool_use") => uses.push(text(&block["id"])),
                Some("tool_result") => results.push(text(&block["tool_use_id"])),
                _ => {}
            }
        }
    }
    (uses, results)
}

fn call(id: &str, path: &str) -> Block {
    Block::ToolUse {
        id: id.to_string(),
        name: "read_file".to_string(),
        input_json: json!({ "path": path }).to_string(),
    }
}

#[tokio::test]
async fn repeated_tool_use_ids_are_made_unique_before_the_next_request() {
    for (api, stream) in ALL {
        let dir = workspace(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")]);
        let repeated = |blocks| Reply {
            blocks,
            ..Reply::text("")
        };
        let server = ModelServer::start(vec![
            repeated(vec![call("dup", "a.txt"), call("dup", "b.txt")]).into(),
            // The next response repeats an id of the first one.
            repeated(vec![call("dup", "a.txt")]).into(),
            Reply::text("done").into(),
        ]);
        let provider = provider(api, &server);
        let options = TurnOptions {
            stream,
            ..TurnOptions::default()
        };
        let turn = run_turn(&provider, dir.path(), "go", options).await;
        turn.result
            .unwrap_or_else(|e| panic!("{api:?} {stream}: {e}"));
        assert_eq!(check_history(&turn.messages), Ok(()));
        let requests = server.requests();
        assert_eq!(requests.len(), 3, "{api:?} {stream}");
        for request in &requests[1..] {
            let (uses, results) = ids_on_the_wire(&request.body);
            let mut distinct = uses.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), uses.len(), "{api:?} {stream}: {uses:?}");
            assert_eq!(
                results, uses,
                "{api:?} {stream}: one result per id, in order"
            );
        }
        let (uses, _) = ids_on_the_wire(&requests[2].body);
        assert_eq!(uses.len(), 3);
        // The results still belong to their calls.
        let results = sent_tool_results(&requests[2].body);
        assert!(results[0].0.contains("alpha") && results[1].0.contains("beta"));
        assert!(results[2].0.contains("alpha"));
    }
}
