//! `bareagent run` on a real terminal (a pseudo-terminal that is the
//! process's controlling terminal): Ctrl-C at a prompt, and what the
//! terminal shows of a turn.

use std::io::Write;
use std::process::Command;

use crate::approvals::{bareagent, on_a_terminal_with, two_sensitive_reads};

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
    assert!(crate::approvals::wait_exit(&mut child).success());
    // The turn ended there: no tool ran and the model was not called again.
    assert_eq!(server.requests().len(), 1);
}
