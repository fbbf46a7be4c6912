//! With `network = false`, a seccomp filter refuses every socket family but
//! `AF_UNIX`: UDP (DNS included), raw and packet sockets, netlink, and
//! everything else Landlock's TCP rules do not see. `io_uring_setup` is
//! refused too, since an io_uring can open sockets without calling
//! `socket(2)`. Refused calls fail with `EACCES`, so the command reports a
//! plain "permission denied" rather than dying.
//!
//! Built with `seccompiler` (rust-vmm's, used by Firecracker and Codex):
//! pure Rust, no libseccomp to install, and the program is compiled in the
//! parent, so the child only hands the kernel a ready buffer. Its filter
//! kills a process that calls in through another architecture's syscall
//! table (i386's `int 0x80`); the x32 numbers of the same calls are listed
//! explicitly, as x32 shares x86-64's architecture value.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// The filter for a command that may not use the network, compiled for
/// this machine's architecture; `None` on an architecture `seccompiler`
/// does not know (the status says the network is not confined then).
pub fn network_filter() -> Option<Arc<BpfProgram>> {
    static FILTER: OnceLock<Option<Arc<BpfProgram>>> = OnceLock::new();
    FILTER.get_or_init(|| compile().map(Arc::new)).clone()
}

/// Compiles the filter (once per process: it never changes).
fn compile() -> Option<BpfProgram> {
    let arch = std::env::consts::ARCH.try_into().ok()?;
    let not_unix = SeccompRule::new(vec![
        SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .ok()?,
    ])
    .ok()?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for number in with_x32(libc::SYS_socket) {
        rules.insert(number, vec![not_unix.clone()]);
    }
    for number in with_x32(libc::SYS_io_uring_setup) {
        rules.insert(number, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .ok()?;
    filter.try_into().ok()
}

/// A syscall's number, and on x86-64 also its x32 number (the same with
/// bit 30 set), which the kernel accepts under the same architecture.
fn with_x32(number: libc::c_long) -> Vec<i64> {
    if cfg!(target_arch = "x86_64") {
        vec![number, number | 0x4000_0000]
    } else {
        vec![number]
    }
}

/// Installs `program` on the calling thread. Async-signal-safe: it runs
/// between fork and exec (`seccompiler::apply_filter` is two syscalls).
pub fn apply(program: &BpfProgram) -> std::io::Result<()> {
    seccompiler::apply_filter(program).map_err(|error| match error {
        seccompiler::Error::Seccomp(error) | seccompiler::Error::Prctl(error) => error,
        _ => std::io::Error::from_raw_os_error(libc::EINVAL),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_here() {
        assert!(network_filter().is_some_and(|program| !program.is_empty()));
    }
}
