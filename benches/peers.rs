//! Side by side: `bareagent run` (on the Anthropic Messages wire, and on
//! OpenAI's Responses wire) against Claude Code (`claude -p`) and Codex
//! (`codex exec`, its native binary and its npm launcher), each through the
//! same scripted turn against the same scripted model server on 127.0.0.1:
//! read a file, edit it, answer, in a fresh git repository. Each agent
//! calls its own tools (ours `read_file`/`edit_file`, Claude Code's
//! `Read`/`Edit`, Codex's `exec_command`/`apply_patch`); a run counts only
//! if the agent exited 0 and the file holds the edit.
//! `benches/peers/agents.rs` says how each is launched, and which of its
//! settings keep it off other hosts.
//!
//! `scripts/bench-peers` installs the peers (`--install`, pinned, from npm,
//! into `target/bench-peers/`) and runs this; without them it measures
//! `bareagent run` alone and says so. `cargo bench --bench peers`; knobs:
//! `RUNS` (rounds, default 10), `PEERS_DIR` (the peers' install, default
//! `target/bench-peers`), `PEERS_ONLY` (comma-separated agent names),
//! `PEERS_DOC` (a markdown file whose `peers` section to rewrite),
//! `PEERS_COMMAND` (the command the doc names), `BAREAGENT_BIN` (another
//! build of ours), `WRAP` (a tool to run each agent under, e.g. `strace -f
//! -e trace=connect -o strace.txt`: a diagnosis, not a measurement),
//! `PEERS_KEEP` (keep every run's folder under `target/tmp/bench-peers/`:
//! home, work, stdout, stderr, `requests.json`, `processes.txt`; a failed
//! run's folder is always kept).
//!
//! Each round runs every agent once, in turn, the first agent rotating from
//! round to round; then each agent's `--version`. Figures per agent:
//!
//! - `launch_to_first_request_ms`: spawn → the server has the whole first
//!   request of the turn (the first carrying the agent's tools; the server
//!   stamps each request when its body has arrived);
//! - `turn_ms`: spawn → exit;
//! - `peak_rss_largest_kib`, `peak_rss_tree_kib`: sampled every
//!   millisecond from `/proc` while the agent runs: the largest `VmHWM` of
//!   one process, and the largest sum of the `VmHWM`s of the agent and its
//!   descendants alive in one sample (`benches/support/proc_memory.rs`; a
//!   child caught between fork and exec counts its parent's copy-on-write
//!   pages again, so agents that start many commands read high);
//! - `first_request_{system,tools,messages}_bytes`: that first request's
//!   system prompt (Anthropic `system`; Responses `instructions` and the
//!   `developer`/`system` input items), tool definitions (`tools`) and the
//!   rest of the conversation (`messages` / `input`), each as compact JSON;
//!   `first_request_bytes`: the whole body as sent;
//! - `requests_per_turn`: every request the server got during the turn,
//!   side requests (titles, model listings…) included;
//! - `version_ms`: spawn → exit of `--version`.
//!
//! Written to `target/bench/peers.json` (figures as numbers; `samples` in
//! run order):
//!
//! ```json
//! {"date": "2026-12-02", "build": "release", "bareagent_bin": null,
//!  "commit": "4477a9e", "runs": 10,
//!  "command": "scripts/bench-peers --runs 10",
//!  "machine": {"cpu": "…", "cores": 2, "kernel": "…", "memory_kib": 24684000},
//!  "load_at_start": 0.12, "missing": ["claude-code", "codex", "codex-npm"],
//!  "agents": {"bareagent-anthropic": {"version": "bareagent 0.1.0",
//!      "peak_rss_largest_kib": {"median": 12000, "min": 11800, "max": 12400, "samples": […]},
//!      "turn_ms": {…}, …},
//!    "bareagent-openai": {…}, …}}
//! ```

#[path = "peers/agents.rs"]
mod agents;
#[path = "support/measured.rs"]
mod measured;
#[path = "../tests/support/model_server.rs"]
mod model_server;
#[path = "support/proc_memory.rs"]
mod proc_memory;
#[path = "peers/report.rs"]
mod report;
// The tests read the test CA's certificate; a bench only serves with it.
#[allow(dead_code)]
#[path = "../tests/support/tls_front.rs"]
mod tls_front;

use measured::bareagent;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use agents::{Agent, Wire};
use model_server::{ModelServer, RecordedRequest};
use serde_json::Value;

/// How often the memory of a running agent is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(1);

/// One agent's samples: figure name → one value per run.
#[derive(Default)]
pub struct Samples {
    pub version: String,
    pub figures: BTreeMap<&'static str, Vec<f64>>,
}

impl Samples {
    fn push(&mut self, figure: &'static str, value: f64) {
        self.figures.entry(figure).or_default().push(value);
    }
}

fn main() {
    let runs: usize = env_or("RUNS", 10);
    let target = target_dir();
    let peers_dir = std::env::var_os("PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("bench-peers"));
    let (mut agents, missing) = agents::available(&bareagent(), &agents::Installed::at(&peers_dir));
    if let Ok(only) = std::env::var("PEERS_ONLY") {
        agents.retain(|agent| only.split(',').any(|name| name.trim() == agent.name));
    }
    if !missing.is_empty() {
        println!(
            "peers: not installed in {}: {}; measuring without them. Install them with `scripts/bench-peers --install`.",
            peers_dir.display(),
            missing.join(", ")
        );
    }
    let scratch = target.join("tmp/bench-peers");
    std::fs::create_dir_all(&scratch).expect("create target/tmp/bench-peers");
    let tls = tls_front::TestTls::new(&scratch);

    let load_at_start = report::load_average();
    let mut samples: Vec<Samples> = agents.iter().map(|_| Samples::default()).collect();
    for round in 0..runs {
        for i in 0..agents.len() {
            let at = (round + i) % agents.len();
            let (agent, into) = (&agents[at], &mut samples[at]);
            if let Err(error) = turn(agent, &scratch, &tls, into) {
                panic!("{} (round {}): {error}", agent.name, round + 1);
            }
        }
        for (agent, into) in agents.iter().zip(&mut samples) {
            if let Err(error) = version(agent, &scratch, into) {
                panic!("{} --version: {error}", agent.name);
            }
        }
        eprintln!("peers: round {}/{runs} done", round + 1);
    }

    let names: Vec<&str> = agents.iter().map(|agent| agent.name).collect();
    let results = report::Results {
        runs,
        agents: names.into_iter().zip(samples).collect(),
        missing,
        load_at_start,
    };
    results.print();
    let json = target.join("bench/peers.json");
    results
        .write_json(&json)
        .expect("write target/bench/peers.json");
    println!("peers: wrote {}", json.display());
    if let Some(doc) = std::env::var_os("PEERS_DOC") {
        results
            .write_doc(Path::new(&doc))
            .unwrap_or_else(|e| panic!("rewrite {}: {e}", Path::new(&doc).display()));
        println!(
            "peers: rewrote the peers section of {}",
            Path::new(&doc).display()
        );
    }
}

/// One scripted turn of `agent`, measured into `samples`.
fn turn(
    agent: &Agent,
    scratch: &Path,
    tls: &tls_front::TestTls,
    samples: &mut Samples,
) -> Result<(), String> {
    let run = tempfile::Builder::new()
        .prefix(&format!("{}-", agent.name))
        .tempdir_in(scratch)
        .map_err(|e| format!("run folder: {e}"))?;
    let (home, work) = (run.path().join("home"), run.path().join("work"));
    for dir in [&home, &work] {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let file = work.join(agents::FILE);
    std::fs::write(&file, agents::BEFORE).map_err(|e| format!("write the file: {e}"))?;
    project(&work, &home)?;

    let server = ModelServer::start(agent.script(&work));
    agent.prepare(&server);
    let front = agent.https.then(|| {
        let backend = server.anthropic_base();
        let backend = backend.trim_start_matches("http://").parse();
        tls_front::TlsFront::start(tls.config.clone(), backend.expect("the server's address"))
    });
    let https = front.as_ref().map(|front| agents::Https {
        base: format!("https://{}", front.addr),
        env: tls.env(),
    });
    let mut command = agent
        .turn(&home, &work, &server, https.as_ref())
        .map_err(|e| format!("set up: {e}"))?;
    let output = |name: &str| std::fs::File::create(run.path().join(name)).map(Stdio::from);
    command
        .stdin(Stdio::null())
        .stdout(output("stdout").map_err(|e| e.to_string())?)
        .stderr(output("stderr").map_err(|e| e.to_string())?);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);

    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| format!("spawn: {e}"))?;
    let sampler = proc_memory::TreeSampler::start(child.id(), SAMPLE_EVERY);
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    let turn = started.elapsed();
    let peak = sampler.stop();
    if end_group(child.id()) {
        eprintln!(
            "peers: {} left processes running 2 s after it exited; killed",
            agent.name
        );
    }
    let requests = server.requests();
    drop(server);
    write_requests(run.path(), &requests);
    let processes: String = peak
        .processes
        .iter()
        .map(|(pid, name, kib)| format!("{pid} {name} {kib} KiB\n"))
        .collect();
    let _ = std::fs::write(run.path().join("processes.txt"), processes);

    let checked = check(agent, &status, &file, &requests);
    let first = match checked {
        Ok(first) if std::env::var_os("PEERS_KEEP").is_none() => first,
        // A failed run's folder stays, for its output and requests.
        checked => {
            let kept = run.keep();
            checked.map_err(|e| format!("{e}; {}", tail_of(&kept)))?
        }
    };
    samples.push(
        "launch_to_first_request_ms",
        millis(first.received - started),
    );
    samples.push("turn_ms", millis(turn));
    samples.push("peak_rss_largest_kib", peak.largest_kib as f64);
    samples.push("peak_rss_tree_kib", peak.tree_kib as f64);
    let sizes = split(agent.wire, first);
    samples.push("first_request_system_bytes", sizes[0] as f64);
    samples.push("first_request_tools_bytes", sizes[1] as f64);
    samples.push("first_request_messages_bytes", sizes[2] as f64);
    samples.push("first_request_bytes", first.raw_body.len() as f64);
    samples.push("requests_per_turn", requests.len() as f64);
    Ok(())
}

/// `agent --version`: timed, and its first line kept.
fn version(agent: &Agent, scratch: &Path, samples: &mut Samples) -> Result<(), String> {
    let home = tempfile::tempdir_in(scratch).map_err(|e| format!("home: {e}"))?;
    let mut command = agent.version(home.path());
    command.stdin(Stdio::null()).stderr(Stdio::null());
    let started = Instant::now();
    let output = command.output().map_err(|e| format!("spawn: {e}"))?;
    let took = started.elapsed();
    if !output.status.success() {
        return Err(format!("exited with {}", output.status));
    }
    samples.push("version_ms", millis(took));
    let text = String::from_utf8_lossy(&output.stdout);
    samples.version = text.lines().next().unwrap_or_default().trim().to_string();
    if let Some(runtime) = agent.runtime() {
        samples.version = format!("{} on {runtime}", samples.version);
    }
    Ok(())
}

/// The system prompt, tool definitions and conversation of a first
/// request, each as compact JSON bytes.
fn split(wire: Wire, request: &RecordedRequest) -> [usize; 3] {
    let bytes = |value: &Value| serde_json::to_string(value).map_or(0, |text| text.len());
    let body = &request.body;
    match wire {
        Wire::Anthropic => [
            body.get("system").map_or(0, bytes),
            body.get("tools").map_or(0, bytes),
            body.get("messages").map_or(0, bytes),
        ],
        Wire::Responses => {
            let input = body.get("input").and_then(Value::as_array);
            let (system, rest): (Vec<&Value>, Vec<&Value>) =
                input.into_iter().flatten().partition(|item| {
                    matches!(
                        item.get("role").and_then(Value::as_str),
                        Some("system" | "developer")
                    )
                });
            let instructions = body
                .get("instructions")
                .filter(|value| !value.is_null())
                .map_or(0, bytes);
            [
                instructions + bytes(&Value::from_iter(system.into_iter().cloned())),
                body.get("tools").map_or(0, bytes),
                bytes(&Value::from_iter(rest.into_iter().cloned())),
            ]
        }
    }
}

/// Waits up to 2 s for what is left of the agent's process group (it was
/// spawned as the group's leader) to end on its own (helpers finishing,
/// such as our reaper), then kills the rest. Whether any had to be killed.
fn end_group(leader: u32) -> bool {
    let Ok(group) = i32::try_from(leader) else {
        return false;
    };
    // SAFETY: kill(2) on that group alone (a negative pid names a group);
    // signal 0 only asks whether any member is left.
    let alive = || unsafe { libc::kill(-group, 0) } == 0;
    let deadline = Instant::now() + Duration::from_secs(2);
    while alive() {
        if Instant::now() > deadline {
            // SAFETY: as above.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    false
}

/// Makes `work` a project as the agents meet one: a git repository with
/// the file committed (each agent looks at the repository it starts in).
fn project(work: &Path, home: &Path) -> Result<(), String> {
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=bench", "-c", "user.email=bench@127.0.0.1"])
            .args(args)
            .current_dir(work)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("git: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("git {args:?}: {status}"))
        }
    };
    git(&["init", "-q", "-b", "main"])?;
    git(&["add", agents::FILE])?;
    git(&["commit", "-q", "-m", "Release notes"])
}

/// The run happened: the agent exited 0, the file holds the edit, and a
/// model call came. That first call.
fn check<'r>(
    agent: &Agent,
    status: &std::process::ExitStatus,
    file: &Path,
    requests: &'r [RecordedRequest],
) -> Result<&'r RecordedRequest, String> {
    if !status.success() {
        return Err(format!("exited with {status}"));
    }
    let text = std::fs::read_to_string(file).map_err(|e| format!("read the file back: {e}"))?;
    if text != agents::AFTER {
        return Err(format!("the file was not edited as scripted: {text:?}"));
    }
    requests
        .iter()
        .find(|request| agent.is_turn_call(request))
        .ok_or_else(|| format!("no model call among {} requests", requests.len()))
}

/// Every request of the run, for a look afterwards (`requests.json`).
fn write_requests(run: &Path, requests: &[RecordedRequest]) {
    let all: Vec<Value> = requests
        .iter()
        .map(|r| serde_json::json!({"path": r.path, "headers": r.headers, "body": r.body}))
        .collect();
    let text = serde_json::to_string_pretty(&all).unwrap_or_default();
    let _ = std::fs::write(run.join("requests.json"), text);
}

/// The last lines the agent wrote on stderr and stdout.
fn tail_of(run: &Path) -> String {
    let last = |name: &str| {
        let text = std::fs::read_to_string(run.join(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    };
    format!(
        "stderr:\n{}\nstdout:\n{}\n(run folder {})",
        last("stderr"),
        last("stdout"),
        run.display()
    )
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Cargo's target directory (`CARGO_TARGET_TMPDIR` is its `tmp/`).
fn target_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).to_path_buf()
}
