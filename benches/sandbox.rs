//! The sandbox's cost: the median wall time of `bash -c true` spawned and
//! waited for through `GroupProcess`, with the sandbox on (Landlock rules
//! built for the command, applied in the child) and off, interleaved in the
//! same run. Also the median time to build the rules alone.
//!
//! `cargo bench --bench sandbox` (ROUNDS=N to change the repeat count).

use std::time::{Duration, Instant};

use bareagent::sandbox::{Sandbox, SandboxPolicy, SandboxSettings, SandboxStatus};
use bareagent::tools::GroupProcess;
use tokio_util::sync::CancellationToken;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

async fn spawn_true(sandbox: &Sandbox, dir: &std::path::Path) -> Duration {
    let start = Instant::now();
    let mut process =
        GroupProcess::spawn("true", dir, sandbox, &Default::default()).expect("bash starts");
    let ending = process.wait(None, &CancellationToken::new()).await;
    let took = start.elapsed();
    assert_eq!(
        ending,
        bareagent::tools::Ending::Exited(0),
        "bash -c true failed"
    );
    took
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().expect("workspace");
    let on =
        Sandbox::new(SandboxPolicy::new(&SandboxSettings::default(), dir.path())).expect("sandbox");
    if !matches!(on.status(), SandboxStatus::Enforced { .. }) {
        eprintln!(
            "the sandbox is not enforced here ({}); figures compare nothing",
            on.status()
        );
    }
    let off = Sandbox::off();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (mut with, mut without, mut rules) = (Vec::new(), Vec::new(), Vec::new());
    runtime.block_on(async {
        // Warm up the page cache and the allocator.
        for _ in 0..5 {
            spawn_true(&on, dir.path()).await;
            spawn_true(&off, dir.path()).await;
        }
        for _ in 0..rounds {
            with.push(spawn_true(&on, dir.path()).await);
            without.push(spawn_true(&off, dir.path()).await);
            let start = Instant::now();
            drop(on.confinement(&[]).expect("rules"));
            rules.push(start.elapsed());
        }
    });
    let (with, without, rules) = (median(with), median(without), median(rules));
    println!("sandbox: {}", on.status());
    println!("bash -c true, median of {rounds}:");
    println!(
        "  without the sandbox  {:>8.2} ms",
        without.as_secs_f64() * 1e3
    );
    println!(
        "  with the sandbox     {:>8.2} ms",
        with.as_secs_f64() * 1e3
    );
    println!(
        "  difference           {:>8.2} ms (building the rules alone: {:.2} ms)",
        (with.as_secs_f64() - without.as_secs_f64()) * 1e3,
        rules.as_secs_f64() * 1e3
    );
}
