//! Least privilege in the child, whoever runs the agent: a command gets no
//! more power than an ordinary user's, even when the agent runs as root (as
//! in most containers). Landlock decides which files a command reaches; it
//! has no say over what root's capabilities do besides (`mknod` of the disk,
//! `chown` of any file, `ip addr add`, raw sockets, reading other root
//! processes' memory). So before exec the child gives them all up:
//!
//! - `PR_SET_NO_NEW_PRIVS`: a setuid or file-capability program gains nothing;
//! - every capability leaves the bounding set, so none comes back at exec;
//! - the ambient set is cleared, and then the effective, permitted and
//!   inheritable sets are emptied with `capset`.
//!
//! Only syscalls on integers and stack data: this runs between fork and exec.

/// The highest capability number any kernel defines is below this; the
/// kernel answers `EINVAL` past its own last one, which ends the loop.
const CAPABILITY_LIMIT: libc::c_ulong = 64;

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `PR_SET_NO_NEW_PRIVS`. Async-signal-safe.
pub fn no_new_privileges() -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Empties the bounding and ambient sets. Dropping from the bounding set
/// needs `CAP_SETPCAP`: a process without it (not root) has nothing there
/// that exec would grant it, so `EPERM` is not an error. Call before the
/// capabilities themselves go ([`drop_all`]).
pub fn empty_bounding_set() -> std::io::Result<()> {
    for capability in 0..CAPABILITY_LIMIT {
        // SAFETY: prctl with integer arguments.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) } != 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINVAL) => break,
                Some(libc::EPERM) => return Ok(()),
                _ => return Err(std::io::Error::last_os_error()),
            }
        }
    }
    // SAFETY: prctl with integer arguments. Kernels before 4.3 have no
    // ambient set (EINVAL): nothing to clear.
    let cleared = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    if cleared != 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Empties the effective, permitted and inheritable sets. Giving up
/// capabilities is always allowed, so a failure is an error.
pub fn drop_all() -> std::io::Result<()> {
    let header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads the header and two data words from our stack.
    if unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
