//! The policy as Landlock rules, built in the parent; applying them in the
//! child is two syscalls.
//!
//! Landlock only *allows*: a rule grants rights on a file or on a whole
//! directory tree, and rights add up along the path. So "read everything
//! but `~/.ssh`" is written as: list every directory on the way from `/` to
//! `~/.ssh`, and grant read on each of their entries except the one that
//! leads to `~/.ssh` (which is split the same way, one level down). Listing
//! directories (`READ_DIR`) is granted everywhere, so names inside a denied
//! folder stay visible; their contents do not.
//!
//! What this can and cannot do:
//! - an entry created in one of the split directories *after* the rules were
//!   built (they are rebuilt for every command) has no read rule: it is
//!   unreadable by that command, even though it may write it;
//! - symlinks in the split directories get no rule: access through them is
//!   checked at their target, where that lies;
//! - a hard link to a denied file placed elsewhere (by someone outside the
//!   sandbox) is readable through that other path: rules follow paths, not
//!   inodes;
//! - a denied path inside a writable folder can still be written, renamed
//!   and deleted, just not read.

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

use super::{SandboxMode, SandboxPolicy};

/// The Landlock ABI the kernel offers, or why there is none: the kernel's own
/// probe (`landlock_create_ruleset` with the version flag).
pub fn probe_abi() -> Result<i32, String> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0 this only returns a number.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if version >= 1 {
        return Ok(version as i32);
    }
    let error = std::io::Error::last_os_error();
    Err(match error.raw_os_error() {
        Some(libc::EOPNOTSUPP) => {
            "Landlock is built into the kernel but not enabled at boot".into()
        }
        Some(libc::ENOSYS) => "the kernel has no Landlock".into(),
        _ => format!("the Landlock probe failed: {error}"),
    })
}

/// A ruleset for `policy` on a kernel with `abi`, as a descriptor the child
/// hands to `landlock_restrict_self`. Every right the ABI knows is handled
/// (so denied unless a rule grants it), and the crate must enforce all of
/// them: a right it cannot enforce is an error, not a silent gap.
pub fn build(
    policy: &SandboxPolicy,
    abi: i32,
    temp: Option<&Path>,
    devices: &[&str],
    views: &[(&Path, &Path)],
    withheld: &[PathBuf],
) -> Result<Option<OwnedFd>, landlock::RulesetError> {
    let abi = ABI::from(abi);
    let all = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)?;
    let tcp_blocked = !policy.network && abi >= ABI::V4;
    if tcp_blocked {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    if abi >= ABI::V6 {
        // Signals to processes outside the command (the agent, other
        // commands) are refused; so are abstract unix sockets while the
        // network is off (they reach other processes' servers).
        let scopes = if policy.network {
            BitFlags::from(Scope::Signal)
        } else {
            Scope::from_all(abi)
        };
        ruleset = ruleset.scope(scopes)?;
    }
    let mut created = ruleset.create()?;

    // Reads: directory listing everywhere, file contents (and execution)
    // everywhere but the denied paths.
    created = grant(created, abi, Path::new("/"), AccessFs::ReadDir.into())?;
    let denied = denied_set(&policy.deny_read);
    let read = AccessFs::ReadFile | AccessFs::Execute;
    created = grant_except(created, abi, Path::new("/"), read, &denied)?;

    // Writes. Never device nodes: root keeps CAP_MKNOD until exec drops
    // it, and a block device of the disk is every file on it.
    let write = AccessFs::from_write(abi) & !(AccessFs::MakeBlock | AccessFs::MakeChar);
    let mut writable: Vec<&Path> = temp.into_iter().collect();
    if policy.mode == SandboxMode::WorkspaceWrite {
        writable.push(&policy.workspace);
        writable.extend(policy.writable.iter().map(PathBuf::as_path));
    }
    // Protected paths no mount can pin get no write right, nor do the
    // folders on the way to them (Landlock rights flow down a tree).
    let withheld = denied_set(withheld);
    for path in &writable {
        created = grant_except(created, abi, path, write, &withheld)?;
    }
    for device in devices {
        created = grant(created, abi, Path::new(device), write)?;
    }

    // A copy mounted over a file is reached through the file's name, but
    // the kernel checks the copy's own place (it skips mount points): so
    // the copy gets what the file would have, never more.
    for (file, copy) in views {
        if denied.iter().any(|d| file.starts_with(d)) {
            continue;
        }
        let mut access = read;
        if writable.iter().any(|w| file.starts_with(w)) {
            access |= write;
        }
        created = grant(created, abi, copy, access)?;
    }
    Ok(created.into())
}

/// Adds a rule granting `access` beneath `path`, trimmed to what a file can
/// carry when it is not a directory. A path that does not exist (a cache
/// folder never created) is skipped: nothing to grant.
fn grant(
    ruleset: RulesetCreated,
    abi: ABI,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, landlock::RulesetError> {
    let Ok(metadata) = std::fs::metadata(path) else {
        return Ok(ruleset);
    };
    let access = if metadata.is_dir() {
        access
    } else {
        access & AccessFs::from_file(abi)
    };
    if access.is_empty() {
        return Ok(ruleset);
    }
    let Ok(fd) = PathFd::new(path) else {
        return Ok(ruleset);
    };
    ruleset.add_rule(PathBeneath::new(fd, access))
}

/// Grants `access` on the tree at `dir`, except on the denied paths within
/// it: where a denied path lies below, the directory is split into its
/// entries (see the module comment).
fn grant_except(
    mut ruleset: RulesetCreated,
    abi: ABI,
    dir: &Path,
    access: BitFlags<AccessFs>,
    denied: &BTreeSet<PathBuf>,
) -> Result<RulesetCreated, landlock::RulesetError> {
    if denied.contains(dir) {
        return Ok(ruleset);
    }
    if !denied.iter().any(|d| d.starts_with(dir)) {
        return grant(ruleset, abi, dir, access);
    }
    // An unreadable directory grants nothing: fail closed.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(ruleset);
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        // A symlink needs no rule of its own: the kernel checks its target.
        if kind.is_symlink() {
            continue;
        }
        ruleset = grant_except(ruleset, abi, &path, access, denied)?;
    }
    Ok(ruleset)
}

/// The denied paths as the walk from `/` meets them: each both as written
/// (made absolute and free of `.`/`..`) and with the symlinks in its existing
/// part resolved. A path that does not exist yet stays denied by name, so a
/// `~/.aws` created later is not read through the new-entry rule either.
fn denied_set(paths: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut set = BTreeSet::new();
    for path in paths {
        let plain = lexical(path);
        set.insert(resolve_existing(&plain));
        set.insert(plain);
    }
    set
}

fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// Canonicalises the longest existing prefix and appends the rest.
pub(super) fn resolve_existing(path: &Path) -> PathBuf {
    let path = &lexical(path);
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// `landlock_restrict_self` (after `PR_SET_NO_NEW_PRIVS`, which the
/// kernel requires of a process without `CAP_SYS_ADMIN`). Async-signal-safe:
/// runs after fork.
pub fn restrict_self(fd: i32) -> std::io::Result<()> {
    // SAFETY: a plain syscall on integers; no memory is touched.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where no mount can pin a protected path, Landlock withholds its
    /// write rights: the hook cannot be written, the rest of the workspace can.
    #[test]
    fn withheld_paths_get_no_write_right() {
        let Ok(abi) = probe_abi() else {
            assert!(
                std::env::var("BAREAGENT_REQUIRE_LANDLOCK").as_deref() != Ok("1"),
                "BAREAGENT_REQUIRE_LANDLOCK=1 but the kernel has none"
            );
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        let policy = SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            workspace: root.clone(),
            writable: Vec::new(),
            deny_read: Vec::new(),
            network: true,
        };
        let withheld = [root.join(".git/hooks")];
        let ruleset = build(&policy, abi, None, &["/dev/null"], &[], &withheld)
            .unwrap()
            .unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&ruleset);
        let run = |script: &str| {
            let mut command = std::process::Command::new("/bin/sh");
            command.args(["-c", script]).current_dir(&root);
            // SAFETY: prctl and landlock_restrict_self are syscalls.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
                    super::super::privileges::no_new_privileges()?;
                    restrict_self(fd)
                });
            }
            command.status().unwrap().success()
        };
        assert!(!run("echo x > .git/hooks/pre-commit"));
        assert!(run("echo x > src/a.rs"));
        assert!(!root.join(".git/hooks/pre-commit").exists());
    }

    #[test]
    fn denied_paths_are_absolute_resolved_and_kept_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(&real, real.join("link")).unwrap();
        let set = denied_set(&[
            real.join("link/./x/../.ssh"),
            PathBuf::from("/no/such/.aws"),
        ]);
        assert!(set.contains(&real.join("link/.ssh")), "{set:?}");
        assert!(set.contains(&real.join(".ssh")), "{set:?}");
        assert!(set.contains(Path::new("/no/such/.aws")), "{set:?}");
    }
}
