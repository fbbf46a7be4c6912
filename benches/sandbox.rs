//! The sandbox's cost: the median wall time of `bash -c true` spawned and
//! waited for through `GroupProcess`, with the sandbox on (Landlock rules
//! built for the command, applied in the child) and off, interleaved in the
//! same run. Also the median time to build the rules alone.
//!
//! Also the cost of a command's view of unsaved buffers (one file
//! bind-mounted from a copy in a private mount namespace, see
//! `workspace/view.rs`), making the view included, against no view.
//!
//! `cargo bench --bench sandbox` (ROUNDS=N to change the repeat count;
//! BENCH_JSON=FILE appends the headline figures to FILE, see
//! support/figures.rs).

#[path = "support/figures.rs"]
mod figures;

use std::time::{Duration, Instant};

use bareagent::sandbox::{Sandbox, SandboxPolicy, SandboxSettings, SandboxStatus};
use bareagent::tools::GroupProcess;
use bareagent::workspace::{CommandView, PathResolver};
use tokio_util::sync::CancellationToken;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

async fn spawn_true(sandbox: &Sandbox, dir: &std::path::Path) -> Duration {
    spawn_true_seeing(sandbox, dir, None).await
}

/// With `view`: the view of that buffer text over `edited.py` is made
/// first, inside the timing.
async fn spawn_true_seeing(
    sandbox: &Sandbox,
    dir: &std::path::Path,
    view: Option<&str>,
) -> Duration {
    let start = Instant::now();
    let view = match view {
        Some(text) => {
            let paths = PathResolver::new(dir).expect("resolver");
            let file = paths.resolve("edited.py").expect("resolves");
            CommandView::mounting(&paths, vec![(file, text.to_string(), Some(1))]).expect("view")
        }
        None => CommandView::default(),
    };
    let mut process = GroupProcess::spawn("true", dir, sandbox, &view).expect("bash starts");
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
    let enforced = matches!(on.status(), SandboxStatus::Enforced { .. });
    if !enforced {
        eprintln!(
            "the sandbox is not enforced here ({}); figures compare nothing",
            on.status()
        );
        let why = format!("needs the sandbox enforced (here: {})", on.status());
        figures::not_run("sandbox", "the sandbox's cost per command", &why);
    }
    // A repository with power files: its `.git/hooks`, `config`, `info`,
    // `.vscode` and `.envrc` are pinned read-only in a mount namespace of
    // the command's own (sandbox/protected.rs), a cost paid by every command.
    let repo = tempfile::tempdir().expect("repository");
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(repo.path())
        .status()
        .expect("git init");
    assert!(init.success());
    std::fs::create_dir(repo.path().join(".vscode")).expect(".vscode");
    std::fs::write(repo.path().join(".envrc"), "").expect(".envrc");
    let in_repo = Sandbox::new(SandboxPolicy::new(&SandboxSettings::default(), repo.path()))
        .expect("sandbox");
    let off = Sandbox::off();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    std::fs::write(
        dir.path().join("edited.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .expect("a file to edit");
    let buffer = "def product(a, b):\n    return a * b\n".repeat(100);
    let (mut with, mut without, mut rules) = (Vec::new(), Vec::new(), Vec::new());
    let (mut viewed, mut protected) = (Vec::new(), Vec::new());
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
            viewed.push(spawn_true_seeing(&on, dir.path(), Some(&buffer)).await);
            protected.push(spawn_true(&in_repo, repo.path()).await);
        }
    });
    let (with, without, rules) = (median(with), median(without), median(rules));
    let (viewed, protected) = (median(viewed), median(protected));
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
    println!(
        "  with the sandbox and a view of one unsaved buffer {:>8.2} ms (+{:.2} ms)",
        viewed.as_secs_f64() * 1e3,
        (viewed.as_secs_f64() - with.as_secs_f64()) * 1e3
    );
    println!(
        "  with the sandbox in a git repository (5 paths pinned) {:>8.2} ms (+{:.2} ms)",
        protected.as_secs_f64() * 1e3,
        (protected.as_secs_f64() - with.as_secs_f64()) * 1e3
    );
    if enforced {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let figure = |name: &str, value| figures::record("sandbox", name, value, "ms");
        figure("`bash -c true` without the sandbox (median)", ms(without));
        figure("`bash -c true` with the sandbox (median)", ms(with));
        figure(
            "the sandbox's cost per command (the difference)",
            ms(with) - ms(without),
        );
        figure(
            "the same in a git repository (5 paths pinned, median)",
            ms(protected),
        );
    }
}
