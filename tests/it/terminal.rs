//! `bareagent run` on a real terminal (a pseudo-terminal that is the
//! process's controlling terminal): Ctrl-C at a prompt, the spinner that
//! waits for the model, and what the terminal shows of tool calls.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::approvals::{
    bareagent, on_a_terminal, on_a_terminal_with, two_sensitive_reads, wait_exit,
};
use crate::common::workspace;
use crate::support::model_server::{Fault, ModelServer, Reply, Step};

/// `inner` run by a shell that, after it, reads one line from the terminal
/// and says what it read: what a user's shell does with the next line typed.
fn in_a_shell(inner: &Command) -> Command {
    let mut shell = Command::new("bash");
    // The shell survives the ^C meant for bareagent, as an interactive one would.
    shell
        .arg("-c")
        .arg(r#"trap : INT; "$@"; echo "bareagent exited with $?"; IFS= read -r line; echo "the shell read: $line""#)
        .arg("bash")
        .arg(inner.get_program())
        .args(inner.get_args());
    for (name, value) in inner.get_envs() {
        match value {
            Some(value) => shell.env(name, value),
            None => shell.env_remove(name),
        };
    }
    if let Some(dir) = inner.get_current_dir() {
        shell.current_dir(dir);
    }
    shell
}

/// Kills a session's process group when a test ends, passed or not: the
/// shell and the bareagent it waits for must not outlive a failed test.
struct KillGroupOnDrop(u32);

impl Drop for KillGroupOnDrop {
    fn drop(&mut self) {
        if let Ok(group) = i32::try_from(self.0) {
            // SAFETY: kill with a negative pid signals that process group.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
    }
}

/// Ctrl-C while the approval prompt waits ends bareagent at once with 130,
/// and the line typed next goes to the shell, not to bareagent.
#[test]
fn ctrl_c_at_the_prompt_exits_at_once_and_leaves_the_next_line_to_the_shell() {
    let (dir, server) = two_sensitive_reads();
    let shell = in_a_shell(&bareagent(dir.path(), &server, &[]));
    let (mut master, mut child, terminal) = on_a_terminal_with(shell, None);
    let _group = KillGroupOnDrop(child.id());
    terminal.wait_for("the prompt", |t| t.contains("Allow read_file .env?"));
    master.write_all(b"\x03").unwrap();
    // Without typing anything: bareagent must not wait for a line.
    let shown = terminal.wait_for("bareagent to exit", |t| t.contains("bareagent exited with"));
    assert!(shown.contains("bareagent exited with 130"), "{shown}");
    master.write_all(b"the next line\n").unwrap();
    terminal.wait_for("the shell to read the next line", |t| {
        t.contains("the shell read: the next line")
    });
    assert!(wait_exit(&mut child).success());
    // The turn ended there: no tool ran and the model was not called again.
    assert_eq!(server.requests().len(), 1);
}

const SPINNER: &str = "waiting for the model…";

fn waiting_script() -> Vec<Step> {
    vec![
        Reply::tool("read_file", json!({"path": "a.txt"}))
            .with_delay(800)
            .into(),
        Reply::text("The answer.").with_delay(800).into(),
    ]
}

fn run_command(dir: &Path, server: &ModelServer, extra: &[&str]) -> Command {
    let mut command = crate::common::bareagent(dir);
    crate::common::run_against_model(&mut command, server)
        .args(extra)
        .arg("read a.txt");
    command
}

/// On a terminal, a spinner with the elapsed time waits for the model (for
/// the first call and after the tools' results) and is cleared before the
/// next line: a tool's, or the answer's.
#[test]
fn on_a_terminal_a_spinner_waits_for_the_model_and_is_cleared_when_text_arrives() {
    let dir = workspace(&[("a.txt", "alpha\n")]);
    let server = ModelServer::start(waiting_script());
    let (_master, mut child, terminal) =
        on_a_terminal_with(run_command(dir.path(), &server, &[]), None);
    let _group = KillGroupOnDrop(child.id());
    assert!(wait_exit(&mut child).success(), "{}", terminal.text());
    let shown = terminal.text();
    let tool = shown.find("→ read_file a.txt").expect(&shown);
    let result = shown.find("\talpha").expect(&shown);
    let answer = shown.find("The answer.").expect(&shown);
    // Waiting before the first call's reply, and again before the second's.
    for (from, to) in [(0, tool), (result, answer)] {
        let between = &shown[from..to];
        let last = between
            .rfind(SPINNER)
            .unwrap_or_else(|| panic!("no spinner between {from} and {to}:\n{shown:?}"));
        // With its elapsed time (`0s`, `1s`), then erased before what follows.
        let after = &between[last + SPINNER.len()..];
        assert!(
            after.trim_start().starts_with(|c: char| c.is_ascii_digit()),
            "{after:?}"
        );
        assert!(after.contains("\x1b[2K"), "not cleared: {after:?}");
    }
    assert!(
        !shown[answer..].contains(SPINNER),
        "the spinner came back after the answer: {shown:?}"
    );
}

/// Off a terminal, or with `--json`, there is never a spinner.
#[test]
fn no_spinner_off_a_terminal_or_with_json() {
    let dir = workspace(&[("a.txt", "alpha\n")]);
    let server = ModelServer::start(waiting_script());
    let out = run_command(dir.path(), &server, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("\talpha"), "{stderr}");
    assert!(
        !stderr.contains(SPINNER) && !stderr.contains('\x1b'),
        "{stderr:?}"
    );

    let server = ModelServer::start(waiting_script());
    let (_master, mut child, terminal) =
        on_a_terminal(run_command(dir.path(), &server, &["--json"]));
    let _group = KillGroupOnDrop(child.id());
    assert!(wait_exit(&mut child).success(), "{}", terminal.text());
    assert_eq!(server.requests().len(), 2);
    assert!(!terminal.text().contains(SPINNER), "{:?}", terminal.text());
}

/// A tool line says what the chat file says (`grep add\(`), not the input's
/// JSON; a command shows its last lines and how many came before; the
/// sandbox's hint is shown whole, as the model got it.
#[test]
fn tool_lines_say_what_the_chat_says_and_commands_show_their_last_lines() {
    let dir = workspace(&[("calc.py", "def add(a, b):\n    return a + b\n")]);
    let outside = tempfile::tempdir().unwrap();
    let refused = outside.path().join("refused.txt");
    let server = ModelServer::start(vec![
        Reply::tool(
            "grep",
            json!({"pattern": "add\\(", "output_mode": "content"}),
        )
        .into(),
        Reply::tool("bash", json!({"command": "seq 1 12"})).into(),
        Reply::tool(
            "bash",
            json!({"command": format!("seq 1 3; touch {}", refused.display())}),
        )
        .into(),
        Reply::text("done").into(),
    ]);
    let out = crate::common::run_against_model(&mut crate::common::bareagent(dir.path()), &server)
        .args(["--permission-mode", "bypass", "look"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("→ grep add\\(\n"), "{stderr}");
    assert!(!stderr.contains("{\""), "raw JSON in a tool line: {stderr}");
    let tail = "→ bash seq 1 12\n  ✓\n    │ … 7 earlier lines\n    │ 8\n    │ 9\n    │ 10\n    │ 11\n    │ 12\n";
    assert!(stderr.contains(tail), "{stderr}");

    if crate::sandbox::landlock_abi().is_none() {
        return;
    }
    let sent = crate::common::sent_tool_results(&server.requests()[3].body);
    let (result, is_error) = sent.last().expect("the refused command's result");
    assert!(is_error, "{result}");
    let hint = result
        .lines()
        .find(|line| line.starts_with("[sandbox] "))
        .unwrap_or_else(|| panic!("no hint for the model: {result}"));
    assert!(hint.len() > 160, "a hint long enough to be cut: {hint}");
    assert!(
        stderr.contains(&format!("\n  {hint}\n")),
        "the hint is not shown whole:\n{stderr}"
    );
    assert!(
        stderr.contains("  ✗ exit code 1\n    │ 1\n    │ 2\n    │ 3\n"),
        "{stderr}"
    );
}

/// On a terminal, the thought stands in the spinner's line while the model
/// thinks (its latest line, after `thinking…`), and once it is done one
/// line says how long it was, before what follows.
#[test]
fn on_a_terminal_the_thought_stands_in_the_spinner_line_then_one_line() {
    let dir = workspace(&[("a.txt", "alpha\n")]);
    let thinking = Reply::tool("read_file", json!({"path": "a.txt"}))
        .with_thinking("Look in a.txt.\nIt has the answer.", "sig");
    // The model stalls after the thought's first piece.
    let stalled = Fault::Stall {
        reply: thinking,
        after_text: true,
        secs: 1,
    };
    let server = ModelServer::start(vec![stalled.into(), Reply::text("The answer.").into()]);
    let (_master, mut child, terminal) =
        on_a_terminal_with(run_command(dir.path(), &server, &[]), None);
    let _group = KillGroupOnDrop(child.id());
    assert!(wait_exit(&mut child).success(), "{}", terminal.text());
    let shown = terminal.text();
    let tool = shown.find("→ read_file a.txt").expect(&shown);
    let before = &shown[..tool];
    let thinking = before.find("thinking…").expect(before);
    assert!(before[thinking..].contains("Look in a"), "{before:?}");
    assert!(
        before[thinking..].contains("(thought for 2 lines)"),
        "{before:?}"
    );
    // Only ever in the spinner's line, erased with it: never a line of its own.
    assert!(
        !shown.contains("It has the answer.\r\n"),
        "the thought stays folded: {shown:?}"
    );
}
