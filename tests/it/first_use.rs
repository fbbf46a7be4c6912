//! Defects a new user met on first use of the language server (issue 8),
//! each through the built binary over real stdio, with the scripted model
//! server behind it: prompts sent while the model answers, answers cut at
//! the output limit or empty, the chat file's layout.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{TEST_KEY, workspace};
use crate::lsp::{LONG, ask, events_of, options, requests_of, start, turn_end, user_texts};
use crate::support::lsp_client::{ClientOptions, LspClient};
use crate::support::model_server::{Hold, ModelServer, Reply};

fn chat_on_disk(root: &Path) -> String {
    std::fs::read_to_string(root.join(".bareagent/chat.md")).unwrap_or_default()
}

fn turn_of(answer: &Value) -> u64 {
    answer["turn"]
        .as_u64()
        .unwrap_or_else(|| panic!("no turn: {answer}"))
}

/// A prompt sent while the model writes its final answer is answered in
/// the same turn, right after, in the order sent — and the chat shows it
/// where the model read it.
#[test]
fn a_prompt_sent_during_the_final_answer_is_answered_next_in_order() {
    let dir = workspace(&[]);
    let hold = Hold::new();
    let server = ModelServer::start(vec![
        Reply::text("First answer.").held(&hold).into(),
        Reply::text("Second answer.").into(),
    ]);
    let client = start(dir.path(), options(dir.path(), &server, "default"));
    let first = ask(&client, json!("first prompt"));
    assert_eq!(first["queued"], false, "{first}");
    client.wait_until(LONG, "the model to be asked", |_| {
        server.requests().len() == 1
    });
    let second = ask(&client, json!("second prompt"));
    assert_eq!(second["queued"], true, "{second}");
    assert_eq!(second["turn"], first["turn"]);
    assert!(
        second["message"].as_str().unwrap_or("").contains("queued"),
        "the answer says so, for the editor to show: {second}"
    );
    hold.release();

    let end = turn_end(&client, turn_of(&first));
    assert_eq!(end["type"], "turn_finished", "{end}");
    assert_eq!(end["text"], "Second answer.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        user_texts(&requests[1].body),
        [
            "first prompt",
            "<user-message>\nsecond prompt\n</user-message>"
        ]
    );
    assert_eq!(
        requests[1].body["messages"][1]["content"][0]["text"],
        "First answer."
    );
    assert_eq!(
        events_of(&client, "user_message")[0]["text"],
        "second prompt"
    );
    assert_eq!(events_of(&client, "turn_started").len(), 1, "one turn");
    client.wait_until(LONG, "the chat footer", |_| {
        chat_on_disk(dir.path()).contains("model calls")
    });
    let chat = chat_on_disk(dir.path());
    assert!(
        chat.contains("## You\n\nfirst prompt\n\n## Agent\n\nFirst answer.\n\n## You\n\nsecond prompt\n\n## Agent\n\nSecond answer.\n\n_2 model calls ·"),
        "{chat}"
    );
}

/// When the turn ends without taking the queued prompt (here: the model's
/// answer was empty, an error), the next turn starts with it at once; a
/// cancelled turn starts nothing, and the prompt joins the history before
/// the next one.
#[test]
fn a_queued_prompt_the_turn_did_not_take_is_neither_lost_nor_reordered() {
    for cancel in [false, true] {
        let dir = workspace(&[]);
        let hold = Hold::new();
        let server = ModelServer::start(vec![
            Reply::empty().held(&hold).into(),
            Reply::text("Answered.").into(),
        ]);
        let client = start(dir.path(), options(dir.path(), &server, "default"));
        let first = turn_of(&ask(&client, json!("first prompt")));
        client.wait_until(LONG, "the model to be asked", |_| {
            server.requests().len() == 1
        });
        assert_eq!(ask(&client, json!("second prompt"))["queued"], true);
        let expected: Vec<&str> = if cancel {
            client.execute("bareagent.cancel", json!([])).unwrap();
            let end = turn_end(&client, first);
            assert_eq!(end["message"], "cancelled", "{end}");
            let status = client.execute("bareagent.status", json!([])).unwrap();
            assert_eq!(status["sessions"][0]["running"], Value::Null, "{status}");
            let third = ask(&client, json!("third prompt"));
            assert_eq!(third["queued"], false);
            assert_eq!(turn_end(&client, turn_of(&third))["type"], "turn_finished");
            vec![
                "first prompt",
                "<user-message>\nsecond prompt\n</user-message>",
                "third prompt",
            ]
        } else {
            hold.release();
            let end = turn_end(&client, first);
            assert_eq!(end["type"], "turn_failed", "{end}");
            assert!(
                end["message"].as_str().unwrap().contains("empty answer"),
                "{end}"
            );
            let next = client.wait_for_notification(LONG, "the next turn", |m, p| {
                crate::lsp::is_event(m, p, "turn_started") && p["turn"] != first
            });
            assert_eq!(next["prompt"], "second prompt");
            assert_eq!(turn_end(&client, turn_of(&next))["type"], "turn_finished");
            vec!["first prompt", "second prompt"]
        };
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "cancel={cancel}");
        assert_eq!(user_texts(&requests[1].body), expected, "cancel={cancel}");
        assert_valid_conversation(&requests[1].body);
    }
}

fn openai_options(root: &Path, server: &ModelServer) -> ClientOptions {
    let mut options = ClientOptions::new(root);
    options.env.extend([
        ("OPENAI_API_KEY".into(), TEST_KEY.into()),
        ("BAREAGENT_LOG".into(), "info".into()),
    ]);
    options.initialization_options = json!({
        "provider": "openai", "baseUrl": server.openai_base(), "permissionMode": "default", "idleTimeoutSecs": 5,
    });
    options
}

/// What either API accepts: user and assistant take turns (tool results
/// aside), and no assistant message is empty.
fn assert_valid_conversation(body: &Value) {
    let messages: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user" || m["role"] == "assistant")
        .collect();
    assert_eq!(messages.first().map(|m| &m["role"]), Some(&json!("user")));
    assert_eq!(messages.last().map(|m| &m["role"]), Some(&json!("user")));
    for pair in messages.windows(2) {
        assert_ne!(pair[0]["role"], pair[1]["role"], "{body}");
    }
    for message in messages.iter().filter(|m| m["role"] == "assistant") {
        let text = match &message["content"] {
            Value::String(text) => text.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<String>(),
            _ => String::new(),
        };
        assert!(
            !text.trim().is_empty() || message.get("tool_calls").is_some(),
            "an empty assistant message was sent: {body}"
        );
    }
}

#[derive(Clone, Copy, Debug)]
enum Api {
    Anthropic,
    OpenAi,
}

fn client_for(api: Api, root: &Path, server: &ModelServer) -> LspClient {
    let options = match api {
        Api::Anthropic => options(root, server, "default"),
        Api::OpenAi => openai_options(root, server),
    };
    start(root, options)
}

/// An answer cut at the output limit (`max_tokens`, OpenAI's `length`) is
/// continued, and the pieces make one answer; one cut four times ends the
/// turn with an error that says so. Either way the history stays sendable.
#[test]
fn an_answer_cut_at_the_output_limit_is_continued_a_few_times_then_an_error() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let dir = workspace(&[]);
        let cut = |text: &str| Reply::text(text).stopping_for("max_tokens").into();
        let server = ModelServer::start(vec![
            cut("The first half, "),
            Reply::text("and the second half.").into(),
            cut("1"),
            cut("2"),
            cut("3"),
            cut("4"),
            Reply::text("ok").into(),
        ]);
        let client = client_for(api, dir.path(), &server);
        let turn = turn_of(&ask(&client, json!("a long answer")));
        let end = turn_end(&client, turn);
        assert_eq!(end["type"], "turn_finished", "{api:?}: {end}");
        assert_eq!(
            end["text"], "The first half, and the second half.",
            "{api:?}"
        );
        let asked = user_texts(&server.requests()[1].body);
        assert!(
            asked
                .last()
                .unwrap()
                .contains("cut off at the output token limit"),
            "{api:?}: {asked:?}"
        );

        let turn = turn_of(&ask(&client, json!("a longer one")));
        let end = turn_end(&client, turn);
        assert_eq!(end["type"], "turn_failed", "{api:?}: {end}");
        // The limit the message names is the one the requests asked for
        // (the model's, from the table), where the wire sends one.
        let message = end["message"].as_str().unwrap();
        let said: u64 = message
            .split_once("cut at the output limit (")
            .and_then(|(_, rest)| rest.split_once(" tokens) 4 times"))
            .and_then(|(limit, _)| limit.parse().ok())
            .unwrap_or_else(|| panic!("{api:?}: {message}"));
        let body = &server.requests()[2].body;
        if let Some(asked) = body
            .get("max_tokens")
            .or_else(|| body.get("max_completion_tokens"))
        {
            assert_eq!(asked.as_u64(), Some(said), "{api:?}: {message}");
        }
        assert_eq!(
            server.requests().len(),
            6,
            "{api:?}: three continuations, no more"
        );

        let turn = turn_of(&ask(&client, json!("go on")));
        assert_eq!(turn_end(&client, turn)["type"], "turn_finished", "{api:?}");
        assert_valid_conversation(&server.requests()[6].body);
    }
}

/// An empty answer is an error, not a silent `""`: the turn fails saying
/// so, and the next prompt is sent in a valid conversation.
#[test]
fn an_empty_answer_ends_the_turn_with_an_error_and_the_history_stays_valid() {
    for api in [Api::Anthropic, Api::OpenAi] {
        for (reply, says) in [
            (Reply::empty(), "empty answer;"),
            (Reply::text("  \n"), "empty answer;"),
            (
                Reply::empty().stopping_for("max_tokens"),
                "reached its output limit before writing any text",
            ),
        ] {
            let dir = workspace(&[]);
            let server = ModelServer::start(vec![reply.into(), Reply::text("ok").into()]);
            let client = client_for(api, dir.path(), &server);
            let turn = turn_of(&ask(&client, json!("say something")));
            let end = turn_end(&client, turn);
            assert_eq!(end["type"], "turn_failed", "{api:?}: {end}");
            assert!(
                end["message"].as_str().unwrap().contains(says),
                "{api:?}: {end}"
            );
            let turn = turn_of(&ask(&client, json!("again")));
            assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
            let body = &server.requests()[1].body;
            assert_valid_conversation(body);
            // The empty answer left out, both prompts are one user message,
            // kept apart (Chat Completions takes it as one string).
            let expected: &[&str] = match api {
                Api::Anthropic => &["say something", "again"],
                Api::OpenAi => &["say something\n\nagain"],
            };
            assert_eq!(user_texts(body), expected, "{api:?}");
        }
    }
}

/// The chat file a first turn creates: one `## You` per prompt, a blank
/// line between a tool's bullet and the text after it, counts in the
/// singular where there is one.
#[test]
fn the_chat_reads_as_markdown() {
    let dir = workspace(&[("a.txt", "x\n")]);
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "a.txt"}))
            .with_text_first("Reading it.")
            .into(),
        Reply::text("It holds x.").into(),
        Reply::text("Yes.").into(),
    ]);
    let mut options = options(dir.path(), &server, "bypass");
    options.initialization_options["model"] = json!("claude-sonnet-4-5");
    let client = start(dir.path(), options);
    for prompt in ["what is in a.txt?", "sure?"] {
        let turn = turn_of(&ask(&client, json!(prompt)));
        assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    }
    client.wait_until(LONG, "the second footer", |_| {
        chat_on_disk(dir.path()).contains("_1 model call ·")
    });
    let chat = chat_on_disk(dir.path());
    let after_intro = &chat[chat.find("\n## You\n").unwrap() + 1..];
    // The turn's line, then the session's: claude-sonnet-4-5 at $3 in and
    // $15 out per million tokens (20 in + 10 out: $0.00021).
    let usage = |tokens_in: u32, out: u32, usd: &str| {
        format!(
            "{tokens_in} in · 0 cache write · 0 cache read · {out} out · ${usd} · context 0.0% of 200k"
        )
    };
    let footer = |calls: &str, turn: String, session: String| {
        format!("_{calls} · {turn}_  \n_session: {session}_")
    };
    assert_eq!(
        after_intro,
        format!(
            "## You\n\nwhat is in a.txt?\n\n## Agent\n\nReading it.\n\n- `read_file` a.txt\n\nIt holds x.\n\n{}\n\n## You\n\nsure?\n\n## Agent\n\nYes.\n\n{}\n\n## You\n\n",
            footer(
                "2 model calls",
                usage(20, 10, "0.0002"),
                usage(20, 10, "0.0002")
            ),
            footer(
                "1 model call",
                usage(10, 5, "0.0001"),
                usage(30, 15, "0.0003")
            )
        )
    );
    client.wait_for_notification(LONG, "the singular in the status", |m, p| {
        m == "window/showMessage"
            && p["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("bareagent: done (1 model call, ")
    });
}

/// "Ask agent about selection" quotes the selection in the chat and leaves
/// the cursor at its end, where the question is typed.
#[test]
fn asking_about_a_selection_puts_the_cursor_where_the_question_goes() {
    for chat_open in [false, true] {
        let dir = workspace(&[("a.py", "def f():\n    return 1\n")]);
        let server = ModelServer::start(vec![]);
        let client = start(dir.path(), options(dir.path(), &server, "default"));
        let file = client.open("a.py", "def f():\n    return 1\n");
        let chat = chat_open.then(|| {
            client.execute("bareagent.openChat", json!([])).unwrap();
            client.open(".bareagent/chat.md", &chat_on_disk(dir.path()))
        });
        let selection = json!({"uri": file, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 12}}});
        let prepared = ask(&client, json!({"selection": selection}));
        assert_eq!(prepared["prepared"], true, "{prepared}");
        let at_end = |c: &LspClient| {
            requests_of(c, "window/showDocument")
                .into_iter()
                .find(|p| !p["selection"].is_null())
        };
        client.wait_until(LONG, "the chat to be shown at its end", |c| {
            at_end(c).is_some()
        });
        let shown = at_end(&client).unwrap();
        let text = match &chat {
            Some(uri) => client.text(uri).unwrap(),
            None => chat_on_disk(dir.path()),
        };
        assert!(
            text.ends_with("```py\ndef f():\n    return 1\n```\n\n"),
            "chat_open={chat_open}: {text}"
        );
        let lines = text.matches('\n').count();
        assert_eq!(
            shown["selection"],
            json!({"start": {"line": lines, "character": 0}, "end": {"line": lines, "character": 0}}),
            "chat_open={chat_open}"
        );
        assert_eq!(
            text.matches("## You").count(),
            2,
            "the intro's and the new one: {text}"
        );
    }
}

fn command(client: &LspClient, name: &str, arguments: Value) -> Result<Value, Value> {
    client.request(
        "workspace/executeCommand",
        json!({"command": name, "arguments": arguments}),
    )
}

/// The model of each model call, and which API it went to (a picker's
/// `GET /v1/models` is no call).
fn models_asked(server: &ModelServer) -> Vec<(String, String)> {
    server
        .requests()
        .iter()
        .filter(|r| !r.path.contains("/v1/models"))
        .map(|r| {
            let api = if r.path.ends_with("/chat/completions") {
                "openai"
            } else {
                "anthropic"
            };
            (
                api.to_string(),
                r.body["model"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// `BAREAGENT_PROVIDER` and `BAREAGENT_MODEL` choose as they do for
/// `bareagent run`, under the editor's settings; `bareagent.setModel`
/// offers the choices and changes the next turn's; `bareagent.status`
/// says what is in use and why.
#[test]
fn the_environment_and_set_model_choose_the_model() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::text("one").into(),
        Reply::text("two").into(),
        Reply::text("three").into(),
        Reply::text("four").into(),
    ]);
    let base_env = |editor: Value| {
        let mut options = ClientOptions::new(dir.path());
        options.env.extend([
            ("ANTHROPIC_API_KEY".into(), TEST_KEY.into()),
            ("OPENAI_API_KEY".into(), TEST_KEY.into()),
            ("ANTHROPIC_BASE_URL".into(), server.anthropic_base()),
            ("OPENAI_BASE_URL".into(), server.openai_base()),
            ("BAREAGENT_PROVIDER".into(), "openai".into()),
            ("BAREAGENT_MODEL".into(), "env-model".into()),
        ]);
        options.initialization_options = editor;
        options
    };
    let turn = |client: &LspClient| {
        let turn = turn_of(&ask(client, json!("hi")));
        assert_eq!(turn_end(client, turn)["type"], "turn_finished");
    };
    // The editor's settings name a model: it wins over the environment's.
    let client = start(dir.path(), base_env(json!({"model": "editor-model"})));
    turn(&client);
    client.shutdown();

    let client = start(dir.path(), base_env(json!({})));
    let status = command(&client, "bareagent.status", json!([])).unwrap();
    assert_eq!(
        status["model"],
        json!({"provider": "openai", "model": "env-model", "providerFrom": "BAREAGENT_PROVIDER", "modelFrom": "BAREAGENT_MODEL"})
    );
    turn(&client);

    let offered = command(&client, "bareagent.setModel", json!([])).unwrap();
    let choices = offered["choices"].as_array().unwrap();
    assert_eq!(
        choices[0],
        json!({"provider": "anthropic", "model": bareagent::provider::DEFAULT_ANTHROPIC_MODEL, "configured": true})
    );
    assert!(
        choices.contains(&json!({"provider": "openai", "model": "env-model", "configured": true})),
        "the model in use is offered: {offered}"
    );
    assert_eq!(offered["current"], status["model"]);

    let set = command(
        &client,
        "bareagent.setModel",
        json!([{"provider": "anthropic", "model": "claude-picked"}]),
    )
    .unwrap();
    assert_eq!(set["current"]["model"], "claude-picked", "{set}");
    assert_eq!(set["current"]["providerFrom"], "chosen in this session");
    turn(&client);
    // A provider alone brings its default model.
    command(
        &client,
        "bareagent.setModel",
        json!([{"provider": "openai"}]),
    )
    .unwrap();
    turn(&client);
    assert_eq!(
        models_asked(&server),
        [
            ("openai".to_string(), "editor-model".to_string()),
            ("openai".to_string(), "env-model".to_string()),
            ("anthropic".to_string(), "claude-picked".to_string()),
            (
                "openai".to_string(),
                bareagent::provider::DEFAULT_OPENAI_MODEL.to_string()
            ),
        ]
    );

    let refused = command(
        &client,
        "bareagent.setModel",
        json!([{"provider": "gemini"}]),
    )
    .expect_err("an unknown provider is refused");
    assert_eq!(refused["code"], -32602);
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("anthropic, openai"),
        "{refused}"
    );
    let reset = command(&client, "bareagent.setModel", json!([{"reset": true}])).unwrap();
    assert_eq!(reset["current"]["model"], "env-model", "{reset}");
    client.shutdown();

    // An unknown provider in the environment fails the turn, saying which variable.
    let mut options = base_env(json!({}));
    options
        .env
        .push(("BAREAGENT_PROVIDER".into(), "gemini".into()));
    let client = start(dir.path(), options);
    let turn = turn_of(&ask(&client, json!("hi")));
    let end = turn_end(&client, turn);
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("BAREAGENT_PROVIDER=gemini"),
        "{end}"
    );
}

/// `bareagent.setModel`'s choices for the provider in use are what its API
/// lists for the key (`GET /v1/models`, asked once); refused, they are the
/// built-in suggestions and `listedBy.note` says why.
#[test]
fn set_model_offers_what_the_api_lists() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![]);
    server.serve_models(&["gpt-5", "qwen3-coder"]);
    let options = || {
        let mut options = ClientOptions::new(dir.path());
        options.env.extend([
            ("OPENAI_API_KEY".into(), TEST_KEY.into()),
            ("OPENAI_BASE_URL".into(), server.openai_base()),
            ("BAREAGENT_PROVIDER".into(), "openai".into()),
        ]);
        options
    };
    let openai_models = |offered: &Value| -> Vec<String> {
        offered["choices"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|choice| choice["provider"] == "openai")
            .map(|choice| choice["model"].as_str().unwrap().to_string())
            .collect()
    };
    let client = start(dir.path(), options());
    let offered = command(&client, "bareagent.setModel", json!([])).unwrap();
    // The model in use first (it is not on the list), then the API's.
    assert_eq!(
        openai_models(&offered),
        [
            bareagent::provider::DEFAULT_OPENAI_MODEL,
            "gpt-5",
            "qwen3-coder"
        ],
        "{offered}"
    );
    assert_eq!(offered["listedBy"]["source"], "api", "{offered}");
    command(&client, "bareagent.setModel", json!([])).unwrap();
    client.shutdown();
    let listings: Vec<_> = server.requests();
    assert_eq!(listings.len(), 1, "asked once: {listings:?}");
    assert_eq!(listings[0].path, "/v1/models");
    assert_eq!(
        listings[0].header("authorization"),
        Some(format!("Bearer {TEST_KEY}").as_str())
    );

    server.refuse_models();
    let client = start(dir.path(), options());
    let offered = command(&client, "bareagent.setModel", json!([])).unwrap();
    assert_eq!(offered["listedBy"]["source"], "built-in", "{offered}");
    let note = offered["listedBy"]["note"].as_str().unwrap_or_default();
    assert!(note.contains("401"), "{offered}");
    assert!(
        openai_models(&offered).contains(&"gpt-5.4".to_string()),
        "{offered}"
    );
    client.shutdown();

    // A server that is not there: the built-in list too, and why.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let mut unreachable = options();
    unreachable
        .env
        .retain(|(name, _)| name.as_str() != "OPENAI_BASE_URL");
    unreachable.env.push(("OPENAI_BASE_URL".into(), gone));
    let client = start(dir.path(), unreachable);
    let offered = command(&client, "bareagent.setModel", json!([])).unwrap();
    assert_eq!(offered["listedBy"]["source"], "built-in", "{offered}");
    let note = offered["listedBy"]["note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("could not list the models (openai: "),
        "{offered}"
    );
    client.shutdown();
}
