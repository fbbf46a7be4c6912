//! Searches over the editor's buffers as well as the disk: `grep` and
//! `glob` walk the disk, read an open file's buffer in place of its disk
//! copy, and then add the files that exist only in a buffer (created by the
//! agent or the user, not saved yet), so that neither contradicts
//! `read_file`.

use std::path::{Component, Path, PathBuf};

use crate::workspace::Buffers;

/// Buffers of files not on disk under `dir`, sorted by path. Files in a
/// hidden directory (or hidden themselves) are left out unless `hidden` is
/// set, as the disk walks leave them out.
pub fn only_in_buffers<'a>(
    buffers: &'a Buffers,
    dir: &Path,
    hidden: bool,
) -> Vec<(&'a PathBuf, &'a String)> {
    let mut found: Vec<(&PathBuf, &String)> = buffers
        .iter()
        .filter(|(path, _)| {
            let Ok(relative) = path.strip_prefix(dir) else {
                return false;
            };
            let dotted = relative.components().any(|part| {
                matches!(part, Component::Normal(name) if name.to_string_lossy().starts_with('.'))
            });
            (hidden || !dotted) && std::fs::symlink_metadata(path).is_err()
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(b.0));
    found
}
