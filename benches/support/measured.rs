//! Which build a bench measures: this one, or `BAREAGENT_BIN` (another
//! build, for a before and after in one run).

use std::path::PathBuf;

/// The binary to start. A relative `BAREAGENT_BIN` is taken from where
/// the bench started: the agents run in folders of their own, where it
/// would name nothing.
pub fn bareagent() -> PathBuf {
    match std::env::var_os("BAREAGENT_BIN") {
        Some(path) => std::path::absolute(&path).unwrap_or_else(|_| path.into()),
        None => env!("CARGO_BIN_EXE_bareagent").into(),
    }
}
