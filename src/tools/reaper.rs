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
//! Not covered: a process that leaves its group (`setsid`, `setpgid`) is no
//! longer in a group the reaper kills; and if someone SIGKILLs the reaper
//! itself, new commands refuse to start (their registration fails).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, Ordering};

/// The agent's end of the socket pair; -1 until [`start`] ran.
static AGENT_END: AtomicI32 = AtomicI32::new(-1);

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
    // SAFETY: the process is single-threaded here (see above).
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            // SAFETY: closing our copy of the agent's end, so end-of-file
            // comes when the agent's copy closes.
            unsafe { libc::close(agent_end) };
            reap(reaper_end)
        }
        _ => {
            // SAFETY: the reaper's end is the reaper's alone.
            unsafe { libc::close(reaper_end) };
            AGENT_END.store(agent_end, Ordering::SeqCst);
            Ok(())
        }
    }
}

/// Whether a reaper watches this process's commands.
pub fn is_running() -> bool {
    AGENT_END.load(Ordering::SeqCst) >= 0
}

/// The reaper's whole life: collect groups until end-of-file, then kill them.
fn reap(socket: RawFd) -> ! {
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
        // SAFETY: leaving without running the agent's (copied) destructors.
        unsafe { libc::_exit(0) }
    }
}

/// Registers the calling process's group (its own pid: the command is a
/// group leader). Runs in the child between fork and exec: one syscall.
/// Without a reaper (tests and benchmarks in-process) it does nothing.
pub fn register_self() -> std::io::Result<()> {
    let socket = AGENT_END.load(Ordering::SeqCst);
    if socket < 0 {
        return Ok(());
    }
    // SAFETY: getpid and send on integers and a local buffer.
    unsafe { send(socket, libc::getpid()) }
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
