//! Reaching the model, through the built binary: what a connection failure
//! looks like (one line per retry, one final line; the language server logs
//! retries at `info`), what is a usage error before any request (a base URL
//! that is not one, a missing key), and a gateway's bearer token and custom
//! headers, which arrive at the server and nowhere else.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::json;

use crate::common::{TEST_KEY, bareagent, workspace};
use crate::support::lsp_client::{ClientOptions, LspClient};
use crate::support::model_server::{Fault, ModelServer, Reply};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A port on 127.0.0.1 that nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn run(dir: &Path, configure: impl FnOnce(&mut Command)) -> Output {
    let mut command = bareagent(dir);
    command.arg("run");
    configure(&mut command);
    command.arg("hello").output().unwrap()
}

/// The lines of stderr about the model call (not the sandbox's status,
/// which depends on the machine).
fn call_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| !line.starts_with("bareagent: sandbox"))
        .collect()
}

#[test]
fn connection_refused_is_one_line_per_retry_and_one_final_line() {
    let dir = workspace(&[]);
    let port = closed_port();
    let out = run(dir.path(), |c| {
        c.args([
            "--provider",
            "anthropic",
            "--max-attempts",
            "3",
            "--base-url",
        ])
        .arg(format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", TEST_KEY);
    });
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines = call_lines(&stderr);
    assert_eq!(lines.len(), 3, "{stderr}");
    for (line, attempt) in lines[..2].iter().zip([2, 3]) {
        let wait = line
            .strip_prefix("retrying in ")
            .and_then(|rest| {
                rest.strip_suffix(&format!(
                    " s (attempt {attempt}/3): connection refused to 127.0.0.1:{port}"
                ))
            })
            .unwrap_or_else(|| panic!("not a retry line: {line:?}\n{stderr}"));
        assert!(wait.parse::<f64>().is_ok(), "{line}");
    }
    assert_eq!(
        lines[2],
        format!("bareagent: anthropic: connection refused to 127.0.0.1:{port}")
    );
}

#[test]
fn what_cannot_work_is_a_usage_error_before_any_request() {
    let dir = workspace(&[]);
    // A server that would answer, to show nothing was sent to it.
    let server = ModelServer::start(vec![Reply::text("hi").into()]);
    type Setup = Box<dyn Fn(&mut Command)>;
    let key = |c: &mut Command| {
        c.env("ANTHROPIC_API_KEY", TEST_KEY);
    };
    let cases: Vec<(&str, Setup, &str)> = vec![
        (
            "--base-url notaurl",
            Box::new(move |c| {
                key(c);
                c.args(["--base-url", "notaurl"]);
            }),
            "the base URL `notaurl` is not usable",
        ),
        (
            "a host and port without a scheme",
            Box::new(move |c| {
                key(c);
                c.args(["--base-url", "127.0.0.1:8080"]);
            }),
            "`127.0.0.1:8080` is not usable",
        ),
        (
            "another scheme",
            Box::new(move |c| {
                key(c);
                c.args(["--base-url", "ftp://127.0.0.1/"]);
            }),
            "the scheme `ftp` is not http or https",
        ),
        (
            "ANTHROPIC_BASE_URL",
            Box::new(move |c| {
                key(c);
                c.env("ANTHROPIC_BASE_URL", "notaurl");
            }),
            "ANTHROPIC_BASE_URL `notaurl` is not usable",
        ),
        (
            "openai without a key or a base URL",
            Box::new(|c| {
                c.args(["--provider", "openai"]);
            }),
            "OPENAI_API_KEY is not set",
        ),
        (
            "anthropic without a key or a token",
            Box::new(|c| {
                c.args(["--provider", "anthropic"]);
            }),
            "ANTHROPIC_API_KEY is not set",
        ),
    ];
    for (what, setup, message) in cases {
        let out = run(dir.path(), |c| setup(c));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(stderr.contains(message), "{what}: {stderr}");
        assert!(!stderr.contains("retrying"), "{what}: {stderr}");
    }
    assert!(server.requests().is_empty());
}

/// A local OpenAI-compatible server needs no key: none is sent.
#[test]
fn openai_with_a_base_url_needs_no_key() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Reply::text("hi there").into()]);
    let out = run(dir.path(), |c| {
        c.args(["--provider", "openai", "--base-url"])
            .arg(server.openai_base());
    });
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "hi there");
    assert_eq!(server.requests()[0].header("authorization"), None);
}

/// An editor shows a server's stderr as errors (Neovim logs every line at
/// ERROR): a retry is not one, so by default it is not written at all, and
/// with `BAREAGENT_LOG=info` it is written as INFO.
#[test]
fn the_language_server_logs_retries_at_info() {
    for (log, shown) in [(None, false), (Some("info"), true)] {
        let dir = workspace(&[]);
        let server = ModelServer::start(vec![
            Fault::Overloaded.into(),
            Reply::text("answered after a retry").into(),
        ]);
        let mut options = ClientOptions::new(dir.path());
        options
            .env
            .extend([("ANTHROPIC_API_KEY".into(), TEST_KEY.into())]);
        options
            .env
            .extend(log.map(|l| ("BAREAGENT_LOG".into(), l.into())));
        options.initialization_options = json!({
            "provider": "anthropic", "baseUrl": server.anthropic_base(), "idleTimeoutSecs": 5,
        });
        let client = LspClient::start(Path::new(env!("CARGO_BIN_EXE_bareagent")), options);
        client.initialize();
        let turn = client
            .execute("bareagent.ask", json!(["hello"]))
            .unwrap_or_else(|e| panic!("ask failed: {e}"))["turn"]
            .clone();
        let end = client.wait_for_notification(Duration::from_secs(30), "the turn", |m, p| {
            m == "bareagent/event"
                && p["turn"] == turn
                && (p["type"] == "turn_finished" || p["type"] == "turn_failed")
        });
        assert_eq!(end["type"], "turn_finished", "{end}");
        assert_eq!(server.requests().len(), 2, "the call was retried");
        let stderr = client.stderr();
        let retry_lines: Vec<&str> = stderr.lines().filter(|l| l.contains("retrying")).collect();
        assert!(
            !stderr.contains("WARN") && !stderr.contains("ERROR"),
            "{log:?}: {stderr}"
        );
        match shown {
            false => assert!(retry_lines.is_empty(), "{stderr}"),
            true => {
                assert_eq!(retry_lines.len(), 1, "{stderr}");
                assert!(retry_lines[0].contains("INFO"), "{stderr}");
            }
        }
    }
}

const GATEWAY_TOKEN: &str = "gw-token-7c1e9a0b5d";
const GATEWAY_KEY: &str = "gw-header-value-44aa19";

/// A turn against the scripted server with `env` set; the one request's headers.
fn headers_sent(api: &str, env: &[(&str, &str)]) -> Vec<(String, String)> {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Reply::text("hi").into()]);
    let base = match api {
        "openai" => server.openai_base(),
        _ => server.anthropic_base(),
    };
    let out = run(dir.path(), |c| {
        c.args(["--provider", api, "--base-url", &base]);
        for (name, value) in env {
            c.env(name, value);
        }
    });
    assert!(out.status.success(), "{env:?}: {}", text(&out.stderr));
    server.requests()[0].headers.clone()
}

#[test]
fn a_gateway_token_and_custom_headers_arrive_at_the_server() {
    let custom = format!("X-Gateway-Key: {GATEWAY_KEY}\nX-Team: blue\n");
    let bearer = format!("Bearer {GATEWAY_TOKEN}");
    let key_bearer = format!("Bearer {TEST_KEY}");
    type Case<'a> = (
        &'a str,
        Vec<(&'a str, &'a str)>,
        Vec<(&'a str, Option<&'a str>)>,
    );
    let cases: Vec<Case> = vec![
        (
            "anthropic",
            vec![("ANTHROPIC_AUTH_TOKEN", GATEWAY_TOKEN)],
            vec![("authorization", Some(&bearer)), ("x-api-key", None)],
        ),
        (
            "anthropic",
            vec![
                ("ANTHROPIC_AUTH_TOKEN", GATEWAY_TOKEN),
                ("ANTHROPIC_API_KEY", TEST_KEY),
            ],
            vec![
                ("authorization", Some(&bearer)),
                ("x-api-key", Some(TEST_KEY)),
            ],
        ),
        (
            "anthropic",
            vec![
                ("ANTHROPIC_API_KEY", TEST_KEY),
                ("ANTHROPIC_CUSTOM_HEADERS", &custom),
                ("OPENAI_CUSTOM_HEADERS", "X-Other: not-for-anthropic"),
            ],
            vec![
                ("x-api-key", Some(TEST_KEY)),
                ("x-gateway-key", Some(GATEWAY_KEY)),
                ("x-team", Some("blue")),
                ("anthropic-version", Some("2023-06-01")),
                ("authorization", None),
                ("x-other", None),
            ],
        ),
        (
            "openai",
            vec![
                ("OPENAI_API_KEY", TEST_KEY),
                ("OPENAI_CUSTOM_HEADERS", &custom),
                ("ANTHROPIC_CUSTOM_HEADERS", "X-Other: not-for-openai"),
            ],
            vec![
                ("authorization", Some(&key_bearer)),
                ("x-gateway-key", Some(GATEWAY_KEY)),
                ("x-team", Some("blue")),
                ("x-other", None),
            ],
        ),
    ];
    for (api, env, want) in cases {
        let sent = headers_sent(api, &env);
        for (name, value) in want {
            let got = sent
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str());
            assert_eq!(got, value, "{api} {env:?}: {name} in {sent:?}");
        }
    }
}

#[test]
fn malformed_custom_headers_are_a_startup_error_that_quotes_no_value() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Reply::text("hi").into()]);
    let cases = [
        (
            "ANTHROPIC_CUSTOM_HEADERS",
            format!("X-Ok: 1\n{GATEWAY_KEY}"),
            "line 2: no `:`",
        ),
        (
            "ANTHROPIC_CUSTOM_HEADERS",
            format!("Bearer {GATEWAY_KEY}: x"),
            "line 1: the name",
        ),
        (
            "ANTHROPIC_CUSTOM_HEADERS",
            "X-Empty:".into(),
            "`x-empty` header has no value",
        ),
        (
            "ANTHROPIC_CUSTOM_HEADERS",
            format!("x-api-key: {GATEWAY_KEY}"),
            "`x-api-key` header is one bareagent sets itself",
        ),
        (
            "ANTHROPIC_CUSTOM_HEADERS",
            format!("Host: {GATEWAY_KEY}"),
            "`host` header",
        ),
        (
            "ANTHROPIC_CUSTOM_HEADERS",
            format!("Content-Length: {GATEWAY_KEY}"),
            "`content-length` header",
        ),
        (
            "OPENAI_CUSTOM_HEADERS",
            format!("Transfer-Encoding: {GATEWAY_KEY}"),
            "`transfer-encoding` header",
        ),
        (
            "OPENAI_CUSTOM_HEADERS",
            format!("Authorization: {GATEWAY_KEY}"),
            "`authorization` header is one bareagent sets itself",
        ),
    ];
    for (var, value, message) in cases {
        let (api, base) = match var {
            "OPENAI_CUSTOM_HEADERS" => ("openai", server.openai_base()),
            _ => ("anthropic", server.anthropic_base()),
        };
        let out = run(dir.path(), |c| {
            c.args(["--provider", api, "--base-url", &base])
                .env("ANTHROPIC_API_KEY", TEST_KEY)
                .env("OPENAI_API_KEY", TEST_KEY)
                .env(var, &value);
        });
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value:?}: {stderr}");
        assert!(
            stderr.contains(var) && stderr.contains(message),
            "{value:?}: {stderr}"
        );
        assert!(!stderr.contains(GATEWAY_KEY), "{value:?}: {stderr}");
    }
    assert!(server.requests().is_empty());
}

/// The token and header values reach the server's headers and nothing
/// else: not the most verbose log, not `--json`, not the recording, not the
/// model (a command that prints them is scrubbed; the agent's own
/// environment is closed to commands, root or not), not the command's own
/// environment.
#[test]
fn gateway_secrets_appear_in_no_log_output_or_recording() {
    // A file holding them, as a command might find them anywhere.
    let held = format!("{GATEWAY_TOKEN} {GATEWAY_KEY}\n");
    let dir = workspace(&[("gateway.txt", held.as_str())]);
    let server = ModelServer::start(vec![
        Reply::tool(
            "bash",
            json!({"command": "tr '\\0' '\\n' < /proc/$PPID/environ; cat gateway.txt; echo; env; echo end-of-env"}),
        )
        .into(),
        Fault::Overloaded.into(),
        Reply::text("done").into(),
    ]);
    let recording = tempfile::NamedTempFile::new().unwrap();
    let custom = format!("X-Gateway-Key: {GATEWAY_KEY}");
    let out = run(dir.path(), |c| {
        c.args([
            "--provider",
            "anthropic",
            "--permission-mode",
            "bypass",
            "--json",
        ])
        .arg("--base-url")
        .arg(server.anthropic_base())
        .arg("--record")
        .arg(recording.path())
        .env("BAREAGENT_LOG", "trace")
        .env("ANTHROPIC_AUTH_TOKEN", GATEWAY_TOKEN)
        .env("ANTHROPIC_CUSTOM_HEADERS", &custom);
    });
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let requests = server.requests();
    assert_eq!(
        requests[0].header("x-gateway-key"),
        Some(GATEWAY_KEY),
        "the headers were sent"
    );
    let bodies: String = requests.iter().map(|r| r.body.to_string()).collect();
    assert!(bodies.contains("end-of-env"), "the command ran: {bodies}");
    assert!(
        bodies.contains("[redacted ANTHROPIC_AUTH_TOKEN]")
            && bodies.contains("[redacted ANTHROPIC_CUSTOM_HEADERS]"),
        "the secrets were printed, scrubbed: {bodies}"
    );
    // The command's own environment holds neither variable.
    let result = &crate::common::sent_tool_results(&requests[1].body)[0].0;
    let own_env = &result[result.rfind("\n\n").unwrap_or(0)..];
    assert!(
        !own_env.contains("ANTHROPIC_AUTH_TOKEN=")
            && !own_env.contains("ANTHROPIC_CUSTOM_HEADERS="),
        "{result}"
    );
    let recorded = std::fs::read_to_string(recording.path()).unwrap();
    assert!(
        stderr.contains("TRACE") || stderr.contains("DEBUG"),
        "verbose logs were on"
    );
    for (what, text) in [
        ("a request body", &bodies),
        ("stdout", &stdout),
        ("stderr", &stderr),
        ("the recording", &recorded),
    ] {
        for secret in [GATEWAY_TOKEN, GATEWAY_KEY] {
            assert!(
                !text.contains(secret),
                "{secret} leaked into {what}: {text}"
            );
        }
    }
}
