//! Which session files this user's bareagent wrote, kept where a
//! repository cannot reach: the user's state directory
//! (`$XDG_STATE_HOME/bareagent/sessions/ID`, else
//! `~/.local/state/bareagent/sessions/ID`). Each holds the random token
//! the session's header carries and the workspace it was written in.
//!
//! A session file that came with a repository — whatever its mode and
//! owner (a clone under `umask 077` makes it 0600 and the user's) — has no
//! such record, or not with its token, so it is neither resumed (its
//! history would reach the model as the user's own) nor rewound (its edit
//! records would say what to write into files). Without a state directory
//! nothing can be vouched for, and nothing is resumed: fail closed.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The user's state directory (`$XDG_STATE_HOME`, else `~/.local/state`).
pub(super) fn state_dir() -> Option<PathBuf> {
    crate::config_files::user_state_dir()
}

/// The user's directory of session records.
fn records_dir() -> Option<PathBuf> {
    Some(state_dir()?.join("bareagent").join("sessions"))
}

/// A new session's token: 128 random bits, as hex.
pub fn new_token() -> String {
    let mut bytes = [0u8; 16];
    if rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()).is_err() {
        // Never a guessable token: without the kernel's randomness the
        // session cannot be vouched for (it is still written).
        return String::new();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Records that this user's bareagent writes session `id` of `root`.
pub fn vouch(id: &str, token: &str, root: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if token.is_empty() {
        return Err("no random token could be made".into());
    }
    let dir = records_dir().ok_or("no state directory (set HOME or XDG_STATE_HOME)")?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(id);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(format!("{token}\n{}\n", root.display()).as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Whether session `id`, whose header carries `token`, was written by this
/// user's bareagent in `root`.
pub fn vouched(id: &str, token: Option<&str>, root: &Path) -> bool {
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return false;
    };
    let Some(dir) = records_dir() else {
        return false;
    };
    let Ok(record) = std::fs::read_to_string(dir.join(id)) else {
        return false;
    };
    let mut lines = record.lines();
    lines.next() == Some(token) && lines.next() == Some(&*root.display().to_string())
}

/// Records where session `id`'s file ended when last synced (`end`, as
/// `chain.rs` writes it): written whole under a temporary name, then renamed over
/// the last one.
pub fn record_end(id: &str, end: &str) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = records_dir().ok_or("no state directory")?;
    let temp = dir.join(format!(".{id}.end.{}", new_token()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temp)
        .and_then(|mut file| file.write_all(end.as_bytes()))
        .and_then(|()| std::fs::rename(&temp, dir.join(format!("{id}.end"))));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map_err(|e| format!("{}: {e}", dir.display()))
}

/// Where session `id`'s file ended when last synced (as `chain.rs` wrote
/// it, and the file it is in); `None` before its first sync. A record that
/// cannot be read is an error, not `None`: it would let a truncated file
/// pass.
pub fn recorded_end(id: &str) -> Result<Option<(String, PathBuf)>, String> {
    let path = records_dir()
        .ok_or("no state directory")?
        .join(format!("{id}.end"));
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some((text, path))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(format!("{}: {error}", path.display())),
    }
}

/// Forgets session `id` (it was removed).
pub fn forget(id: &str) {
    if let Some(dir) = records_dir() {
        let _ = std::fs::remove_file(dir.join(id));
        let _ = std::fs::remove_file(dir.join(format!("{id}.end")));
    }
}
