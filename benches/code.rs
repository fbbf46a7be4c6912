//! What the `code` tool saves a model on a real codebase: rich 13.7.1's
//! source (78 Python files, from PyPI's sdist, downloaded once into
//! `target/bench-code/` and unpacked per run) and its `Console.render` —
//! called from several files, while `render` is also the name of a dozen
//! other classes' methods, a function of `rich.markup`, and a word of
//! comments, docstrings and strings.
//!
//! Each task is one scripted turn of `bareagent run` against the scripted
//! model server, done two ways: with `code` (one call), and the way a model
//! does it without (`grep` for the name, `read_file` of every file it
//! lists, for a rename one `multi_edit` per file). The grep script is built
//! from the real answer of `bareagent`'s own `grep` in a first turn, so its
//! counts are what a model would have to read. Measured: tool calls,
//! tool-result bytes (the `tool_result` texts of the last request the model
//! server received: what the model reads), and whether the answer is exact;
//! then the latency of the first `references` of a session (the server's
//! start and indexing included) and of warm calls after it, as the time
//! between the model server receiving the request whose reply carries the
//! `tool_use` and the one carrying its result.
//!
//! `cargo bench --bench code`, with `BAREAGENT_LSP_BIN` set as `.ci/run`
//! sets it (pyright-langserver); without it the bench says so and exits.
//! Knobs: `RUNS` (sessions for the latency, default 3; each has one cold
//! and 10 warm calls), `BAREAGENT_BIN` (another build).

#[path = "support/measured.rs"]
mod measured;
#[path = "../tests/support/model_server.rs"]
mod model_server;

use measured::bareagent;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use model_server::{ModelServer, RecordedRequest, Reply, Step};
use serde_json::{Value, json};

const PACKAGE: &str = "rich";
const VERSION: &str = "13.7.1";
/// F: where it is defined, its name as `code` takes it, its bare name.
const FILE: &str = "rich/console.py";
const SYMBOL: &str = "Console.render";
const NAME: &str = "render";
const NEW_NAME: &str = "render_segments";
/// Warm calls after the first, per session.
const WARM: usize = 10;

/// The sdist, downloaded with pip the first time.
fn sdist() -> PathBuf {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target dir")
        .join("bench-code");
    let archive = cache.join(format!("{PACKAGE}-{VERSION}.tar.gz"));
    if !archive.exists() {
        std::fs::create_dir_all(&cache).expect("cache dir");
        let status = Command::new("python3")
            .args(["-m", "pip", "download", "--no-deps", "--no-binary", ":all:"])
            .arg(format!("{PACKAGE}=={VERSION}"))
            .arg("-d")
            .arg(&cache)
            .stdout(Stdio::null())
            .status()
            .expect("python3 -m pip");
        assert!(
            status.success() && archive.exists(),
            "pip download {PACKAGE}=={VERSION} failed"
        );
    }
    archive
}

/// A fresh copy of the source; the directory above it holds the run's
/// config and state, outside the workspace.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn unpack(archive: &Path) -> Project {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
        let status = Command::new("tar")
            .arg("xzf")
            .arg(archive)
            .arg("-C")
            .arg(dir.path())
            .status()
            .expect("tar");
        assert!(status.success(), "tar xzf {}", archive.display());
        Project { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join(format!("{PACKAGE}-{VERSION}"))
    }

    /// The package's Python files and their text.
    fn sources(&self) -> BTreeMap<String, String> {
        let root = self.root();
        let mut files = BTreeMap::new();
        let mut dirs = vec![root.join(PACKAGE)];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("a source dir") {
                let path = entry.expect("an entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "py") {
                    let name = path.strip_prefix(&root).expect("inside").display();
                    let text = std::fs::read_to_string(&path).expect("a source file");
                    files.insert(name.to_string(), text);
                }
            }
        }
        files
    }

    /// One `bareagent run` of `script` in bypass mode; the requests the
    /// model server received.
    fn turn(&self, bin: &Path, script: Vec<Step>) -> Vec<RecordedRequest> {
        let server = ModelServer::start(script);
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new(bareagent())
            .current_dir(self.root())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            .env("PATH", path)
            .env("ANTHROPIC_API_KEY", "sk-bench")
            .args(["run", "--provider", "anthropic", "--base-url"])
            .arg(server.anthropic_base())
            .args(["--permission-mode", "bypass", "do the task"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("bareagent run");
        assert!(
            out.status.success(),
            "bareagent run: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(server.remaining(), 0, "the script was not played out");
        server.requests()
    }
}

/// The tool results the last request carries, in order, with their error flag.
fn tool_results(requests: &[RecordedRequest]) -> Vec<(String, bool)> {
    let last = requests.last().expect("a request");
    let messages = last.body["messages"].as_array().expect("messages");
    messages
        .iter()
        .flat_map(|message| message["content"].as_array().into_iter().flatten())
        .filter(|block| block["type"] == "tool_result")
        .map(|block| {
            let text = match &block["content"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            (text, block["is_error"] == true)
        })
        .collect()
}

/// Tool calls and tool-result bytes of a turn; panics on a failed call.
fn cost(requests: &[RecordedRequest]) -> (usize, usize) {
    let results = tool_results(requests);
    if let Some((text, _)) = results.iter().find(|(_, failed)| *failed) {
        panic!("a tool call failed: {text}");
    }
    (results.len(), results.iter().map(|(t, _)| t.len()).sum())
}

/// Whether `text` has `name` at `at` as a whole word.
fn word_at(text: &str, at: usize, name: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    text[at..].starts_with(name)
        && !text[..at].chars().next_back().is_some_and(is_word)
        && !text[at + name.len()..].chars().next().is_some_and(is_word)
}

/// `text` with every whole-word `name` replaced: what a rename by text does.
fn replace_word(text: &str, name: &str, new: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    for (at, _) in text.match_indices(name) {
        if word_at(text, at, name) {
            out.push_str(&text[rest..at]);
            out.push_str(new);
            rest = at + name.len();
        }
    }
    out.push_str(&text[rest..]);
    out
}

/// The lines (file, 1-based line) holding `name` as a word: grep's hits.
fn word_lines(sources: &BTreeMap<String, String>, name: &str) -> BTreeSet<(String, usize)> {
    let mut hits = BTreeSet::new();
    for (file, text) in sources {
        for (n, line) in text.lines().enumerate() {
            if line
                .match_indices(name)
                .any(|(at, _)| word_at(line, at, name))
            {
                hits.insert((file.clone(), n + 1));
            }
        }
    }
    hits
}

/// The places a `code` answer lists: a file's path, then `  line:col  text`.
fn listed_places(answer: &str) -> BTreeSet<(String, usize)> {
    let mut places = BTreeSet::new();
    let mut file = None;
    for line in answer.lines() {
        if let Some(place) = line.strip_prefix("  ") {
            let number = place.split(':').next().and_then(|n| n.parse().ok());
            if let (Some(file), Some(number)) = (&file, number) {
                places.insert((String::clone(file), number));
            }
        } else if line.ends_with(".py") {
            file = Some(line.to_string());
        }
    }
    places
}

fn code(input: Value) -> Step {
    Reply::tool("code", input).into()
}

fn grep_call() -> (&'static str, Value) {
    (
        "grep",
        json!({"pattern": format!("\\b{NAME}\\b"), "glob": "*.py"}),
    )
}

/// The files `grep` lists, asked in a turn of their own.
fn grep_files(project: &Project, bin: &Path) -> Vec<String> {
    let (name, input) = grep_call();
    let requests = project.turn(
        bin,
        vec![Reply::tool(name, input).into(), Reply::text("ok").into()],
    );
    let (listing, _) = tool_results(&requests)
        .into_iter()
        .next()
        .expect("grep's result");
    listing
        .lines()
        .filter(|line| line.ends_with(".py"))
        .map(str::to_string)
        .collect()
}

/// `read_file` calls that show all of each file (2,000 lines a call).
fn reads(files: &[String], sources: &BTreeMap<String, String>) -> Vec<(&'static str, Value)> {
    let mut calls = Vec::new();
    for file in files {
        let lines = sources.get(file).map_or(1, |text| text.lines().count());
        for offset in (1..=lines.max(1)).step_by(2000) {
            let input = if offset == 1 {
                json!({"path": file})
            } else {
                json!({"path": file, "offset": offset})
            };
            calls.push(("read_file", input));
        }
    }
    calls
}

/// A rename by text of one file: one `multi_edit` whose edits each replace
/// a line holding the name (every copy of that line at once), in order.
fn multi_edit(file: &str, text: &str) -> (&'static str, Value) {
    let mut now = text.to_string();
    let mut edits = Vec::new();
    for line in text.split_inclusive('\n') {
        let renamed = replace_word(line, NAME, NEW_NAME);
        let copies = now.matches(line).count();
        if renamed == line || copies == 0 {
            continue;
        }
        edits.push(json!({"old_string": line, "new_string": renamed, "replace_all": copies > 1}));
        now = now.replace(line, &renamed);
    }
    assert_eq!(now, replace_word(text, NAME, NEW_NAME), "{file}: the edits");
    ("multi_edit", json!({"path": file, "edits": edits}))
}

/// Files that differ between two trees, and the lines that do.
fn differences(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> (usize, usize) {
    let mut files = 0;
    let mut lines = 0;
    for (file, text) in a {
        let other = b.get(file).map(String::as_str).unwrap_or_default();
        if text != other {
            files += 1;
            lines += text
                .lines()
                .zip(other.lines())
                .filter(|(x, y)| x != y)
                .count();
        }
    }
    (files, lines)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(time: Duration) -> String {
    format!("{:.0} ms", time.as_secs_f64() * 1e3)
}

fn row(task: &str, way: &str, (calls, bytes): (usize, usize), exact: &str) {
    println!("| {task} | {way} | {calls} | {bytes} | {exact} |");
}

fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let Some(bin) = std::env::var_os("BAREAGENT_LSP_BIN")
        .map(PathBuf::from)
        .filter(|dir| dir.join("pyright-langserver").exists())
    else {
        eprintln!(
            "skipped: set BAREAGENT_LSP_BIN to a directory with pyright-langserver (.ci/run installs it)"
        );
        return;
    };
    let archive = sdist();
    let pristine = Project::unpack(&archive);
    let sources = pristine.sources();
    let hits = word_lines(&sources, NAME);
    let files = grep_files(&pristine, &bin);
    let hit_files: BTreeSet<_> = hits.iter().map(|(file, _)| file.clone()).collect();
    assert_eq!(
        files.iter().cloned().collect::<BTreeSet<_>>(),
        hit_files,
        "grep's files"
    );
    println!(
        "{PACKAGE} {VERSION}: {} Python files; F = `{SYMBOL}` ({FILE}); `{NAME}` as a word: {} lines in {} files",
        sources.len(),
        hits.len(),
        files.len()
    );
    println!();
    println!("| task | way | tool calls | tool-result bytes | answer |");
    println!("|---|---|---|---|---|");

    // 1. Every caller of F.
    let requests = pristine.turn(
        &bin,
        vec![
            code(json!({"operation": "references", "path": FILE, "symbol": SYMBOL})),
            Reply::text("done").into(),
        ],
    );
    let answer = tool_results(&requests)
        .into_iter()
        .next()
        .expect("the answer")
        .0;
    let places = listed_places(&answer);
    let missed_by_grep = places.difference(&hits).count();
    let first_line = answer.lines().next().unwrap_or_default();
    row(
        "find callers",
        "`code` references",
        cost(&requests),
        &format!(
            "{} places (\"{first_line}\"), {missed_by_grep} not among grep's lines",
            places.len()
        ),
    );
    let (name, input) = grep_call();
    let mut script = vec![Step::from(Reply::tool(name, input))];
    let read_calls = reads(&files, &sources);
    script.push(Reply::tools(read_calls.clone()).into());
    script.push(Reply::text("done").into());
    let requests = pristine.turn(&bin, script);
    // F's own `def` line: among grep's hits, neither noise nor a use.
    let definition = format!("def {NAME}(");
    let defined_at = sources[FILE]
        .lines()
        .position(|line| line.trim_start().starts_with(&definition))
        .map(|n| (FILE.to_string(), n + 1));
    let noise = hits
        .iter()
        .filter(|hit| !places.contains(*hit) && defined_at.as_ref() != Some(*hit))
        .count();
    row(
        "find callers",
        "grep + read_file",
        cost(&requests),
        &format!(
            "{} lines in {} files to sort by hand: {noise} neither F's definition nor a use",
            hits.len(),
            files.len(),
        ),
    );

    // 2. Rename F.
    let by_code = Project::unpack(&archive);
    let requests = by_code.turn(
        &bin,
        vec![
            code(json!({"operation": "rename", "path": FILE, "symbol": SYMBOL, "new_name": NEW_NAME})),
            Reply::text("done").into(),
        ],
    );
    let renamed = by_code.sources();
    let (files_changed, lines_changed) = differences(&sources, &renamed);
    row(
        "rename",
        "`code` rename",
        cost(&requests),
        &format!("{lines_changed} lines in {files_changed} files changed"),
    );
    let by_text = Project::unpack(&archive);
    let (name, input) = grep_call();
    let edits: Vec<_> = files
        .iter()
        .map(|file| multi_edit(file, &sources[file]))
        .collect();
    let requests = by_text.turn(
        &bin,
        vec![
            Reply::tool(name, input).into(),
            Reply::tools(read_calls).into(),
            Reply::tools(edits).into(),
            Reply::text("done").into(),
        ],
    );
    let replaced = by_text.sources();
    let (text_files, text_lines) = differences(&sources, &replaced);
    let (wrong_files, wrong_lines) = differences(&renamed, &replaced);
    // Other classes' methods (and functions) of the name, renamed with F.
    let definitions = |tree: &BTreeMap<String, String>| {
        let def = format!("def {NEW_NAME}(");
        tree.values()
            .map(|text| text.matches(&def).count())
            .sum::<usize>()
    };
    let other_definitions = definitions(&replaced) - definitions(&renamed);
    row(
        "rename",
        "grep + read_file + multi_edit",
        cost(&requests),
        &format!(
            "{text_lines} lines in {text_files} files changed; differs from `code`'s in {wrong_lines} lines of {wrong_files} files, {other_definitions} other definitions of `{NAME}` renamed"
        ),
    );

    println!();
    println!("`code`'s answer to the references call:\n{answer}");

    // 3. Latency: one cold `references`, then warm ones on other symbols.
    let targets = [
        (FILE, SYMBOL),
        (FILE, "Console.render_lines"),
        (FILE, "Console.get_style"),
        ("rich/text.py", "Text.append"),
        ("rich/segment.py", "Segment.split_cells"),
    ];
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    let mut warm_by_target: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    for _ in 0..runs {
        let project = Project::unpack(&archive);
        let mut script: Vec<Step> = targets
            .iter()
            .cycle()
            .take(WARM + 1)
            .map(|(path, symbol)| {
                code(json!({"operation": "references", "path": path, "symbol": symbol}))
            })
            .collect();
        script.push(Reply::text("done").into());
        let requests = project.turn(&bin, script);
        cost(&requests);
        let gaps: Vec<Duration> = requests
            .windows(2)
            .map(|pair| pair[1].received.duration_since(pair[0].received))
            .collect();
        cold.push(gaps[0]);
        warm.extend_from_slice(&gaps[1..WARM + 1]);
        for (n, gap) in gaps.iter().enumerate().take(WARM + 1).skip(1) {
            let symbol = targets[n % targets.len()].1;
            warm_by_target.entry(symbol).or_default().push(*gap);
        }
    }
    println!();
    println!(
        "`references` latency (tool_use sent → its result received): first of a session (server start and indexing) median {} of {runs} (min {}, max {}); warm median {} of {} (min {}, max {})",
        ms(median(cold.clone())),
        ms(*cold.iter().min().expect("a run")),
        ms(*cold.iter().max().expect("a run")),
        ms(median(warm.clone())),
        warm.len(),
        ms(*warm.iter().min().expect("a call")),
        ms(*warm.iter().max().expect("a call")),
    );
    for (symbol, times) in warm_by_target {
        let calls = times.len();
        println!("  warm `{symbol}`: median {} of {calls}", ms(median(times)));
    }
}
