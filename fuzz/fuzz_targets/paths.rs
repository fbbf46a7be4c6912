//! The path resolver (`workspace::PathResolver`): any path a tool might be
//! given, relative or absolute, in a workspace with links that stay inside
//! and links that lead out (absolute, relative, through `..`, dangling, a
//! loop), a FIFO, and a sibling directory whose name starts with the
//! root's.
//!
//! What must hold: a resolved path lies inside the root — as a path (no
//! `..`, the root's components first) and on disk (the part that exists,
//! with its links resolved, is inside) — resolving it again gives it back,
//! and a file opened through it is a file inside the root.
#![no_main]

use std::os::fd::AsRawFd;
use std::path::{Component, PathBuf};
use std::sync::OnceLock;

use bareagent::workspace::PathResolver;
use libfuzzer_sys::fuzz_target;

struct Tree {
    _dir: tempfile::TempDir,
    /// The workspace root, canonical.
    root: PathBuf,
    paths: PathResolver,
}

fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(|| {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let base = dir.path().canonicalize().expect("canonical");
        let root = base.join("ws");
        let outside = base.join("outside");
        let sibling = base.join("wsx");
        for d in [
            &root,
            &outside,
            &sibling,
            &root.join("dir"),
            &root.join("dir/sub"),
        ] {
            std::fs::create_dir_all(d).expect("a directory");
        }
        std::fs::write(root.join("file.txt"), "in").expect("a file");
        std::fs::write(root.join("dir/inner.txt"), "in").expect("a file");
        std::fs::write(outside.join("secret.txt"), "out").expect("a file");
        std::fs::write(sibling.join("secret.txt"), "out").expect("a file");
        let links: [(&str, PathBuf); 9] = [
            ("in", PathBuf::from("dir")),
            ("dir/up", PathBuf::from("..")),
            ("dir/upup", PathBuf::from("../..")),
            ("out", outside.clone()),
            ("out_rel", PathBuf::from("../outside")),
            ("sib", PathBuf::from("../wsx")),
            ("dangling", PathBuf::from("nowhere/at/all")),
            ("loop", PathBuf::from("loop")),
            ("dir/sub/file_link", PathBuf::from("../../file.txt")),
        ];
        for (name, target) in links {
            symlink(target, root.join(name)).expect("a link");
        }
        let fifo = std::ffi::CString::new(root.join("fifo").into_os_string().into_encoded_bytes())
            .expect("no NUL");
        // SAFETY: a valid NUL-terminated path.
        unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) };
        let paths = PathResolver::new(&root).expect("resolver");
        Tree {
            _dir: dir,
            root,
            paths,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(input) = std::str::from_utf8(rest) else {
        return;
    };
    let tree = tree();
    let input = match mode % 3 {
        0 => input.to_string(),
        1 => format!("{}/{input}", tree.root.display()),
        _ => format!(
            "{}/{input}",
            tree.root.parent().expect("a parent").display()
        ),
    };
    let Ok(resolved) = tree.paths.resolve(&input) else {
        return;
    };
    assert!(
        resolved.starts_with(&tree.root),
        "{input:?} resolved to {resolved:?}"
    );
    assert!(
        !resolved.components().any(|c| c == Component::ParentDir),
        "{input:?} resolved to {resolved:?}"
    );
    let existing = resolved
        .ancestors()
        .find_map(|p| p.canonicalize().ok())
        .expect("the root exists");
    assert!(
        existing.starts_with(&tree.root),
        "{input:?} resolved to {resolved:?}, which is {existing:?}"
    );
    let again = tree.paths.resolve(&resolved.to_string_lossy());
    assert_eq!(again.as_ref(), Ok(&resolved), "{input:?} resolved again");
    if let Ok(file) = tree.paths.open_file(&resolved) {
        let opened = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .expect("the descriptor's path");
        assert!(
            opened.starts_with(&tree.root),
            "{input:?} opened {opened:?}"
        );
        assert!(file.metadata().expect("metadata").is_file());
    }
});
