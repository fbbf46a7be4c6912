//! Scripted model exchanges as data: each file in `tests/fixtures/turns/`
//! is one case (the workspace, the model's script, the tool results the
//! model must get, the outcome), run through the real loop over real HTTP
//! to the scripted model server, for each API and stream mode it names.
//! The whole history is compared with a committed `insta` snapshot in
//! `tests/fixtures/turns/snapshots/`, the same one for every API and mode.
//!
//! A new case is a new file; `INSTA_UPDATE=always cargo test --test it
//! fixtures` writes its snapshot (review it before committing). The format
//! is the [`Case`] struct below; `tests/fixtures/turns/README.md` shows it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bareagent::agent::ContentBlock;
use bareagent::history::check_history;
use bareagent::permission::{DenyAll, PermissionMode};
use serde::Deserialize;
use serde_json::Value;

use crate::common::*;
use crate::redact::{Roots, normalise};
use crate::support::model_server::{ModelServer, Reply, Step};

/// One fixture file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// What the case shows, in a sentence.
    about: String,
    prompt: String,
    /// Default: both.
    #[serde(default = "both_apis")]
    apis: Vec<String>,
    /// Default: streamed only.
    #[serde(default = "streamed")]
    stream: Vec<bool>,
    /// `bypass` (default), `default` (every question denied), or `plan`.
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    max_iterations: Option<usize>,
    /// The workspace: path → text.
    #[serde(default)]
    files: BTreeMap<String, String>,
    /// The model's replies, one per request.
    reply: Vec<ScriptedReply>,
    expect: Expect,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedReply {
    /// Text before the tool calls (or the whole answer).
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool: Vec<ScriptedCall>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedCall {
    name: String,
    /// The input as data, or `raw` for input that is not valid JSON.
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    raw: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    /// The turn's final text; or `error`, text the loop's error contains.
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    iterations: Option<usize>,
    /// Messages in the history at the end.
    #[serde(default)]
    messages: Option<usize>,
    /// Requests the model server got.
    #[serde(default)]
    requests: Option<usize>,
    /// Every tool result, in the order of the calls.
    #[serde(default)]
    result: Vec<ExpectedResult>,
    /// Files after the turn: path → exact text.
    #[serde(default)]
    files: BTreeMap<String, String>,
}

/// A tool result's checks; `[ROOT]` in any text stands for the workspace.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedResult {
    is_error: bool,
    #[serde(default)]
    is: Option<String>,
    #[serde(default)]
    starts_with: Option<String>,
    #[serde(default)]
    contains: Vec<String>,
    /// Lines that start with this prefix, counted.
    #[serde(default)]
    lines_starting_with: Option<(String, usize)>,
}

fn both_apis() -> Vec<String> {
    vec!["anthropic".into(), "openai".into()]
}

fn streamed() -> Vec<bool> {
    vec![true]
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/turns")
}

#[tokio::test]
async fn every_fixture_turn() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures/turns")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 5, "fixtures found: {paths:?}");
    for path in paths {
        let name = path
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .to_string();
        let text = std::fs::read_to_string(&path).expect("read fixture");
        let case: Case = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        for api in &case.apis {
            let api = match api.as_str() {
                "anthropic" => Api::Anthropic,
                "openai" => Api::OpenAi,
                other => panic!("{name}: unknown api {other}"),
            };
            for &stream in &case.stream {
                run_case(&name, &case, api, stream).await;
            }
        }
    }
}

fn script(case: &Case) -> Vec<Step> {
    case.reply
        .iter()
        .map(|reply| {
            let mut calls = reply.tool.iter();
            let built = match calls.next() {
                None => Reply::text(reply.text.as_deref().unwrap_or_default()),
                Some(first) => {
                    let mut built = call(first);
                    for next in calls {
                        built.blocks.extend(call(next).blocks);
                    }
                    match &reply.text {
                        Some(text) => built.with_text_first(text),
                        None => built,
                    }
                }
            };
            built.into()
        })
        .collect()
}

fn call(call: &ScriptedCall) -> Reply {
    match (&call.input, &call.raw) {
        (Some(input), None) => Reply::tool(&call.name, input.clone()),
        (None, Some(raw)) => Reply::raw_tool(&call.name, raw),
        _ => panic!("{}: give exactly one of input and raw", call.name),
    }
}

async fn run_case(name: &str, case: &Case, api: Api, stream: bool) {
    let label = format!("{name} ({api:?}, stream={stream}): {}", case.about);
    let files: Vec<(&str, &str)> = case
        .files
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str()))
        .collect();
    let dir = workspace(&files);
    let server = ModelServer::start(script(case));
    let provider = provider(api, &server);
    let mut options = TurnOptions {
        stream,
        ..Default::default()
    };
    match case.mode.as_deref() {
        None | Some("bypass") => {}
        Some("default") => {
            options.mode = PermissionMode::Default;
            options.approver = Box::new(DenyAll("Denied by user".into()));
        }
        Some("plan") => options.mode = PermissionMode::Plan,
        Some(other) => panic!("{label}: unknown mode {other}"),
    }
    if let Some(cap) = case.max_iterations {
        options.max_iterations = cap;
    }
    let turn = run_turn(&provider, dir.path(), &case.prompt, options).await;
    let expect = &case.expect;

    match (&turn.result, &expect.text, &expect.error) {
        (Ok(outcome), Some(text), None) => {
            assert_eq!(&outcome.text, text, "{label}");
            if let Some(iterations) = expect.iterations {
                assert_eq!(outcome.iterations, iterations, "{label}");
            }
        }
        (Err(error), None, Some(part)) => {
            assert!(
                error.to_string().contains(part.as_str()),
                "{label}: {error}"
            );
        }
        (result, _, _) => panic!("{label}: give one of text and error; the turn gave {result:?}"),
    }
    assert_eq!(check_history(&turn.messages), Ok(()), "{label}");
    if let Some(messages) = expect.messages {
        assert_eq!(turn.messages.len(), messages, "{label}");
    }
    let requests = server.requests();
    if let Some(count) = expect.requests {
        assert_eq!(requests.len(), count, "{label}");
    }
    assert!(requests.iter().all(|r| r.is_stream() == stream), "{label}");

    // The results in the order of the calls, as the history holds them.
    let root = Roots::of(dir.path());
    let results: Vec<(String, bool)> = turn
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                content, is_error, ..
            } => Some((root.redact(content), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results.len(),
        expect.result.len(),
        "{label}: results {results:#?}"
    );
    for (index, ((content, is_error), want)) in results.iter().zip(&expect.result).enumerate() {
        let at = format!("{label}: result {index}: {content:?}");
        assert_eq!(*is_error, want.is_error, "{at}");
        if let Some(is) = &want.is {
            assert_eq!(content, is, "{at}");
        }
        if let Some(prefix) = &want.starts_with {
            assert!(content.starts_with(prefix.as_str()), "{at}");
        }
        for part in &want.contains {
            assert!(content.contains(part.as_str()), "{at}: lacks {part:?}");
        }
        if let Some((prefix, count)) = &want.lines_starting_with {
            let found = content
                .lines()
                .filter(|l| l.starts_with(prefix.as_str()))
                .count();
            assert_eq!(found, *count, "{at}: lines starting with {prefix:?}");
        }
    }

    // What the sink showed is what the loop kept (in the order they finished).
    let (mut shown, mut kept) = (turn.sink.tool_results(), results.clone());
    for (content, _) in &mut shown {
        *content = root.redact(content);
    }
    shown.sort();
    kept.sort();
    assert_eq!(shown, kept, "{label}: the sink showed what the loop kept");
    // And the model got each result, flagged as an error or not, in one message per response.
    if let Some(last) = requests.last() {
        let sent = sent_tool_results(&last.body);
        let flags: Vec<bool> = sent.iter().map(|(_, e)| *e).collect();
        let want: Vec<bool> = results.iter().map(|(_, e)| *e).take(flags.len()).collect();
        assert_eq!(flags, want, "{label}: the error flags the model got");
        if api == Api::Anthropic {
            let sent: Vec<String> = sent.iter().map(|(c, _)| root.redact(c)).collect();
            let want: Vec<String> = results
                .iter()
                .take(sent.len())
                .map(|(c, _)| c.clone())
                .collect();
            assert_eq!(sent, want, "{label}: what the model got");
        }
    }

    for (path, text) in &expect.files {
        let on_disk = std::fs::read_to_string(dir.path().join(path))
            .unwrap_or_else(|e| panic!("{label}: {path}: {e}"));
        assert_eq!(&on_disk, text, "{label}: {path}");
    }

    insta::with_settings!({
        snapshot_path => fixtures_dir().join("snapshots"),
        prepend_module_to_snapshot => false,
        description => case.about.as_str(),
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, transcript(&turn.messages, &root));
    });
}

/// The history as stable JSON (see [`normalise`]).
fn transcript(messages: &[bareagent::agent::Message], root: &Roots) -> String {
    let mut value = serde_json::to_value(messages).expect("history as JSON");
    normalise(&mut value, &mut BTreeMap::new(), root);
    serde_json::to_string_pretty(&value).expect("JSON text")
}
