//! The commands README.md and docs/*.md show, run against the binary:
//! every `bareagent …` line of a code block and every `bareagent …` code
//! span is run — in a shell, as a reader pastes it, with a home and a
//! workspace of its own, no key and nothing to read on stdin — and must
//! exit 0 without a usage error. What cannot run so (it asks a model, needs
//! a terminal, or is a synopsis) is in [`NOT_RUN`], with why; a synopsis
//! that needs no model runs as the commands [`RUN_AS`] gives. A command
//! added to the docs later is run, or fails this test until it is put
//! there; an entry the docs no longer show fails it too.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::workspace;

/// The commands the docs show that this test does not run, and why.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "bareagent run \"Rename the config loader to load_settings and update the callers\"",
        "asks a model",
    ),
    (
        "OPENAI_BASE_URL=http://localhost:11434/v1 bareagent run --model qwen2.5-coder \"Explain src/main.rs\"",
        "asks a local model",
    ),
    (
        "bareagent run --continue \"go on\"",
        "asks a model (tests/it/sessions.rs)",
    ),
    (
        "bareagent run",
        "names the command: a turn needs a prompt and a model",
    ),
    (
        "bareagent run --json",
        "names the output mode: a turn needs a prompt and a model",
    ),
    (
        "bareagent run --resume",
        "names the flag: it resumes a session to ask a model",
    ),
    (
        "bareagent run --rewind",
        "undoes a session's last turn: needs one (tests/it/rewind.rs)",
    ),
    ("bareagent run PROMPT", "a synopsis"),
    ("bareagent run [OPTIONS] PROMPT", "a synopsis"),
    (
        "bareagent chat",
        "needs a terminal and a model (tests/it/chat.rs runs it in a pty)",
    ),
    ("bareagent chat [OPTIONS]", "a synopsis"),
    (
        "bareagent lsp",
        "a language server on stdio (tests/it/lsp.rs)",
    ),
    ("bareagent sessions rm ID", "a synopsis"),
    (
        "bareagent mcp add",
        "names the command (its forms follow it)",
    ),
    (
        "bareagent sessions rm ../../x",
        "shown as refused (tests/it/sessions.rs)",
    ),
];

/// Synopses the docs show, run as these commands.
const RUN_AS: &[(&str, &[&str])] = &[
    (
        "bareagent mcp list [--json]",
        &["bareagent mcp list", "bareagent mcp list --json"],
    ),
    (
        "bareagent trust [PATH]",
        &["bareagent trust", "bareagent trust ."],
    ),
    (
        "bareagent mcp remove NAME",
        &["bareagent mcp add demo -- true && bareagent mcp remove demo"],
    ),
];

/// A documented command and where it is shown.
#[derive(Debug)]
struct Shown {
    command: String,
    at: String,
}

/// The documents read: the README and docs/*.md.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root.join("README.md"));
    docs
}

/// Whether `text` invokes bareagent: `bareagent` and at least one argument
/// (not `bareagent = …` in a Lua table, nor `bareagent:` in output),
/// after optional `$ ` and `NAME=value` assignments.
fn is_command(text: &str) -> bool {
    let mut words = text.strip_prefix("$ ").unwrap_or(text).split(' ');
    let first = words
        .by_ref()
        .find(|word| {
            let assignment = word.split_once('=').is_some_and(|(name, _)| {
                !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            });
            !assignment
        })
        .unwrap_or_default();
    first == "bareagent"
        && words
            .next()
            .and_then(|word| word.chars().next())
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '[')
}

/// Every command the documents show: code-block lines (a trailing `# …`
/// comment dropped) and code spans (which may run across the lines of a
/// paragraph).
fn shown() -> Vec<Shown> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut shown = Vec::new();
    for path in documents() {
        let text = std::fs::read_to_string(&path).expect("a document");
        let name = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let mut found = |command: &str, line: usize| {
            if is_command(command) {
                shown.push(Shown {
                    command: command.to_string(),
                    at: format!("{name}:{line}"),
                });
            }
        };
        let mut in_block = false;
        // The paragraph being read: its first line, its text.
        let mut paragraph: Option<(usize, String)> = None;
        let spans = |paragraph: &mut Option<(usize, String)>,
                     found: &mut dyn FnMut(&str, usize)| {
            if let Some((line, text)) = paragraph.take() {
                for span in text.split('`').skip(1).step_by(2) {
                    found(span.trim(), line);
                }
            }
        };
        for (n, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.starts_with("```") {
                spans(&mut paragraph, &mut found);
                in_block = !in_block;
            } else if in_block {
                found(trimmed.split(" #").next().unwrap_or_default().trim(), n + 1);
            } else if trimmed.is_empty() {
                spans(&mut paragraph, &mut found);
            } else {
                let (_, text) = paragraph.get_or_insert_with(|| (n + 1, String::new()));
                text.push(' ');
                text.push_str(trimmed);
            }
        }
        spans(&mut paragraph, &mut found);
    }
    shown
}

/// Runs `command` as a reader would paste it: `sh -c`, with this build's
/// bareagent first on the PATH, in a fresh workspace and home, no key, no
/// provider chosen, nothing on stdin. Returns whether it passed, and what
/// it printed.
fn run(command: &str) -> (bool, String) {
    let dir = workspace(&[("README.md", "a project\n")]);
    let home = tempfile::tempdir().expect("home");
    let bin = Path::new(env!("CARGO_BIN_EXE_bareagent"))
        .parent()
        .expect("the binary's directory")
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let out = Command::new("timeout")
        .args(["60", "sh", "-c", command])
        .current_dir(dir.path())
        .env("PATH", path)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("BAREAGENT_PROVIDER")
        .env_remove("BAREAGENT_MODEL")
        .stdin(Stdio::null())
        .output()
        .expect("sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A usage error (clap's `error:` line, or a `Usage:` after one) fails
    // even with exit 0.
    let usage_error = stderr.lines().any(|line| line.starts_with("error:"));
    (
        out.status.success() && !usage_error,
        format!("{}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status),
    )
}

#[test]
fn every_command_the_docs_show_runs_or_is_said_why_not() {
    let shown = shown();
    assert!(
        shown.iter().any(|s| s.command == "bareagent acp --help"),
        "the extraction finds the README's commands: {shown:#?}"
    );
    let mut failed = Vec::new();
    let mut ran = Vec::new();
    for Shown { command, at } in &shown {
        if NOT_RUN.iter().any(|(skipped, _)| skipped == command) {
            continue;
        }
        let runs: Vec<&str> = match RUN_AS.iter().find(|(synopsis, _)| synopsis == command) {
            Some((_, commands)) => commands.to_vec(),
            None => vec![command.as_str()],
        };
        for command in runs {
            if ran.iter().any(|done| done == command) {
                continue;
            }
            let (passed, said) = run(command);
            if !passed {
                failed.push(format!(
                    "{at}: `{command}` failed (fix it, or add it to NOT_RUN with why): {said}"
                ));
            }
            ran.push(command.to_string());
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    let listed = NOT_RUN.iter().map(|(command, _)| *command);
    for listed in listed.chain(RUN_AS.iter().map(|(synopsis, _)| *synopsis)) {
        assert!(
            shown.iter().any(|s| s.command == listed),
            "`{listed}` is listed here, but the docs no longer show it"
        );
    }
    eprintln!("ran {} documented commands: {ran:?}", ran.len());
}

/// What counts as a command: an invocation with an argument, after `$ `
/// and variables; not the name alone, a Lua key or an output line.
#[test]
fn a_command_is_bareagent_with_an_argument() {
    for (text, is) in [
        ("bareagent sessions", true),
        ("$ bareagent acp --help", true),
        ("OPENAI_BASE_URL=http://x/v1 bareagent run \"x\"", true),
        ("bareagent trust [PATH]", true),
        ("bareagent", false),
        ("bareagent = function()", false),
        ("bareagent: anthropic: connection refused", false),
        ("bareagent.approveAlways", false),
        ("cargo install bareagent", false),
    ] {
        assert_eq!(is_command(text), is, "{text}");
    }
}
