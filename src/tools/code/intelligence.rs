//! Where the `code` tool's answers come from: a language server that knows
//! the file's language. Two implement it: the editor (`bareagent/codeIntelligence`,
//! answered by VS Code's providers or the servers Neovim attached to the
//! buffer: `crate::lsp`), and our own client of the servers configured for
//! the project (`crate::language_servers`), where the editor cannot answer.
//!
//! Both speak the Language Server Protocol's own requests and results as
//! JSON (`textDocument/references`, `callHierarchy/incomingCalls`, …), so
//! what a request means and how its answer is read is written once, in the
//! tool, whichever answers it. Positions are the protocol's default: lines
//! from 0, characters in UTF-16 code units.

use std::path::Path;

use async_trait::async_trait;
use serde_json::Value;

use crate::workspace::Workspace;

/// Answers language-server requests about the workspace's files.
///
/// Contract: every path given has been resolved (inside the workspace).
/// `request` sends one request about the file at `path` to the server for
/// its language, which first sees the file's text as `workspace` reads it
/// (the user's unsaved buffer where there is one); an editor already has
/// it. The result is the server's JSON `result` as sent (`null` included).
/// A failure is a [`CodeError`] the model reads; the session goes on.
#[async_trait]
pub trait Intelligence: Send + Sync {
    /// Who answers, for what the model and the user read ("the editor",
    /// "pyright-langserver").
    fn answerer(&self, path: &Path) -> String;

    /// One request about a file.
    async fn request(
        &self,
        workspace: &dyn Workspace,
        path: &Path,
        method: &str,
        params: Value,
    ) -> Result<Value, CodeError>;

    /// `workspace/symbol` with `query`, to every server that can answer for
    /// the workspace (`near`, a file in the language wanted, where the
    /// model named one); the results as one array of `SymbolInformation`
    /// or `WorkspaceSymbol`.
    async fn workspace_symbols(
        &self,
        workspace: &dyn Workspace,
        query: &str,
        near: Option<&Path>,
    ) -> Result<Value, CodeError>;
}

/// Why a request got no answer, as the model reads it: what failed, and
/// what it can do instead.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodeError {
    /// No server is configured or found for the file's language.
    #[error("no language server for {what}{hint}; use grep and read_file instead")]
    NoServer { what: String, hint: String },
    /// The configured program is not on `PATH` (or not executable).
    #[error(
        "the language server `{program}` for {language} is not installed ({reason}); use grep and read_file instead"
    )]
    NotInstalled {
        program: String,
        language: String,
        reason: String,
    },
    /// It exited or failed `initialize` before it could answer.
    #[error("{} did not start: {reason}", who(server))]
    Start { server: String, reason: String },
    /// It exited while answering; it is started again on the next use.
    #[error(
        "{} stopped while answering ({reason}); it is started again on the next call",
        who(server)
    )]
    Crashed { server: String, reason: String },
    /// No answer in time; the request was cancelled.
    #[error("{} did not answer {method} within {seconds} s", who(server))]
    Timeout {
        server: String,
        method: String,
        seconds: u64,
    },
    /// What came back is not the protocol.
    #[error(
        "{} answered {method} with something that is not the protocol: {reason}",
        who(server)
    )]
    Garbage {
        server: String,
        method: String,
        reason: String,
    },
    /// The server answered with an error.
    #[error("{} refused {method}: {message}", who(server))]
    Refused {
        server: String,
        method: String,
        message: String,
    },
    /// The server does not offer this operation.
    #[error("{} does not support {method}", who(server))]
    Unsupported { server: String, method: String },
    /// The editor could not answer (it said why).
    #[error("the editor could not answer: {0}")]
    Editor(String),
}

/// The editor, as [`Intelligence::answerer`] names it.
pub const EDITOR: &str = "the editor";

/// Who failed, as the model reads it: the editor, or a server by name.
fn who(server: &str) -> String {
    if server == EDITOR {
        EDITOR.to_string()
    } else {
        format!("the language server `{server}`")
    }
}
