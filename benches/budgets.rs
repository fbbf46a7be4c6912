//! The release binary's memory budgets, on the figures the peers and lsp
//! benches wrote just before in the same run (`.ci/run`): a figure more
//! than 10% over its budget, or a figure missing, fails the run.

#[path = "support/budgets.rs"]
mod budgets;

use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = budgets::bench_dir();
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name)).map_err(|e| {
            format!(
                "{}: {e} (run the peers and lsp benches first, as .ci/run does)",
                dir.join(name).display()
            )
        })
    };
    let checked = read("peers.json")
        .and_then(|peers| Ok((peers, read("lsp.jsonl")?)))
        .and_then(|(peers, lsp)| budgets::check(&peers, &lsp));
    match checked {
        Ok(failures) if failures.is_empty() => ExitCode::SUCCESS,
        Ok(failures) => {
            eprintln!("{}", failures.join("\n"));
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("{error}");
            ExitCode::FAILURE
        }
    }
}
