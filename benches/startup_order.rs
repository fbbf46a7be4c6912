//! Writes `build/startup-order.txt`: the functions each front end runs at
//! start and in a scripted read → edit → answer turn, which `build.rs`
//! hands the linker so they sit side by side in the binary (see build.rs
//! and ARCHITECTURE.md for why).
//!
//! `cargo build --release && cargo bench --profile dev --bench startup_order`
//! (needs valgrind). The names must be those of the binary `cargo build
//! --release` makes (the hashes in them differ under `cargo bench`'s own
//! profile), so it profiles `target/release/bareagent`, or `BAREAGENT_BIN`.
//! It runs, under `valgrind --tool=callgrind`, that binary's `run` on both wires,
//! the language server (a start alone, and one with a turn) and `acp`
//! (initialize, a new session), against the scripted model server on
//! 127.0.0.1, and lists every function that ran, so that those `run` runs
//! lie in one stretch and those the idle language server runs in another
//! (the two memory budgets), overlapping where both run them. Rerun it after a change of rustc, of a
//! dependency or of what starting up does: names carry hashes from both,
//! and a name the binary no longer has is skipped (costing memory, never
//! correctness), which the memory budget check then shows.

// The client checks the events it received against their schema on drop.
#[path = "../tests/support/event_schema.rs"]
mod event_schema;
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

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use lsp_client::{ClientOptions, LspClient};
use model_server::{ModelServer, Reply, Step};
use serde_json::json;

const ORDER_FILE: &str = "build/startup-order.txt";

fn bareagent() -> PathBuf {
    // Relative to where the bench started: the scenarios run elsewhere.
    let bin = std::env::var_os("BAREAGENT_BIN").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/bareagent"),
        |path| std::path::absolute(&path).unwrap_or_else(|_| path.into()),
    );
    assert!(
        bin.is_file(),
        "no {}: run `cargo build --release` first",
        bin.display()
    );
    bin
}

/// The turn every front end runs: read a file, edit it, answer.
fn script() -> Vec<Step> {
    vec![
        Reply::tool("read_file", json!({"path": "src.txt"})).into(),
        Reply::tool(
            "edit_file",
            json!({"path": "src.txt", "old_string": "line 3: some", "new_string": "line 3: edited"}),
        )
        .into(),
        Reply::text("Edited line 3.").into(),
    ]
}

/// A project as the agents meet one (and as `benches/peers.rs` measures
/// them in): a git repository with the file committed.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let text: String = (1..=200)
        .map(|i| format!("line {i}: some source text here\n"))
        .collect();
    std::fs::write(dir.path().join("src.txt"), text).expect("write src.txt");
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "src.txt"],
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@127.0.0.1",
            "commit",
            "-q",
            "-m",
            "src",
        ],
    ] {
        let status = Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(Stdio::null())
            .status()
            .expect("run git");
        assert!(status.success(), "git {args:?}");
    }
    dir
}

/// valgrind's arguments, writing one profile per process into `out`.
fn callgrind(out: &Path) -> Vec<String> {
    vec![
        "--tool=callgrind".into(),
        "--demangle=no".into(),
        format!("--callgrind-out-file={}/%p.out", out.display()),
    ]
}

/// `run` on a wire: "anthropic", "openai" (Chat Completions, its default
/// toward a local server), "responses" (OpenAI's Responses API, as toward
/// api.openai.com) or "https" (Anthropic over HTTPS, the system's roots
/// loaded, as toward the real APIs), with a clean environment as a user's
/// shell has.
fn run_turn(out: &Path, wire: &str) {
    let dir = workspace();
    let home = tempfile::tempdir().expect("home");
    let server = ModelServer::start(script());
    let tls = (wire == "https").then(|| tls_front::TestTls::new(home.path()));
    let front = tls.as_ref().map(|tls| {
        let backend = server.anthropic_base();
        let backend = backend.trim_start_matches("http://").parse();
        tls_front::TlsFront::start(tls.config.clone(), backend.expect("the server's address"))
    });
    let (provider, base) = match (wire, &front) {
        (_, Some(front)) => ("anthropic", format!("https://{}", front.addr)),
        ("anthropic", _) => ("anthropic", server.anthropic_base()),
        _ => ("openai", server.openai_base()),
    };
    if wire == "responses" {
        let config = home.path().join(".config/bareagent");
        std::fs::create_dir_all(&config).expect("config dir");
        std::fs::write(config.join("config.toml"), "wire = \"responses\"\n").expect("config");
    }
    let status = Command::new("valgrind")
        .args(callgrind(out))
        .arg(bareagent())
        .args(["run", "--provider", provider, "--base-url", &base])
        .args(["--permission-mode", "bypass", "edit line 3"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .env("TERM", "dumb")
        .env("HOME", home.path())
        .env("ANTHROPIC_API_KEY", "bench-key")
        .env("OPENAI_API_KEY", "bench-key")
        .envs(tls.iter().flat_map(tls_front::TestTls::env))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run valgrind");
    assert!(status.success(), "run on the {wire} wire failed");
    edited(dir.path());
}

fn edited(dir: &Path) {
    let text = std::fs::read_to_string(dir.join("src.txt")).expect("read src.txt");
    assert!(text.contains("line 3: edited"), "the turn did not edit");
}

/// The language server under callgrind, in `dir`.
fn lsp_options(out: &Path, dir: &Path) -> ClientOptions {
    let mut options = ClientOptions::new(dir);
    options.args = callgrind(out);
    options.args.push(bareagent().display().to_string());
    options
}

/// The language server's start: `initialize`, `initialized`, the editor's
/// settings asked for and given (what it does before it idles), `shutdown`.
fn lsp_start(out: &Path) {
    let dir = workspace();
    let client = LspClient::start(Path::new("valgrind"), lsp_options(out, dir.path()));
    client.initialize();
    client.wait_until(Duration::from_secs(60), "workspace/configuration", |c| {
        c.server_requests()
            .iter()
            .any(|(method, _)| method == "workspace/configuration")
    });
    // Answered in order after the settings were taken in.
    client
        .execute("bareagent.status", json!([]))
        .expect("status");
    assert!(client.shutdown().success(), "the language server failed");
}

fn lsp_turn(out: &Path) {
    let dir = workspace();
    let server = ModelServer::start(script());
    let mut options = lsp_options(out, dir.path());
    options
        .env
        .push(("ANTHROPIC_API_KEY".into(), "bench-key".into()));
    options.initialization_options = json!({
        "provider": "anthropic", "baseUrl": server.anthropic_base(), "permissionMode": "bypass",
    });
    let client = LspClient::start(Path::new("valgrind"), options);
    client.initialize();
    let turn = client
        .execute("bareagent.ask", json!(["edit line 3"]))
        .expect("ask")["turn"]
        .clone();
    let end = client.wait_for_notification(Duration::from_secs(120), "the turn", |m, p| {
        m == "bareagent/event"
            && p["turn"] == turn
            && (p["type"] == "turn_finished" || p["type"] == "turn_failed")
    });
    assert_eq!(end["type"], "turn_finished", "{end}");
    // (The edit went to the client through `workspace/applyEdit`.)
    assert!(client.shutdown().success(), "the language server failed");
}

/// `acp`: `initialize` and `session/new`, one JSON line each.
fn acp_start(out: &Path) {
    let dir = workspace();
    let home = tempfile::tempdir().expect("home");
    let mut child = Command::new("valgrind")
        .args(callgrind(out))
        .arg(bareagent())
        .arg("acp")
        .env("HOME", home.path())
        .env("ANTHROPIC_API_KEY", "bench-key")
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run valgrind");
    let mut input = child.stdin.take().expect("stdin");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
               "params": {"cwd": dir.path(), "mcpServers": []}}),
    ];
    for request in requests {
        writeln!(input, "{request}").expect("write a request");
        let mut line = String::new();
        loop {
            line.clear();
            assert!(output.read_line(&mut line).expect("read") > 0, "acp ended");
            let answer: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
            if answer["id"] == request["id"] {
                assert!(answer.get("error").is_none(), "{answer}");
                break;
            }
        }
    }
    drop(input);
    assert!(child.wait().expect("wait").success(), "acp failed");
}

/// Function names in the order the profiles in `dir` first name them.
fn functions_run(dir: &Path) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read profiles")
        .map(|entry| entry.expect("entry").path())
        .collect();
    files.sort();
    let mut seen = std::collections::HashSet::new();
    let mut names = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read a profile");
        for line in text.lines() {
            // "fn=(12) _ZN…E" names a function the first time it appears;
            // "cfn=(13) …" a function called (so run) from it.
            let Some(rest) = line
                .strip_prefix("fn=")
                .or_else(|| line.strip_prefix("cfn="))
            else {
                continue;
            };
            let Some((_, name)) = rest.split_once(") ") else {
                continue;
            };
            let symbol = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.$".contains(c));
            if symbol && seen.insert(name.to_string()) {
                names.push(name.to_string());
            }
        }
    }
    names
}

fn main() {
    let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    type Scenario = (&'static str, fn(&Path));
    let scenarios: [Scenario; 7] = [
        ("lsp start", lsp_start),
        ("acp start", acp_start),
        ("run, Anthropic", |out| run_turn(out, "anthropic")),
        ("run, OpenAI Responses", |out| run_turn(out, "responses")),
        ("run, OpenAI Chat Completions", |out| {
            run_turn(out, "openai")
        }),
        ("run, Anthropic over HTTPS", |out| run_turn(out, "https")),
        ("lsp turn", lsp_turn),
    ];
    let mut runs = Vec::new();
    for (name, scenario) in scenarios {
        let out = tempfile::tempdir().expect("profiles dir");
        scenario(out.path());
        let functions = functions_run(out.path());
        println!("startup_order: {name}: {} functions", functions.len());
        runs.push(functions);
    }
    let [lsp, acp, anthropic, responses, chat, https, turn] = &runs[..] else {
        unreachable!("seven scenarios")
    };
    let run: Vec<&String> = anthropic.iter().chain(responses).chain(chat).collect();
    let in_lsp: std::collections::HashSet<&String> = lsp.iter().collect();
    // `run`'s and the idle language server's pages are the budgets: each
    // set is laid out in one stretch, `run`'s own, then what both run,
    // then the language server's own; then what `acp` and a language
    // server's turn add. Before them all, what HTTPS adds to `run` (the
    // root store, the handshake): next to `run`'s stretch, never inside it.
    let in_run: std::collections::HashSet<&String> = run.iter().copied().collect();
    let groups: [Vec<&String>; 6] = [
        https
            .iter()
            .filter(|f| !in_run.contains(f) && !in_lsp.contains(f))
            .collect(),
        run.iter()
            .copied()
            .filter(|f| !in_lsp.contains(f))
            .collect(),
        run.iter().copied().filter(|f| in_lsp.contains(f)).collect(),
        lsp.iter().collect(),
        acp.iter().collect(),
        turn.iter().collect(),
    ];
    let mut order: Vec<&String> = Vec::new();
    let mut placed = std::collections::HashSet::new();
    for function in groups.into_iter().flatten() {
        if placed.insert(function) {
            order.push(function);
        }
    }
    let mut text = format!(
        "# Written by `cargo bench --bench startup_order` with {rustc}: the functions\n\
         # bareagent's front ends run at start and in a turn, laid out first by the\n\
         # linker (see build.rs). {} names.\n",
        order.len()
    );
    for name in &order {
        text.push_str(name);
        text.push('\n');
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(ORDER_FILE);
    std::fs::write(&path, text).expect("write the order file");
    println!("startup_order: wrote {}", path.display());
}
