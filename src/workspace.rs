//! The files the agent may touch: one root directory, and nothing outside it.
//!
//! Every path a tool receives goes through [`PathResolver::resolve`]; the
//! [`Workspace`] trait then reads and writes the resolved paths. The disk
//! implementation here serves the headless agent and the tests; the language
//! server's implementation reads open buffers and writes through the editor.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;

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
    #[error("`{0}` is a binary file, not text")]
    Binary(String),
    #[error("`{path}`: {message}")]
    Io { path: String, message: String },
}

/// Confines paths to a root. The root is canonical (symlinks resolved) so
/// that comparisons are between real locations.
#[derive(Clone, Debug)]
pub struct PathResolver {
    root: PathBuf,
}

impl PathResolver {
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Ok(PathResolver {
            root: root.canonicalize()?,
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
        if rest.is_empty() {
            if let Ok(metadata) = std::fs::metadata(&real) {
                if !metadata.is_file() && !metadata.is_dir() {
                    return Err(WorkspaceError::NotRegular(input.to_string()));
                }
            }
        }
        Ok(rest
            .into_iter()
            .rev()
            .fold(real, |path, name| path.join(name)))
    }

    /// The path as the model should see it: relative to the root.
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

/// A file's text with the version it was read at (`None` on disk; the
/// editor's document version when the file is open in an editor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileText {
    pub text: String,
    pub version: Option<i32>,
}

#[async_trait]
pub trait Workspace: Send + Sync {
    fn paths(&self) -> &PathResolver;

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
}

/// The workspace on disk, with atomic writes.
pub struct DiskWorkspace {
    paths: PathResolver,
}

impl DiskWorkspace {
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Ok(DiskWorkspace {
            paths: PathResolver::new(root)?,
        })
    }
}

/// Bytes sniffed for NULs when telling text from binary, as git and ripgrep do.
const SNIFF_BYTES: usize = 8192;

#[async_trait]
impl Workspace for DiskWorkspace {
    fn paths(&self) -> &PathResolver {
        &self.paths
    }

    async fn read_text(&self, path: &Path) -> Result<FileText, WorkspaceError> {
        let shown = self.paths.display(path);
        let metadata = tokio::fs::metadata(path)
            .await
            .map_err(|e| io_error(&shown, e))?;
        if metadata.is_dir() {
            return Err(WorkspaceError::IsDirectory(shown));
        }
        if !metadata.is_file() {
            return Err(WorkspaceError::NotRegular(shown));
        }
        let bytes = tokio::fs::read(path)
            .await
            .map_err(|e| io_error(&shown, e))?;
        if bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
            return Err(WorkspaceError::Binary(shown));
        }
        let text = String::from_utf8(bytes).map_err(|_| WorkspaceError::Binary(shown))?;
        Ok(FileText {
            text,
            version: None,
        })
    }

    async fn write_text(
        &self,
        path: &Path,
        text: &str,
        _read_version: Option<i32>,
    ) -> Result<Option<i32>, WorkspaceError> {
        let shown = self.paths.display(path);
        let path = path.to_path_buf();
        let text = text.to_string();
        tokio::task::spawn_blocking(move || write_atomically(&path, text.as_bytes()))
            .await
            .map_err(|error| WorkspaceError::Io {
                path: shown.clone(),
                message: error.to_string(),
            })?
            .map_err(|error| io_error(&shown, error))?;
        Ok(None)
    }
}

/// Writes to a temporary file beside the target and renames it over: a
/// reader (or a crash) sees the old file or the new one, never half of one.
/// The target's permissions are kept.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent directory"))?;
    std::fs::create_dir_all(parent)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".bareagent-")
        .suffix(".tmp")
        .tempfile_in(parent)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    if let Ok(metadata) = std::fs::metadata(path) {
        temp.as_file().set_permissions(metadata.permissions())?;
    }
    temp.persist(path).map_err(|error| error.error)?;
    Ok(())
}

fn io_error(shown: &str, error: std::io::Error) -> WorkspaceError {
    match error.kind() {
        std::io::ErrorKind::NotFound => WorkspaceError::NotFound(shown.to_string()),
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
        assert!(matches!(
            read("latin1.txt").await,
            Err(WorkspaceError::Binary(_))
        ));
        assert!(matches!(
            read("src").await,
            Err(WorkspaceError::IsDirectory(_))
        ));
        assert!(matches!(
            read("missing.txt").await,
            Err(WorkspaceError::NotFound(_))
        ));
    }
}
