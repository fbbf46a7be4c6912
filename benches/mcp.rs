//! What MCP servers cost a session: the added start-up time of `bareagent
//! run` with two stdio servers (the everything server and mcp-server-git),
//! measured to the first model request — which goes out beside their
//! start, without waiting for them — against the same run without servers;
//! that their tools are in the request after it (the scripted model first
//! asks for a `glob`); the size of that request with the everything
//! server's tools sent in full and behind the `mcp_search` budget; and the
//! look at the workspace taken before and after each call of a tool not
//! marked read-only (`workspace::Look`), on trees of 1,000 to 100,000
//! files (this part needs no server). Without servers too: the same start
//! to the first request on each of OpenAI's wires (Chat Completions, the
//! Responses API) with an effort set, and that request's size and settings.
//!
//! `cargo bench --bench mcp`, with `BAREAGENT_MCP_EVERYTHING` and
//! `BAREAGENT_MCP_GIT` set as `.ci/run` sets them. Knobs: `RUNS` (default
//! 10), `BAREAGENT_BIN` (another build), `BAREAGENT_BIN_BEFORE` (a build
//! measured next to it on the chat wire), `SECTIONS` (any of
//! `look,wires,mcp`; default all), `BENCH_JSON` (a file the MCP figures
//! are appended to, see support/figures.rs).

#[path = "support/figures.rs"]
mod figures;
#[path = "support/measured.rs"]
mod measured;
#[path = "../tests/support/model_server.rs"]
mod model_server;

use measured::bareagent;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use model_server::{ModelServer, Reply};

fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// One `bareagent run` in `dir` with `config` as the user's config, on a
/// turn of two requests (a `glob`, then the answer): the time to its first
/// model request, and the second request.
fn one_run(dir: &Path, config: &str) -> (Duration, model_server::RecordedRequest) {
    let replies = vec![
        Reply::tool("glob", serde_json::json!({"pattern": "*"})).into(),
        Reply::text("ok").into(),
    ];
    let (elapsed, mut requests) = requests(&bareagent(), dir, config, Api::Anthropic, replies);
    assert_eq!(requests.len(), 2, "the turn's two requests");
    (elapsed, requests.remove(1))
}

/// The names of the tools a request sends.
fn tool_names(request: &model_server::RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str().map(String::from))
        .collect()
}

/// Which API a run speaks (OpenAI's wire is chosen by its config).
#[derive(Clone, Copy)]
enum Api {
    Anthropic,
    /// `gpt-5`, a reasoning model, so the request carries its reasoning settings.
    OpenAi,
}

/// One run of `binary` answered "ok": the time from its start to its
/// first model request, and that request.
fn first_request(
    binary: &Path,
    dir: &Path,
    config: &str,
    api: Api,
) -> (Duration, model_server::RecordedRequest) {
    let (elapsed, mut requests) =
        requests(binary, dir, config, api, vec![Reply::text("ok").into()]);
    (elapsed, requests.remove(0))
}

/// One run of `binary` answered by `replies`: the time from its start to
/// its first model request, and every request it made.
fn requests(
    binary: &Path,
    dir: &Path,
    config: &str,
    api: Api,
    replies: Vec<model_server::Step>,
) -> (Duration, Vec<model_server::RecordedRequest>) {
    let home = dir.join("home");
    std::fs::create_dir_all(home.join("bareagent")).expect("config dir");
    std::fs::write(home.join("bareagent/config.toml"), config).expect("config");
    let server = ModelServer::start(replies);
    let mut command = Command::new(binary);
    match api {
        Api::Anthropic => command
            .env("ANTHROPIC_API_KEY", "sk-bench")
            .args(["run", "--provider", "anthropic", "--base-url"])
            .arg(server.anthropic_base()),
        Api::OpenAi => command
            .env("OPENAI_API_KEY", "sk-bench")
            .args([
                "run",
                "--provider",
                "openai",
                "--model",
                "gpt-5",
                "--base-url",
            ])
            .arg(server.openai_base()),
    };
    let start = Instant::now();
    let mut child = command
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", &home)
        .arg("hello")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bareagent");
    let first = loop {
        if let Some(request) = server.requests().into_iter().next() {
            break request;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("no model request within 60 s");
        }
        std::thread::sleep(Duration::from_micros(500));
    };
    let elapsed = first.received.duration_since(start);
    let _ = child.wait();
    (elapsed, server.requests())
}

/// A request's settings: the body without the prompt, the history and the
/// tools (the same on every wire but for their shape).
fn settings_of(body: &serde_json::Value) -> serde_json::Value {
    let mut settings = body.clone();
    if let Some(fields) = settings.as_object_mut() {
        for bulk in ["instructions", "system", "tools", "messages", "input"] {
            fields.remove(bulk);
        }
    }
    settings
}

/// Launch to first request on each wire, with `effort = "high"`: Anthropic's
/// Messages API (`claude-opus-4-8`), OpenAI's Chat Completions and Responses
/// API; `BAREAGENT_BIN_BEFORE` (a build before thinking and effort, asked
/// without them) on Anthropic's and the chat wire, this build on all three;
/// runs interleaved.
fn wires(runs: usize) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let this = bareagent();
    const OPUS: &str = "model = \"claude-opus-4-8\"\neffort = \"high\"\n";
    let mut cases: Vec<(String, std::path::PathBuf, &str, Api)> = vec![
        ("Anthropic".into(), this.clone(), OPUS, Api::Anthropic),
        (
            "OpenAI chat".into(),
            this.clone(),
            "wire = \"chat\"\neffort = \"high\"\n",
            Api::OpenAi,
        ),
        (
            "OpenAI responses".into(),
            this,
            "wire = \"responses\"\neffort = \"high\"\n",
            Api::OpenAi,
        ),
    ];
    if let Some(before) = std::env::var_os("BAREAGENT_BIN_BEFORE") {
        let before: std::path::PathBuf = before.into();
        cases.insert(
            0,
            (
                "Anthropic, before".into(),
                before.clone(),
                // The build before knows no `effort` setting: what it sent
                // without one.
                "model = \"claude-opus-4-8\"\n",
                Api::Anthropic,
            ),
        );
        cases.insert(2, ("OpenAI chat, before".into(), before, "", Api::OpenAi));
    }
    for (_, binary, config, api) in &cases {
        first_request(binary, dir.path(), config, *api);
    }
    let mut times = vec![Vec::new(); cases.len()];
    for _ in 0..runs {
        for (case, (_, binary, config, api)) in cases.iter().enumerate() {
            times[case].push(first_request(binary, dir.path(), config, *api).0);
        }
    }
    for ((name, binary, config, api), times) in cases.iter().zip(times) {
        let (_, first) = first_request(binary, dir.path(), config, *api);
        println!(
            "{name}: start to first model request, median of {runs}: {:.1} ms; {} {} bytes; settings {}",
            median(times).as_secs_f64() * 1e3,
            first.path,
            first.raw_body.len(),
            settings_of(&first.body)
        );
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// A tree of `files` small files, 100 to a directory.
fn tree(root: &Path, files: usize) {
    for n in 0..files {
        let dir = root.join(format!("d{}", n / 100));
        if n % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("dir");
        }
        std::fs::write(dir.join(format!("f{n}.rs")), "fn main() {}\n").expect("file");
    }
}

/// What the look around a call costs: a walk and a `stat` per file, twice.
fn look_cost(runs: usize) {
    for files in [1_000, 10_000, 100_000] {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
        tree(dir.path(), files);
        let _ = bareagent::workspace::Look::take(dir.path());
        let times: Vec<Duration> = (0..runs)
            .map(|_| {
                let start = Instant::now();
                let look = bareagent::workspace::Look::take(dir.path());
                let elapsed = start.elapsed();
                assert!(look.changes_to(&look).is_empty());
                elapsed
            })
            .collect();
        println!(
            "a look at {files} files (warm page cache), median of {runs}: {:.1} ms; a call looks twice",
            median(times).as_secs_f64() * 1e3
        );
    }
}

fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10);
    let sections = std::env::var("SECTIONS").unwrap_or_else(|_| "look,wires,mcp".into());
    let wanted = |name: &str| sections.split(',').any(|s| s.trim() == name);
    if wanted("look") {
        look_cost(runs);
    }
    if wanted("wires") {
        wires(runs);
    }
    if !wanted("mcp") {
        return;
    }
    let (Ok(everything), Ok(git)) = (
        std::env::var("BAREAGENT_MCP_EVERYTHING"),
        std::env::var("BAREAGENT_MCP_GIT"),
    ) else {
        eprintln!(
            "skipped: set BAREAGENT_MCP_EVERYTHING and BAREAGENT_MCP_GIT (.ci/run installs them)"
        );
        figures::not_run(
            "mcp",
            "MCP start-up",
            "needs the MCP test servers: BAREAGENT_MCP_EVERYTHING and BAREAGENT_MCP_GIT, as .ci/run sets them",
        );
        return;
    };
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("repo dir");
    let _ = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status();
    let everything_server = format!(
        "[mcp.servers.everything]\ncommand = {}\nargs = [\"stdio\"]\n",
        quoted(&everything)
    );
    let two_servers = format!(
        "{everything_server}[mcp.servers.git]\ncommand = {}\nargs = [\"--repository\", {}]\n",
        quoted(&git),
        quoted(&repo.display().to_string())
    );
    // A warm-up of each (page cache, Python's bytecode, node's compile cache).
    one_run(dir.path(), "");
    one_run(dir.path(), &two_servers);
    let mut without = Vec::new();
    let mut with = Vec::new();
    for _ in 0..runs {
        without.push(one_run(dir.path(), "").0);
        let (elapsed, second) = one_run(dir.path(), &two_servers);
        // Both servers' tools by the request after the first.
        let names = tool_names(&second);
        assert!(
            names.iter().any(|n| n.starts_with("mcp__everything__"))
                && names.iter().any(|n| n.starts_with("mcp__git__")),
            "the second request lacks the servers' tools: {names:?}"
        );
        with.push(elapsed);
    }
    let (without, with) = (median(without), median(with));
    println!(
        "start to first model request, median of {runs}: no MCP servers {:.1} ms, two stdio servers (everything + git) {:.1} ms ({:.2}x); their tools in the second request in every run",
        without.as_secs_f64() * 1e3,
        with.as_secs_f64() * 1e3,
        with.as_secs_f64() / without.as_secs_f64()
    );
    let size = |config: &str| one_run(dir.path(), config).1.raw_body.len();
    let bare = size("");
    let full = size(&everything_server);
    let searched = size(&format!("[mcp]\nmax_tools = 0\n{everything_server}"));
    println!(
        "second request: {bare} bytes without MCP; with the everything server's 13 tools {full} bytes (+{}), behind mcp_search/mcp_call {searched} bytes (+{})",
        full - bare,
        searched - bare
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let figure = |name: &str, value, unit| figures::record("mcp", name, value, unit);
    figure(
        "`bareagent run` start → first model request, no MCP servers (median)",
        ms(without),
        "ms",
    );
    figure(
        "the same with two stdio MCP servers, everything + git (median)",
        ms(with),
        "ms",
    );
    figure(
        "MCP start-up: added by the two servers",
        ms(with.saturating_sub(without)),
        "ms",
    );
    figure(
        "first request with two servers against none (their tools join at the next)",
        with.as_secs_f64() / without.as_secs_f64(),
        "x",
    );
    figure("second request, no MCP servers", bare as f64, "bytes");
    figure(
        "second request with the everything server's tools",
        full as f64,
        "bytes",
    );
    figure(
        "the same behind `mcp_search`/`mcp_call` (`max_tools = 0`)",
        searched as f64,
        "bytes",
    );
}
