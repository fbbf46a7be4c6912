//! The loop's own overhead: a 50-iteration scripted session run by
//! `bareagent run`, against the same 50 HTTP round trips made by a bare
//! client, both over real HTTP to the scripted model server on 127.0.0.1.
//! Also reports the peak RSS of the `bareagent run` process, in that session
//! and in one of 1,000 messages (500 model calls: the prompt, 499 tool calls
//! and their results, the answer), the memory a long session holds.
//!
//! `cargo bench --bench loop_overhead` (ROUNDS=N to change the repeat count;
//! WRAP="valgrind --tool=massif" and the like run the agent under a tool;
//! BAREAGENT_BIN measures another build; BENCH_JSON=FILE appends the
//! headline figures to FILE, see support/figures.rs).

#[path = "support/figures.rs"]
mod figures;
#[path = "support/measured.rs"]
mod measured;
#[path = "../tests/support/model_server.rs"]
mod model_server;
#[path = "support/proc_memory.rs"]
mod proc_memory;

use measured::bareagent;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use model_server::{ModelServer, Reply, Step};
use serde_json::json;

const ITERATIONS: usize = 50;
/// Model calls in the long session: 1,000 messages.
const LONG_ITERATIONS: usize = 500;

fn script(iterations: usize) -> Vec<Step> {
    let mut steps: Vec<Step> = (0..iterations - 1)
        .map(|i| {
            Reply::tool(
                "read_file",
                json!({"path": "src.txt", "offset": 1 + i % 10, "limit": 20}),
            )
            .with_text_first("Reading on.")
            .into()
        })
        .collect();
    steps.push(Reply::text("Done reading.").into());
    steps
}

fn spawn_agent(dir: &Path, server: &ModelServer) -> Child {
    let wrap = std::env::var("WRAP").unwrap_or_default();
    let mut words = wrap.split_whitespace();
    let mut command = match words.next() {
        Some(program) => {
            let mut command = Command::new(program);
            command.args(words).arg(bareagent());
            command
        }
        None => Command::new(bareagent()),
    };
    command
        .args([
            "run",
            "--provider",
            "anthropic",
            "--base-url",
            &server.anthropic_base(),
        ])
        // Above the long session's calls, so the default cap does not end it.
        .args(["--max-iterations", "1000"])
        .args(["--permission-mode", "bypass", "read the file"])
        .env("ANTHROPIC_API_KEY", "bench-key")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn bareagent")
}

/// Runs the session; returns the wall time and the bodies it sent.
fn time_agent(dir: &Path) -> (Duration, Vec<serde_json::Value>) {
    let server = ModelServer::start(script(ITERATIONS));
    let started = Instant::now();
    let status = spawn_agent(dir, &server).wait().expect("wait");
    let elapsed = started.elapsed();
    assert!(status.success(), "the scripted session failed");
    let bodies: Vec<_> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), ITERATIONS);
    (elapsed, bodies)
}

/// Runs a session of `iterations` model calls, sampling the process's
/// high-water mark while it lives. (getrusage(RUSAGE_CHILDREN) would be
/// wrong here: it also counts this bench process's own memory, copied at
/// fork.)
fn peak_rss_kib(dir: &Path, iterations: usize) -> u64 {
    let server = ModelServer::start(script(iterations));
    let mut child = spawn_agent(dir, &server);
    let mut peak = 0;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success());
            assert_eq!(server.requests().len(), iterations, "the whole session ran");
            return peak;
        }
        peak = peak.max(proc_memory::vm_hwm_kib(child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// The same requests, one after another, by a bare reqwest client that reads
/// every streamed body to its end and does nothing else.
fn time_bare(runtime: &tokio::runtime::Runtime, bodies: &[serde_json::Value]) -> Duration {
    let server = ModelServer::start(script(ITERATIONS));
    let url = format!("{}/v1/messages", server.anthropic_base());
    runtime.block_on(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::new();
        let started = Instant::now();
        for body in bodies {
            let response = client
                .post(&url)
                .header("x-api-key", "bench-key")
                .header("anthropic-version", "2023-06-01")
                .json(body)
                .send()
                .await
                .expect("send");
            assert!(!response.bytes().await.expect("body").is_empty());
        }
        started.elapsed()
    })
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(7);
    let dir = tempfile::tempdir().expect("temp dir");
    let text: String = (1..=200)
        .map(|i| format!("line {i}: some source text here\n"))
        .collect();
    std::fs::write(dir.path().join("src.txt"), text).expect("write");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let (mut agent_times, mut bare_times) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (elapsed, bodies) = time_agent(dir.path());
        agent_times.push(elapsed);
        bare_times.push(time_bare(&runtime, &bodies));
    }
    let (agent, bare) = (median(agent_times), median(bare_times));
    let peak = peak_rss_kib(dir.path(), ITERATIONS);
    let long_peak = peak_rss_kib(dir.path(), LONG_ITERATIONS);
    println!(
        "loop_overhead: {ITERATIONS}-iteration scripted session (Anthropic SSE over 127.0.0.1), median of {rounds}"
    );
    println!(
        "  bareagent run (process start to exit): {:>8.1} ms",
        agent.as_secs_f64() * 1e3
    );
    println!(
        "  bare reqwest client, same 50 requests: {:>8.1} ms",
        bare.as_secs_f64() * 1e3
    );
    println!("  ratio: {:.2}x", agent.as_secs_f64() / bare.as_secs_f64());
    println!(
        "  peak RSS of bareagent run: {:.1} MiB",
        peak as f64 / 1024.0
    );
    println!(
        "  peak RSS of bareagent run, a 1,000-message session ({LONG_ITERATIONS} model calls): {:.1} MiB",
        long_peak as f64 / 1024.0
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let bench = "loop_overhead";
    figures::record(
        bench,
        "50-iteration session, `bareagent run` start to exit (median)",
        ms(agent),
        "ms",
    );
    figures::record(
        bench,
        "the same 50 requests by a bare HTTP client (median)",
        ms(bare),
        "ms",
    );
    figures::record(
        bench,
        "loop overhead: `bareagent run` against the bare client",
        agent.as_secs_f64() / bare.as_secs_f64(),
        "×",
    );
    figures::record(
        bench,
        "peak RSS of `bareagent run`, 50-iteration session",
        peak as f64 / 1024.0,
        "MiB",
    );
    figures::record(
        bench,
        "peak RSS of `bareagent run`, 1,000-message session",
        long_peak as f64 / 1024.0,
        "MiB",
    );
}
