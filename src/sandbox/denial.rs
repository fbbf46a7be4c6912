//! The note a failed command's result gets when its output looks like the
//! sandbox refused it, so the model asks the user instead of retrying.
//!
//! A hint, not a fact: the kernel answers EACCES/EPERM without saying which
//! rule refused, and file permissions give the same message. The path is
//! taken from the message where the tool printed one.

use std::path::{Path, PathBuf};

use super::{SandboxMode, SandboxPolicy};

const REFUSALS: &[&str] = &[
    "Permission denied",
    "Operation not permitted",
    "EACCES",
    "EPERM",
];

/// How the kernel refuses a change to a protected path: written
/// (read-only), renamed or removed (a mount point), moved or linked out of
/// it (another mount).
const PROTECTED_REFUSALS: &[&str] = &[
    "Read-only file system",
    "EROFS",
    "Device or resource busy",
    "EBUSY",
    "Invalid cross-device link",
    "EXDEV",
];

/// The note for a protected path.
const PROTECTED_NOTE: &str = "commands may not change, move or link it: git's hooks and config, the editor's, direnv's and the agent's settings and denied files are protected because your tools run or read them later; ask the user to do it";

/// How the note starts: a surface that shortens results finds it by this
/// and shows it whole.
pub const HINT_PREFIX: &str = "[sandbox] ";

/// At most this many refused paths are named.
const MAX_NOTES: usize = 3;

/// The note for `output`, or `None` when nothing in it looks refused.
pub fn explain(
    output: &str,
    policy: &SandboxPolicy,
    temp: Option<&Path>,
    tcp_blocked: bool,
) -> Option<String> {
    let mut notes: Vec<String> = Vec::new();
    for line in output.lines() {
        if notes.len() >= MAX_NOTES {
            break;
        }
        if PROTECTED_REFUSALS.iter().any(|r| line.contains(r)) {
            let note = match path_in(line) {
                Some(path) => format!(
                    "{}: {PROTECTED_NOTE}",
                    policy.workspace.join(path).display()
                ),
                None => format!("a protected path: {PROTECTED_NOTE}"),
            };
            if !notes.contains(&note) {
                notes.push(note);
            }
            continue;
        }
        if !REFUSALS.iter().any(|r| line.contains(r)) {
            continue;
        }
        let note = if is_connect(line) {
            if tcp_blocked {
                "a network connection: outbound TCP is off in the sandbox (sandbox.network = false); ask the user to run it, or to set sandbox.network = true".to_string()
            } else {
                continue;
            }
        } else if is_signal(line) {
            "a signal to a process outside this command: the sandbox confines signals (stop background commands with kill_bash)".to_string()
        } else if let Some(path) = path_in(line) {
            // Relative to the command's directory (the workspace root), and
            // through symlinks, as the kernel saw it.
            let path = super::landlock::resolve_existing(&policy.workspace.join(&path));
            match classify(&path, policy, temp) {
                Some(why) => format!("{}: {why}", path.display()),
                None => continue,
            }
        } else {
            "an operation (the message names no path)".to_string()
        };
        if !notes.contains(&note) {
            notes.push(note);
        }
    }
    if notes.is_empty() {
        return None;
    }
    Some(format!(
        "{HINT_PREFIX}This command may have been refused by the sandbox (a hint from the error message; the kernel does not say which rule refused): {}.",
        notes.join("; ")
    ))
}

fn is_connect(line: &str) -> bool {
    let line = line.to_ascii_lowercase();
    [
        "connect:",
        "/dev/tcp/",
        "/dev/udp/",
        "socket:",
        "bind:",
        "connection",
    ]
    .iter()
    .any(|word| line.contains(word))
}

fn is_signal(line: &str) -> bool {
    line.trim_start().starts_with("kill:") || line.contains(": kill:")
}

/// Why the sandbox would refuse `path`, or `None` when it would not (then
/// the refusal came from somewhere else, say file permissions).
fn classify(path: &Path, policy: &SandboxPolicy, temp: Option<&Path>) -> Option<String> {
    if path.starts_with("/proc") {
        return Some(
            "another process's /proc files are refused: commands may not inspect the agent or processes outside them"
                .into(),
        );
    }
    if policy.deny_read.iter().any(|d| path.starts_with(d)) {
        return Some(
            "reading it is refused: it holds secrets commands may not read; ask the user to run it"
                .into(),
        );
    }
    let writable = temp.into_iter().any(|t| path.starts_with(t))
        || (policy.mode == SandboxMode::WorkspaceWrite
            && (path.starts_with(&policy.workspace)
                || policy.writable.iter().any(|w| path.starts_with(w))));
    if writable {
        return None;
    }
    let hint = match policy.mode {
        SandboxMode::ReadOnly => {
            "writing it is refused: the sandbox is read-only (sandbox.mode = \"read-only\"); ask the user to run it"
        }
        _ => {
            "writing it is refused: it is outside the workspace, $TMPDIR and the writable folders; ask the user to run it, or to add the folder to sandbox.writable"
        }
    };
    Some(hint.into())
}

/// The path a refusal message names: the last quoted one (`'…'`, `‘…’`,
/// `"…"`), else the `: `-separated field that looks like a path.
fn path_in(line: &str) -> Option<PathBuf> {
    for (open, close) in [('\'', '\''), ('‘', '’'), ('"', '"'), ('`', '\'')] {
        let mut quoted = None;
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let inner = &after[..end];
            if looks_like_path(inner) {
                quoted = Some(inner);
            }
            rest = &after[end + close.len_utf8()..];
        }
        if let Some(path) = quoted {
            return Some(PathBuf::from(path));
        }
    }
    line.split(": ")
        .map(str::trim)
        .filter(|field| looks_like_path(field))
        .last()
        .map(PathBuf::from)
}

fn looks_like_path(text: &str) -> bool {
    !text.is_empty()
        && !text.contains(char::is_whitespace)
        && (text.contains('/') || text.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> SandboxPolicy {
        SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            workspace: "/work/project".into(),
            writable: vec!["/home/u/.cargo".into()],
            deny_read: vec!["/home/u/.ssh".into()],
            network: false,
        }
    }

    #[test]
    fn refusals_are_explained_with_the_path_from_the_message() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "bash: line 1: /tmp/x: Permission denied",
                Some("/tmp/x: writing it is refused: it is outside the workspace"),
            ),
            (
                "touch: cannot touch '/etc/x': Permission denied",
                Some("/etc/x: writing it is refused"),
            ),
            (
                "mkdir: cannot create directory ‘/opt/d’: Permission denied",
                Some("/opt/d: writing it is refused"),
            ),
            (
                "PermissionError: [Errno 13] Permission denied: '/var/y'",
                Some("/var/y: writing it is refused"),
            ),
            (
                "cat: /home/u/.ssh/id_rsa: Permission denied",
                Some("/home/u/.ssh/id_rsa: reading it is refused"),
            ),
            (
                "bash: connect: Permission denied\nbash: line 1: /dev/tcp/127.0.0.1/80: Permission denied",
                Some("outbound TCP is off"),
            ),
            (
                "bash: line 1: kill: (42) - Operation not permitted",
                Some("a signal to a process outside"),
            ),
            (
                "bash: line 1: /proc/7/environ: Permission denied",
                Some("/proc/7/environ: another process's /proc files"),
            ),
            (
                "touch: cannot touch '/work/project/x': Permission denied",
                None,
            ),
            (
                "cat: ../../etc/x: Permission denied",
                Some("/etc/x: writing it is refused"),
            ),
            ("error: could not compile", None),
        ];
        for (output, expected) in cases {
            let note = explain(
                output,
                &policy(),
                Some(Path::new("/tmp/bareagent-tmp-1")),
                true,
            );
            match expected {
                Some(part) => {
                    let note = note.unwrap_or_else(|| panic!("no note for {output:?}"));
                    assert!(note.contains(part), "{output:?} → {note}");
                    assert!(note.contains("hint"), "{note}");
                }
                None => assert_eq!(note, None, "{output:?}"),
            }
        }
    }
}
