//! Running a shell command as its own process group, so that a timeout, a
//! cancel or the end of the session kills everything it started —
//! grandchildren included — and nothing is left behind.
//!
//! Built on tokio's `Command`, `setsid` in the child and `killpg`, rather
//! than a wrapper crate: the whole mechanism is the few lines below. In the
//! child, before exec, the group registers with the reaper (so it dies with
//! the agent, see `reaper.rs`) and the sandbox confines it (see `sandbox`).

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::output::OutputBuffer;
use super::reaper;
use crate::sandbox::Sandbox;
use crate::sync::Locked;
use crate::workspace::CommandView;

/// How long to keep reading pipes after the command exits: a grandchild
/// that inherited them (`server &`) would otherwise keep us waiting forever.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(300);

pub type SharedOutput = Arc<Mutex<OutputBuffer>>;

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    /// Killed by a signal it did not expect (not by us).
    Signalled(i32),
    TimedOut(Duration),
    Cancelled,
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Exited(code) => write!(f, "exit code {code}"),
            Ending::Signalled(signal) => write!(f, "killed by signal {signal}"),
            Ending::TimedOut(after) => write!(
                f,
                "timed out after {} s; the command and its children were killed",
                after.as_secs()
            ),
            Ending::Cancelled => write!(f, "cancelled; the command and its children were killed"),
        }
    }
}

pub struct GroupProcess {
    child: tokio::process::Child,
    /// The process group id (the leader's pid).
    pgid: i32,
    pub output: SharedOutput,
    /// The bytes read so far, told as they grow (for a live view).
    grown: tokio::sync::watch::Receiver<usize>,
    readers: Option<JoinHandle<()>>,
    /// Keeps the sandbox's private temp folder while the command runs.
    _temp: Option<Arc<tempfile::TempDir>>,
}

/// Environment variables a command must not see: the provider keys.
pub(crate) fn is_secret(name: &str) -> bool {
    name.ends_with("_API_KEY") || name.ends_with("_AUTH_TOKEN") || name.ends_with("_CUSTOM_HEADERS")
}

/// git settings every command runs with, whatever the repository's config
/// says: a directory shaped like a bare repository is not one (a cloned
/// project could ship one whose config runs programs), and no file-system
/// monitor program is started (its only effect is speed).
const GIT_OVERRIDES: [(&str, &str); 2] = [
    ("safe.bareRepository", "explicit"),
    ("core.fsmonitor", "false"),
];

/// What the permission check assumed when it read the line: `cd` goes
/// where it says (no `CDPATH`), a bare name is a program from the system's
/// `PATH`, never one the workspace planted (no empty or relative entries),
/// and git keeps [`GIT_OVERRIDES`], added after any the user set.
fn harden_environment(cmd: &mut tokio::process::Command) {
    cmd.env_remove("CDPATH");
    if let Some(path) = std::env::var_os("PATH") {
        let absolute: Vec<std::path::PathBuf> = std::env::split_paths(&path)
            .filter(|dir| dir.is_absolute())
            .collect();
        if let Ok(joined) = std::env::join_paths(absolute) {
            cmd.env("PATH", joined);
        }
    }
    let first = std::env::var("GIT_CONFIG_COUNT")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    for (offset, (key, value)) in GIT_OVERRIDES.iter().enumerate() {
        cmd.env(format!("GIT_CONFIG_KEY_{}", first + offset), key);
        cmd.env(format!("GIT_CONFIG_VALUE_{}", first + offset), value);
    }
    cmd.env(
        "GIT_CONFIG_COUNT",
        (first + GIT_OVERRIDES.len()).to_string(),
    );
}

/// What a confined child needs kept until it is spawned (the sandbox's
/// ruleset) and while it runs (the session's temp folder).
pub(crate) struct Confined {
    pub confinement: crate::sandbox::Confinement,
    pub temp: Option<Arc<tempfile::TempDir>>,
}

/// Makes `cmd` a process of the agent's the way commands are: the provider
/// keys removed from its environment (hardened as [`harden_environment`]
/// says), a session and process group of its own registered with the
/// reaper between fork and exec (so it dies with the agent), the files of
/// `view` mounted from their copies, and `sandbox` applied. Keep the
/// result until `cmd` is spawned ([`spawn_confined`]). Language servers
/// run this way too (`language_servers`).
pub(crate) fn confine(
    cmd: &mut tokio::process::Command,
    sandbox: &Sandbox,
    view: &CommandView,
) -> std::io::Result<Confined> {
    reaper::check_cgroup();
    let mut confinement = sandbox
        .confinement(&view.copies())
        .map_err(std::io::Error::other)?;
    let mounts = view.for_child(confinement.take_pinned())?;
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(is_secret) {
            cmd.env_remove(name);
        }
    }
    harden_environment(cmd);
    let temp = confinement.environment(cmd);
    let confine = confinement.for_child();
    // SAFETY: the closure makes only async-signal-safe syscalls (setsid,
    // getpid, send, unshare, mount, prctl, capset, landlock_restrict_self,
    // seccomp), as the child
    // of a threaded process must; `confinement` keeps the ruleset open
    // until spawned. Mounting comes before the sandbox, which forbids it.
    unsafe {
        cmd.pre_exec(move || {
            // A session of its own: its own process group (killed
            // whole), and no controlling terminal, so it cannot type
            // into the user's shell or an approval (TIOCSTI) or read
            // the terminal's keys.
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            reaper::register_self()?;
            if let Some(mounts) = &mounts {
                mounts.apply()?;
            }
            confine.apply()
        });
    }
    Ok(Confined { confinement, temp })
}

/// Spawns a [`confine`]d command; a registration the reaper cannot take
/// is said as what it means.
pub(crate) fn spawn_confined(
    cmd: &mut tokio::process::Command,
) -> std::io::Result<tokio::process::Child> {
    cmd.spawn().map_err(|error| {
        if error.raw_os_error() == Some(libc::EPIPE) && reaper::is_running() {
            std::io::Error::other(
                "the process reaper is gone, so commands could outlive the agent; restart bareagent",
            )
        } else {
            error
        }
    })
}

/// Keeps the last `max` bytes of a server's stderr in `tail` (each line
/// logged at debug level), for the error that says why it ended: MCP and
/// language servers.
pub(crate) fn keep_stderr_tail(
    name: String,
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<String>>,
    max: usize,
) {
    use tokio::io::AsyncBufReadExt;
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(server = name, "stderr: {line}");
            let mut tail = tail.locked();
            tail.push_str(&line);
            tail.push('\n');
            if tail.len() > max {
                let cut = tail.len() - max;
                let cut = (cut..tail.len())
                    .find(|&at| tail.is_char_boundary(at))
                    .unwrap_or(tail.len());
                tail.drain(..cut);
            }
        }
    });
}

impl GroupProcess {
    /// Starts `bash -c command` in `cwd`, stdin closed, stdout and stderr
    /// captured together, in a new process group, inside `sandbox`.
    /// Files of `view` are mounted from their copies, in a mount namespace
    /// of the command's own.
    pub fn spawn(
        command: &str,
        cwd: &Path,
        sandbox: &Sandbox,
        view: &CommandView,
    ) -> std::io::Result<GroupProcess> {
        // One pipe for stdout and stderr, as a terminal has: the output
        // keeps the order in which the command wrote it.
        let (reader, writer) = std::io::pipe()?;
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(command)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(writer.try_clone()?)
            .stderr(writer)
            .kill_on_drop(true)
            // Pagers would wait for a keypress nobody can give.
            .env("PAGER", "cat")
            .env("GIT_PAGER", "cat")
            .env("GIT_TERMINAL_PROMPT", "0");
        let confined = confine(&mut cmd, sandbox, view)?;
        let child = spawn_confined(&mut cmd)?;
        let Confined { confinement, temp } = confined;
        drop(confinement);
        // Our copies of the write end went into the Command, which is dropped
        // here: the pipe ends when the last process holding it exits.
        drop(cmd);
        let mut pipe =
            tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader))?;
        let pgid = child.id().map(|id| id as i32).unwrap_or(0);
        let output: SharedOutput = Arc::default();
        let sink = output.clone();
        let (grow, grown) = tokio::sync::watch::channel(0);
        let readers = tokio::spawn(async move {
            let mut buffer = vec![0u8; 16 * 1024];
            let mut total = 0;
            while let Ok(n) = pipe.read(&mut buffer).await {
                if n == 0 {
                    break;
                }
                sink.locked().push(&buffer[..n]);
                total += n;
                grow.send_replace(total);
            }
        });
        Ok(GroupProcess {
            child,
            pgid,
            output,
            grown,
            readers: Some(readers),
            _temp: temp,
        })
    }

    /// Told each time output arrives (its value: the bytes so far); read
    /// what came with `output`'s [`OutputBuffer::since`].
    pub fn grown(&self) -> tokio::sync::watch::Receiver<usize> {
        self.grown.clone()
    }

    /// Waits for the command to end, to time out, or to be cancelled; kills
    /// the group in the last two cases. Returns once output is collected.
    pub async fn wait(&mut self, timeout: Option<Duration>, cancel: &CancellationToken) -> Ending {
        let timer = async {
            match timeout {
                Some(after) => tokio::time::sleep(after).await,
                None => std::future::pending().await,
            }
        };
        let ending = tokio::select! {
            status = self.child.wait() => match status {
                Ok(status) => match (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)) {
                    (Some(code), _) => Ending::Exited(code),
                    (None, Some(signal)) => Ending::Signalled(signal),
                    (None, None) => Ending::Exited(-1),
                },
                Err(_) => Ending::Exited(-1),
            },
            _ = timer => Ending::TimedOut(timeout.unwrap_or_default()),
            _ = cancel.cancelled() => Ending::Cancelled,
        };
        if matches!(ending, Ending::TimedOut(_) | Ending::Cancelled) {
            self.kill_group();
            let _ = self.child.wait().await;
        }
        self.drain().await;
        ending
    }

    /// Lets the readers finish, but not forever: after a grace period the
    /// group is killed (closing pipes a grandchild held) and reading stops.
    async fn drain(&mut self) {
        let Some(mut readers) = self.readers.take() else {
            return;
        };
        if tokio::time::timeout(DRAIN_AFTER_EXIT, &mut readers)
            .await
            .is_err()
        {
            self.kill_group();
            if tokio::time::timeout(DRAIN_AFTER_EXIT, &mut readers)
                .await
                .is_err()
            {
                readers.abort();
            }
        }
    }

    /// SIGKILL to every process in the group.
    pub fn kill_group(&self) {
        if self.pgid > 0 {
            // SAFETY: killpg only sends a signal; a group that is gone gives ESRCH.
            unsafe {
                libc::killpg(self.pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupProcess {
    /// A dropped command (a cancelled turn, the end of the session) takes
    /// its whole group with it.
    fn drop(&mut self) {
        self.kill_group();
        // The leader may not be reaped yet, but its id stays taken until it
        // is: no other group can have this id when the reaper forgets it.
        reaper::forget(self.pgid);
        if let Some(readers) = self.readers.take() {
            readers.abort();
        }
    }
}
