//! What a command sees of edits that are in the editor's buffers but not on
//! disk. The agent's edits land in buffers, unsaved; a test command reading
//! the disk would check the old code. Where the editor can save, it saves
//! (see the language server's `bareagent/saveDocuments`); where it cannot,
//! or for a file whose buffer held the user's own unsaved work, the command
//! runs in a private mount namespace in which each such file is
//! bind-mounted from a copy holding the buffer's text. The disk is never
//! written, so no editor meets a file changed behind its back, and
//! timestamps stay true. What the command writes to a copy is brought back
//! into the buffer afterwards (a formatter run by the agent edits the
//! buffer too). See ARCHITECTURE.md, "Buffers, disk and commands".
//!
//! Limits, told to the model in the tool result where they bite: a copy is
//! a mount point, so replacing it by rename (`sed -i`, some editors) or
//! deleting it fails with "Device or resource busy"; a hard link to the
//! file under another name shows the disk's text.

use std::ffi::CString;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;

use super::PathResolver;

/// Prepares and finishes the view of each command (the language server's
/// workspace implements it; on disk there is nothing to do).
#[async_trait]
pub trait CommandViews: Send + Sync {
    /// Before a command: saves what can be saved, and mounts the rest.
    async fn prepare(&self) -> CommandView;
    /// After it ended: brings what it wrote to the copies back into the
    /// buffers. Returns the lines the tool result ends with.
    async fn finish(&self, view: CommandView) -> Vec<String>;
}

/// One file a command sees from a copy of its buffer.
#[derive(Debug)]
pub struct MountedCopy {
    /// The file, as resolved in the workspace.
    pub path: PathBuf,
    /// The buffer's text, as mounted.
    pub text: String,
    /// The buffer's document version when mounted (a change brought back
    /// is refused if the user typed meanwhile).
    pub version: Option<i32>,
    copy: PathBuf,
    /// Open on the real file, checked beneath the root: the mount goes on
    /// this descriptor, never on a name a link could redirect.
    target: std::fs::File,
}

impl MountedCopy {
    /// What the command left in the copy.
    pub fn current_text(&self) -> io::Result<String> {
        std::fs::read_to_string(&self.copy)
    }
}

/// What one command sees: files mounted from copies, and lines for the
/// tool result (what the command does not see, and why).
#[derive(Debug, Default)]
pub struct CommandView {
    pub mounts: Vec<MountedCopy>,
    pub notes: Vec<String>,
    /// Holds the copies until the command ended.
    dir: Option<tempfile::TempDir>,
}

impl CommandView {
    /// A view mounting `files` (resolved path, buffer text, version). Fails
    /// when the system gives no private mount namespaces, or a file cannot
    /// be opened beneath the root (it does not exist on disk, say).
    pub fn mounting(
        paths: &PathResolver,
        files: Vec<(PathBuf, String, Option<i32>)>,
    ) -> Result<CommandView, String> {
        if files.is_empty() {
            return Ok(CommandView::default());
        }
        namespaces_available()?;
        let dir = tempfile::Builder::new()
            .prefix("bareagent-view-")
            .tempdir()
            .map_err(|e| format!("cannot make a folder for the copies: {e}"))?;
        let mut mounts = Vec::new();
        for (index, (path, text, version)) in files.into_iter().enumerate() {
            let shown = paths.display(&path);
            let target = paths
                .open_file(&path)
                .map_err(|e| format!("{shown} cannot be shown to commands: {e}"))?;
            let copy = dir.path().join(index.to_string());
            std::fs::write(&copy, &text)
                .map_err(|e| format!("cannot copy {shown} for the command: {e}"))?;
            mounts.push(MountedCopy {
                path,
                text,
                version,
                copy,
                target,
            });
        }
        Ok(CommandView {
            mounts,
            notes: Vec::new(),
            dir: Some(dir),
        })
    }

    /// What the child does before exec, built here (allocation is not safe
    /// after fork): the copies, then `pinned` (the sandbox's protected paths).
    pub fn for_child(&self, pinned: Vec<PinnedMount>) -> io::Result<Option<ChildMounts>> {
        if self.mounts.is_empty() && pinned.is_empty() {
            return Ok(None);
        }
        let mut binds = Vec::new();
        for mount in &self.mounts {
            let fd = mount.target.as_raw_fd();
            binds.push(Bind {
                source: CString::new(mount.copy.as_os_str().as_bytes())?,
                path: CString::new(mount.path.as_os_str().as_bytes())?,
                checked: fd,
                proc_path: CString::new(format!("/proc/self/fd/{fd}"))?,
            });
        }
        Ok(Some(ChildMounts::new(binds, pinned)))
    }

    /// (file, copy) pairs, for the sandbox to grant each copy what its file has.
    pub fn copies(&self) -> Vec<(&Path, &Path)> {
        self.mounts
            .iter()
            .map(|m| (m.path.as_path(), m.copy.as_path()))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.mounts.is_empty() && self.notes.is_empty()
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_ref().map(|d| d.path())
    }
}

/// The namespace set-up a child runs between fork and exec: only syscalls,
/// on data prepared before the fork.
pub struct ChildMounts {
    /// `uid_map` and `gid_map` lines, when a user namespace is needed (we
    /// lack the privilege to mount in our own).
    maps: Option<(Vec<u8>, Vec<u8>)>,
    binds: Vec<Bind>,
    pinned: Vec<PinnedMount>,
}

/// A path mounted on itself in the command's namespace: a mount point
/// cannot be renamed, removed or replaced, files cannot be renamed or
/// linked out of it (`EXDEV`), and a read-only one cannot be written at all
/// (`EROFS`), whatever Landlock grants around it. Used by the sandbox for
/// what commands must not change (`sandbox/protected.rs`).
///
/// No name is trusted: the path is opened here without following any link
/// (a symbolic link at or above it is refused), opened again in the child
/// the same way and compared by device and inode, and the mount is made on
/// that descriptor (`open_tree`, `mount_setattr`, `move_mount`). A link or
/// a folder swapped in meanwhile makes the command fail to start; it never
/// moves the mount elsewhere.
#[derive(Debug)]
pub struct PinnedMount {
    path: CString,
    /// Open on the path as checked, kept until the command has started.
    checked: std::os::fd::OwnedFd,
    read_only: bool,
}

impl PinnedMount {
    /// `path` pinned, and read-only when `read_only`. Refuses a path with
    /// a symbolic link anywhere in it: the pin would land on its target,
    /// and the link could be replaced.
    pub fn new(path: &Path, read_only: bool) -> io::Result<PinnedMount> {
        use std::os::fd::FromRawFd;
        let name = CString::new(path.as_os_str().as_bytes())?;
        // SAFETY: open with a NUL-terminated path; the descriptor is owned below.
        let fd = unsafe {
            libc::open(
                name.as_ptr(),
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is ours alone.
        let checked = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        // What the kernel reached is the path as given only if no link was
        // followed on the way (the leaf itself is opened as a link, if one).
        let reached = std::fs::read_link(format!("/proc/self/fd/{fd}"))?;
        // SAFETY: fstat fills the zeroed buffer for our descriptor.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is ours and open; `stat` is a valid buffer for it.
        if unsafe { libc::fstat(fd, &mut stat) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let is_link = stat.st_mode & libc::S_IFMT == libc::S_IFLNK;
        if reached != path || is_link {
            return Err(io::Error::other(format!(
                "{} is or lies behind a symbolic link, so the sandbox cannot protect it; ask the user to replace the link with what it points to",
                path.display()
            )));
        }
        Ok(PinnedMount {
            path: name,
            checked,
            read_only,
        })
    }

    /// In the child: opens the path again (no link followed), checks it is
    /// what was checked, and mounts a copy of its tree on it, read-only
    /// when asked. Only syscalls.
    unsafe fn apply(&self) -> io::Result<()> {
        const OPEN_TREE_CLONE: libc::c_uint = 1;
        const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x04;
        const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
        const MOUNT_ATTR_RDONLY: u64 = 0x1;
        #[repr(C)]
        struct MountAttr {
            attr_set: u64,
            attr_clr: u64,
            propagation: u64,
            userns_fd: u64,
        }
        let empty = c"";
        // SAFETY: syscalls with NUL-terminated strings and structs on our
        // stack that outlive the calls; descriptors closed on every path.
        unsafe {
            let reopened = reopen_checked(&self.path, self.checked.as_raw_fd())?;
            let tree = libc::syscall(
                libc::SYS_open_tree,
                reopened,
                empty.as_ptr(),
                OPEN_TREE_CLONE
                    | libc::O_CLOEXEC as libc::c_uint
                    | libc::AT_EMPTY_PATH as libc::c_uint
                    | libc::AT_RECURSIVE as libc::c_uint,
            ) as libc::c_int;
            if tree < 0 {
                let error = io::Error::last_os_error();
                libc::close(reopened);
                return Err(error);
            }
            let attr = MountAttr {
                attr_set: MOUNT_ATTR_RDONLY,
                attr_clr: 0,
                propagation: 0,
                userns_fd: 0,
            };
            let made = (!self.read_only
                || libc::syscall(
                    libc::SYS_mount_setattr,
                    tree,
                    empty.as_ptr(),
                    (libc::AT_EMPTY_PATH | libc::AT_RECURSIVE) as libc::c_uint,
                    &attr,
                    std::mem::size_of::<MountAttr>(),
                ) == 0)
                && libc::syscall(
                    libc::SYS_move_mount,
                    tree,
                    empty.as_ptr(),
                    reopened,
                    empty.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
                ) == 0;
            let error = io::Error::last_os_error();
            libc::close(tree);
            libc::close(reopened);
            if made { Ok(()) } else { Err(error) }
        }
    }
}

/// One copy to mount over one file.
#[derive(Clone)]
struct Bind {
    source: CString,
    path: CString,
    /// The descriptor of the file as checked beneath the root, before the
    /// fork. It belongs to the old mount namespace, where nothing can be
    /// mounted on it from the new one; so the file is opened again by
    /// name there, compared with it, and put in its place.
    checked: libc::c_int,
    /// `/proc/self/fd/<checked>`: the mount goes on the descriptor, never
    /// on a name a link could redirect.
    proc_path: CString,
}

impl ChildMounts {
    fn new(binds: Vec<Bind>, pinned: Vec<PinnedMount>) -> Self {
        // SAFETY: plain getters.
        let (uid, gid, euid) = unsafe { (libc::getuid(), libc::getgid(), libc::geteuid()) };
        // Root mounts in a mount namespace of its own. Anyone else needs a
        // user namespace too, mapping only their own ids, so files keep
        // their owners and the command gains nothing (its capabilities
        // there end at exec). Root never takes one: in it, files of
        // unmapped owners would stop being root's to write.
        Self::for_ids(binds, pinned, (euid != 0).then_some((uid, gid)))
    }

    fn for_ids(binds: Vec<Bind>, pinned: Vec<PinnedMount>, ids: Option<(u32, u32)>) -> Self {
        let maps = ids.map(|(uid, gid)| {
            (
                format!("{uid} {uid} 1\n").into_bytes(),
                format!("{gid} {gid} 1\n").into_bytes(),
            )
        });
        ChildMounts {
            maps,
            binds,
            pinned,
        }
    }

    /// Enters the private namespace and mounts the copies. Call only in the
    /// child, before exec and before the sandbox (which forbids mounting).
    pub fn apply(&self) -> io::Result<()> {
        let mut flags = libc::CLONE_NEWNS;
        if self.maps.is_some() {
            flags |= libc::CLONE_NEWUSER;
        }
        // SAFETY: unshare, open, write, fstat, dup3, close and mount, with
        // pointers to NUL-terminated strings and stat buffers that outlive the calls.
        unsafe {
            if libc::unshare(flags) != 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some((uid_map, gid_map)) = &self.maps {
                // The agent is non-dumpable, so its child's /proc/self files
                // are root's: dumpable for the few calls that write the maps
                // (exec resets it anyway).
                libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
                let written = write_proc(c"/proc/self/setgroups", b"deny")
                    .and_then(|()| write_proc(c"/proc/self/uid_map", uid_map))
                    .and_then(|()| write_proc(c"/proc/self/gid_map", gid_map));
                libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
                written?;
            }
            // Nothing mounted here may reach the user's own namespace.
            let root = c"/";
            if libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            for bind in &self.binds {
                let reopened = reopen_checked(&bind.path, bind.checked)?;
                let placed = libc::dup3(reopened, bind.checked, libc::O_CLOEXEC);
                libc::close(reopened);
                if placed < 0
                    || libc::mount(
                        bind.source.as_ptr(),
                        bind.proc_path.as_ptr(),
                        std::ptr::null(),
                        libc::MS_BIND,
                        std::ptr::null(),
                    ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
            // Parents come before what lies in them (the sandbox sorts
            // them), so `.git` is pinned before `.git/hooks` goes read-only.
            for pin in &self.pinned {
                pin.apply()?;
            }
        }
        Ok(())
    }
}

/// Opens `path` again (an `O_PATH` descriptor, no link followed anywhere
/// on it where the kernel has `openat2`, else none at its end) and checks
/// it is the file `checked` holds, by device and inode: the one way a
/// child finds, in its own mount namespace, what the agent checked in its.
/// Only syscalls.
fn reopen_checked(path: &std::ffi::CStr, checked: libc::c_int) -> io::Result<libc::c_int> {
    const RESOLVE_NO_SYMLINKS: u64 = 0x04;
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: RESOLVE_NO_SYMLINKS,
    };
    // SAFETY: syscalls with a NUL-terminated path and structs on our stack
    // that outlive the calls; the descriptor is closed on every failure.
    unsafe {
        let mut reopened = libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            path.as_ptr(),
            &how,
            std::mem::size_of::<OpenHow>(),
        ) as libc::c_int;
        if reopened < 0 && *libc::__errno_location() == libc::ENOSYS {
            reopened = libc::open(
                path.as_ptr(),
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            );
        }
        if reopened < 0 {
            return Err(io::Error::last_os_error());
        }
        let (mut was, mut now) = (std::mem::zeroed::<libc::stat>(), std::mem::zeroed());
        let same = libc::fstat(checked, &mut was) == 0
            && libc::fstat(reopened, &mut now) == 0
            && (was.st_dev, was.st_ino) == (now.st_dev, now.st_ino);
        if !same {
            libc::close(reopened);
            return Err(io::Error::other(
                "a file changed between its check and its mount",
            ));
        }
        Ok(reopened)
    }
}

/// Writes `bytes` to a `/proc/self` file, with syscalls only.
unsafe fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: the caller runs between fork and exec; these are async-signal-safe.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        if written != bytes.len() as isize {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether commands can get a private view here, found once by trying it
/// in a short-lived child (a kernel or a security module may forbid user
/// namespaces).
pub fn namespaces_available() -> Result<(), String> {
    static AVAILABLE: OnceLock<Result<(), String>> = OnceLock::new();
    AVAILABLE
        .get_or_init(|| {
            let probe = Arc::new(ChildMounts::new(Vec::new(), Vec::new()));
            let mut command = std::process::Command::new("/bin/sh");
            command
                .args(["-c", ":"])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            // SAFETY: `apply` makes only syscalls.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut command, move || probe.apply());
            }
            match command.status() {
                Ok(status) if status.success() => Ok(()),
                Ok(status) => Err(format!("the namespace probe failed ({status})")),
                Err(error) => Err(format!(
                    "this system gives commands no private mount namespace ({error})"
                )),
            }
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    fn view_of(root: &Path, file: &str, text: &str) -> (PathResolver, CommandView) {
        let paths = PathResolver::new(root).unwrap();
        let path = paths.resolve(file).unwrap();
        let view = CommandView::mounting(&paths, vec![(path, text.into(), Some(3))]).unwrap();
        (paths, view)
    }

    fn run_in(view: &CommandView, script: &str, as_nobody: bool) -> std::process::Output {
        let binds = view.for_child(Vec::new()).unwrap().unwrap().binds;
        // What a non-root agent running as nobody would build.
        let mounts = ChildMounts::for_ids(binds, Vec::new(), as_nobody.then_some((65534, 65534)));
        let mut command = std::process::Command::new("/bin/sh");
        command.args(["-c", script]);
        // SAFETY: setuid and the mount set-up are syscalls.
        unsafe {
            command.pre_exec(move || {
                if as_nobody && (libc::setgid(65534) != 0 || libc::setuid(65534) != 0) {
                    return Err(io::Error::last_os_error());
                }
                // A changed uid makes /proc/self root's; an agent started as
                // that user would not be.
                if as_nobody {
                    libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
                }
                mounts.apply()
            });
        }
        command.output().unwrap()
    }

    /// Skips a test that needs namespaces, except where they are required:
    /// CI sets `BAREAGENT_REQUIRE_NAMESPACES=1`, so a skip there fails.
    fn skip(reason: &str) {
        assert!(
            std::env::var("BAREAGENT_REQUIRE_NAMESPACES").as_deref() != Ok("1"),
            "BAREAGENT_REQUIRE_NAMESPACES=1 but {reason}"
        );
        eprintln!("skipped: {reason}");
    }

    #[test]
    fn a_command_reads_and_writes_the_copy_and_the_disk_is_untouched() {
        if let Err(error) = namespaces_available() {
            return skip(&format!("no private mount namespaces here: {error}"));
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("m.py"), "old\n").unwrap();
        let (_, view) = view_of(dir.path(), "m.py", "new\n");
        let file = dir.path().join("m.py");
        let script = format!("cat {0} && echo formatted > {0}", file.display());
        let out = run_in(&view, &script, false);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "new\n");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old\n");
        assert_eq!(view.mounts[0].current_text().unwrap(), "formatted\n");
        // Not mounted for anyone else.
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old\n");
    }

    #[test]
    fn a_user_without_privilege_gets_the_view_through_a_user_namespace() {
        // SAFETY: geteuid has no preconditions.
        if namespaces_available().is_err() || unsafe { libc::geteuid() } != 0 {
            return skip("needs root to become another user, and namespaces");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.py");
        std::fs::write(&file, "old\n").unwrap();
        let (_, view) = view_of(dir.path(), "m.py", "new\n");
        // The copies must be reachable by that user, as they are by the agent's own.
        use std::os::unix::fs::PermissionsExt;
        for path in [dir.path(), view.dir().unwrap()] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let out = run_in(&view, &format!("id -u; cat {}", file.display()), true);
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "65534\nnew\n");
    }

    #[test]
    fn a_file_not_on_disk_cannot_be_mounted_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let paths = PathResolver::new(dir.path()).unwrap();
        let path = paths.resolve("fresh.py").unwrap();
        let error = CommandView::mounting(&paths, vec![(path, "x".into(), None)]).unwrap_err();
        assert!(error.contains("fresh.py"), "{error}");
    }
}
