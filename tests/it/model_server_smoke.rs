//! Drives the scripted model server with a raw reqwest client and checks
//! what goes over the wire, independently of the crate's own parsers.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::model_server::{Fault, ModelServer, Reply, Step};

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

async fn post(url: String, body: Value) -> reqwest::Response {
    client()
        .post(url)
        .header("x-api-key", "test-key")
        .json(&body)
        .send()
        .await
        .expect("request reaches the model server")
}

async fn anthropic(server: &ModelServer, stream: bool) -> reqwest::Response {
    let url = format!("{}/v1/messages", server.anthropic_base());
    post(
        url,
        json!({"model": "claude-sonnet-4-5", "stream": stream, "messages": []}),
    )
    .await
}

async fn openai(server: &ModelServer, body: Value) -> reqwest::Response {
    post(format!("{}/chat/completions", server.openai_base()), body).await
}

/// Splits an SSE body into (event name, data) pairs. The server writes one
/// `event:`/`data:` pair per event, so this simple split is enough.
fn sse(body: &str) -> Vec<(Option<String>, String)> {
    assert!(
        body.ends_with("\n\n"),
        "stream ends with a blank line: {body:?}"
    );
    body.split_terminator("\n\n")
        .map(|event| {
            let mut name = None;
            let mut data = String::new();
            for line in event.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    name = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = v.to_string();
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            (name, data)
        })
        .collect()
}

fn json_of(data: &str) -> Value {
    serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"))
}

#[tokio::test]
async fn anthropic_stream_follows_the_documented_event_sequence() {
    let reply = Reply::text("Hello there, world").with_thinking("Let me think.", "sig-123");
    let server = ModelServer::start(vec![reply.into()]);

    let response = anthropic(&server, true).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["cache-control"], "no-cache");
    assert_eq!(response.headers()["transfer-encoding"], "chunked");
    assert!(
        response.headers()["request-id"]
            .to_str()
            .unwrap()
            .starts_with("req_")
    );
    let events = sse(&response.text().await.unwrap());

    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    let deltas = |from: usize| {
        names[from..]
            .iter()
            .take_while(|n| **n == "content_block_delta")
            .count()
    };
    // Thinking block: start, ping, thinking pieces + one signature, stop.
    assert_eq!(names[..3], ["message_start", "content_block_start", "ping"]);
    let thinking_deltas = deltas(3);
    assert!((2..=4).contains(&thinking_deltas), "{names:?}");
    let text_start = 3 + thinking_deltas;
    assert_eq!(
        names[text_start..text_start + 2],
        ["content_block_stop", "content_block_start"]
    );
    let text_deltas = deltas(text_start + 2);
    assert!((2..=3).contains(&text_deltas), "{names:?}");
    assert_eq!(
        names[text_start + 2 + text_deltas..],
        ["content_block_stop", "message_delta", "message_stop"]
    );

    // Every data line is JSON whose `type` matches the event name.
    let data: Vec<Value> = events.iter().map(|(_, d)| json_of(d)).collect();
    for (name, value) in names.iter().zip(&data) {
        assert_eq!(value["type"], *name);
    }
    assert_eq!(data[0]["message"]["usage"]["input_tokens"], 10);
    let joined = |kind: &str, field: &str| -> String {
        data.iter()
            .filter(|d| d["delta"]["type"] == kind)
            .map(|d| d["delta"][field].as_str().unwrap())
            .collect()
    };
    assert_eq!(joined("thinking_delta", "thinking"), "Let me think.");
    assert_eq!(joined("signature_delta", "signature"), "sig-123");
    assert_eq!(joined("text_delta", "text"), "Hello there, world");
    let message_delta = &data[data.len() - 2];
    assert_eq!(message_delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(message_delta["usage"]["output_tokens"], 5);
}

#[tokio::test]
async fn anthropic_tool_input_arrives_in_pieces_and_whole() {
    let input = json!({"path": "src/main.rs", "limit": 20});
    let server = ModelServer::start(vec![
        Reply::tool("read_file", input.clone()).into(),
        Reply::tool("read_file", input.clone())
            .with_text_first("Reading.")
            .into(),
    ]);

    let events = sse(&anthropic(&server, true).await.text().await.unwrap());
    let data: Vec<Value> = events.iter().map(|(_, d)| json_of(d)).collect();
    let partials: Vec<&str> = data
        .iter()
        .filter(|d| d["delta"]["type"] == "input_json_delta")
        .map(|d| d["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(partials[0], "", "the API opens with an empty partial_json");
    assert!(partials.len() >= 3, "{partials:?}");
    assert_eq!(json_of(&partials.concat()), input);
    let block = &data[1]["content_block"];
    assert_eq!(block["type"], "tool_use");
    assert!(block["id"].as_str().unwrap().starts_with("toolu_"));
    assert_eq!(data[data.len() - 2]["delta"]["stop_reason"], "tool_use");

    let message: Value = anthropic(&server, false).await.json().await.unwrap();
    assert_eq!(message["type"], "message");
    assert_eq!(
        message["content"][0],
        json!({"type": "text", "text": "Reading."})
    );
    assert_eq!(message["content"][1]["input"], input);
    assert_eq!(message["stop_reason"], "tool_use");
    assert_ne!(
        message["content"][1]["id"], block["id"],
        "tool ids are unique"
    );
}

#[tokio::test]
async fn openai_stream_rebuilds_text_and_tool_calls_and_ends_with_done() {
    let reply = Reply::tools(vec![
        ("grep", json!({"pattern": "fn main"})),
        ("ls", json!({})),
    ])
    .with_text_first("Looking.");
    let server = ModelServer::start(vec![reply.into()]);

    let body =
        json!({"model": "gpt-4o-mini", "stream": true, "stream_options": {"include_usage": true}});
    let text = openai(&server, body).await.text().await.unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let events = sse(&text);
    assert!(events.iter().all(|(name, _)| name.is_none()));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|(_, d)| json_of(d))
        .collect();

    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "Looking.");
    let mut arguments = [String::new(), String::new()];
    let mut names = [None, None];
    for call in chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].as_array())
    {
        let index = call[0]["index"].as_u64().unwrap() as usize;
        if let Some(name) = call[0]["function"]["name"].as_str() {
            names[index] = Some(name.to_string());
        }
        arguments[index].push_str(call[0]["function"]["arguments"].as_str().unwrap());
    }
    assert_eq!(names, [Some("grep".into()), Some("ls".into())]);
    assert_eq!(json_of(&arguments[0]), json!({"pattern": "fn main"}));
    assert_eq!(arguments[1], "{}");

    let (finish, usage) = (&chunks[chunks.len() - 2], &chunks[chunks.len() - 1]);
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(finish["choices"][0]["delta"], json!({}));
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["total_tokens"], 15);
}

#[tokio::test]
async fn openai_non_stream_has_the_completion_shape() {
    let server = ModelServer::start(vec![
        Reply::text("Hi.").with_thinking("hidden", "sig").into(),
    ]);
    let response = openai(&server, json!({"model": "gpt-4o-mini"})).await;
    assert!(response.headers().contains_key("x-request-id"));
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    let choice = &body["choices"][0];
    assert_eq!(
        choice["message"],
        json!({"role": "assistant", "content": "Hi.", "refusal": null})
    );
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
}

#[tokio::test]
async fn error_statuses_carry_provider_error_bodies() {
    let server = ModelServer::start(vec![
        Step::Fault(Fault::RateLimited {
            retry_after_secs: 7,
        }),
        Step::Fault(Fault::Overloaded),
        Step::Fault(Fault::ServerError),
    ]);

    let response = anthropic(&server, true).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");

    let response = anthropic(&server, false).await;
    assert_eq!(response.status(), 529);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );

    let response = openai(&server, json!({"stream": true})).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "server_error");

    // Script exhausted: a non-retryable 400 naming the request number.
    let response = anthropic(&server, false).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "scripted model server: no scripted response left (request 4)"
    );
}

#[tokio::test]
async fn reset_mid_stream_is_an_incomplete_body() {
    let reply = Reply::text("Partial text that never finishes");
    let server = ModelServer::start(vec![
        Step::Fault(Fault::ResetMidStream {
            reply: reply.clone(),
            after_text: true,
        }),
        Step::Fault(Fault::ResetMidStream {
            reply,
            after_text: false,
        }),
    ]);

    let mut response = anthropic(&server, true).await;
    assert_eq!(response.status(), 200);
    let mut received = Vec::new();
    let error = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => received.extend_from_slice(&chunk),
            Ok(None) => panic!(
                "stream ended cleanly: {}",
                String::from_utf8_lossy(&received)
            ),
            Err(e) => break e,
        }
    };
    assert!(error.is_body() || error.is_decode(), "{error:?}");
    let received = String::from_utf8(received).unwrap();
    assert_eq!(received.matches("text_delta").count(), 1, "{received}");
    assert!(!received.contains("message_stop"));

    let response = anthropic(&server, false).await;
    assert!(response.bytes().await.is_err(), "half a JSON body then RST");
}

#[tokio::test]
async fn malformed_error_event_and_stall_faults() {
    let reply = Reply::text("All good in the end");
    let server = ModelServer::start(vec![
        Step::Fault(Fault::MalformedSse {
            reply: reply.clone(),
            after_text: false,
        }),
        Step::Fault(Fault::ErrorEvent { after_text: true }),
        Step::Fault(Fault::Stall {
            reply,
            after_text: true,
            secs: 1,
        }),
    ]);

    let text = anthropic(&server, true).await.text().await.unwrap();
    let events = sse(&text);
    let bad = events
        .iter()
        .position(|(_, d)| d == "{not json")
        .expect("malformed line");
    assert_eq!(
        events[bad - 1].0.as_deref(),
        Some("ping"),
        "struck before the first delta"
    );
    assert_eq!(events.last().unwrap().0.as_deref(), Some("message_stop"));

    let body = json!({"stream": true});
    let events = sse(&openai(&server, body.clone()).await.text().await.unwrap());
    let (_, last) = events.last().unwrap();
    assert_eq!(
        json_of(last),
        json!({"error": {"message": "Overloaded", "type": "server_error"}})
    );
    assert!(json_of(&events[1].1)["choices"][0]["delta"]["content"].is_string());

    let started = Instant::now();
    let mut response = openai(&server, body).await;
    let first = response.chunk().await.unwrap().unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "head and opening arrive at once"
    );
    assert!(String::from_utf8_lossy(&first).contains("assistant"));
    let mut rest = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        rest.extend_from_slice(&chunk);
    }
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert!(
        String::from_utf8(rest)
            .unwrap()
            .ends_with("data: [DONE]\n\n")
    );
}

#[tokio::test]
async fn records_requests_and_survives_bad_clients() {
    let server = ModelServer::start(vec![]);
    server.push(Reply::text("one").into());
    server.push(Step::Fault(Fault::Stall {
        reply: Reply::text("x"),
        after_text: false,
        secs: 60,
    }));
    assert_eq!(server.remaining(), 2);

    // A client that sends garbage, and one that hangs up mid-headers.
    for garbage in [
        &b"\x00\x01 no line end"[..],
        b"POST /v1/messages HTTP/1.1\r\nhost",
    ] {
        let mut socket =
            tokio::net::TcpStream::connect(server.anthropic_base().trim_start_matches("http://"))
                .await
                .unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut socket, garbage)
            .await
            .unwrap();
    }

    let response = openai(
        &server,
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(server.remaining(), 1);

    let requests = server.requests();
    let request = requests.last().unwrap();
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("X-API-Key"), Some("test-key"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.body["messages"][0]["content"], "hi");
    assert!(!request.is_stream());

    // Dropping the server mid-stall must not hang.
    let stalled = tokio::spawn(openai_stream_forever(server.openai_base()));
    while server.remaining() > 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = Instant::now();
    drop(server);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        stalled.await.unwrap().is_err(),
        "the stalled stream is cut off"
    );
}

/// Requests on one socket, each answer read whole before the next is sent
/// (as a pooling client does), are answered on that socket; each socket is
/// one connection counted.
#[test]
fn connections_are_kept_alive_across_answers_and_counted() {
    use std::io::{Read, Write};
    let server = ModelServer::start(vec![
        Reply::text("one").into(),
        Fault::ServerError.into(),
        Reply::text("three").into(),
    ]);
    let address = server.anthropic_base().replace("http://", "");
    let connect = || {
        let socket = std::net::TcpStream::connect(&address).expect("connect");
        let _ = socket.set_read_timeout(Some(Duration::from_secs(10)));
        socket
    };
    let status = |socket: &mut std::net::TcpStream| {
        let body = r#"{"model":"m","messages":[]}"#;
        write!(
            socket,
            "POST /v1/messages HTTP/1.1\r\nhost: test\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .expect("send");
        let mut answer = Vec::new();
        let mut buffer = [0; 4096];
        while !answer.ends_with(b"\r\n0\r\n\r\n") {
            let read = socket.read(&mut buffer).expect("read");
            let text = String::from_utf8_lossy(&answer);
            assert!(read > 0, "the server closed the connection after {text:?}");
            answer.extend_from_slice(&buffer[..read]);
        }
        String::from_utf8_lossy(&answer)[..12].to_string()
    };
    let mut socket = connect();
    assert_eq!(status(&mut socket), "HTTP/1.1 200");
    assert_eq!(status(&mut socket), "HTTP/1.1 500");
    assert_eq!(server.connections(), 1);
    assert_eq!(status(&mut connect()), "HTTP/1.1 200");
    assert_eq!(server.connections(), 2);
    let on: Vec<usize> = server.requests().iter().map(|r| r.connection).collect();
    assert_eq!(on, [1, 1, 2]);
}

async fn openai_stream_forever(base: String) -> Result<String, reqwest::Error> {
    let response = post(format!("{base}/chat/completions"), json!({"stream": true})).await;
    response.text().await
}
