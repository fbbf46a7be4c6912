#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::undocumented_unsafe_blocks
)]

use std::process::ExitCode;

use clap::Parser;

use bareagent::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
    // The language server's and ACP's stderr is the editor's log; the
    // other commands' is the user's terminal.
    let for_people = !matches!(cli.command, None | Some(Command::Lsp | Command::Acp(_)));
    init_logging(for_people);
    // Still one thread: the only time forking the reaper is sound.
    protect_environment();
    if let Err(error) = bareagent::tools::start_reaper() {
        tracing::warn!(%error, "cannot start the process reaper: commands may outlive the agent if it is killed");
    }
    // Read the keys once, now, so every tool result can be scrubbed of them.
    let secrets = bareagent::secrets::Secrets::global();
    tracing::debug!(names = ?secrets.names().collect::<Vec<_>>(), "secrets to scrub from tool output");
    // One thread for every front end: a turn is I/O bound, and the
    // language server's file work (settings, the chat's disk appends) runs
    // in `spawn_blocking`, so `didChange` is not stalled behind it (measured
    // by `cargo bench --bench lsp`, SECTIONS=busy; two workers did no better
    // and cost 0.6 MiB).
    let built = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let runtime = match built {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("bareagent: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        None | Some(Command::Lsp) => {
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                eprintln!(
                    "bareagent: this is the language server, waiting for LSP messages on stdin; \
                     start it from your editor, or talk with the agent here with `bareagent chat` \
                     or `bareagent run \"…\"` \
                     (see `bareagent run --help`)."
                );
            }
            let clean = runtime.block_on(bareagent::lsp::serve(cli.client_process_id));
            ended(runtime, clean)
        }
        Some(Command::Acp(args)) => {
            let clean = runtime.block_on(bareagent::acp::serve(args));
            ended(runtime, clean)
        }
        Some(Command::Trust { path, remove }) => {
            exit_code(bareagent::cli::trust(path, remove).map(|()| ExitCode::SUCCESS))
        }
        Some(Command::Mcp { action }) => exit_code(
            runtime
                .block_on(bareagent::cli::mcp(action))
                .map(|()| ExitCode::SUCCESS),
        ),
        Some(Command::Sessions { action }) => {
            exit_code(bareagent::cli::sessions(action).map(|()| ExitCode::SUCCESS))
        }
        Some(Command::Chat(args)) => {
            let result = runtime.block_on(bareagent::cli::chat(args));
            // As after `run`: an approval's reader may still be in read(2).
            runtime.shutdown_background();
            exit_code(result)
        }
        Some(Command::Run(args)) => {
            let result = runtime.block_on(bareagent::cli::run(args));
            // A prompt cut short by Ctrl-C leaves its reader blocked in
            // read(2) on the terminal: waiting for it would hang until the
            // user typed a line, and then take that line from their shell.
            runtime.shutdown_background();
            exit_code(result)
        }
    }
}

/// A server's end: stdin's reader thread may still be blocked in read(2),
/// so the runtime is not waited for.
fn ended(runtime: tokio::runtime::Runtime, clean: bool) -> ExitCode {
    runtime.shutdown_background();
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// A command's exit code: its own, or 2 with the error on stderr.
fn exit_code(result: anyhow::Result<ExitCode>) -> ExitCode {
    result.unwrap_or_else(|error| {
        eprintln!("bareagent: {error:#}");
        ExitCode::from(2)
    })
}

/// Children may not read the keys in our `/proc/self/environ` (nor attach a
/// debugger): a non-dumpable process's `/proc` files belong to root. Root
/// with CAP_SYS_PTRACE still passes; the sandbox (Landlock refuses ptrace-
/// mode access to processes outside the command) and the scrubbing of tool
/// output close that.
fn protect_environment() {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        tracing::warn!(error = %std::io::Error::last_os_error(), "cannot make the agent non-dumpable");
    }
}

/// Clap's own message, and for a prompt given where a command was expected
/// (`bareagent "fix it"`), the command that asks it.
fn usage_error(error: clap::Error) -> ExitCode {
    let _ = error.print();
    if error.kind() == clap::error::ErrorKind::InvalidSubcommand {
        let words: Vec<String> = std::env::args().skip(1).collect();
        let prompt = words.join(" ").replace('"', "\\\"");
        eprintln!("\nTo ask the agent: bareagent run \"{prompt}\"");
    }
    match error.kind() {
        clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
            ExitCode::SUCCESS
        }
        _ => ExitCode::from(2),
    }
}

/// Logs go to stderr (stdout is the protocol channel or the answer), filtered
/// by `BAREAGENT_LOG` (e.g. `debug`, `bareagent=trace`); warnings by default,
/// `for_people` (a terminal's commands) each as one plain sentence.
fn init_logging(for_people: bool) {
    let asked = tracing_subscriber::EnvFilter::try_from_env("BAREAGENT_LOG").ok();
    let plain = for_people && asked.is_none();
    // rmcp's own errors would repeat ours, with a server's URL as
    // expanded (a `${TOKEN}` in it included): off unless asked for.
    let filter = asked.unwrap_or_else(|| tracing_subscriber::EnvFilter::new("warn,rmcp=off"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    let _ = if plain {
        logs.event_format(bareagent::cli::LogSentence).try_init()
    } else {
        logs.try_init()
    };
}
