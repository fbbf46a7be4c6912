//! A bench's headline figures as JSON, for `scripts/bench-own`, which
//! writes them into docs/benchmarks.md. With `BENCH_JSON=<file>` set, each
//! figure is appended to that file as one line:
//!
//! ```json
//! {"bench":"lsp","name":"…","value":3.2,"unit":"ms","command":"cargo bench --bench lsp"}
//! ```
//!
//! and a figure a bench cannot take here as
//! `{"bench":…,"name":…,"not_run":"needs `rg` on PATH","command":…}`.
//! Without it nothing is written: what a bench prints stays as it was.
#![allow(dead_code)]

use std::io::Write;

use serde_json::{Value, json};

/// One figure of `bench`, in `unit` (as the bench prints it).
pub fn record(bench: &str, name: &str, value: f64, unit: &str) {
    append(json!({
        "bench": bench,
        "name": name,
        "value": value,
        "unit": unit,
        "command": command(bench),
    }));
}

/// A figure `bench` could not take here, and why (what it needs).
pub fn not_run(bench: &str, name: &str, why: &str) {
    append(json!({
        "bench": bench,
        "name": name,
        "not_run": why,
        "command": command(bench),
    }));
}

/// The command that took the figure: `SECTIONS`, when a bench was told to
/// run some of its parts, is part of it.
fn command(bench: &str) -> String {
    match std::env::var("SECTIONS") {
        Ok(sections) => format!("SECTIONS={sections} cargo bench --bench {bench}"),
        Err(_) => format!("cargo bench --bench {bench}"),
    }
}

fn append(line: Value) {
    let Some(path) = std::env::var_os("BENCH_JSON") else {
        return;
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("BENCH_JSON {}: {e}", path.to_string_lossy()));
    writeln!(file, "{line}").unwrap_or_else(|e| panic!("BENCH_JSON: {e}"));
}
