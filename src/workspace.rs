//! The files the agent may touch: one root directory, and nothing outside it.
//!
//! Every path a tool receives goes through [`PathResolver::resolve`]; the
//! [`Workspace`] trait then reads and writes the resolved paths. The disk
//! implementation here serves the headless agent and the tests; the language
//! server's implementation reads open buffers and writes through the editor.
//!
//! Two steps, kept apart: [`PathResolver::resolve`] names the real location
//! of a path (for the permission gate and for the model), and the disk is
//! then touched only through [`PathResolver::open_file`] and friends, which
//! walk that name from a descriptor of the root without following any link
//! (see [`beneath`]) — a link swapped in between the two is refused, never
//! followed.

mod beneath;
mod encoding;
mod look;
pub mod reported;
mod view;

pub use encoding::Legacy;
pub use look::{Look, Touch};

pub use view::{CommandView, CommandViews, MountedCopy, PinnedMount, namespaces_available};

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::sync::Locked;
use async_trait::async_trait;
use rustix::fs::FileType;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WorkspaceError {
    #[error("path `{path}` is outside the workspace ({root}); use a path inside it")]
    Outside { path: String, root: String },
    #[error("path `{path}` leads outside the workspace through a symbolic link")]
    SymlinkEscape { path: String },
    #[error("path contains a NUL byte")]
    NulByte,
    #[error("path is empty")]
    Empty,
    #[error("`{0}` does not exist")]
    NotFound(String),
    #[error("`{0}` is a directory, not a file")]
    IsDirectory(String),
    #[error("`{0}` is not a regular file (device, socket or pipe)")]
    NotRegular(String),
    #[error(
        "`{0}`: a symbolic link appeared on the path while it was being opened (the files changed meanwhile); refused"
    )]
    LinkOnPath(String),
    #[error("`{0}` is a binary file, not text")]
    Binary(String),
    #[error(
        "`{path}` is {encoding} text that does not decode cleanly, so it is not edited: writing it back would lose the bytes that did not decode (the file is unchanged)"
    )]
    NotExactlyDecoded {
        path: String,
        encoding: &'static str,
    },
    #[error(
        "`{path}` is {encoding} text, which cannot hold {chars}; the file is unchanged (write those characters as an escape the file's language allows, or leave them out)"
    )]
    Unencodable {
        path: String,
        encoding: &'static str,
        chars: String,
    },
    #[error(
        "`{path}` has {links} hard links (the same file under other names, perhaps outside the workspace): writing it in place would change them all; refused (copy it to a file of its own first, e.g. `cp --remove-destination`)"
    )]
    HardLinked { path: String, links: u64 },
    #[error(
        "`{path}` is {size} bytes, over the {MAX_TEXT_BYTES} bytes (10 MiB) bareagent reads or writes whole; read_file shows a file that large a window at a time (offset, limit), and a command can read a part (`sed -n '1000,1100p' {path}`, `grep -n`)"
    )]
    TooLarge { path: String, size: u64 },
    #[error("`{path}`: {message}")]
    Io { path: String, message: String },
}

/// The folder bareagent keeps its own files in, in a workspace.
pub const OWN_DIR: &str = ".bareagent";

const OWN_GITIGNORE: &str = "# bareagent's own files (chat, sessions, review diffs) stay out of git;\n\
# config.toml holds the project's settings: commit that one.\n\
*\n\
!config.toml\n";

/// The largest file the agent reads or writes whole: 10 MiB. Above any
/// hand-written source file and most generated ones (lockfiles, bundles),
/// and 2.5 million tokens: more than a model takes in at once (`read_file`
/// shows 100,000 characters a call). A file is never held in memory more
/// than a few times over this, however large it is on disk.
pub const MAX_TEXT_BYTES: u64 = 10 << 20;

/// Confines paths to a root. The root is canonical (symlinks resolved) so
/// that comparisons are between real locations, and held open so that every
/// later open starts from the directory that was checked.
#[derive(Clone, Debug)]
pub struct PathResolver {
    root: PathBuf,
    fd: Arc<OwnedFd>,
    strategy: beneath::Strategy,
}

impl PathResolver {
    pub fn new(root: &Path) -> std::io::Result<Self> {
        let root = root.canonicalize()?;
        let fd = Arc::new(beneath::open_root(&root)?);
        Ok(PathResolver {
            root,
            fd,
            strategy: beneath::Strategy::Fastest,
        })
    }

    /// The same, opening by the component walk only (what systems without
    /// `openat2` get), so tests cover both ways.
    #[cfg(test)]
    fn walking_only(root: &Path) -> std::io::Result<Self> {
        Ok(PathResolver {
            strategy: beneath::Strategy::Walk,
            ..PathResolver::new(root)?
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a tool's path argument (relative to the root, or absolute
    /// inside it) to a real path inside the root. `..` is folded lexically,
    /// then every existing ancestor is resolved through its symlinks and must
    /// still be inside the root; the part that does not exist yet cannot
    /// hold a link.
    pub fn resolve(&self, input: &str) -> Result<PathBuf, WorkspaceError> {
        if input.contains('\0') {
            return Err(WorkspaceError::NulByte);
        }
        if input.trim().is_empty() {
            return Err(WorkspaceError::Empty);
        }
        let outside = || WorkspaceError::Outside {
            path: input.to_string(),
            root: self.root.display().to_string(),
        };
        let joined = self.root.join(input);
        let mut lexical = PathBuf::new();
        for component in joined.components() {
            match component {
                Component::ParentDir => {
                    if !lexical.pop() {
                        return Err(outside());
                    }
                }
                Component::CurDir => {}
                other => lexical.push(other),
            }
        }
        if !lexical.starts_with(&self.root) {
            return Err(outside());
        }
        // Resolve the longest existing prefix; append the rest unchanged.
        let mut existing = lexical.as_path();
        let mut rest = Vec::new();
        let real = loop {
            match existing.canonicalize() {
                Ok(real) => break real,
                // A dangling link: what a write through it creates lies wherever it points.
                Err(_) if existing.is_symlink() => {
                    return Err(WorkspaceError::SymlinkEscape {
                        path: input.to_string(),
                    });
                }
                Err(_) => match (existing.parent(), existing.file_name()) {
                    (Some(parent), Some(name)) => {
                        rest.push(name.to_os_string());
                        existing = parent;
                    }
                    _ => return Err(outside()),
                },
            }
        };
        if !real.starts_with(&self.root) {
            return Err(WorkspaceError::SymlinkEscape {
                path: input.to_string(),
            });
        }
        // Devices, pipes and sockets: reading one can block forever or read
        // hardware; no tool has business with them.
        if rest.is_empty()
            && let Ok(metadata) = std::fs::metadata(&real)
            && !metadata.is_file()
            && !metadata.is_dir()
        {
            return Err(WorkspaceError::NotRegular(input.to_string()));
        }
        Ok(rest
            .into_iter()
            .rev()
            .fold(real, |path, name| path.join(name)))
    }

    /// `path` (absolute inside the root, or relative to it) below the root.
    fn relative<'p>(&self, path: &'p Path) -> Result<&'p Path, WorkspaceError> {
        if path.is_absolute() {
            path.strip_prefix(&self.root)
                .map_err(|_| WorkspaceError::Outside {
                    path: path.display().to_string(),
                    root: self.root.display().to_string(),
                })
        } else {
            Ok(path)
        }
    }

    /// Opens a resolved path for reading through the walk from the root:
    /// the descriptor returned is the file that was checked. Directories,
    /// devices, FIFOs and sockets are refused on the opened descriptor.
    pub fn open_file(&self, path: &Path) -> Result<std::fs::File, WorkspaceError> {
        let shown = self.display(path);
        let relative = self.relative(path)?;
        let (file, stat) = beneath::open_read(self.fd.as_fd(), relative, self.strategy)
            .map_err(|e| io_error(&shown, e))?;
        match beneath::file_type(&stat) {
            FileType::RegularFile => Ok(file),
            FileType::Directory => Err(WorkspaceError::IsDirectory(shown)),
            _ => Err(WorkspaceError::NotRegular(shown)),
        }
    }

    /// Whether a resolved path is, right now and through no link, a
    /// directory (for `glob`'s starting point).
    pub fn is_dir(&self, path: &Path) -> bool {
        let Ok(relative) = self.relative(path) else {
            return false;
        };
        let flags = rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::DIRECTORY
            | rustix::fs::OFlags::CLOEXEC;
        beneath::open_beneath(self.fd.as_fd(), relative, flags, self.strategy).is_ok()
    }

    /// The modification time of a regular file reached through no link;
    /// `None` for anything else (a link, a directory, gone).
    pub fn file_modified(&self, path: &Path) -> Option<std::time::SystemTime> {
        let relative = self.relative(path).ok()?;
        let stat = beneath::stat(self.fd.as_fd(), relative, self.strategy).ok()?;
        (beneath::file_type(&stat) == FileType::RegularFile).then(|| {
            let seconds = u64::try_from(stat.st_mtime).unwrap_or(0);
            std::time::UNIX_EPOCH + std::time::Duration::new(seconds, stat.st_mtime_nsec as u32)
        })
    }

    /// Creates a resolved directory and its missing parents, through the walk.
    pub fn create_dirs(&self, path: &Path) -> Result<(), WorkspaceError> {
        let shown = self.display(path);
        let relative = self.relative(path)?;
        beneath::open_dir(self.fd.as_fd(), relative, true)
            .map(drop)
            .map_err(|e| io_error(&shown, e))
    }

    /// Refuses a path whose file has more than one name (`st_nlink > 1`):
    /// for writers that change a file in place (an ACP client's
    /// `fs/write_text_file`, an editor saving a buffer), which would change
    /// every other name of it too — a hard link in the workspace to a file
    /// outside it included. Our own writes replace the file by rename, which
    /// leaves the other names alone. A missing file passes (it is created).
    // `st_nlink` is a u32 on some targets.
    #[allow(clippy::unnecessary_cast)]
    pub fn refuse_hard_links(&self, path: &Path) -> Result<(), WorkspaceError> {
        let shown = self.display(path);
        let relative = self.relative(path)?;
        match beneath::stat(self.fd.as_fd(), relative, self.strategy) {
            Ok(stat) if beneath::file_type(&stat) != FileType::Directory && stat.st_nlink > 1 => {
                Err(WorkspaceError::HardLinked {
                    path: shown,
                    links: stat.st_nlink as u64,
                })
            }
            Ok(_) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(io_error(&shown, error)),
        }
    }

    /// Replaces a resolved path's content atomically, the temporary file in
    /// the target's own directory, reached through the walk.
    pub fn write_atomically(&self, path: &Path, bytes: &[u8]) -> Result<(), WorkspaceError> {
        let shown = self.display(path);
        let relative = self.relative(path)?;
        beneath::write_atomically(self.fd.as_fd(), relative, bytes).map_err(|e| io_error(&shown, e))
    }

    /// `text` in the encoding the file has on disk now (UTF-8 when it is
    /// UTF-8, binary, missing or unreadable), or why it cannot be.
    pub fn encode_as_on_disk<'t>(
        &self,
        path: &Path,
        text: &'t str,
    ) -> Result<std::borrow::Cow<'t, [u8]>, WorkspaceError> {
        // Only a file that is not there (or a link, which the write
        // replaces, never follows) is new text's to shape; one that cannot
        // be read is not written blind.
        let on_disk = match self.open_file(path) {
            Err(WorkspaceError::NotFound(_) | WorkspaceError::LinkOnPath(_)) => None,
            Err(error) => return Err(error),
            Ok(file) => {
                let mut bytes = Vec::new();
                file.take(MAX_TEXT_BYTES + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| io_error(&self.display(path), e))?;
                if bytes.len() as u64 > MAX_TEXT_BYTES {
                    return Err(WorkspaceError::TooLarge {
                        path: self.display(path),
                        size: bytes.len() as u64,
                    });
                }
                encoding::decode(bytes).and_then(|(_, legacy)| legacy)
            }
        };
        encoding::encode(text, on_disk).map_err(|why| {
            let (path, encoding) = (self.display(path), on_disk.map_or("UTF-8", |l| l.name()));
            match why {
                encoding::Unwritable::Inexact => {
                    WorkspaceError::NotExactlyDecoded { path, encoding }
                }
                encoding::Unwritable::Unmappable(chars) => WorkspaceError::Unencodable {
                    path,
                    encoding,
                    chars: chars
                        .chars()
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                },
            }
        })
    }

    /// Creates bareagent's own folder in the workspace (`.bareagent/`, and
    /// `sub` in it) with, when it has none, a `.gitignore` that keeps its
    /// files — the chat, sessions, diffs — out of the user's `git status`:
    /// all but `config.toml`, the project's settings, which are committed.
    /// A `.gitignore` already there (the user's) is left as it is.
    pub fn create_own_dir(&self, sub: &str) -> Result<PathBuf, WorkspaceError> {
        let own = self.root.join(OWN_DIR);
        let dir = own.join(sub);
        self.create_dirs(&dir)?;
        let ignore = own.join(".gitignore");
        if let Err(WorkspaceError::NotFound(_)) = self.open_file(&ignore) {
            use std::io::Write;
            // `create_new`: one written meanwhile is kept, never replaced.
            if let Ok(mut file) = self.open_append(&ignore, true) {
                let _ = file.write_all(OWN_GITIGNORE.as_bytes());
            }
        }
        Ok(dir)
    }

    /// Opens a resolved file for appending, through the walk (its missing
    /// parents created): with `create_new` it must not exist yet (a planted
    /// link at its name fails with "exists"), else it must be a regular file
    /// reached through no link. For files the agent itself keeps (sessions).
    pub fn open_append(
        &self,
        path: &Path,
        create_new: bool,
    ) -> Result<std::fs::File, WorkspaceError> {
        use rustix::fs::{Mode, OFlags};
        let shown = self.display(path);
        let relative = self.relative(path)?;
        let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
            return Err(WorkspaceError::Empty);
        };
        let dir =
            beneath::open_dir(self.fd.as_fd(), parent, true).map_err(|e| io_error(&shown, e))?;
        let mut flags = OFlags::WRONLY | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if create_new {
            flags |= OFlags::CREATE | OFlags::EXCL;
        }
        let fd = rustix::fs::openat(&dir, name, flags, Mode::from_raw_mode(0o600))
            .map_err(|e| io_error(&shown, e.into()))?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| io_error(&shown, e.into()))?;
        if beneath::file_type(&stat) != FileType::RegularFile {
            return Err(WorkspaceError::NotRegular(shown));
        }
        Ok(std::fs::File::from(fd))
    }

    /// The names in a resolved directory reached through no link; empty
    /// when it does not exist.
    pub fn file_names(&self, dir: &Path) -> Result<Vec<String>, WorkspaceError> {
        let shown = self.display(dir);
        let relative = self.relative(dir)?;
        let fd = match beneath::open_dir(self.fd.as_fd(), relative, false) {
            Ok(fd) => fd,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(io_error(&shown, error)),
        };
        let entries = rustix::fs::Dir::read_from(&fd).map_err(|e| io_error(&shown, e.into()))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&shown, e.into()))?;
            if let Ok(name) = entry.file_name().to_str()
                && name != "."
                && name != ".."
            {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    /// Removes a resolved file (a link there is removed, not followed).
    pub fn remove_file(&self, path: &Path) -> Result<(), WorkspaceError> {
        let shown = self.display(path);
        let relative = self.relative(path)?;
        let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
            return Err(WorkspaceError::Empty);
        };
        let dir =
            beneath::open_dir(self.fd.as_fd(), parent, false).map_err(|e| io_error(&shown, e))?;
        rustix::fs::unlinkat(&dir, name, rustix::fs::AtFlags::empty())
            .map_err(|e| io_error(&shown, e.into()))
    }

    /// The path as the model should see it: relative to the root.
    pub fn display(&self, path: &Path) -> String {
        escaped(path.strip_prefix(&self.root).unwrap_or(path))
    }
}

/// A path as text, its bytes that are not UTF-8 written `\xE9`: two such
/// names stay two names (a lossy `�` would merge them) and what is shown
/// says which bytes the name has. (A name that spells `\xE9` in ASCII
/// shows alike: this shows names; it is not a way back to one.)
pub fn escaped(path: &Path) -> String {
    use std::fmt::Write;
    use std::os::unix::ffi::OsStrExt;
    let mut shown = String::new();
    for chunk in path.as_os_str().as_bytes().utf8_chunks() {
        shown.push_str(chunk.valid());
        for byte in chunk.invalid() {
            let _ = write!(shown, "\\x{byte:02X}");
        }
    }
    shown
}

/// A file's text with the version it was read at (`None` on disk; the
/// editor's document version when the file is open in an editor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileText {
    pub text: String,
    pub version: Option<i32>,
    /// The file's encoding on disk when it is not UTF-8.
    pub encoding: Option<Legacy>,
}

/// Texts that stand in for files on disk: the editor's open buffers, with
/// their unsaved changes, by resolved path.
pub type Buffers = std::collections::HashMap<PathBuf, String>;

/// The files a turn works on: the disk for `bareagent run`, the editor's
/// buffers and `applyEdit` for the language server.
///
/// Contract: every path given has been through [`Workspace::paths`]'s
/// [`PathResolver::resolve`] (inside the root, links resolved); an
/// implementation opens it only beneath the root, never following a link.
/// `read_text` returns the text the model should see (an open buffer's,
/// unsaved changes included) with the version it was read at; `write_text`
/// refuses a write computed from a stale version rather than overwrite
/// changes the model never saw. Errors are [`WorkspaceError`] data, shown to
/// the model as tool errors.
#[warn(missing_docs)]
#[async_trait]
pub trait Workspace: Send + Sync {
    /// The resolver every path goes through.
    fn paths(&self) -> &PathResolver;

    /// What searches read in place of the disk, so that a search never
    /// contradicts a read: every text `read_text` would give from somewhere
    /// other than the disk. None on disk.
    fn buffers(&self) -> Buffers {
        Buffers::new()
    }

    /// What prepares each command's view of files whose buffers the disk
    /// does not hold (see [`view`]). None on disk: the disk is the truth.
    fn command_views(&self) -> Option<Arc<dyn CommandViews>> {
        None
    }

    /// The client's terminal, where a front end's client runs commands
    /// for the agent (ACP's `terminal/*`). None: commands run as our own
    /// sandboxed processes. See [`ClientTerminal`] for when it is used.
    fn client_terminal(&self) -> Option<Arc<dyn ClientTerminal>> {
        None
    }

    /// What the editor's own language servers report about files, where
    /// the editor sends it. None on disk.
    fn diagnostics(&self) -> Option<Arc<reported::EditorDiagnostics>> {
        None
    }

    /// Reads a resolved path as UTF-8 text.
    async fn read_text(&self, path: &Path) -> Result<FileText, WorkspaceError>;

    /// Replaces a resolved path's text, creating the file and its parents if
    /// needed. `read_version` is the version the new text was computed from:
    /// an implementation that tracks versions refuses a stale one. Returns
    /// the file's version after the write, where versions are tracked.
    async fn write_text(
        &self,
        path: &Path,
        text: &str,
        read_version: Option<i32>,
    ) -> Result<Option<i32>, WorkspaceError>;

    /// Puts files back as they were (a rewind), each checked by the caller
    /// to hold what the agent wrote, at the version given. One result per
    /// file, in order. By default one file after another, each written as
    /// `write_text` writes (or removed, for a file the agent created); an
    /// editor does them all as one undoable edit.
    async fn restore(&self, files: &[Restore]) -> Vec<Result<(), WorkspaceError>> {
        restore_one_by_one(self, files).await
    }
}

/// Runs a command in the client's terminal instead of our own process, so
/// the user watches it live in their editor. The client's terminal is not
/// our sandbox: `bash` hands a command to it only when the gate asked the
/// user about that very call and they allowed it (the question says where
/// it runs); a command allowed without asking (a rule, the mode) runs in our
/// sandbox as always.
#[async_trait]
pub trait ClientTerminal: Send + Sync {
    /// Runs `command` (a `bash -c` line) in `cwd` until it exits, `timeout`
    /// passes or `cancel` fires (then it is killed), and returns its output.
    async fn run(
        &self,
        command: &str,
        cwd: &Path,
        timeout: std::time::Duration,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<TerminalRun, String>;
}

/// What a command run in the client's terminal left.
#[derive(Clone, Debug, Default)]
pub struct TerminalRun {
    /// Its output as the client kept it (stdout and stderr together).
    pub output: String,
    /// The client cut the output at its limit.
    pub truncated: bool,
    pub exit_code: Option<u32>,
    pub signal: Option<String>,
    /// Killed: the timeout passed, or the turn was cancelled.
    pub killed: Option<String>,
}

/// [`Workspace::restore`] one file after another: each written as
/// `write_text` writes, or removed (beneath the root, never through a link).
pub async fn restore_one_by_one<W: Workspace + ?Sized>(
    workspace: &W,
    files: &[Restore],
) -> Vec<Result<(), WorkspaceError>> {
    let mut results = Vec::with_capacity(files.len());
    for file in files {
        results.push(match &file.text {
            Some(text) => workspace
                .write_text(&file.path, text, file.version)
                .await
                .map(|_| ()),
            None => workspace.paths().remove_file(&file.path),
        });
    }
    results
}

/// One file a rewind puts back.
#[derive(Clone, Debug)]
pub struct Restore {
    /// Resolved.
    pub path: PathBuf,
    /// Its text before the agent's edits; `None`: the agent created it,
    /// so it is removed.
    pub text: Option<String>,
    /// What it holds now, as checked (the agent's text): an editor checks
    /// again just before it writes.
    pub expected: String,
    /// The version its current text was read at (in an editor).
    pub version: Option<i32>,
}

/// The workspace on disk, with atomic writes.
#[derive(Clone)]
pub struct DiskWorkspace {
    paths: PathResolver,
}

impl DiskWorkspace {
    /// Opens the workspace, and (once per root and process, in the
    /// background) removes temporary files a killed agent left behind.
    pub fn new(root: &Path) -> std::io::Result<Self> {
        let paths = PathResolver::new(root)?;
        clean_stale_temp_files_once(&paths);
        Ok(DiskWorkspace { paths })
    }
}

/// Bytes sniffed for NULs when telling text from binary, as git and ripgrep do.
pub const SNIFF_BYTES: usize = 8192;

#[async_trait]
impl Workspace for DiskWorkspace {
    fn paths(&self) -> &PathResolver {
        &self.paths
    }

    async fn read_text(&self, path: &Path) -> Result<FileText, WorkspaceError> {
        let shown = self.paths.display(path);
        let paths = self.paths.clone();
        let path = path.to_path_buf();
        // Read from the descriptor that was checked, never by name again.
        let bytes = tokio::task::spawn_blocking(move || {
            let file = paths.open_file(&path)?;
            let shown = paths.display(&path);
            let too_large = |size| WorkspaceError::TooLarge {
                path: shown.clone(),
                size,
            };
            // The descriptor's size first (a sparse 2 GB file is refused
            // without a read); then at most one byte over the cap, in case
            // it grows meanwhile.
            let size = file.metadata().map_err(|e| io_error(&shown, e))?.len();
            if size > MAX_TEXT_BYTES {
                return Err(too_large(size));
            }
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            file.take(MAX_TEXT_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| io_error(&shown, e))?;
            if bytes.len() as u64 > MAX_TEXT_BYTES {
                return Err(too_large(bytes.len() as u64));
            }
            Ok::<_, WorkspaceError>(bytes)
        })
        .await
        .map_err(|error| WorkspaceError::Io {
            path: shown.clone(),
            message: error.to_string(),
        })??;
        let (text, encoding) = encoding::decode(bytes).ok_or(WorkspaceError::Binary(shown))?;
        Ok(FileText {
            text,
            version: None,
            encoding,
        })
    }

    async fn write_text(
        &self,
        path: &Path,
        text: &str,
        _read_version: Option<i32>,
    ) -> Result<Option<i32>, WorkspaceError> {
        let shown = self.paths.display(path);
        let paths = self.paths.clone();
        let path = path.to_path_buf();
        let text = text.to_string();
        tokio::task::spawn_blocking(move || {
            let bytes = paths.encode_as_on_disk(&path, &text)?;
            paths.write_atomically(&path, &bytes)
        })
        .await
        .map_err(|error| WorkspaceError::Io {
            path: shown.clone(),
            message: error.to_string(),
        })??;
        Ok(None)
    }
}

/// How old a temporary file must be to count as stale: another agent on the
/// same workspace may be in the middle of a write (which takes milliseconds).
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes `.bareagent-*.tmp` files that a killed agent left behind, so git
/// never shows them. Temporary files must sit in the target's directory
/// (a rename is atomic only within one file system, and only then is the
/// write atomic), so they can be anywhere in the tree; the walk honours
/// `.gitignore` — a leftover in an ignored directory is one git does not
/// see — and skips `.git`. No file name is one git ignores by itself, and
/// we do not edit the user's `.git/info/exclude`.
fn clean_stale_temp_files_once(paths: &PathResolver) {
    static CLEANED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    {
        let mut cleaned = CLEANED.locked();
        if cleaned.contains(&paths.root) {
            return;
        }
        cleaned.push(paths.root.clone());
    }
    let paths = paths.clone();
    let spawned = std::thread::Builder::new()
        .name("bareagent-clean-temp".into())
        .spawn(move || {
            // Nothing waits for it: at the lowest priority it takes no CPU
            // from the start of the turn (a large tree's walk is seconds).
            // On Linux a thread's nice value is its own; `0` is this thread.
            // SAFETY: setpriority has no memory preconditions.
            #[cfg(target_os = "linux")]
            unsafe {
                libc::setpriority(libc::PRIO_PROCESS, 0, 19);
            }
            clean_stale_temp_files(&paths)
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start cleaning stale temporary files");
    }
}

/// The workspace's tree as git sees it: `.gitignore` honoured (whether or
/// not it is a repository), hidden files walked, `.git` skipped, links not
/// followed.
fn tree_walker(root: &Path) -> ignore::WalkBuilder {
    let mut walker = ignore::WalkBuilder::new(root);
    walker
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    walker
}

pub fn clean_stale_temp_files(paths: &PathResolver) -> usize {
    let mut removed = 0;
    for entry in tree_walker(&paths.root).build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file())
            || !beneath::is_temp_name(entry.file_name())
        {
            continue;
        }
        let old = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age >= STALE_AFTER);
        let Ok(relative) = entry.path().strip_prefix(&paths.root) else {
            continue;
        };
        if old {
            match beneath::remove_temp(paths.fd.as_fd(), relative) {
                Ok(()) => {
                    tracing::info!(file = %relative.display(), "removed a stale temporary file");
                    removed += 1;
                }
                Err(error) => {
                    tracing::warn!(file = %relative.display(), %error, "cannot remove a stale temporary file")
                }
            }
        }
    }
    removed
}

fn io_error(shown: &str, error: std::io::Error) -> WorkspaceError {
    match error.raw_os_error() {
        // O_NOFOLLOW met a link: the tree changed since the path was resolved.
        Some(libc::ELOOP) => return WorkspaceError::LinkOnPath(shown.to_string()),
        Some(libc::EISDIR) => return WorkspaceError::IsDirectory(shown.to_string()),
        _ => {}
    }
    match error.kind() {
        std::io::ErrorKind::NotFound => WorkspaceError::NotFound(shown.to_string()),
        std::io::ErrorKind::IsADirectory => WorkspaceError::IsDirectory(shown.to_string()),
        _ => WorkspaceError::Io {
            path: shown.to_string(),
            message: error.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, PathResolver) {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("src/deep")).unwrap();
        std::fs::write(root.path().join("src/lib.rs"), "x").unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("out_dir")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.path().join("out_file"))
            .unwrap();
        std::os::unix::fs::symlink("/", root.path().join("src/deep/to_root")).unwrap();
        std::os::unix::fs::symlink(root.path().join("src"), root.path().join("in_link")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.path().join("zero")).unwrap();
        let fifo = std::ffi::CString::new(root.path().join("pipe").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a fresh path in a temp dir.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let resolver = PathResolver::new(root.path()).unwrap();
        (root, outside, resolver)
    }

    #[test]
    fn escapes_are_refused() {
        let (root, outside, resolver) = setup();
        let outside_abs = outside.path().join("secret").display().to_string();
        let root_name = root
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let attempts = [
            "..".to_string(),
            "../".to_string(),
            "../secret".to_string(),
            "src/../../etc/passwd".to_string(),
            "src/deep/../../../x".to_string(),
            "./../x".to_string(),
            "/etc/passwd".to_string(),
            "/".to_string(),
            outside_abs.clone(),
            format!("../{root_name}/../x"),
            "out_dir/secret".to_string(),
            "out_dir".to_string(),
            "out_dir/new_file".to_string(),
            "out_dir/new/dir/file".to_string(),
            "out_file".to_string(),
            "src/deep/to_root/etc/passwd".to_string(),
            "src/deep/to_root".to_string(),
            "a\0b".to_string(),
            "src/lib.rs\0.txt".to_string(),
            "".to_string(),
            "   ".to_string(),
            format!("{}/../x", root.path().display()),
            "zero".to_string(),
            "pipe".to_string(),
            "/dev/null".to_string(),
        ];
        for attempt in &attempts {
            assert!(resolver.resolve(attempt).is_err(), "accepted {attempt:?}");
        }
        assert!(matches!(
            resolver.resolve("out_dir/secret"),
            Err(WorkspaceError::SymlinkEscape { .. })
        ));
        assert!(matches!(
            resolver.resolve("../x"),
            Err(WorkspaceError::Outside { .. })
        ));
        assert_eq!(resolver.resolve("a\0b"), Err(WorkspaceError::NulByte));
        assert!(matches!(
            resolver.resolve("pipe"),
            Err(WorkspaceError::NotRegular(_))
        ));
    }

    #[test]
    fn paths_inside_resolve() {
        let (root, _outside, resolver) = setup();
        let real = root.path().canonicalize().unwrap();
        assert_eq!(
            resolver.resolve("src/lib.rs").unwrap(),
            real.join("src/lib.rs")
        );
        assert_eq!(
            resolver.resolve("./src/deep/../lib.rs").unwrap(),
            real.join("src/lib.rs")
        );
        assert_eq!(
            resolver.resolve("new/dir/file.txt").unwrap(),
            real.join("new/dir/file.txt")
        );
        assert_eq!(
            resolver.resolve("in_link/lib.rs").unwrap(),
            real.join("src/lib.rs")
        );
        let absolute = real.join("src/lib.rs").display().to_string();
        assert_eq!(
            resolver.resolve(&absolute).unwrap(),
            real.join("src/lib.rs")
        );
        assert_eq!(resolver.display(&real.join("src/lib.rs")), "src/lib.rs");
    }

    #[tokio::test]
    async fn writes_are_atomic_and_keep_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let (root, _outside, _) = setup();
        let workspace = DiskWorkspace::new(root.path()).unwrap();
        let script = workspace.paths().resolve("run.sh").unwrap();
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        workspace.write_text(&script, "new", None).await.unwrap();
        assert_eq!(std::fs::read_to_string(&script).unwrap(), "new");
        assert_eq!(
            std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
            0o755
        );
        let leftovers: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[tokio::test]
    async fn binary_directories_and_devices_are_refused() {
        let (root, _outside, _) = setup();
        std::fs::write(
            root.path().join("blob.bin"),
            [0x89, b'P', b'N', b'G', 0, 1, 2],
        )
        .unwrap();
        std::fs::write(root.path().join("latin1.txt"), [b'c', b'a', b'f', 0xe9]).unwrap();
        let workspace = DiskWorkspace::new(root.path()).unwrap();
        let read = |p: &str| {
            let path = workspace.paths().resolve(p).unwrap();
            let ws = &workspace;
            async move { ws.read_text(&path).await }
        };
        assert!(matches!(
            read("blob.bin").await,
            Err(WorkspaceError::Binary(_))
        ));
        // Text in another encoding is text (see `encoding`).
        let latin1 = read("latin1.txt").await.unwrap();
        assert_eq!(latin1.text, "café");
        assert_eq!(latin1.encoding.map(|e| e.name()), Some("windows-1252"));
        assert!(matches!(
            read("src").await,
            Err(WorkspaceError::IsDirectory(_))
        ));
        assert!(matches!(
            read("missing.txt").await,
            Err(WorkspaceError::NotFound(_))
        ));
    }

    /// What the resolver named may change before it is opened: a link put
    /// in its place (or in place of a directory on its way) is refused at
    /// the open, never followed.
    #[tokio::test]
    async fn a_link_swapped_in_after_resolving_is_refused() {
        for walking in [false, true] {
            a_link_swapped_in_is_refused(walking).await;
        }
    }

    /// The workspace, opening through `openat2` or by the walk only.
    fn disk(root: &Path, walking: bool) -> DiskWorkspace {
        let paths = match walking {
            false => PathResolver::new(root),
            true => PathResolver::walking_only(root),
        };
        DiskWorkspace {
            paths: paths.unwrap(),
        }
    }

    async fn a_link_swapped_in_is_refused(walking: bool) {
        let (root, outside, _) = setup();
        let workspace = disk(root.path(), walking);
        std::fs::write(root.path().join("file.txt"), "inside").unwrap();
        std::fs::create_dir(root.path().join("dir")).unwrap();
        std::fs::write(root.path().join("dir/file.txt"), "inside").unwrap();
        let file = workspace.paths().resolve("file.txt").unwrap();
        let nested = workspace.paths().resolve("dir/file.txt").unwrap();
        let new_in_dir = workspace.paths().resolve("dir/new.txt").unwrap();
        for path in [&file, &nested] {
            assert_eq!(workspace.read_text(path).await.unwrap().text, "inside");
        }
        std::fs::remove_file(root.path().join("file.txt")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.path().join("file.txt"))
            .unwrap();
        std::fs::rename(root.path().join("dir"), root.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("dir")).unwrap();
        std::fs::write(outside.path().join("file.txt"), "outside").unwrap();
        for path in [&file, &nested] {
            assert!(
                matches!(
                    workspace.read_text(path).await,
                    Err(WorkspaceError::LinkOnPath(_))
                ),
                "{path:?}"
            );
        }
        assert!(matches!(
            workspace.write_text(&new_in_dir, "x", None).await,
            Err(WorkspaceError::LinkOnPath(_))
        ));
        // Writing over a link replaces the link; the outside file is untouched.
        workspace.write_text(&file, "new", None).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(root.path().join("file.txt")).unwrap(),
            "new"
        );
        assert!(!root.path().join("file.txt").is_symlink());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "s"
        );
        let mut outside_names: Vec<_> = std::fs::read_dir(outside.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        outside_names.sort();
        assert_eq!(outside_names, ["file.txt", "secret"]);
    }

    #[tokio::test]
    async fn a_fifo_swapped_in_is_refused_without_blocking() {
        for walking in [false, true] {
            a_fifo_swapped_in_is_refused(walking).await;
        }
    }

    async fn a_fifo_swapped_in_is_refused(walking: bool) {
        let (root, _outside, _) = setup();
        let workspace = disk(root.path(), walking);
        std::fs::write(root.path().join("later"), "x").unwrap();
        let path = workspace.paths().resolve("later").unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::rename(root.path().join("pipe"), &path).unwrap();
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            workspace.read_text(&path),
        )
        .await
        .expect("opening a FIFO must not block");
        assert!(
            matches!(read, Err(WorkspaceError::NotRegular(_))),
            "{read:?}"
        );
    }

    #[test]
    fn stale_temp_files_are_removed_and_others_kept() {
        let (root, _outside, resolver) = setup();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let plant = |name: &str, modified: std::time::SystemTime| {
            let path = root.path().join(name);
            std::fs::write(&path, "x").unwrap();
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(modified)
                .unwrap();
        };
        plant(".bareagent-1-abc.tmp", old);
        plant("src/deep/.bareagent-2-def.tmp", old);
        plant(".bareagent-3-fresh.tmp", std::time::SystemTime::now());
        plant("src/.bareagent-notes.txt", old);
        plant("src/other.tmp", old);
        assert_eq!(clean_stale_temp_files(&resolver), 2);
        assert!(!root.path().join(".bareagent-1-abc.tmp").exists());
        assert!(!root.path().join("src/deep/.bareagent-2-def.tmp").exists());
        for kept in [
            ".bareagent-3-fresh.tmp",
            "src/.bareagent-notes.txt",
            "src/other.tmp",
        ] {
            assert!(root.path().join(kept).exists(), "{kept}");
        }
    }
}
