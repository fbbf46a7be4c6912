//! Compaction in real turns over real HTTP: long sessions stay inside a
//! small context window, the last exchanges stay verbatim and every
//! `tool_use` keeps its `tool_result`; a failed summary changes nothing; a
//! request refused as too long is compacted and tried once more.

use bareagent::agent::{
    CompactionSettings, LoopError, Message, STUB_PREFIX, SUMMARY_PROMPT, check_history,
    estimate_messages,
};
use bareagent::events::{AgentEvent, CompactHow};
use serde_json::{Value, json};

use crate::common::*;
use crate::support::model_server::{Fault, ModelServer, Reply, Step};

/// 20 KB of text, 250 lines: about 5 000 tokens as read_file shows it.
pub(crate) fn big_file() -> String {
    (0..250)
        .map(|n| format!("{n:04} {}\n", "lorem ipsum dolor sit amet ".repeat(3)))
        .collect()
}

/// Whether a request is a compaction's summary call.
pub(crate) fn is_summary(body: &Value) -> bool {
    body.to_string().contains(&SUMMARY_PROMPT[..60])
}

pub(crate) const SUMMARY: &str = "SUMMARY: the user asked to read big.txt again and again.";

pub(crate) fn reads(n: usize) -> Vec<Step> {
    (0..n)
        .map(|_| Reply::tool("read_file", json!({"path": "big.txt"})).into())
        .collect()
}

/// The messages of an Anthropic request body, as our history.
fn sent_messages(body: &Value) -> Vec<Message> {
    serde_json::from_value(body["messages"].clone()).expect("messages in our shape")
}

fn compactions(events: &[AgentEvent]) -> Vec<(u64, u64, CompactHow)> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Compacted {
                before_tokens,
                after_tokens,
                how,
            } => Some((*before_tokens, *after_tokens, *how)),
            _ => None,
        })
        .collect()
}

/// `TurnOptions`' default: streamed.
const STREAMED: bool = true;

/// One turn against `server` through `api` (streamed or not), compacting
/// with `settings`.
async fn turn_compacting(
    (api, stream): (Api, bool),
    server: &ModelServer,
    dir: &std::path::Path,
    prompt: &str,
    settings: CompactionSettings,
) -> Turn {
    let provider = provider(api, server);
    let options = TurnOptions {
        stream,
        compaction: Some(settings),
        ..Default::default()
    };
    run_turn(&provider, dir, prompt, options).await
}

fn settings(window: u64, keep_turns: usize) -> CompactionSettings {
    CompactionSettings {
        context_window: window,
        compact_at: 0.8,
        keep_turns,
    }
}

#[tokio::test]
async fn a_300_iteration_session_stays_inside_a_small_window() {
    let big = big_file();
    let dir = workspace(&[("big.txt", &big)]);
    let mut script = reads(300);
    script.push(Reply::text("done").into());
    let server = ModelServer::start(script);
    server.answer_matching(is_summary, Reply::text(SUMMARY));
    let provider = provider(Api::Anthropic, &server);
    let window = 40_000;
    let turn = run_turn(
        &provider,
        dir.path(),
        "read big.txt 300 times",
        TurnOptions {
            max_iterations: 400,
            compaction: Some(settings(window, 3)),
            ..Default::default()
        },
    )
    .await;
    let outcome = turn.result.expect("the turn ends with an answer");
    assert_eq!(outcome.text, "done");
    assert_eq!(outcome.iterations, 301);
    assert_eq!(check_history(&turn.messages), Ok(()));

    let requests = server.requests();
    let main: Vec<&Value> = requests
        .iter()
        .map(|r| &r.body)
        .filter(|body| !is_summary(body))
        .collect();
    assert_eq!(main.len(), 301);
    let threshold = settings(window, 3).threshold();
    let mut peak = 0;
    for (n, body) in main.iter().enumerate() {
        let messages = sent_messages(body);
        // Under the threshold by the agent's own estimate of the messages
        // sent, with system prompt and tools as JSON / 4 (within 1 % of
        // the agent's figure for them) ...
        let fixed = (body["system"].to_string().len() + body["tools"].to_string().len()) / 4;
        let estimated = estimate_messages(&messages) + fixed as u64;
        assert!(
            estimated < threshold + window / 100,
            "request {n}: about {estimated} tokens"
        );
        // ... and inside the window by the request's bytes / 4, JSON and all.
        let tokens = body.to_string().len() as u64 / 4;
        peak = peak.max(tokens);
        assert!(tokens < window, "request {n}: about {tokens} tokens");
        assert_eq!(check_history(&messages), Ok(()), "request {n}");
        // The last three exchanges' results are the file, verbatim.
        let results = sent_tool_results(body);
        for (content, _) in results.iter().rev().take(3) {
            assert!(
                content.contains(big.lines().last().expect("a line")),
                "request {n}"
            );
            assert!(!content.starts_with(STUB_PREFIX), "request {n}");
        }
        assert_eq!(results.len().min(3), n.min(3), "request {n}");
    }
    let done = compactions(&turn.sink.events());
    let kinds = |how| done.iter().filter(|(_, _, h)| *h == how).count();
    assert!(kinds(CompactHow::ToolResults) > 10, "{done:?}");
    assert!(kinds(CompactHow::Summary) >= 1, "{done:?}");
    for (before, after, _) in &done {
        assert!(after < before, "{done:?}");
    }
    // The summary is what the later requests start with.
    let last = sent_messages(main[300]);
    assert!(last[0].text().contains(SUMMARY), "{:?}", last[0]);
    eprintln!(
        "300 iterations, window {window}: peak request about {peak} tokens; {} compactions ({} summaries)",
        done.len(),
        kinds(CompactHow::Summary)
    );
}

#[tokio::test]
async fn a_failed_summary_leaves_the_history_as_it_was_and_the_turn_goes_on() {
    let big = big_file();
    let dir = workspace(&[("big.txt", &big)]);
    let mut script = reads(4);
    script.push(Reply::text("done").into());
    let server = ModelServer::start(script);
    // Every summary call fails (each retry too).
    server.answer_matching(is_summary, Fault::ServerError);
    // Far too small: every step past the second wants a summary.
    let turn = turn_compacting(
        (Api::Anthropic, STREAMED),
        &server,
        dir.path(),
        "read big.txt",
        settings(2_000, 1),
    )
    .await;
    let outcome = turn.result.expect("the turn goes on to its answer");
    assert_eq!(outcome.text, "done");
    assert_eq!(check_history(&turn.messages), Ok(()));

    let events = turn.sink.events();
    assert_eq!(compactions(&events), []);
    let failures = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::CompactionFailed { reason } if reason.contains("summary call failed")))
        .count();
    assert!(failures >= 1, "{events:?}");
    let requests = server.requests();
    assert!(requests.iter().any(|r| is_summary(&r.body)));
    // Not even shrunk: every result the model got is the whole file, in
    // every request, and the last request holds them all.
    let main: Vec<&Value> = requests
        .iter()
        .map(|r| &r.body)
        .filter(|b| !is_summary(b))
        .collect();
    assert_eq!(main.len(), 5);
    for body in &main {
        for (content, _) in sent_tool_results(body) {
            assert!(!content.starts_with(STUB_PREFIX));
            assert!(content.len() > big.len());
        }
    }
    assert_eq!(sent_tool_results(main[4]).len(), 4);
    assert_eq!(sent_messages(main[4]), turn.messages[..9].to_vec());
}

#[tokio::test]
async fn a_request_refused_as_too_long_is_compacted_and_tried_once_more() {
    for (api, stream) in ALL {
        let case = format!("{api:?} stream={stream}");
        let dir = workspace(&[("big.txt", &big_file())]);
        let mut script = reads(3);
        script.push(Fault::ContextTooLong.into());
        script.push(Reply::text("done").into());
        let server = ModelServer::start(script);
        server.answer_matching(is_summary, Reply::text(SUMMARY));
        // The default window: only the refusal makes it compact.
        let turn = turn_compacting(
            (api, stream),
            &server,
            dir.path(),
            "read big.txt",
            settings(200_000, 1),
        )
        .await;
        let outcome = turn.result.unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(outcome.text, "done", "{case}");
        assert_eq!(check_history(&turn.messages), Ok(()), "{case}");
        let done = compactions(&turn.sink.events());
        assert_eq!(done.len(), 1, "{case}: {done:?}");
        assert_eq!(done[0].2, CompactHow::Summary, "{case}");

        let requests = server.requests();
        let bodies: Vec<&Value> = requests.iter().map(|r| &r.body).collect();
        // 3 reads, the refused one, the summary, the retry.
        assert_eq!(bodies.len(), 6, "{case}");
        assert!(is_summary(bodies[4]), "{case}");
        let retried = bodies[5].to_string();
        assert!(retried.contains(SUMMARY), "{case}");
        assert_eq!(
            sent_tool_results(bodies[5]).len(),
            1,
            "{case}: the last exchange only"
        );
        assert_eq!(sent_tool_results(bodies[3]).len(), 3, "{case}");
        // Summary, the kept exchange, the answer.
        assert_eq!(turn.messages.len(), 4, "{case}");
    }
}

#[tokio::test]
async fn a_second_refusal_ends_the_turn_saying_why() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let dir = workspace(&[("big.txt", &big_file())]);
        let mut script = reads(3);
        script.push(Fault::ContextTooLong.into());
        script.push(Fault::ContextTooLong.into());
        let server = ModelServer::start(script);
        server.answer_matching(is_summary, Reply::text(SUMMARY));
        let turn = turn_compacting(
            (api, STREAMED),
            &server,
            dir.path(),
            "read big.txt",
            settings(200_000, 1),
        )
        .await;
        let error = turn.result.expect_err("the turn fails");
        assert!(
            matches!(error, LoopError::ContextFull(_)),
            "{api:?}: {error}"
        );
        let text = error.to_string();
        assert!(
            text.contains("does not fit the model's context window"),
            "{text}"
        );
        assert!(text.contains("start a new session"), "{text}");
        assert_eq!(check_history(&turn.messages), Ok(()), "{api:?}");
        // Tried once more, not again.
        assert_eq!(server.requests().len(), 6, "{api:?}");
        assert_eq!(server.remaining(), 0, "{api:?}");
    }
}

#[tokio::test]
async fn a_refusal_with_nothing_to_compact_is_not_retried() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Fault::ContextTooLong.into(), Reply::text("no").into()]);
    let turn = turn_compacting(
        (Api::Anthropic, STREAMED),
        &server,
        dir.path(),
        "hello",
        settings(200_000, 1),
    )
    .await;
    assert!(matches!(turn.result, Err(LoopError::ContextFull(_))));
    assert_eq!(server.requests().len(), 1);
}

/// The figure for the closing note: the peak context of a scripted 50-turn
/// session (a 20 KB read each) with and without compaction, in request
/// bytes and estimated tokens. Printed, not asserted beyond the ordering.
#[tokio::test]
async fn peak_context_of_a_50_turn_session_with_and_without_compaction() {
    let mut peaks = Vec::new();
    for compaction in [None, Some(settings(200_000, 3))] {
        let dir = workspace(&[("big.txt", &big_file())]);
        let mut script = reads(50);
        script.push(Reply::text("done").into());
        let server = ModelServer::start(script);
        server.answer_matching(is_summary, Reply::text(SUMMARY));
        // What compaction costs the cache: each change to the history's
        // middle makes what follows it a cache write again.
        server.simulate_prompt_cache();
        let provider = provider(Api::Anthropic, &server);
        let on = compaction.is_some();
        let turn = run_turn(
            &provider,
            dir.path(),
            "read big.txt 50 times",
            TurnOptions {
                compaction,
                ..Default::default()
            },
        )
        .await;
        let usage = turn.result.as_ref().map(|o| o.usage).unwrap_or_default();
        assert!(turn.result.is_ok());
        let input =
            usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
        let peak = server
            .requests()
            .iter()
            .filter(|r| !is_summary(&r.body))
            .map(|r| r.body.to_string().len())
            .max()
            .unwrap_or_default();
        eprintln!(
            "50 turns, compaction {}: peak request {peak} bytes, about {} tokens; {input} input tokens, {:.1}% read from the cache, {} written",
            if on { "on (200k window, 80 %)" } else { "off" },
            peak / 4,
            usage.cache_read_input_tokens as f64 * 100.0 / input.max(1) as f64,
            usage.cache_creation_input_tokens,
        );
        peaks.push(peak);
    }
    assert!(peaks[1] < peaks[0], "{peaks:?}");
}

/// `bareagent.compact` in the language server: on an idle session it
/// compacts at once (the next turn's request starts with the summary); on a
/// running turn, at its next step (and the chat file says so).
#[test]
fn bareagent_compact_through_the_editor() {
    use crate::lsp::{LONG, ask, events_of, is_event, options, start, turn_end};
    use crate::support::model_server::Hold;

    let dir = workspace(&[("big.txt", &big_file())]);
    let mut script = reads(4);
    script.push(Reply::text("read it").into());
    let hold = Hold::new();
    script.push(
        Reply::tool("read_file", json!({"path": "big.txt"}))
            .held(&hold)
            .into(),
    );
    script.push(Reply::text("again").into());
    let server = ModelServer::start(script);
    server.answer_matching(is_summary, Reply::text(SUMMARY));
    let client = start(dir.path(), options(dir.path(), &server, "bypass"));

    let first = ask(&client, json!({"prompt": "read big.txt"}));
    turn_end(&client, first["turn"].as_u64().expect("a turn"));
    assert_eq!(events_of(&client, "compacted"), Vec::<Value>::new());

    // Idle: now.
    let answer = client
        .execute("bareagent.compact", json!([]))
        .expect("compact answers");
    assert_eq!(answer["when"], "now", "{answer}");
    let compacted =
        client.wait_for_notification(LONG, "the compaction", |m, p| is_event(m, p, "compacted"));
    assert_eq!(compacted["how"], "summary", "{compacted}");
    assert_eq!(compacted["session"], "main");
    assert!(
        compacted["after_tokens"].as_u64() < compacted["before_tokens"].as_u64(),
        "{compacted}"
    );

    // Running: at the next step.
    let second = ask(&client, json!({"prompt": "read it again"}));
    client.wait_until(LONG, "the held request", |_| {
        server
            .requests()
            .iter()
            .filter(|r| !is_summary(&r.body))
            .count()
            == 6
    });
    let answer = client
        .execute("bareagent.compact", json!([]))
        .expect("compact answers");
    assert_eq!(answer["when"], "next step", "{answer}");
    assert_eq!(answer["turn"], second["turn"]);
    hold.release();
    turn_end(&client, second["turn"].as_u64().expect("a turn"));
    let all = events_of(&client, "compacted");
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[1]["turn"], second["turn"]);

    let requests = server.requests();
    let main: Vec<&Value> = requests
        .iter()
        .map(|r| &r.body)
        .filter(|b| !is_summary(b))
        .collect();
    assert_eq!(main.len(), 7);
    assert_eq!(requests.iter().filter(|r| is_summary(&r.body)).count(), 2);
    // The second turn's first request starts with the idle summary; every
    // request is a valid history.
    assert!(sent_messages(main[5])[0].text().contains(SUMMARY));
    for body in &main {
        assert_eq!(check_history(&sent_messages(body)), Ok(()));
    }
    let chat = std::fs::read_to_string(dir.path().join(".bareagent/chat.md")).expect("chat");
    assert!(chat.contains("_context compacted: about "), "{chat}");
}

/// `bareagent run` compacts with the window of `[context]` (a project's
/// setting applies untrusted: it decides only when to summarise) and shows
/// A workspace whose settings give a 20,000-token window, and a model that
/// reads its big file five times then answers, summarising when asked.
pub(crate) fn five_reads_that_compact() -> (tempfile::TempDir, ModelServer) {
    let dir = workspace(&[
        ("big.txt", &big_file()),
        (".bareagent/config.toml", "[context]\nwindow = 20000\n"),
    ]);
    let mut script = reads(5);
    script.push(Reply::text("done").into());
    let server = ModelServer::start(script);
    server.answer_matching(is_summary, Reply::text(SUMMARY));
    (dir, server)
}

/// it: a line on stderr, an event with `--json`.
#[test]
fn bareagent_run_shows_each_compaction() {
    for json in [false, true] {
        let (dir, server) = five_reads_that_compact();
        let mut command = bareagent(dir.path());
        run_against_model(&mut command, &server).args(["--permission-mode", "bypass"]);
        if json {
            command.arg("--json");
        }
        let output = command.arg("read big.txt").output().expect("bareagent run");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stdout}\n{stderr}");
        if json {
            let events: Vec<Value> = stdout
                .lines()
                .filter_map(|line| serde_json::from_str(line).ok())
                .filter(|event: &Value| event["type"] == "compacted")
                .collect();
            assert!(!events.is_empty(), "{stdout}");
            assert!(events[0]["before_tokens"].as_u64() > events[0]["after_tokens"].as_u64());
        } else {
            assert!(stderr.contains("(context compacted: about "), "{stderr}");
        }
    }
}
