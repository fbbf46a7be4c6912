//! Where the settings files are. A leaf, so that the sandbox (which keeps
//! commands from reading the user's config) need not depend on the
//! settings that configure it.

use std::path::{Path, PathBuf};

/// The project's config file.
pub fn project_config_path(root: &Path) -> PathBuf {
    root.join(".bareagent").join("config.toml")
}

/// The user's own config file. A relative (or empty) `XDG_CONFIG_HOME`
/// is ignored, as the XDG spec says: it would make a file the current
/// directory holds — a cloned repository's — pass for the user's own.
pub fn user_config_path() -> Option<PathBuf> {
    Some(user_config_home()?.join("bareagent").join("config.toml"))
}

/// `$XDG_CONFIG_HOME`, else `~/.config`: where the user's own settings are
/// (ours, Helix's). Only an absolute path counts.
pub fn user_config_home() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|home| home.join(".config"))
        })
}

/// The user's state directory (`$XDG_STATE_HOME`, else `~/.local/state`):
/// where bareagent keeps its record of sessions and their key.
pub fn user_state_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|home| home.join(".local").join("state"))
        })
}
