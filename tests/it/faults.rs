//! Every fault the scripted server can inject ends in a successful retry (or
//! a fallback to a plain call) or in a clear error, and the history stays
//! valid either way.

use std::time::{Duration, Instant};

use bareagent::agent::{LoopError, Message};
use bareagent::history::check_history;
use bareagent::provider::ProviderError;

use crate::common::*;
use crate::support::model_server::{Fault, ModelServer, Reply, Step};

const ANSWER: &str = "The answer, in full.";

async fn turn_with(api: Api, script: Vec<Step>) -> (Turn, ModelServer) {
    let dir = workspace(&[]);
    let server = ModelServer::start(script);
    let provider = provider(api, &server);
    let turn = run_turn(&provider, dir.path(), "question", TurnOptions::default()).await;
    (turn, server)
}

fn answer() -> Reply {
    Reply::text(ANSWER)
}

#[tokio::test]
async fn status_errors_before_output_are_retried() {
    for api in [Api::Anthropic, Api::OpenAi] {
        for fault in [
            Fault::ServerError,
            Fault::Overloaded,
            Fault::RateLimited {
                retry_after_secs: 1,
            },
        ] {
            let case = format!("{api:?} {fault:?}");
            let started = Instant::now();
            let (turn, server) = turn_with(api, vec![fault.clone().into(), answer().into()]).await;
            let outcome = turn.result.unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(outcome.text, ANSWER, "{case}");
            let requests = server.requests();
            assert_eq!(requests.len(), 2, "{case}");
            assert_eq!(
                requests[0].body, requests[1].body,
                "{case}: the same request again"
            );
            if matches!(fault, Fault::RateLimited { .. }) {
                assert!(
                    started.elapsed() >= Duration::from_millis(950),
                    "{case}: retry-after was not honoured"
                );
            }
            assert_eq!(check_history(&turn.messages), Ok(()), "{case}");
        }
    }
}

/// A failed call leaves the history as it was: the prompt alone.
fn assert_history_untouched(messages: &[Message], case: &str) {
    assert_eq!(messages, [Message::user_text("question")], "{case}");
}

#[tokio::test]
async fn retries_are_bounded_and_the_error_names_provider_status_and_message() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let script = (0..4).map(|_| Fault::ServerError.into()).collect();
        let (turn, server) = turn_with(api, script).await;
        let error = turn.result.expect_err("four 500s in a row must fail");
        let text = error.to_string();
        let name = if api == Api::Anthropic {
            "anthropic"
        } else {
            "openai"
        };
        assert!(text.starts_with(&format!("{name}: HTTP 500: ")), "{text}");
        assert!(
            text.len() > format!("{name}: HTTP 500: ").len() + 3,
            "carries the server's message: {text}"
        );
        assert!(!text.contains(TEST_KEY));
        assert_eq!(server.requests().len(), 4, "default of 4 attempts");
        assert_history_untouched(&turn.messages, "history untouched");
    }
}

#[tokio::test]
async fn non_streamed_calls_are_bounded_by_the_same_attempts() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let dir = workspace(&[]);
        let server = ModelServer::start((0..6).map(|_| Fault::Overloaded.into()).collect());
        let provider = provider(api, &server);
        let options = TurnOptions {
            stream: false,
            ..Default::default()
        };
        let turn = run_turn(&provider, dir.path(), "q", options).await;
        let error = turn.result.expect_err("529s all the way");
        assert!(error.to_string().contains("HTTP 529"), "{error}");
        assert_eq!(
            server.requests().len(),
            4,
            "{api:?}: 4 attempts, not retries of retries"
        );
    }
}

#[tokio::test]
async fn an_unretryable_status_fails_at_once() {
    // An empty script makes the server answer 400.
    let (turn, server) = turn_with(Api::Anthropic, vec![]).await;
    let error = turn.result.expect_err("400 is final");
    assert!(error.to_string().contains("HTTP 400"), "{error}");
    assert!(
        error.to_string().contains("no scripted response left"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1);
}

/// A stream that breaks before any text falls back to a plain call.
#[tokio::test]
async fn stream_faults_before_output_fall_back_to_create() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let faults = [
            Fault::ResetMidStream {
                reply: answer(),
                after_text: false,
            },
            Fault::MalformedSse {
                reply: answer(),
                after_text: false,
            },
            Fault::Stall {
                reply: answer(),
                after_text: false,
                secs: 3,
            },
            Fault::ErrorEvent { after_text: false },
        ];
        for fault in faults {
            let case = format!("{api:?} {fault:?}");
            let (turn, server) = turn_with(api, vec![fault.into(), answer().into()]).await;
            let outcome = turn.result.unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(outcome.text, ANSWER, "{case}");
            let requests = server.requests();
            assert_eq!(requests.len(), 2, "{case}");
            assert!(
                requests[0].is_stream() && !requests[1].is_stream(),
                "{case}: fell back to create"
            );
            assert_eq!(check_history(&turn.messages), Ok(()), "{case}");
        }
    }
}

/// Once text was shown, a broken stream is an error, never a silent retry.
#[tokio::test]
async fn stream_faults_after_output_are_errors_not_retries() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let faults = [
            Fault::ResetMidStream {
                reply: answer(),
                after_text: true,
            },
            Fault::MalformedSse {
                reply: answer(),
                after_text: true,
            },
            Fault::Stall {
                reply: answer(),
                after_text: true,
                secs: 3,
            },
            Fault::ErrorEvent { after_text: true },
        ];
        for fault in faults {
            let case = format!("{api:?} {fault:?}");
            let (turn, server) = turn_with(api, vec![fault.into(), answer().into()]).await;
            let error = turn.result.expect_err(&case);
            assert!(
                matches!(error, LoopError::Provider(ProviderError::Interrupted(_))),
                "{case}: {error:?}"
            );
            assert!(
                error.to_string().contains("cut off after output began"),
                "{case}: {error}"
            );
            assert_eq!(server.requests().len(), 1, "{case}: nothing was retried");
            assert!(
                !turn.sink.streamed_text().is_empty(),
                "{case}: text had been shown"
            );
            assert_history_untouched(&turn.messages, &case);
        }
    }
}

#[tokio::test]
async fn non_streamed_calls_retry_a_cut_body_and_a_stall() {
    for api in [Api::Anthropic, Api::OpenAi] {
        for fault in [
            Fault::ResetMidStream {
                reply: answer(),
                after_text: false,
            },
            Fault::Stall {
                reply: answer(),
                after_text: false,
                secs: 3,
            },
        ] {
            let case = format!("{api:?} {fault:?}");
            let dir = workspace(&[]);
            let server = ModelServer::start(vec![fault.into(), answer().into()]);
            let provider = provider(api, &server);
            let turn = run_turn(
                &provider,
                dir.path(),
                "q",
                TurnOptions {
                    stream: false,
                    ..Default::default()
                },
            )
            .await;
            assert_eq!(
                turn.result.unwrap_or_else(|e| panic!("{case}: {e}")).text,
                ANSWER
            );
            assert_eq!(server.requests().len(), 2, "{case}");
        }
    }
}

#[tokio::test]
async fn a_refused_connection_is_a_clear_error() {
    // Bind and drop a listener: nothing listens on that port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let provider: std::sync::Arc<dyn bareagent::provider::Provider> = std::sync::Arc::new(
        bareagent::provider::Anthropic::new(
            &format!("http://127.0.0.1:{port}"),
            TEST_KEY.into(),
            "m",
            test_settings(),
        )
        .unwrap(),
    );
    let dir = workspace(&[]);
    let turn = run_turn(&provider, dir.path(), "q", TurnOptions::default()).await;
    let error = turn.result.expect_err("nothing listens");
    assert_eq!(
        error.to_string(),
        format!("anthropic: connection refused to 127.0.0.1:{port}")
    );
}
