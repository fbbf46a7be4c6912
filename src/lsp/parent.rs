//! The editor's process: LSP says a server whose client process has died
//! should exit, as an editor killed with SIGKILL never closes our stdin when
//! a child of ours still holds it open.

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;

/// How often a kernel without `pidfd_open` (before 5.3) is asked instead.
const POLL: Duration = Duration::from_secs(2);

/// Tells `gone` once process `pid` has ended. A pid that does not exist
/// now is not watched (it may live in another PID namespace, as a
/// sandboxed editor's does): stopping at once would be the wrong guess.
pub fn watch(pid: u32, gone: Arc<Notify>) {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        tracing::warn!(pid, "the client's process id is out of range: not watched");
        return;
    };
    if !alive(raw) {
        tracing::warn!(pid, "the client's process is not visible here: not watched");
        return;
    }
    tokio::spawn(async move {
        ended(raw).await;
        tracing::info!(pid, "the editor's process ended: stopping");
        gone.notify_one();
    });
}

async fn ended(pid: libc::pid_t) {
    let registered = pidfd(pid).and_then(|fd| {
        // SAFETY: an `OwnedFd` stays open, and is the same descriptor,
        // for as long as the `AsyncFd` owns it.
        unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
            .map_err(|error| std::io::Error::other(error.to_string()))
    });
    match registered {
        // A pidfd becomes readable when its process exits.
        Ok(fd) => {
            let _ = fd.readable().await;
        }
        Err(error) => {
            tracing::debug!(%error, "no pidfd: polling the client's process");
            while alive(pid) {
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

fn pidfd(pid: libc::pid_t) -> std::io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(|_| std::io::Error::other("descriptor out of range"))?;
    // SAFETY: the kernel just gave us this descriptor, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The process exists (EPERM: it does, and is not ours to signal).
fn alive(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
