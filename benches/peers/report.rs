//! What the peers bench reports: one table on stdout, the JSON file, and
//! the `peers` section of `docs/benchmarks.md`.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::Samples;

pub struct Results {
    pub runs: usize,
    /// In the order they were set up: ours first.
    pub agents: Vec<(&'static str, Samples)>,
    pub missing: Vec<&'static str>,
    /// The 1-minute load average when the runs began (other work on the
    /// machine shows in the timings).
    pub load_at_start: f64,
}

/// The figures shown, in order: name in the JSON, label, unit and scale
/// for the table (value ÷ scale).
const FIGURES: &[(&str, &str, &str, f64)] = &[
    (
        "launch_to_first_request_ms",
        "launch → first model request",
        "ms",
        1.0,
    ),
    ("turn_ms", "whole turn (spawn → exit)", "ms", 1.0),
    (
        "peak_rss_largest_kib",
        "peak RSS, largest process",
        "MiB",
        1024.0,
    ),
    ("peak_rss_tree_kib", "peak RSS, process tree", "MiB", 1024.0),
    (
        "first_request_system_bytes",
        "first request: system prompt",
        "kB",
        1000.0,
    ),
    (
        "first_request_tools_bytes",
        "first request: tool definitions",
        "kB",
        1000.0,
    ),
    (
        "first_request_messages_bytes",
        "first request: messages",
        "kB",
        1000.0,
    ),
    (
        "first_request_bytes",
        "first request: whole body",
        "kB",
        1000.0,
    ),
    ("requests_per_turn", "requests per turn", "", 1.0),
    ("version_ms", "`--version`", "ms", 1.0),
];

/// The figures whose ratios are given.
const RATIOS: &[&str] = &[
    "launch_to_first_request_ms",
    "turn_ms",
    "peak_rss_largest_kib",
    "peak_rss_tree_kib",
    "first_request_bytes",
    "requests_per_turn",
    "version_ms",
];

/// Each peer is set against ours on the same wire.
fn baseline(agent: &str) -> &'static str {
    if agent.starts_with("codex") {
        "bareagent-openai"
    } else {
        "bareagent-anthropic"
    }
}

struct Stats {
    median: f64,
    min: f64,
    max: f64,
}

fn stats(values: &[f64]) -> Option<Stats> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    };
    Some(Stats {
        median,
        min: sorted[0],
        max: sorted[n - 1],
    })
}

impl Results {
    fn stats(&self, agent: &str, figure: &str) -> Option<Stats> {
        let (_, samples) = self.agents.iter().find(|(name, _)| *name == agent)?;
        stats(samples.figures.get(figure)?)
    }

    /// One cell: the median and, when the runs differ, the range.
    fn cell(&self, agent: &str, figure: &str, scale: f64, unit: &str) -> String {
        let Some(s) = self.stats(agent, figure) else {
            return "–".into();
        };
        let (median, min, max) = (s.median / scale, s.min / scale, s.max / scale);
        let digits = if max >= 100.0 || unit.is_empty() {
            0
        } else {
            1
        };
        let unit = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        let (low, high) = (format!("{min:.digits$}"), format!("{max:.digits$}"));
        if low == high {
            format!("{median:.digits$}{unit}")
        } else {
            format!("{median:.digits$}{unit} ({low}–{high})")
        }
    }

    /// Figures down, agents across.
    fn rows(&self) -> Vec<Vec<String>> {
        let mut head = vec![String::new()];
        head.extend(self.agents.iter().map(|(name, _)| name.to_string()));
        let mut rows = vec![head];
        for (figure, label, unit, scale) in FIGURES {
            let mut row = vec![label.to_string()];
            row.extend(
                self.agents
                    .iter()
                    .map(|(name, _)| self.cell(name, figure, *scale, unit)),
            );
            rows.push(row);
        }
        let mut versions = vec!["version".to_string()];
        versions.extend(self.agents.iter().map(|(_, s)| s.version.clone()));
        rows.push(versions);
        rows
    }

    /// Each peer's median against ours on the same wire, per ratio figure;
    /// just the head row when no peer has ours to be set against.
    fn ratio_rows(&self) -> Vec<Vec<String>> {
        let mut head = vec!["peer ÷ ours (medians)".to_string()];
        head.extend(RATIOS.iter().map(|figure| {
            let label = FIGURES.iter().find(|f| f.0 == *figure).map(|f| f.1);
            label.unwrap_or(figure).to_string()
        }));
        let mut rows = vec![head];
        for (peer, _) in self
            .agents
            .iter()
            .filter(|(name, _)| !name.starts_with("bareagent"))
        {
            let ours = baseline(peer);
            if !self.agents.iter().any(|(name, _)| *name == ours) {
                continue;
            }
            let mut row = vec![format!("{peer} ÷ {ours}")];
            row.extend(RATIOS.iter().map(|figure| {
                match (self.stats(peer, figure), self.stats(ours, figure)) {
                    (Some(theirs), Some(mine)) => format!("{:.1}×", theirs.median / mine.median),
                    _ => "–".into(),
                }
            }));
            rows.push(row);
        }
        rows
    }

    /// The table, medians with (min–max); then the ratios.
    pub fn print(&self) {
        println!(
            "\npeers: the scripted turn (read, edit, answer), {} rounds, {} build, median (min–max)",
            self.runs,
            build()
        );
        print_table(&self.rows());
        let ratios = self.ratio_rows();
        if ratios.len() > 1 {
            println!();
            print_table(&ratios);
        }
        if !self.missing.is_empty() {
            println!(
                "\nnot measured (not installed): {}; `scripts/bench-peers --install` installs them",
                self.missing.join(", ")
            );
        }
    }

    pub fn to_json(&self) -> Value {
        let mut agents = Map::new();
        for (name, samples) in &self.agents {
            let mut figures = Map::new();
            figures.insert("version".into(), json!(samples.version));
            for (figure, values) in &samples.figures {
                if let Some(s) = stats(values) {
                    figures.insert(
                        figure.to_string(),
                        json!({"median": s.median, "min": s.min, "max": s.max, "samples": values}),
                    );
                }
            }
            agents.insert(name.to_string(), Value::Object(figures));
        }
        json!({
            "date": today(),
            "build": build(),
            "bareagent_bin": std::env::var("BAREAGENT_BIN").ok(),
            "commit": commit(),
            "runs": self.runs,
            "command": command(),
            "machine": machine(),
            "load_at_start": self.load_at_start,
            "missing": self.missing,
            "agents": agents,
        })
    }

    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_string_pretty(&self.to_json()).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n")
    }

    /// Rewrites the lines between `<!-- peers:begin …` and
    /// `<!-- peers:end -->`, leaving the rest of the file as it is.
    pub fn write_doc(&self, path: &Path) -> std::io::Result<()> {
        let text = std::fs::read_to_string(path)?;
        let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
        let begin = text
            .find("<!-- peers:begin")
            .ok_or_else(|| invalid("no `<!-- peers:begin` line"))?;
        let begin = text[begin..]
            .find('\n')
            .map(|end| begin + end + 1)
            .ok_or_else(|| invalid("nothing after `<!-- peers:begin`"))?;
        let end = text
            .find("<!-- peers:end -->")
            .filter(|end| *end >= begin)
            .ok_or_else(|| invalid("no `<!-- peers:end -->` after `<!-- peers:begin`"))?;
        let section = self.markdown();
        std::fs::write(path, format!("{}{section}{}", &text[..begin], &text[end..]))
    }

    fn markdown(&self) -> String {
        let machine = machine();
        let mut out = String::from("## Against Claude Code and Codex\n\n");
        out.push_str(&format!(
            "Measured {} by `{}` ({}, {} round{}{}) on {} ({} cores), Linux {}, \
             {:.1} GiB of memory, 1-minute load average {:.2} at the start.\n\n",
            today(),
            command(),
            measured(),
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            if self
                .agents
                .iter()
                .any(|(name, _)| !name.starts_with("bareagent"))
            {
                "; the peers installed by `scripts/bench-peers --install`"
            } else {
                ""
            },
            machine["cpu"].as_str().unwrap_or("?"),
            machine["cores"],
            machine["kernel"].as_str().unwrap_or("?"),
            machine["memory_kib"].as_f64().unwrap_or(0.0) / 1024.0 / 1024.0,
            self.load_at_start,
        ));
        out.push_str(&markdown_table(&self.rows()));
        let ratios = self.ratio_rows();
        if ratios.len() > 1 {
            out.push_str("\nEach peer against `bareagent run` on the same wire:\n\n");
            out.push_str(&markdown_table(&ratios));
        }
        if !self.missing.is_empty() {
            out.push_str(&format!(
                "\nNot measured (not installed): {}. `scripts/bench-peers --install` installs them.\n",
                self.missing.join(", ")
            ));
        }
        out.push('\n');
        out.push_str(HOW);
        out
    }
}

/// How the figures are taken, for the doc (`benches/peers.rs` says more).
const HOW: &str = "\
How: each round runs every agent once, the first agent rotating from round
to round, through the same turn against one scripted model server on
127.0.0.1: read `notes.txt`, edit it, answer, each agent in its own tools
(ours `read_file`/`edit_file`, Claude Code's `Read`/`Edit`, Codex's
`exec_command`/`apply_patch`), in a fresh git repository. A run counts only
if the agent exited 0 and the file holds the edit. Medians, the range in
brackets. Launch → first model request: spawn until the server has the
whole first request that carries the agent's tools. Peak RSS: each
process's `VmHWM` (`/proc/<pid>/status`) sampled every millisecond; the
largest process, and the largest sum over the agent and its descendants
alive in one sample (a child caught between fork and exec counts its
parent's copy-on-write pages again). Request sizes: compact JSON of the
first request's system prompt, tool definitions and messages. Requests per
turn include side requests. Each agent runs with a fresh home, a clean
environment, and its telemetry, update checks, error reports and plugin
downloads off through its documented settings (`benches/peers/agents.rs`).
bareagent's OpenAI row speaks the Responses API, as it does to
api.openai.com and as Codex does. Every row but one speaks plain HTTP to
the server; `bareagent-anthropic-https` reaches it through a TLS front on
127.0.0.1, trusting it by the system's roots and a test CA, so it pays
what a user pays for TLS: the root store loaded, the handshake.
";

fn print_table(rows: &[Vec<String>]) {
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
}

fn markdown_table(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
        if i == 0 {
            out.push_str(&format!("|{}\n", "---|".repeat(row.len())));
        }
    }
    out
}

/// The command that reproduces the figures: what `scripts/bench-peers`
/// says it ran, else this bench.
fn command() -> String {
    std::env::var("PEERS_COMMAND").unwrap_or_else(|_| "cargo bench --bench peers".into())
}

/// Which bareagent was measured: this build, or `BAREAGENT_BIN`.
fn measured() -> String {
    match std::env::var("BAREAGENT_BIN") {
        Ok(path) => {
            // Named as from the repository, where it is under it.
            let here = std::env::current_dir().unwrap_or_default();
            let shown = Path::new(&path)
                .strip_prefix(&here)
                .map_or_else(|_| path.clone(), |relative| relative.display().to_string());
            format!("bareagent from `{shown}` at {}", commit())
        }
        Err(_) => format!("{} build of {}", build(), commit()),
    }
}

/// The bench's own profile: `release` for `cargo bench`, `dev` for
/// `--profile dev` (ours is this build unless `BAREAGENT_BIN` names one).
fn build() -> &'static str {
    if cfg!(debug_assertions) {
        "dev"
    } else {
        "release"
    }
}

/// The commit measured (`git describe`: `-dirty` with local changes).
fn commit() -> String {
    let out = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    match out {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        _ => "unknown".into(),
    }
}

/// The 1-minute load average now (`/proc/loadavg`).
pub fn load_average() -> f64 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .next()
        .and_then(|load| load.parse().ok())
        .unwrap_or(0.0)
}

fn machine() -> Value {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split_once(':'))
        .map_or("unknown", |(_, name)| name.trim());
    let memory = read("/proc/meminfo")
        .lines()
        .find(|line| line.starts_with("MemTotal:"))
        .and_then(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0);
    json!({
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "memory_kib": memory,
    })
}

/// Today's date (UTC), `YYYY-MM-DD`.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Days since 1970 to a civil date (Howard Hinnant's days_from_civil,
    // inverted).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
