//! The language server's own costs, measured against the release binary:
//!
//! 1. cold start: spawn → `initialize` response;
//! 2. idle RSS 500 ms after `initialized` (`VmRSS`, `VmHWM`);
//! 3. `didChange` on a 5 MB document: in process (`Document::apply`) and end
//!    to end over stdio through the test LSP client;
//! 4. delta forwarding: an SSE text delta written by a model server on
//!    127.0.0.1 → the matching `bareagent/event` read by the client;
//! 5. lsp-ai (`LSP_AI`, default /tmp/lsp-ai/bin/lsp-ai) through the same
//!    start and RSS harness, when the binary exists;
//! 6. `bareagent acp` through the same harness: spawn → the ACP
//!    `initialize` answer (one JSON line), idle RSS 500 ms after it.
//!
//! `cargo bench --bench lsp`. Knobs: `RUNS` (starts per server, default 30),
//! `TURNS` (turns of 200 deltas, default 5), `SECTIONS` (a comma-separated
//! subset of `start,edits,deltas,busy,acp`), `BAREAGENT_BIN` (another
//! build, for `busy` and `acp`), `BENCH_JSON` (a file the headline figures
//! are appended to, see support/figures.rs).

#[path = "support/figures.rs"]
mod figures;
#[path = "support/measured.rs"]
mod measured;

// The client checks the events it received against their schema on drop.
#[path = "../tests/support/event_schema.rs"]
mod event_schema;
// Its unit tests are compiled out here; their imports would warn.
#[allow(unused_imports)]
#[path = "../tests/support/lsp_client.rs"]
mod lsp_client;
#[path = "../tests/support/model_server.rs"]
mod model_server;
#[path = "support/proc_memory.rs"]
mod proc_memory;

use measured::bareagent;
use std::io::{BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bareagent::lsp::{Change, Document, Encoding, Pos};
use lsp_client::{ClientOptions, LspClient};
use model_server::{ModelServer, Reply, Step};
use proc_memory::status_kib;
use serde_json::{Value, json};

const DEFAULT_LSP_AI: &str = "/tmp/lsp-ai/bin/lsp-ai";
const LSP_AI_OPTIONS: &str = r#"{"memory":{"file_store":{}},"models":{}}"#;

const IDLE_WAIT: Duration = Duration::from_millis(500);
const REPLY_TIMEOUT: Duration = Duration::from_secs(20);
/// Lines of the big document; about 5 MB of mixed ASCII and UTF-8.
const DOC_LINES: usize = 100_000;
const IN_PROCESS_EDITS: usize = 100_000;
const STDIO_EDITS: usize = 10_000;
const DELTAS_PER_TURN: usize = 200;

/// One table row: what, the figure, how it was taken.
type Row = (String, String, String);

fn main() {
    let runs = env_number("RUNS", 30);
    let turns = env_number("TURNS", 5);
    let sections = std::env::var("SECTIONS").unwrap_or_else(|_| "start,acp,edits,deltas".into());
    let wanted = |name: &str| sections.split(',').any(|s| s.trim() == name);
    let mut rows: Vec<Row> = Vec::new();

    if wanted("start") {
        lsp_start_and_rss("bareagent", &bareagent(), &Value::Null, runs, &mut rows);
        let lsp_ai = std::env::var("LSP_AI").unwrap_or_else(|_| DEFAULT_LSP_AI.into());
        if Path::new(&lsp_ai).is_file() {
            // Bare, then with the options its docs start from (file store,
            // no models): both, since each may behave differently.
            let options: Value = serde_json::from_str(LSP_AI_OPTIONS).expect("valid JSON");
            for options in [Value::Null, options] {
                lsp_start_and_rss("lsp-ai", Path::new(&lsp_ai), &options, runs, &mut rows);
            }
        } else {
            println!("lsp-ai: skipped, no binary at {lsp_ai} (set LSP_AI)");
            rows.push(("lsp-ai".into(), "skipped".into(), format!("no {lsp_ai}")));
        }
    }
    if wanted("acp") {
        let root = tempfile::tempdir().expect("tempdir");
        let how = "ACP initialize line".to_string();
        let start = || acp_start_once(&bareagent(), root.path());
        start_and_rss("bareagent acp", &start, how, runs, &mut rows);
    }
    if wanted("edits") {
        let text = big_document();
        let changes = random_changes(&text, IN_PROCESS_EDITS);
        edits_in_process(&text, &changes, &mut rows);
        edits_over_stdio(&text, &changes[..STDIO_EDITS], &mut rows);
    }
    if wanted("deltas") {
        delta_forwarding(turns, &mut rows);
    }
    if wanted("busy") {
        edits_during_a_turn(&mut rows);
    }

    println!("\n{:<48} {:<42} how", "figure", "value");
    println!("{}", "-".repeat(140));
    for (what, value, how) in &rows {
        println!("{what:<48} {value:<42} {how}");
    }
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------
// 1, 2, 5: cold start and idle RSS
// ---------------------------------------------------------------------------

/// The language server `binary` through [`start_and_rss`]: spawn →
/// `initialize` response, then `initialized`. `options` are sent as
/// `initializationOptions` (`Null` omits them).
fn lsp_start_and_rss(name: &str, binary: &Path, options: &Value, runs: usize, rows: &mut Vec<Row>) {
    let root = tempfile::tempdir().expect("tempdir");
    let sent = if options.is_null() {
        "no initializationOptions".to_string()
    } else {
        format!("initializationOptions {options}")
    };
    let start = || start_once(binary, root.path(), options);
    start_and_rss(name, &start, sent, runs, rows);
}

/// Starts a server `runs` times with `start` (after one unrecorded warm-up
/// start); each records spawn → `initialize` answer, waits 500 ms and
/// reads the process's memory.
fn start_and_rss(
    name: &str,
    start: &dyn Fn() -> Result<StartSample, String>,
    sent: String,
    runs: usize,
    rows: &mut Vec<Row>,
) {
    if let Err(why) = start() {
        println!("{name}: initialize with {sent} failed: {why}");
        rows.push((format!("{name}: start"), "failed".into(), sent));
        return;
    }
    let mut starts = Vec::new();
    let mut rss = Vec::new();
    let mut hwm = Vec::new();
    for _ in 0..runs {
        let sample = start().unwrap_or_else(|why| panic!("{name}: a start failed: {why}"));
        starts.push(sample.start.as_secs_f64() * 1e3);
        rss.push(sample.rss_kib as f64 / 1024.0);
        hwm.push(sample.hwm_kib as f64 / 1024.0);
    }
    let (starts, rss, hwm) = (Stats::of(starts), Stats::of(rss), Stats::of(hwm));
    println!(
        "{name}: start median {:.2} ms, min {:.2} ms, max {:.2} ms; idle VmRSS median {:.2} MiB (min {:.2}, max {:.2}), VmHWM median {:.2} MiB ({runs} runs, {sent})",
        starts.p50, starts.min, starts.max, rss.p50, rss.min, rss.max, hwm.p50
    );
    // Ours, for docs/benchmarks.md (lsp-ai's are a reference, not ours).
    let ours = match name {
        "bareagent" => Some(("language server", "`initialized`")),
        "bareagent acp" => Some(("`bareagent acp`", "the answer")),
        _ => None,
    };
    if let Some((what, after)) = ours {
        let start = format!("{what}: spawn → `initialize` answer");
        figures::record("lsp", &format!("{start} (median)"), starts.p50, "ms");
        figures::record("lsp", &format!("{start} (min)"), starts.min, "ms");
        let idle = format!("{what}: idle RSS 500 ms after {after} (median)");
        figures::record("lsp", &idle, rss.p50, "MiB");
    }
    let how = format!("{runs} runs + 1 warm-up, spawn → initialize response, {sent}");
    rows.push((
        format!("{name}: cold start to initialize response"),
        format!("median {:.2} ms, min {:.2} ms", starts.p50, starts.min),
        how,
    ));
    rows.push((
        format!("{name}: idle RSS (VmRSS / VmHWM)"),
        format!("median {:.2} MiB / {:.2} MiB", rss.p50, hwm.p50),
        format!("/proc/<pid>/status 500 ms after initialized, {sent}"),
    ));
}

struct StartSample {
    start: Duration,
    rss_kib: u64,
    hwm_kib: u64,
}

fn start_once(binary: &Path, root: &Path, options: &Value) -> Result<StartSample, String> {
    let started = Instant::now();
    let mut server = Rpc::spawn(binary, root, &[]);
    let id = server.request("initialize", initialize_params(root, options));
    let (arrived, response) = server.response(id)?;
    if let Some(error) = response.get("error") {
        return Err(format!("error response {error}"));
    }
    let start = arrived - started;
    server.notify("initialized", json!({}));
    std::thread::sleep(IDLE_WAIT);
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid()))
        .map_err(|e| format!("reading /proc status: {e}"))?;
    let sample = StartSample {
        start,
        rss_kib: status_kib(&status, "VmRSS:").ok_or("no VmRSS")?,
        hwm_kib: status_kib(&status, "VmHWM:").ok_or("no VmHWM")?,
    };
    server.shutdown();
    Ok(sample)
}

/// `bareagent acp`: the ACP `initialize` request as one line, its answer
/// read as one line; then 500 ms idle and the memory; then EOF ends it.
fn acp_start_once(binary: &Path, root: &Path) -> Result<StartSample, String> {
    use std::io::BufRead;
    let started = Instant::now();
    let mut child = Command::new(binary)
        .arg("acp")
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities":
            {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}});
    writeln!(stdin, "{request}").map_err(|e| format!("write: {e}"))?;
    let mut answer = String::new();
    BufReader::new(child.stdout.take().ok_or("no stdout")?)
        .read_line(&mut answer)
        .map_err(|e| format!("read: {e}"))?;
    let start = started.elapsed();
    if !answer.contains("\"result\"") {
        return Err(format!("answer: {answer}"));
    }
    std::thread::sleep(IDLE_WAIT);
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
        .map_err(|e| format!("reading /proc status: {e}"))?;
    let sample = StartSample {
        start,
        rss_kib: status_kib(&status, "VmRSS:").ok_or("no VmRSS")?,
        hwm_kib: status_kib(&status, "VmHWM:").ok_or("no VmHWM")?,
    };
    drop(stdin);
    let _ = child.wait();
    Ok(sample)
}

/// What an ordinary editor sends; the same for both servers.
fn initialize_params(root: &Path, options: &Value) -> Value {
    let root_uri = format!("file://{}", root.display());
    let mut params = json!({
        "processId": std::process::id(),
        "clientInfo": {"name": "lsp-bench", "version": "0"},
        "rootUri": root_uri,
        "workspaceFolders": [{"uri": root_uri, "name": "bench"}],
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "workspace": {
                "applyEdit": true,
                "workspaceEdit": {"documentChanges": true},
                "configuration": true,
                "workspaceFolders": true,
            },
            "textDocument": {"synchronization": {"didSave": true}},
            "window": {"workDoneProgress": true, "showDocument": {"support": true}},
        },
    });
    if !options.is_null() {
        params["initializationOptions"] = options.clone();
    }
    params
}

// ---------------------------------------------------------------------------
// A minimal stdio JSON-RPC client that timestamps each frame as it is read
// (framing from the test LSP client)
// ---------------------------------------------------------------------------

/// A server on stdio. A reader thread stamps every frame with the instant its
/// last byte was read, answers server→client requests with `null` (and
/// `workspace/configuration` with one `null` per item), and hands the frames
/// over in order.
struct Rpc {
    child: Child,
    stdin: Arc<Mutex<ChildStdin>>,
    frames: Receiver<(Instant, Value)>,
    /// Notifications read while waiting for something else.
    notifications: Vec<(Instant, Value)>,
    next_id: i64,
}

impl Rpc {
    fn spawn(binary: &Path, root: &Path, env: &[(&str, String)]) -> Rpc {
        let mut command = Command::new(binary);
        command
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let stdin = Arc::new(Mutex::new(child.stdin.take().expect("piped")));
        let stdout = child.stdout.take().expect("piped");
        let (sender, frames) = mpsc::channel();
        let answers = stdin.clone();
        std::thread::spawn(move || read_frames(stdout, answers, sender));
        Rpc {
            child,
            stdin,
            frames,
            notifications: Vec::new(),
            next_id: 1,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        write_message(
            &self.stdin,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        id
    }

    fn notify(&self, method: &str, params: Value) {
        write_message(
            &self.stdin,
            &json!({"jsonrpc": "2.0", "method": method, "params": params}),
        );
    }

    /// The response to request `id` and when it arrived.
    fn response(&mut self, id: i64) -> Result<(Instant, Value), String> {
        let deadline = Instant::now() + REPLY_TIMEOUT;
        loop {
            let timeout = deadline.saturating_duration_since(Instant::now());
            let (at, message) = match self.frames.recv_timeout(timeout) {
                Ok(frame) => frame,
                Err(RecvTimeoutError::Timeout) => return Err(format!("no response to {id}")),
                Err(RecvTimeoutError::Disconnected) => return Err("the server exited".into()),
            };
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return Ok((at, message));
            }
            if message.get("id").is_none() {
                self.notifications.push((at, message));
            }
        }
    }

    /// Collects notifications until one satisfies `done`.
    fn notifications_until(&mut self, done: impl Fn(&Value) -> bool) -> Result<(), String> {
        let deadline = Instant::now() + REPLY_TIMEOUT;
        loop {
            let timeout = deadline.saturating_duration_since(Instant::now());
            let (at, message) = self
                .frames
                .recv_timeout(timeout)
                .map_err(|e| format!("waiting for a notification: {e}"))?;
            if message.get("id").is_none() {
                let finished = done(&message);
                self.notifications.push((at, message));
                if finished {
                    return Ok(());
                }
            }
        }
    }

    /// `shutdown`, `exit`, then up to 2 s for the process to go (else kill).
    fn shutdown(mut self) {
        let id = self.request("shutdown", Value::Null);
        if self.response(id).is_ok() {
            self.notify("exit", Value::Null);
            let deadline = Instant::now() + Duration::from_secs(2);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

impl Drop for Rpc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

fn write_message(stdin: &Mutex<ChildStdin>, message: &Value) {
    let frame = lsp_client::frame(message);
    let mut stdin = stdin.lock().unwrap_or_else(|p| p.into_inner());
    // A dead server shows up as a missing response, with context.
    let _ = stdin.write_all(&frame).and_then(|()| stdin.flush());
}

fn read_frames(
    stdout: ChildStdout,
    stdin: Arc<Mutex<ChildStdin>>,
    frames: Sender<(Instant, Value)>,
) {
    let mut reader = BufReader::new(stdout);
    // Anomalies are the test client's business; here a frame is a frame.
    while let Some(body) = lsp_client::read_frame(&mut reader, &mut |_| {}) {
        let at = Instant::now();
        let Ok(message) = serde_json::from_slice::<Value>(&body) else {
            continue;
        };
        if let (Some(id), Some(method)) = (message.get("id"), message.get("method")) {
            let result = match method.as_str() {
                Some("workspace/configuration") => {
                    let items = message.pointer("/params/items").and_then(Value::as_array);
                    json!(vec![Value::Null; items.map_or(0, Vec::len)])
                }
                _ => Value::Null,
            };
            write_message(
                &stdin,
                &json!({"jsonrpc": "2.0", "id": id, "result": result}),
            );
        }
        if frames.send((at, message)).is_err() {
            return;
        }
    }
}

// ---------------------------------------------------------------------------
// 3: didChange on a 5 MB document
// ---------------------------------------------------------------------------

/// About 5 MB: code-like lines, a third with non-ASCII text (accents, CJK,
/// emoji — the last two units in UTF-16).
fn big_document() -> String {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut text = String::with_capacity(5_100_000);
    for i in 0..DOC_LINES {
        let line = match rng.u8(0..6) {
            0 => format!("    let value_{i} = compute({i}, \"naïve café\");\n"),
            1 => format!("    // 日本語のコメント {i} — ünïcödé\n"),
            2 => format!("    println!(\"emoji 😀 {i} 🚀\"); x += {i};\n"),
            3 => format!("fn f_{i}(a: u32, b: u32) -> u32 {{ a + b }}\n"),
            4 => format!("    if counter_{i} > limit {{ return Err(e); }}\n"),
            _ => format!("    struct Item{i} {{ name: String, size: u8 }}\n"),
        };
        text.push_str(&line);
    }
    text
}

/// Small random edits on one line each (no line breaks, so line numbers stay
/// valid): 40% inserts of 1–3 chars, 40% deletes of 1–3 UTF-16 units, 20%
/// replacements; positions anywhere in the line as first written.
fn random_changes(text: &str, count: usize) -> Vec<Change<'static>> {
    let units: Vec<u32> = text
        .lines()
        .map(|line| line.encode_utf16().count() as u32)
        .collect();
    let inserts = ["x", "ab", "é", "日", "😀", "; ", "foo", "()"];
    let mut rng = fastrand::Rng::with_seed(11);
    (0..count)
        .map(|_| {
            let line = rng.usize(0..units.len());
            let character = rng.u32(0..=units[line]);
            let start = Pos {
                line: line as u32,
                character,
            };
            let delete = Pos {
                line: line as u32,
                character: character + rng.u32(1..=3),
            };
            let insert = inserts[rng.usize(0..inserts.len())];
            let (end, text) = match rng.u8(0..5) {
                0 | 1 => (start, insert),
                2 | 3 => (delete, ""),
                _ => (delete, insert),
            };
            Change {
                range: Some((start, end)),
                text,
            }
        })
        .collect()
}

fn edits_in_process(text: &str, changes: &[Change<'_>], rows: &mut Vec<Row>) {
    let uri = "file:///bench/big.rs".to_string();
    let mb = text.len() as f64 / 1e6;
    let built = Instant::now();
    let built_doc = Document::new(uri.clone(), text, 1);
    let build_ms = built.elapsed().as_secs_f64() * 1e3;
    drop(built_doc);
    println!(
        "document: {mb:.2} MB, {} lines; Document::new {build_ms:.1} ms",
        text.lines().count()
    );

    for encoding in [Encoding::Utf16, Encoding::Utf8] {
        // Mean: the whole run timed at once. Fresh documents, not clones: a
        // clone shares the rope's nodes, and every edit would copy them.
        let mut doc = Document::new(uri.clone(), text, 1);
        let started = Instant::now();
        for change in changes {
            doc.apply(change, encoding);
        }
        let mean_ns = started.elapsed().as_nanos() as f64 / changes.len() as f64;
        std::hint::black_box(&doc);

        // Distribution: every edit timed alone (the clock's cost included).
        let mut doc = Document::new(uri.clone(), text, 1);
        let mut each = Vec::with_capacity(changes.len());
        for change in changes {
            let started = Instant::now();
            doc.apply(change, encoding);
            each.push(started.elapsed().as_nanos() as f64);
        }
        let each = Stats::of(each);
        let verified = if encoding == Encoding::Utf16 {
            if doc.text() == reference_apply(text, changes) {
                ", result checked against a line-wise reference"
            } else {
                ", RESULT DIFFERS from the line-wise reference"
            }
        } else {
            ""
        };
        println!(
            "in process {encoding:?}: {} edits, mean {mean_ns:.0} ns; alone p50 {:.0} ns, p99 {:.0} ns, max {:.0} ns{verified}",
            changes.len(),
            each.p50,
            each.p99,
            each.max
        );
        let name = match encoding {
            Encoding::Utf16 => "UTF-16",
            Encoding::Utf8 => "UTF-8",
        };
        let per_edit = format!("`didChange` per edit, 5 MB file, in process ({name}");
        figures::record("lsp", &format!("{per_edit}, mean)"), mean_ns / 1e3, "µs");
        figures::record("lsp", &format!("{per_edit}, p99)"), each.p99 / 1e3, "µs");
        rows.push((
            format!("didChange in process, 5 MB, {encoding:?}"),
            format!(
                "mean {mean_ns:.0} ns, p50 {:.0} ns, p99 {:.0} ns",
                each.p50, each.p99
            ),
            format!(
                "Document::apply, {} random small edits{verified}",
                changes.len()
            ),
        ));
    }
    let clock = clock_cost_ns();
    println!("(Instant::now() pair ≈ {clock:.0} ns, included in the per-edit figures)");
    rows.push((
        "Document::new, 5 MB".into(),
        format!("{build_ms:.1} ms"),
        format!("{mb:.2} MB, {DOC_LINES} lines"),
    ));
}

/// The same edits on a `Vec` of lines with the LSP rules written out
/// (UTF-16 units; past the line end clamps to it; inside a surrogate pair
/// snaps to the pair's start).
fn reference_apply(text: &str, changes: &[Change<'_>]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let offset = |line: &str, units: u32| {
        let mut seen = 0;
        for (at, ch) in line.char_indices() {
            seen += ch.len_utf16() as u32;
            if seen > units {
                return at;
            }
        }
        line.len()
    };
    for change in changes {
        let (start, end) = change.range.expect("ranged");
        let line = &mut lines[start.line as usize];
        let from = offset(line, start.character);
        let to = offset(line, end.character).max(from);
        line.replace_range(from..to, change.text);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

fn clock_cost_ns() -> f64 {
    let rounds = 100_000;
    let started = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(Instant::now().elapsed());
    }
    started.elapsed().as_nanos() as f64 / rounds as f64
}

/// The real server over stdio through the test LSP client: open the 5 MB
/// document, then 10,000 incremental `didChange`s, then `bareagent.status`,
/// whose answer comes after every notification before it was handled.
fn edits_over_stdio(text: &str, changes: &[Change<'_>], rows: &mut Vec<Row>) {
    let root = tempfile::tempdir().expect("tempdir");
    let mut options = ClientOptions::new(root.path());
    options.position_encodings = vec!["utf-16".into()];
    let client = LspClient::start(&bareagent(), options);
    client.initialize();
    let status = || {
        client
            .request(
                "workspace/executeCommand",
                json!({"command": "bareagent.status"}),
            )
            .expect("status answers")
    };
    status();

    let started = Instant::now();
    let uri = client.open("big.rs", text);
    status();
    let open_ms = started.elapsed().as_secs_f64() * 1e3;

    let did_change = |version: usize, change: &Change<'_>| {
        let (start, end) = change.range.expect("ranged");
        json!({
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{
                "range": {
                    "start": {"line": start.line, "character": start.character},
                    "end": {"line": end.line, "character": end.character},
                },
                "text": change.text,
            }],
        })
    };

    // As an editor sends them: one notification, one write, per keystroke.
    let started = Instant::now();
    for (i, change) in changes.iter().enumerate() {
        client.notify("textDocument/didChange", did_change(2 + i, change));
    }
    status();
    let each_us = started.elapsed().as_secs_f64() * 1e6 / changes.len() as f64;

    // The same count framed beforehand and written at once: the server's
    // share alone (pipe, frame check, JSON, dispatch, rope).
    let mut frames = Vec::new();
    for (i, change) in changes.iter().enumerate() {
        let body = json!({
            "jsonrpc": "2.0",
            "method": "textDocument/didChange",
            "params": did_change(2 + changes.len() + i, change),
        })
        .to_string();
        frames
            .extend_from_slice(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }
    let started = Instant::now();
    client.send_raw(&frames);
    status();
    let batch_us = started.elapsed().as_secs_f64() * 1e6 / changes.len() as f64;

    let rss = std::fs::read_to_string(format!("/proc/{}/status", client.pid()))
        .ok()
        .and_then(|s| status_kib(&s, "VmRSS:"))
        .map_or(0.0, |kib| kib as f64 / 1024.0);
    client.shutdown();

    println!(
        "over stdio: didOpen 5 MB + status {open_ms:.1} ms; {} didChange one write each {each_us:.2} µs/edit, pre-framed in one write {batch_us:.2} µs/edit; server VmRSS after {rss:.1} MiB",
        changes.len()
    );
    figures::record(
        "lsp",
        "`didChange` per edit, 5 MB file, over stdio (one write each)",
        each_us,
        "µs",
    );
    rows.push((
        "didChange over stdio, 5 MB (one write each)".into(),
        format!("{each_us:.2} µs/edit"),
        format!(
            "{} notifications via LspClient::notify, then bareagent.status; round / count",
            changes.len()
        ),
    ));
    rows.push((
        "didChange over stdio, 5 MB (pre-framed)".into(),
        format!("{batch_us:.2} µs/edit"),
        format!(
            "{} frames written at once (send_raw), then bareagent.status",
            changes.len()
        ),
    ));
    rows.push((
        "didOpen 5 MB over stdio".into(),
        format!("{open_ms:.1} ms"),
        "LspClient::open then bareagent.status answered".into(),
    ));
    rows.push((
        "server VmRSS with the 5 MB document".into(),
        format!("{rss:.1} MiB"),
        format!("after the {} edits", 2 * changes.len()),
    ));
}

// ---------------------------------------------------------------------------
// 4: delta forwarding
// ---------------------------------------------------------------------------

fn delta_forwarding(turns: usize, rows: &mut Vec<Row>) {
    // Each turn: 200 text deltas ("d<N> ", N counting across turns) 5–10 ms apart.
    let script: Vec<Step> = (0..turns)
        .map(|turn| {
            let deltas = (0..DELTAS_PER_TURN)
                .map(|i| format!("d{} ", turn * DELTAS_PER_TURN + i))
                .collect();
            let gap = Duration::from_millis(5)..=Duration::from_millis(10);
            Reply::paced_text(deltas, gap).into()
        })
        .collect();
    let model = ModelServer::start(script);
    let root = tempfile::tempdir().expect("tempdir");
    let mut server = Rpc::spawn(
        &bareagent(),
        root.path(),
        &[("ANTHROPIC_API_KEY", "x".to_string())],
    );
    let options = json!({
        "provider": "anthropic",
        "baseUrl": model.anthropic_base(),
        "permissionMode": "bypass",
    });
    let id = server.request("initialize", initialize_params(root.path(), &options));
    server.response(id).expect("initialize");
    server.notify("initialized", json!({}));

    for turn in 0..turns {
        let id = server.request(
            "workspace/executeCommand",
            json!({"command": "bareagent.ask", "arguments": [{"prompt": "hi"}]}),
        );
        let (_, started) = server.response(id).expect("ask answers");
        assert!(started.get("error").is_none(), "ask failed: {started}");
        server
            .notifications_until(|message| {
                let kind = message.pointer("/params/type").and_then(Value::as_str);
                matches!(kind, Some("turn_finished" | "turn_failed"))
            })
            .unwrap_or_else(|why| panic!("turn {turn}: {why}"));
    }
    let received = server_events(&server, "text_delta");
    let failed = server_events(&server, "turn_failed");
    server.shutdown();
    let sent = model.deltas_written();
    // Deltas arrive in order; one event may carry several if merged.
    let mut delays = Vec::new();
    let mut next = 0;
    for (text, written) in &sent {
        while next < received.len() && !received[next].1.contains(text.as_str()) {
            next += 1;
        }
        let Some((arrived, _)) = received.get(next) else {
            break;
        };
        delays.push(arrived.saturating_duration_since(*written).as_secs_f64() * 1e3);
    }
    let matched = delays.len();
    let stats = Stats::of(delays);
    println!(
        "deltas: {} written, {} events received, {matched} matched, {} turns failed; delay p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        sent.len(),
        received.len(),
        failed.len(),
        stats.p50,
        stats.p99,
        stats.max
    );
    let delta = "text delta: model server writes it → client reads the `bareagent/event`";
    figures::record("lsp", &format!("{delta} (p50)"), stats.p50, "ms");
    figures::record("lsp", &format!("{delta} (p99)"), stats.p99, "ms");
    rows.push((
        "delta forwarding (SSE write → bareagent/event)".into(),
        format!(
            "p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            stats.p50, stats.p99, stats.max
        ),
        format!(
            "{matched}/{} deltas over {turns} turns, 5–10 ms apart; frames stamped as read",
            sent.len()
        ),
    ));
}

/// `bareagent/event`s of one type, with their arrival and text.
fn server_events(server: &Rpc, kind: &str) -> Vec<(Instant, String)> {
    server
        .notifications
        .iter()
        .filter(|(_, m)| m.get("method").and_then(Value::as_str) == Some("bareagent/event"))
        .filter(|(_, m)| m.pointer("/params/type").and_then(Value::as_str) == Some(kind))
        .map(|(at, m)| {
            let text = m.pointer("/params/text").and_then(Value::as_str);
            (*at, text.unwrap_or_default().to_string())
        })
        .collect()
}

/// `didChange` while a turn streams into the chat file on disk: a one-char
/// change followed by a `codeAction` request on the same document, every
/// 10 ms while 400 deltas arrive 5 ms apart; the figure is the time from
/// sending the change to the request's answer (the server handles them in
/// order). `BAREAGENT_BIN` runs another build (a before figure).
fn edits_during_a_turn(rows: &mut Vec<Row>) {
    let binary = bareagent();
    let deltas = (0..400).map(|i| format!("d{i} ")).collect();
    let gap = Duration::from_millis(5)..=Duration::from_millis(5);
    let model = ModelServer::start(vec![Reply::paced_text(deltas, gap).into()]);
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(root.path().join(".bareagent")).expect("a chat folder");
    std::fs::write(
        root.path().join(".bareagent/chat.md"),
        "# chat\n\n## You\n\nhi\n",
    )
    .expect("a chat file");
    let mut server = Rpc::spawn(
        Path::new(&binary),
        root.path(),
        &[("ANTHROPIC_API_KEY", "x".to_string())],
    );
    let options = json!({"provider": "anthropic", "baseUrl": model.anthropic_base(), "permissionMode": "bypass"});
    let id = server.request("initialize", initialize_params(root.path(), &options));
    server.response(id).expect("initialize");
    server.notify("initialized", json!({}));
    let uri = format!("file://{}/doc.txt", root.path().display());
    let text = "line\n".repeat(2000);
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "text", "version": 1, "text": text}}),
    );
    let id = server.request(
        "workspace/executeCommand",
        json!({"command": "bareagent.ask", "arguments": [{"prompt": "hi"}]}),
    );
    server.response(id).expect("ask answers");
    let mut latencies = Vec::new();
    let mut version = 1;
    let finished = |server: &Rpc| {
        server.notifications.iter().any(|(_, m)| {
            matches!(
                m.pointer("/params/type").and_then(Value::as_str),
                Some("turn_finished" | "turn_failed")
            )
        })
    };
    while !finished(&server) && latencies.len() < 1000 {
        version += 1;
        let sent = Instant::now();
        server.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version},
                   "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "x"}]}),
        );
        let id = server.request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "context": {"diagnostics": []}}),
        );
        let (at, _) = server.response(id).expect("codeAction answers");
        latencies.push(at.saturating_duration_since(sent).as_secs_f64() * 1e3);
        std::thread::sleep(Duration::from_millis(10));
    }
    server.shutdown();
    let count = latencies.len();
    let stats = Stats::of(latencies);
    println!(
        "busy: {count} changes during the turn; didChange → answered p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({})",
        stats.p50,
        stats.p99,
        stats.max,
        binary.display()
    );
    rows.push((
        "didChange + request during a streaming turn".into(),
        format!(
            "p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            stats.p50, stats.p99, stats.max
        ),
        format!("{count} samples, 10 ms apart, chat appended on disk"),
    ));
}

// ---------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------

struct Stats {
    min: f64,
    p50: f64,
    p99: f64,
    max: f64,
}

impl Stats {
    /// Nearest-rank percentiles.
    fn of(mut values: Vec<f64>) -> Stats {
        if values.is_empty() {
            return Stats {
                min: f64::NAN,
                p50: f64::NAN,
                p99: f64::NAN,
                max: f64::NAN,
            };
        }
        values.sort_by(f64::total_cmp);
        let rank =
            |p: f64| values[((p * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
        Stats {
            min: values[0],
            p50: rank(0.50),
            p99: rank(0.99),
            max: values[values.len() - 1],
        }
    }
}
