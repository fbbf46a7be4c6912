//! The second turn's way to the model over HTTPS: the time from sending
//! `bareagent.ask` to the model server receiving the model request, on the
//! language server's second turn. A build that makes a new HTTP client per
//! turn loads the root store and shakes hands again there; one that keeps
//! its client for the session sends on the connection it has.
//!
//! The model server is the scripted one (tests/support) behind a TLS front
//! on 127.0.0.1 (tests/support/tls_front.rs), trusted through the
//! system's roots and a test CA, so the root store costs what it costs a
//! user.
//!
//! `cargo bench --bench second_turn`. Knobs: `RUNS` (default 20),
//! `BAREAGENT_BIN` (the build measured; default this one),
//! `BAREAGENT_BIN_BEFORE` (another build, measured in the same run, each of
//! its runs next to one of the first's), `PLAIN=1` (plain HTTP to the model
//! server, no TLS front: what the figure is without TLS).

// Its unit tests are compiled out here; their imports would warn.
#[allow(unused_imports)]
#[path = "../tests/support/event_schema.rs"]
mod event_schema;
#[path = "support/measured.rs"]
mod measured;
// Its unit tests are compiled out here; their imports would warn.
#[allow(unused_imports)]
#[path = "../tests/support/lsp_client.rs"]
mod lsp_client;
#[path = "../tests/support/model_server.rs"]
mod model_server;
// The tests read the test CA's certificate; a bench only serves with it.
#[allow(dead_code)]
#[path = "../tests/support/tls_front.rs"]
mod tls_front;

use measured::bareagent;
use std::path::Path;
use std::time::{Duration, Instant};

use lsp_client::{ClientOptions, LspClient};
use model_server::{ModelServer, Reply};
use serde_json::json;
use tls_front::{TestTls, TlsFront};

const TURN_TIMEOUT: Duration = Duration::from_secs(30);

fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20)
        .max(1);
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let plain = std::env::var("PLAIN").is_ok_and(|v| v == "1");
    let tls = TestTls::new(dir.path());

    let measured = match std::env::var_os("BAREAGENT_BIN") {
        Some(_) => "BAREAGENT_BIN",
        None => "this build",
    };
    let mut builds = vec![(measured, bareagent())];
    if let Some(before) = std::env::var_os("BAREAGENT_BIN_BEFORE") {
        builds.insert(0, ("BAREAGENT_BIN_BEFORE", before.into()));
    }
    for (name, binary) in &builds {
        println!("{name}: {}", binary.display());
        // A warm-up (page cache), not recorded.
        second_turn(binary, (!plain).then_some(&tls));
    }
    let mut times = vec![Vec::new(); builds.len()];
    for _ in 0..runs {
        for ((_, binary), times) in builds.iter().zip(&mut times) {
            times.push(second_turn(binary, (!plain).then_some(&tls)));
        }
    }
    let over = if plain { "plain HTTP" } else { "HTTPS" };
    println!(
        "\nbareagent.ask sent → model request received, second turn, over {over} ({runs} runs):"
    );
    for ((name, _), mut times) in builds.into_iter().zip(times) {
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let p90 = times[(times.len() * 9).div_ceil(10).saturating_sub(1)];
        println!(
            "  {name:<20} median {:.2} ms, p90 {:.2} ms, min {:.2} ms, max {:.2} ms",
            ms(times[times.len() / 2]),
            ms(p90),
            ms(times[0]),
            ms(times[times.len() - 1])
        );
    }
}

/// One language server, two turns; the second's ask → model request. With
/// `tls`, the model server is behind a TLS front.
fn second_turn(binary: &Path, tls: Option<&TestTls>) -> Duration {
    let model = ModelServer::start(vec![Reply::text("one").into(), Reply::text("two").into()]);
    let backend = model
        .anthropic_base()
        .trim_start_matches("http://")
        .parse()
        .expect("the model server's address");
    let front = tls.map(|tls| TlsFront::start(tls.config.clone(), backend));
    let base_url = match &front {
        Some(front) => format!("https://{}", front.addr),
        None => model.anthropic_base(),
    };
    let root = tempfile::tempdir().expect("workspace");
    let mut options = ClientOptions::new(root.path());
    options
        .env
        .push(("ANTHROPIC_API_KEY".to_string(), "sk-bench".to_string()));
    options
        .env
        .extend(tls.map(TestTls::env).into_iter().flatten());
    options.initialization_options = json!({
        "provider": "anthropic", "baseUrl": base_url, "permissionMode": "default",
    });
    let client = LspClient::start(binary, options);
    client.initialize();
    let turn = |prompt: &str| {
        let sent = Instant::now();
        let started = client
            .execute("bareagent.ask", json!([prompt]))
            .unwrap_or_else(|e| panic!("ask: {e}"));
        let end = client.wait_for_notification(TURN_TIMEOUT, "the turn's end", |method, params| {
            method == "bareagent/event"
                && params["turn"] == started["turn"]
                && matches!(
                    params["type"].as_str(),
                    Some("turn_finished" | "turn_failed")
                )
        });
        assert_eq!(end["type"], "turn_finished", "{end}\n{}", client.stderr());
        sent
    };
    turn("one");
    let sent = turn("two");
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "two model requests");
    client.shutdown();
    requests[1].received.duration_since(sent)
}
