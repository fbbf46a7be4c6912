//! The memory budgets, checked against what the benches have just measured
//! of the release binary (`.ci/run` runs the peers and lsp benches, then
//! `cargo bench --bench budgets`, which reads their files):
//!
//! - `bareagent run`'s peak RSS on the scripted read → edit → answer turn,
//!   on both wires and over HTTPS: `target/bench/peers.json` (`cargo bench
//!   --bench peers`);
//! - the language server's idle RSS, 500 ms after `initialized`:
//!   `target/bench/lsp.jsonl` (`SECTIONS=start BENCH_JSON=… cargo bench
//!   --bench lsp`).
//!
//! A figure more than 10% over its budget fails. It is a bench, not a test:
//! it judges figures measured in the same run, never files left from an
//! earlier one (`tests/it/memory_budget.rs` tests the judging itself).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Bytes; "MB" as the issue that set them says it: 10^6 bytes.
const RUN_PEAK_BUDGET: f64 = 10e6;
const LSP_IDLE_BUDGET: f64 = 8e6;
/// How far over its budget a figure may go before the check fails.
const SLACK: f64 = 1.10;

pub const KIB: f64 = 1024.0;
pub const MIB: f64 = 1024.0 * 1024.0;

pub fn bench_dir() -> PathBuf {
    std::env::var_os("BAREAGENT_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench"))
}

/// One figure against its budget: the failure's sentence, if it fails.
fn over_budget(what: &str, bytes: f64, budget: f64) -> Option<String> {
    let shown = |b: f64| format!("{:.2} MB ({:.2} MiB)", b / 1e6, b / MIB);
    println!(
        "{what}: {} against a budget of {}",
        shown(bytes),
        shown(budget)
    );
    (bytes > budget * SLACK).then(|| {
        format!(
            "{what} is {}, over its budget of {} by more than {:.0}%",
            shown(bytes),
            shown(budget),
            (SLACK - 1.0) * 100.0
        )
    })
}

/// The failures among the figures the two files hold (both parsed here, so
/// a changed shape is an error too).
pub fn check(peers: &str, lsp_lines: &str) -> Result<Vec<String>, String> {
    let peers: Value = serde_json::from_str(peers).map_err(|e| format!("peers.json: {e}"))?;
    // The binary measured: the bench's own (its build is the bench's), or
    // `BAREAGENT_BIN`, which must be a release build's.
    let release = match peers["bareagent_bin"].as_str() {
        // `target/release/bareagent`, or the scripts' copy of it
        // (`target/bench/bareagent-release`).
        Some(bin) => {
            let bin = Path::new(bin);
            bin.parent().is_some_and(|dir| dir.ends_with("release"))
                || bin
                    .file_name()
                    .is_some_and(|name| name.to_string_lossy().ends_with("-release"))
        }
        None => peers["build"] == "release",
    };
    if !release {
        return Err(format!(
            "peers.json measured bareagent from a {} build ({}): the budgets are for the release binary",
            peers["build"], peers["bareagent_bin"]
        ));
    }
    let mut failures = Vec::new();
    // The plain-HTTP rows on their highest run: a peak budget, not a
    // typical one. The HTTPS row on its median: its highest run moves by a
    // MiB from run to run with the handshake's allocations (8.7–10.3 MiB in
    // 20 runs), which would make the check a coin toss at the budget.
    for (agent, of) in [
        ("bareagent-anthropic", "max"),
        ("bareagent-openai", "max"),
        ("bareagent-anthropic-https", "median"),
    ] {
        let kib = peers["agents"][agent]["peak_rss_largest_kib"][of]
            .as_f64()
            .ok_or_else(|| format!("peers.json has no {agent} peak RSS"))?;
        let which = if of == "max" { "highest run" } else { "median" };
        let what = format!("`bareagent run` peak RSS ({agent}, {which})");
        failures.extend(over_budget(&what, kib * KIB, RUN_PEAK_BUDGET));
    }
    let idle = lsp_lines
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).map_err(|e| format!("lsp.jsonl: {e}")))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .find(|figure| {
            figure["name"]
                .as_str()
                .is_some_and(|name| name.starts_with("language server: idle RSS"))
        })
        .ok_or("lsp.jsonl has no language server idle RSS")?;
    let mib = idle["value"]
        .as_f64()
        .ok_or_else(|| format!("the idle RSS is not a number: {idle}"))?;
    failures.extend(over_budget(
        "language server idle RSS (median)",
        mib * MIB,
        LSP_IDLE_BUDGET,
    ));
    Ok(failures)
}
