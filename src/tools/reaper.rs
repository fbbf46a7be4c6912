//! Commands die with the agent, however it dies — exit, SIGTERM, SIGHUP,
//! the editor closing stdin, or SIGKILL, which runs no code of ours.
//!
//! At start, while the agent is still one thread, it forks a small reaper
//! process joined to it by a socket pair. Every command's process group is
//! registered with the reaper *by the child itself*, between fork and exec,
//! so there is no moment where a group exists unregistered; the agent
//! unregisters a group once it has killed it. When the agent dies, the
//! kernel closes its end of the socket; the reaper sees end-of-file, kills
//! every registered group with SIGKILL, and exits.
//!
//! Why not `PR_SET_PDEATHSIG`: it kills only the direct child (not the
//! command's own children), and it fires when the *thread* that forked the
//! child ends — tokio's blocking threads end when idle, which would kill
//! commands at random. A subreaper does not help after a SIGKILL either.
//!
//! A process that leaves its group (`setsid`, `setpgid`, a daemon's double
//! fork) is out of every group the reaper kills, so where the kernel offers
//! a cgroup v2 the agent can write, each command also moves itself, between
//! fork and exec, into a cgroup made for this agent's commands
//! (`bareagent-PID` below the agent's own). Everything it ever forks stays
//! in it whatever its session, group or parent, and the reaper kills the
//! whole cgroup (`cgroup.kill`, else each process it lists) when the agent
//! is gone, then removes it. Why not `PR_SET_CHILD_SUBREAPER`: on the agent,
//! orphans come back to it, but when the agent is SIGKILLed they go on to
//! init with no code of ours left to see them; the reaper is the agent's
//! child, never an ancestor of the commands, so orphans never reach it.
//!
//! Not covered: without a writable cgroup v2 (a read-only `/sys/fs/cgroup`
//! in a container, a non-root user outside a delegated systemd scope) only
//! process groups are killed, and the log says so at start (info level); a command run
//! with the sandbox off, as root or in a delegated cgroup, could move
//! itself to another cgroup (the sandbox keeps `/sys` unwritable). If
//! someone SIGKILLs the reaper itself, new commands refuse to start (their
//! registration fails).

use std::os::fd::{IntoRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

/// The agent's end of the socket pair; -1 until [`start`] ran.
static AGENT_END: AtomicI32 = AtomicI32::new(-1);

/// `cgroup.procs` of the commands' cgroup, open for writing; -1 without one
/// (or before [`check_cgroup`] ran).
static CGROUP_PROCS: AtomicI32 = AtomicI32::new(-1);

/// The cgroup made at start, until [`check_cgroup`] tries moving a process
/// into it: that takes the kernel 10–20 ms (an RCU grace period), which
/// start-up does not wait for; the first command does.
static UNCHECKED_PROCS: AtomicI32 = AtomicI32::new(-1);

/// Forks the reaper. Call from `main` before any thread exists (forking a
/// threaded process leaves the child only async-signal-safe calls).
pub fn start() -> std::io::Result<()> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: socketpair writes two descriptors into `fds`.
    let made = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if made != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (agent_end, reaper_end) = (fds[0], fds[1]);
    let cgroup = match CommandsCgroup::make() {
        Ok(cgroup) => Some(cgroup),
        Err(error) => {
            tracing::info!(%error, "no cgroup for commands: a command's process that leaves its group (setsid) may outlive the agent");
            None
        }
    };
    // SAFETY: the process is single-threaded here (see above).
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            // SAFETY: closing our copy of the agent's end, so end-of-file
            // comes when the agent's copy closes.
            unsafe { libc::close(agent_end) };
            reap(reaper_end, cgroup)
        }
        _ => {
            // SAFETY: the reaper's end is the reaper's alone.
            unsafe { libc::close(reaper_end) };
            AGENT_END.store(agent_end, Ordering::SeqCst);
            if let Some(cgroup) = cgroup {
                UNCHECKED_PROCS.store(cgroup.procs, Ordering::SeqCst);
            }
            Ok(())
        }
    }
}

/// Whether a reaper watches this process's commands.
pub fn is_running() -> bool {
    AGENT_END.load(Ordering::SeqCst) >= 0
}

/// Before the first command: moves a throwaway child into the commands'
/// cgroup, as each command will move itself, so a cgroup the kernel will
/// not take processes into (no right on the agent's own cgroup,
/// controllers in the way) is found once, not by every command failing
/// to start. Commands then go without it, in their process groups only.
/// Runs once; later calls return at once.
pub fn check_cgroup() {
    static CHECKED: std::sync::Once = std::sync::Once::new();
    CHECKED.call_once(|| {
        let procs = UNCHECKED_PROCS.load(Ordering::SeqCst);
        if procs < 0 {
            return;
        }
        match try_moving(procs) {
            Ok(()) => CGROUP_PROCS.store(procs, Ordering::SeqCst),
            Err(error) => {
                tracing::info!(%error, "no cgroup for commands: a command's process that leaves its group (setsid) may outlive the agent");
                // SAFETY: our own descriptor, closed once (the reaper
                // removes the empty cgroup when the agent ends).
                unsafe { libc::close(procs) };
            }
        }
    });
}

/// Forks a child that writes itself into `procs` and exits.
fn try_moving(procs: RawFd) -> std::io::Result<()> {
    // SAFETY: the child of a possibly threaded process makes only
    // async-signal-safe calls: one write(2), then _exit.
    let child = unsafe { libc::fork() };
    match child {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            // SAFETY: one write from a static buffer, then _exit.
            unsafe {
                let moved = libc::write(procs, c"0".as_ptr().cast(), 1) == 1;
                libc::_exit(if moved { 0 } else { 1 })
            }
        }
        pid => {
            let mut status = 0;
            // EINTR retried.
            let waited = loop {
                // SAFETY: waits for the child just forked, into a local.
                let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
                if waited >= 0
                    || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
                {
                    break waited;
                }
            };
            if waited == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::other(
                    "the kernel refused to move a process into it",
                ))
            }
        }
    }
}

/// The cgroup this agent's commands run in.
struct CommandsCgroup {
    dir: PathBuf,
    /// Its `cgroup.procs`, open for writing (close-on-exec: a command
    /// keeps no handle on it).
    procs: RawFd,
}

impl CommandsCgroup {
    /// `bareagent-PID` below the agent's own cgroup v2.
    fn make() -> std::io::Result<CommandsCgroup> {
        let missing =
            |what: &str| std::io::Error::new(std::io::ErrorKind::NotFound, what.to_string());
        let mounts = std::fs::read_to_string("/proc/self/mountinfo")?;
        // (the cgroup the mount shows as its root, where it is mounted)
        let (mount_root, mount) = mounts
            .lines()
            .find_map(|line| {
                let (fields, rest) = line.split_once(" - ")?;
                let mut fields = fields.split_whitespace().skip(3);
                (rest.split_whitespace().next()? == "cgroup2")
                    .then(|| Some((fields.next()?.to_string(), PathBuf::from(fields.next()?))))?
            })
            .ok_or_else(|| missing("no cgroup v2 mounted"))?;
        let own = std::fs::read_to_string("/proc/self/cgroup")?;
        let path = own
            .lines()
            .find_map(|line| line.strip_prefix("0::"))
            .ok_or_else(|| missing("the agent is in no cgroup v2"))?;
        let below_mount = path
            .strip_prefix(mount_root.trim_end_matches('/'))
            .ok_or_else(|| missing("the agent's cgroup is not below the mounted one"))?;
        let dir = mount
            .join(below_mount.trim_start_matches('/'))
            .join(format!("bareagent-{}", std::process::id()));
        std::fs::create_dir(&dir)?;
        match std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
        {
            Ok(procs) => Ok(CommandsCgroup {
                dir,
                procs: procs.into_raw_fd(),
            }),
            Err(error) => {
                let _ = std::fs::remove_dir(&dir);
                Err(error)
            }
        }
    }

    /// Kills every process in the cgroup, then removes it.
    fn kill_all(&self) {
        let killed = std::fs::write(self.dir.join("cgroup.kill"), "1").is_ok();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        // `rmdir` succeeds once the cgroup is empty; until then, kill what
        // it lists (without `cgroup.kill`, before Linux 5.14: a process
        // forking meanwhile is caught on the next pass).
        while std::fs::remove_dir(&self.dir).is_err() && std::time::Instant::now() < deadline {
            if !killed {
                kill_listed(&self.dir);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

fn kill_listed(dir: &Path) {
    let listed = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    for pid in listed.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        // SAFETY: only sends a signal.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// The reaper's whole life: collect groups until end-of-file, then kill them
/// (and the commands' cgroup).
fn reap(socket: RawFd, cgroup: Option<CommandsCgroup>) -> ! {
    // SAFETY: plain syscalls on integers and a local buffer.
    unsafe {
        // The terminal's Ctrl-C and hang-up reach the agent's whole group,
        // this process included: it must outlive the agent, not die with it.
        for signal in [
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGTERM,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(signal, libc::SIG_IGN);
        }
        // Let go of the protocol's stdio, so the editor sees the agent's
        // stdout close when the agent exits.
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
        }
        libc::prctl(
            libc::PR_SET_NAME,
            c"bareagent-reaper".as_ptr() as libc::c_ulong,
            0,
            0,
            0,
        );
    }
    let mut groups: Vec<i32> = Vec::new();
    loop {
        let mut message = [0u8; 4];
        // SAFETY: reads at most 4 bytes into `message`.
        let n = unsafe { libc::recv(socket, message.as_mut_ptr().cast(), 4, 0) };
        if n == 4 {
            let pgid = i32::from_ne_bytes(message);
            if pgid > 0 {
                groups.push(pgid);
            } else {
                groups.retain(|&g| g != -pgid);
            }
            continue;
        }
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        // End-of-file (or a broken socket): the agent is gone.
        for pgid in groups {
            // SAFETY: only sends a signal; a group that is gone gives ESRCH.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
        }
        if let Some(cgroup) = &cgroup {
            cgroup.kill_all();
        }
        // SAFETY: leaving without running the agent's (copied) destructors.
        unsafe { libc::_exit(0) }
    }
}

/// Registers the calling process's group (its own pid: the command is a
/// group leader), and moves it into the commands' cgroup. Runs in the
/// child between fork and exec: two syscalls.
/// Without a reaper (tests and benchmarks in-process) it does nothing.
pub fn register_self() -> std::io::Result<()> {
    let socket = AGENT_END.load(Ordering::SeqCst);
    if socket < 0 {
        return Ok(());
    }
    // SAFETY: getpid and send on integers and a local buffer.
    unsafe { send(socket, libc::getpid())? };
    let procs = CGROUP_PROCS.load(Ordering::SeqCst);
    if procs >= 0 {
        // "0": the writing process itself. One write(2), no allocation.
        // SAFETY: writes one byte from a static buffer.
        if unsafe { libc::write(procs, c"0".as_ptr().cast(), 1) } != 1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The agent killed the group and waited for its leader: forget it, so a
/// later process reusing the id is never touched.
pub fn forget(pgid: i32) {
    let socket = AGENT_END.load(Ordering::SeqCst);
    if socket >= 0 && pgid > 0 {
        // SAFETY: send on integers and a local buffer.
        if let Err(error) = unsafe { send(socket, -pgid) } {
            tracing::warn!(%error, "the process reaper is gone; commands may outlive the agent");
        }
    }
}

unsafe fn send(socket: RawFd, value: i32) -> std::io::Result<()> {
    let bytes = value.to_ne_bytes();
    // MSG_NOSIGNAL: a dead reaper is an error, not a SIGPIPE.
    // SAFETY: the caller passes a socket; the buffer is 4 local bytes.
    let sent = unsafe { libc::send(socket, bytes.as_ptr().cast(), 4, libc::MSG_NOSIGNAL) };
    if sent == 4 {
        Ok(())
    } else {
        // No allocation: this also runs between fork and exec.
        Err(std::io::Error::from_raw_os_error(libc::EPIPE))
    }
}
