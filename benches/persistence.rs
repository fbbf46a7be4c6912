//! What saving a session costs per message: appending a record of a 10 KB
//! message to a session file (one `write(2)`: in the kernel, safe from a
//! crash of the agent), and the same followed by a turn end, which syncs
//! the file to disk (`fdatasync`: safe from a crash of the machine).
//!
//! `cargo bench --bench persistence` (ROUNDS=N to change the repeat count;
//! BENCH_JSON=FILE appends the headline figures to FILE, see
//! support/figures.rs). The files go under the target directory, not /tmp
//! (often tmpfs, where a sync costs nothing).

#[path = "support/figures.rs"]
mod figures;

use std::time::{Duration, Instant};

use bareagent::agent::{ContentBlock, Message, Role};
use bareagent::session_files::{Entry, SessionFile, Transcript};
use bareagent::workspace::PathResolver;

/// A tool result of about 10 KB, as a command's output would be.
fn message() -> Message {
    let output: String = (0..250)
        .map(|n| format!("line {n:>4}: some output of a command that ran\n"))
        .collect::<String>()
        .chars()
        .take(10 * 1024)
        .collect();
    Message {
        role: Role::User,
        content: vec![ContentBlock::tool_result("toolu_1", output, false)],
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(2000);
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let paths = PathResolver::new(dir.path()).expect("workspace");
    let message = message();
    let size = serde_json::to_string(&message).map_or(0, |s| s.len());

    let session = SessionFile::create(&paths);
    session.record(Entry::Message(&message)); // makes the file
    let mut appends = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        session.record(Entry::Message(&message));
        appends.push(start.elapsed());
    }
    let mut synced = Vec::with_capacity(rounds / 10);
    for _ in 0..(rounds / 10).max(10) {
        let start = Instant::now();
        session.record(Entry::Message(&message));
        session.record(Entry::TurnEnd);
        synced.push(start.elapsed());
    }
    let (appended, synced_median) = (median(appends), median(synced.clone()));
    println!(
        "append + flush of a {size}-byte message record   median {appended:>10.2?}  (of {rounds})"
    );
    println!(
        "append + fdatasync (a message, then a turn end)  median {synced_median:>10.2?}  (of {})",
        synced.len()
    );
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    figures::record(
        "persistence",
        &format!("saving a message ({size}-byte record, one `write`, median)"),
        us(appended),
        "µs",
    );
    figures::record(
        "persistence",
        "saving a message and a turn end (`fdatasync`, median)",
        us(synced_median),
        "µs",
    );
}
