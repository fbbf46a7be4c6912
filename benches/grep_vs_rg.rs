//! The `grep` tool against ripgrep itself, on a large real tree: the crates
//! under ~/.cargo/registry/src (or GREP_BENCH_DIR), same patterns, in
//! files-with-matches and content modes. Our search runs in-process; `rg`
//! runs as a process (its start-up, a few ms, counts against it), with
//! `--no-require-git` so both honour the same ignore files.
//!
//! `cargo bench --bench grep_vs_rg` (needs `rg` on PATH; ROUNDS=N;
//! BENCH_JSON=FILE appends the headline figures to FILE, see
//! support/figures.rs).

#[path = "support/figures.rs"]
mod figures;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bareagent::tools::{GrepQuery, OutputMode, search_files};

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn time<T>(rounds: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut last = f(); // warm the page cache and the allocator
    let mut times = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        last = f();
        times.push(started.elapsed());
    }
    (median(times), last)
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let dir = std::env::var_os("GREP_BENCH_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/registry/src")))
        .expect("set GREP_BENCH_DIR");
    if Command::new("rg").arg("--version").output().is_err() {
        eprintln!("grep_vs_rg: `rg` is not on PATH; install ripgrep to run this benchmark");
        figures::not_run(
            "grep_vs_rg",
            "`grep` tool against `rg`",
            "needs `rg` on PATH",
        );
        return;
    }
    println!("grep_vs_rg: {} (median of {rounds})", dir.display());
    for pattern in ["fn main", r"impl<[^>]*> \w+ for", "(?i)deprecated"] {
        for (mode, flag) in [
            (OutputMode::FilesWithMatches, "-l"),
            (OutputMode::Content, "-n"),
        ] {
            let query = GrepQuery {
                pattern: pattern.to_string(),
                path: dir.clone(),
                root: dir.clone(),
                glob: None,
                mode,
                context: 0,
                case_insensitive: false,
                head_limit: Some(usize::MAX),
                hidden: None,
                buffers: Default::default(),
            };
            // The search itself, every match kept (the tool then renders a capped answer).
            let (ours, found) = time(rounds, || search_files(&query, usize::MAX).expect("search"));
            let (theirs, rg_found) = time(rounds, || {
                let out = Command::new("rg")
                    .args(["--no-require-git", "--no-config", flag, pattern])
                    .arg(&dir)
                    .stdout(Stdio::piped())
                    .output()
                    .expect("rg");
                out.stdout.iter().filter(|&&b| b == b'\n').count()
            });
            let our_lines = match mode {
                OutputMode::Content => found.iter().map(|f| f.count as usize).sum::<usize>(),
                _ => found.len(),
            };
            println!(
                "  {mode:?} /{pattern}/: ours {:>7.1} ms, rg {:>7.1} ms, ratio {:.2}x  ({our_lines} vs {rg_found} lines)",
                ours.as_secs_f64() * 1e3,
                theirs.as_secs_f64() * 1e3,
                ours.as_secs_f64() / theirs.as_secs_f64()
            );
            let case = format!("`/{pattern}/`, {mode:?}");
            let figure = |what: &str, value, unit| {
                figures::record("grep_vs_rg", &format!("{case}: {what}"), value, unit)
            };
            figure("`grep` tool (median)", ours.as_secs_f64() * 1e3, "ms");
            figure("`rg` (median)", theirs.as_secs_f64() * 1e3, "ms");
            figure("ratio", ours.as_secs_f64() / theirs.as_secs_f64(), "×");
        }
    }
}
