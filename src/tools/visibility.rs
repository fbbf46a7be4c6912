//! Which files a listing or a search may show: the read policy of the
//! permission gate, applied to every file `grep` and `glob` come across, so
//! that a deny rule or a sensitive file is not read around through them.
//! What is hidden is counted, and the answer says how many and why.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::permission::{FileVisibility, PermissionGate};
use crate::sync::Locked;

pub struct HiddenFiles {
    gate: PermissionGate,
    tool: &'static str,
    root: PathBuf,
    /// The path the call itself named: the gate has decided about it already.
    decided: PathBuf,
    /// Why each hidden file was hidden, in the order found.
    hidden: Mutex<Vec<String>>,
}

impl std::fmt::Debug for HiddenFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HiddenFiles")
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

impl HiddenFiles {
    pub fn new(gate: &PermissionGate, tool: &'static str, root: &Path, decided: &Path) -> Self {
        HiddenFiles {
            gate: gate.clone(),
            tool,
            root: root.to_path_buf(),
            decided: decided.to_path_buf(),
            hidden: Mutex::default(),
        }
    }

    /// Whether `path` must be left out; counts it if so.
    pub fn hides(&self, path: &Path) -> bool {
        if path == self.decided {
            return false;
        }
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        let why = match self
            .gate
            .file_visibility(self.tool, &relative.to_string_lossy())
        {
            FileVisibility::Visible => return false,
            FileVisibility::Denied(rule) => format!("denied by `{rule}`"),
            FileVisibility::NeedsApproval(reason) => {
                format!("{reason}; read it with read_file to ask the user")
            }
        };
        self.hidden.locked().push(why);
        true
    }

    /// One line for the answer, or `None` when nothing was hidden.
    pub fn note(&self) -> Option<String> {
        let hidden = self.hidden.locked();
        if hidden.is_empty() {
            return None;
        }
        let mut reasons: Vec<(&String, usize)> = Vec::new();
        for why in hidden.iter() {
            match reasons.iter_mut().find(|(seen, _)| *seen == why) {
                Some((_, count)) => *count += 1,
                None => reasons.push((why, 1)),
            }
        }
        let parts: Vec<String> = reasons
            .iter()
            .map(|(why, count)| {
                let files = if *count == 1 { "file" } else { "files" };
                format!("{count} {files} {why}")
            })
            .collect();
        Some(format!("(Skipped {}.)", parts.join("; ")))
    }
}
