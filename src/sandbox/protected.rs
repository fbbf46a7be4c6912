//! What a command may not change although it lies in a folder it may
//! write: what the user's own tools run later, outside any sandbox, and the
//! secrets the read rules keep from it.
//!
//! - git's `hooks/`, `config` and `info/`, and the folder `core.hooksPath`
//!   names: the user's next `git commit` runs what is there. The rest of
//!   `.git` stays writable, so commands can still record work (objects,
//!   refs, the index, logs, `HEAD`); `.git` itself is pinned, so it cannot be
//!   renamed away and replaced by a repository of the command's making;
//! - the workspace's power files that editors, direnv, hook managers, cargo
//!   and the agent itself read and run (`.bareagent/` with the session store,
//!   `.mcp.json`, `.vscode/`, `.envrc`, …);
//! - every path the sandbox denies reading (the secrets under `$HOME`, the
//!   agent's config, what read-deny rules name) that lies in a writable
//!   folder: Landlock already keeps its contents unread, and pinned, its
//!   files cannot be renamed or hard-linked out to a readable name either.
//!
//! Enforced by the kernel: each existing path is bind-mounted on itself in
//! the command's private mount namespace, read-only but for `.git` (see
//! `workspace::PinnedMount`). Where the system gives commands no mount
//! namespace, Landlock withholds every write right from these paths and
//! from the folders that hold them instead (`landlock.rs`): stricter, as
//! nothing can then be created at the top of the workspace, but never
//! looser. A path that does not exist when the command starts cannot be a
//! mount point; `docs/security.md` says what that leaves open.

use std::path::{Path, PathBuf};

use super::{SandboxMode, SandboxPolicy};

/// git's own files that run or configure what runs, under `.git` and
/// under each submodule's git folder in `.git/modules`.
const GIT_RUNS: &[&str] = &["hooks", "config", "info"];

/// A file that, in a repository's own git folder, points git at another
/// folder's config and hooks. git never makes one there (only in a linked
/// worktree's folder under `.git/worktrees`, which is pinned whole): one
/// that appears was planted, and is removed ([`sweep`]).
const GIT_REDIRECT: &str = "commondir";

/// Folders git needs and creates at `git init`: made when missing, so they
/// can be mount points (an empty folder changes nothing git does).
const GIT_FOLDERS: &[&str] = &["hooks", "info"];

/// At the top of the workspace: what editors, direnv, hook managers, cargo
/// and the agent read and run (the file tools ask before changing these and
/// more: `permission::POWER_FILES`).
const WORKSPACE_RUNS: &[&str] = &[
    ".bareagent",
    ".mcp.json",
    ".vscode",
    ".idea",
    ".zed",
    ".helix",
    ".envrc",
    ".nvim.lua",
    ".nvimrc",
    ".exrc",
    ".husky",
    ".pre-commit-config.yaml",
    ".cargo/config.toml",
    ".cargo/config",
];

/// One path a command must not change.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Protected {
    pub path: PathBuf,
    /// False for `.git` itself: pinned in place, its contents writable.
    pub read_only: bool,
}

/// The existing paths `policy` protects, parents before what they hold.
pub fn paths(policy: &SandboxPolicy) -> Vec<Protected> {
    if policy.mode != SandboxMode::WorkspaceWrite {
        return Vec::new();
    }
    // Each writable root as given and as the kernel names it: protected
    // paths are named from the real root, so that the pin (which refuses
    // any link on the way) meets no link the user's own setup put there.
    let roots: Vec<(PathBuf, PathBuf)> = std::iter::once(&policy.workspace)
        .chain(&policy.writable)
        .map(|root| {
            (
                root.clone(),
                root.canonicalize().unwrap_or_else(|_| root.clone()),
            )
        })
        .collect();
    let real = |path: &Path| -> Option<PathBuf> {
        roots.iter().find_map(|(given, canonical)| {
            let rest = path
                .strip_prefix(given)
                .or_else(|_| path.strip_prefix(canonical))
                .ok()?;
            Some(canonical.join(rest))
        })
    };
    let in_writable = |path: &Path| real(path).is_some();
    let mut found = Vec::new();
    let mut add = |path: PathBuf, read_only: bool| {
        if let Some(path) = real(&path)
            && path.symlink_metadata().is_ok()
        {
            found.push(Protected { path, read_only });
        }
    };

    let git = policy.workspace.join(".git");
    match git.symlink_metadata() {
        Ok(meta) if meta.is_dir() => {
            for folder in GIT_FOLDERS {
                let _ = std::fs::create_dir(git.join(folder));
            }
            for name in GIT_RUNS {
                add(git.join(name), true);
            }
            if let Some(hooks) = hooks_path(&git.join("config"), &policy.workspace)
                && in_writable(&hooks)
            {
                add(hooks, true);
            }
            for module in submodule_git_folders(&git) {
                for name in GIT_RUNS {
                    add(module.join(name), true);
                }
            }
            // Linked worktrees' own folders: their `commondir`, `gitdir`
            // and `config.worktree` say where git reads config from.
            add(git.join("worktrees"), true);
            add(git, false);
        }
        // A `.git` file points git at another repository.
        Ok(_) => add(git, true),
        Err(_) => {}
    }
    for name in WORKSPACE_RUNS {
        add(policy.workspace.join(name), true);
    }
    // A workspace that holds `$HOME`: what the user's shell, git and
    // toolchains run from there, which is nearly every dot-entry. All of
    // them are read-only but the toolchains' download caches (and the
    // workspace's own `.git`, pinned above): failing closed, since no list
    // of what runs later is complete.
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from)
        && let Some(home) = real(&home.canonicalize().unwrap_or(home))
    {
        for name in crate::secret_files::HOME_RUNS {
            add(home.join(name), true);
        }
        let caches: Vec<PathBuf> = super::CACHE_DIRS.iter().map(|c| home.join(c)).collect();
        if let Ok(entries) = std::fs::read_dir(&home) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let dotted = name.as_encoded_bytes().starts_with(b".") || name == "go";
                if dotted && name != ".git" {
                    all_but(&entry.path(), &caches, &mut add);
                }
            }
        }
    }
    for denied in &policy.deny_read {
        let denied = super::landlock::resolve_existing(denied);
        if in_writable(&denied) {
            add(denied, true);
        }
    }
    // The folders on the way from a writable root to each protected path,
    // pinned writable, so none can be renamed away and replaced by one of
    // the command's making (`mv .cargo x; mkdir .cargo`); and the workspace
    // itself where a writable folder holds it.
    let mut on_the_way = Vec::new();
    for protected in &found {
        for (_, root) in &roots {
            if protected.path.starts_with(root) {
                let mut folder = protected.path.parent();
                while let Some(dir) = folder
                    && dir != root.as_path()
                    && dir.starts_with(root)
                {
                    on_the_way.push(Protected {
                        path: dir.to_path_buf(),
                        read_only: false,
                    });
                    folder = dir.parent();
                }
            }
        }
    }
    found.extend(on_the_way);
    let workspace = &roots[0].1;
    if roots[1..]
        .iter()
        .any(|(_, root)| workspace.starts_with(root) && workspace != root)
    {
        found.push(Protected {
            path: workspace.clone(),
            read_only: false,
        });
    }
    // Parents before what they hold; of two entries for one path, the
    // read-only one.
    found.sort_by(|a, b| a.path.cmp(&b.path).then(b.read_only.cmp(&a.read_only)));
    found.dedup_by(|later, earlier| later.path == earlier.path);
    found
}

/// Protects `path` read-only, unless a path in `keep` lies at or below it:
/// then `path` is pinned writable and the same is done for each entry in it.
/// A link (dotfile managers link `.bashrc` into a repository) is not
/// pinned, as a pin lands on its target: the target is protected instead,
/// and the link itself stays replaceable (`docs/security.md`).
fn all_but(path: &Path, keep: &[PathBuf], add: &mut impl FnMut(PathBuf, bool)) {
    if keep.iter().any(|k| k == path) {
        return;
    }
    if path.symlink_metadata().is_ok_and(|meta| meta.is_symlink()) {
        if let Ok(target) = path.canonicalize() {
            add(target, true);
        }
        return;
    }
    if !keep.iter().any(|k| k.starts_with(path)) {
        return add(path.to_path_buf(), true);
    }
    add(path.to_path_buf(), false);
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            all_but(&entry.path(), keep, add);
        }
    }
}

/// The git folders of the workspace repository's submodules.
fn submodule_git_folders(git: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(git.join("modules")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .map(|entry| entry.path())
        .collect()
}

/// Removes a [`GIT_REDIRECT`] a command planted in the workspace
/// repository's git folder or a submodule's, and says so. Run by our code
/// before and after every command: a mount cannot stop a new file in a
/// folder git must write, so this is not the kernel's guarantee but ours,
/// with a window while the planting command still runs.
pub fn sweep(policy: &SandboxPolicy) -> Vec<String> {
    if policy.mode != SandboxMode::WorkspaceWrite {
        return Vec::new();
    }
    let git = policy.workspace.join(".git");
    if !git.symlink_metadata().is_ok_and(|meta| meta.is_dir()) {
        return Vec::new();
    }
    let mut notes = Vec::new();
    for folder in std::iter::once(git.clone()).chain(submodule_git_folders(&git)) {
        let planted = folder.join(GIT_REDIRECT);
        let Ok(meta) = planted.symlink_metadata() else {
            continue;
        };
        let removed = if meta.is_dir() {
            std::fs::remove_dir_all(&planted)
        } else {
            std::fs::remove_file(&planted)
        };
        let shown = planted
            .strip_prefix(&policy.workspace)
            .unwrap_or(&planted)
            .display()
            .to_string();
        notes.push(match removed {
            Ok(()) => format!(
                "[sandbox] Removed {shown}: it would point git at another folder's config and hooks, which your tools would run later."
            ),
            Err(error) => format!(
                "[sandbox] {shown} points git at another folder's config and hooks and could not be removed ({error}): remove it before running git."
            ),
        });
        tracing::warn!(path = %planted.display(), "a command planted a git commondir");
    }
    notes
}

/// `core.hooksPath` of the repository config at `config`, made absolute
/// from the workspace (git runs hooks from the top of the work tree). Read
/// from the file alone: a value set through an `include` is not seen
/// (`docs/security.md`).
pub(super) fn hooks_path(config: &Path, workspace: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(config).ok()?;
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(section) = line.strip_prefix('[') {
            let name = section.split([']', ' ', '"']).next().unwrap_or_default();
            in_core = name.eq_ignore_ascii_case("core");
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if in_core && key.trim().eq_ignore_ascii_case("hookspath") {
            let value = value.trim().trim_matches('"');
            // The last one wins, as git reads it.
            found = Some(match value.strip_prefix("~/") {
                Some(rest) => std::env::var_os("HOME").map(PathBuf::from)?.join(rest),
                None => workspace.join(value),
            });
        }
    }
    found.map(|path| super::landlock::resolve_existing(&path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(workspace: &Path, deny: &[&str]) -> SandboxPolicy {
        SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            workspace: workspace.to_path_buf(),
            writable: Vec::new(),
            deny_read: deny.iter().map(|d| workspace.join(d)).collect(),
            network: false,
        }
    }

    #[test]
    fn what_is_protected_in_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for folder in [".git/objects", ".githooks", ".vscode", "secrets", "src"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\tbare = false\n[Core]\n\thooksPath = .githooks\n",
        )
        .unwrap();
        std::fs::write(root.join(".envrc"), "").unwrap();
        let found = paths(&policy(&root, &["secrets", "missing"]));
        let shown: Vec<(String, bool)> = found
            .iter()
            .map(|p| {
                let relative = p.path.strip_prefix(&root).unwrap();
                (relative.display().to_string(), p.read_only)
            })
            .collect();
        let expected: Vec<(String, bool)> = [
            (".envrc", true),
            (".git", false),
            (".git/config", true),
            (".git/hooks", true),
            (".git/info", true),
            (".githooks", true),
            (".vscode", true),
            ("secrets", true),
        ]
        .iter()
        .map(|(p, r)| (p.to_string(), *r))
        .collect();
        assert_eq!(shown, expected);
        // Made so they can be mount points.
        assert!(root.join(".git/hooks").is_dir());
    }

    #[test]
    fn nothing_is_protected_where_nothing_is_writable() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        let mut policy = policy(dir.path(), &[]);
        policy.mode = SandboxMode::ReadOnly;
        assert!(paths(&policy).is_empty());
    }
}
