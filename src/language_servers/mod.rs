//! Our own client of the language servers configured for the project, for
//! the front ends whose editor cannot answer the `code` tool (Helix, plain
//! LSP clients, `bareagent run`/`chat`, `bareagent acp`), and for the
//! diagnostics after an edit where the editor sends none.
//!
//! - `config`: which server answers for which files (`[code.servers]`,
//!   Helix's `languages.toml`, defaults on `PATH`), and trust;
//! - `framing`: `Content-Length` frames over stdio;
//! - `connection`: one running server — its sandboxed process group,
//!   requests and answers, its own requests answered;
//! - `capabilities`: what we announce, what it offers;
//! - `server`: one configured server over the session — lazy start,
//!   restart, give-up, its documents in step with the workspace;
//! - `served`: the workspace decorator that tells the servers of edits
//!   and gives their diagnostics.
//!
//! [`LanguageServers`] is the session's: one server process per language,
//! started on first use, stopped with the session.
//!
//! Architecture Invariant: the protocol's types (`ls_types`) stay inside
//! this module (and the `code` tool); the rest of the agent sees
//! [`Intelligence`]'s JSON in and out, [`EditorDiagnostics`] and a
//! [`Workspace`]. Nothing here knows a front end.

pub mod capabilities;
pub mod config;
pub mod connection;
pub mod framing;
pub mod served;
pub mod server;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tower_lsp_server::ls_types;

pub use config::{CodeSettings, Resolved, ServerConfig, Sources};
pub use served::ServedWorkspace;
pub use server::Status;

use crate::sandbox::Sandbox;
use crate::tools::code::{CodeError, Intelligence};
use crate::workspace::Workspace;
use crate::workspace::reported::{Diagnostic, EditorDiagnostics, Severity};
use server::{Server, Timeouts};

/// The language servers of one session.
pub struct LanguageServers {
    resolved: Resolved,
    /// One per entry of `resolved.servers`.
    servers: Vec<Arc<Server>>,
    diagnostics: Arc<EditorDiagnostics>,
}

/// One server as status shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ServerReport {
    pub name: String,
    pub command: String,
    pub extensions: Vec<String>,
    pub origin: config::Origin,
    pub status: Status,
}

impl LanguageServers {
    /// The servers `settings`, Helix's files and `PATH` name for the
    /// project at `root`; none started yet.
    pub fn new(settings: &CodeSettings, root: &Path, sandbox: Arc<Sandbox>) -> LanguageServers {
        LanguageServers::from_sources(settings, &Sources::of(root), root, sandbox)
    }

    /// [`new`](Self::new) with the files and `PATH` given.
    pub fn from_sources(
        settings: &CodeSettings,
        sources: &Sources,
        root: &Path,
        sandbox: Arc<Sandbox>,
    ) -> LanguageServers {
        let resolved = config::resolve(settings, sources);
        for problem in &resolved.problems {
            tracing::warn!(problem, "language server settings left out");
        }
        let timeouts = Timeouts {
            request: settings.request_timeout(),
            first: settings.first_request_timeout(),
        };
        let diagnostics = Arc::new(EditorDiagnostics::default());
        let servers: Vec<Arc<Server>> = resolved
            .servers
            .iter()
            .map(|spec| {
                Arc::new(Server::new(
                    spec.clone(),
                    root,
                    sandbox.clone(),
                    timeouts,
                    diagnostics.clone(),
                ))
            })
            .collect();
        // Every change we send is reported on: an edit waits for the
        // report, on the files a server that can start answers for.
        diagnostics.set_pushed();
        diagnostics.set_settle(settings.diagnostics_wait());
        let (watched, by_extension) = (servers.clone(), resolved.by_extension.clone());
        diagnostics.set_watched(Arc::new(move |path: &Path| {
            path.extension()
                .and_then(|e| e.to_str())
                .and_then(|e| by_extension.get(e))
                .is_some_and(|&index| watched[index].reports())
        }));
        LanguageServers {
            resolved,
            servers,
            diagnostics,
        }
    }

    /// No servers.
    pub fn none() -> LanguageServers {
        LanguageServers {
            resolved: Resolved::default(),
            servers: Vec::new(),
            diagnostics: Arc::new(EditorDiagnostics::default()),
        }
    }

    /// No server is named for any language (nor left out for trust).
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty() && self.resolved.untrusted.is_empty()
    }

    /// What the servers report about the files they were told of.
    pub fn diagnostics(&self) -> Arc<EditorDiagnostics> {
        self.diagnostics.clone()
    }

    fn server_for(&self, path: &Path) -> Result<&Arc<Server>, CodeError> {
        match self.resolved.for_path(path) {
            Some(index) => Ok(&self.servers[index]),
            None => Err(self.no_server(path)),
        }
    }

    /// Why no server answers for `path`'s files, and what to do about it.
    fn no_server(&self, path: &Path) -> CodeError {
        let extension = path.extension().and_then(|e| e.to_str());
        let what = match extension {
            Some(extension) => format!("`.{extension}` files"),
            None => "files without an extension".to_string(),
        };
        let hint = match extension.and_then(|e| self.resolved.untrusted.get(e)) {
            Some(name) => format!(
                " (the project's settings name `{name}` for them, but a project's language servers start only once the user trusts it: `bareagent trust`)"
            ),
            None => " (none is configured under [code.servers] or in Helix's languages.toml, and no well-known one is on PATH)".to_string(),
        };
        CodeError::NoServer { what, hint }
    }

    /// Tells the server for `path` (started if configured and installed)
    /// that the file now holds `text` (`None`: it was removed), without
    /// waiting for it.
    pub fn changed(&self, path: &Path, text: Option<&str>) {
        let Some(index) = self.resolved.for_path(path) else {
            return;
        };
        let server = self.servers[index].clone();
        if !server.usable() {
            return;
        }
        server.changed(path, text);
        let path = path.to_path_buf();
        tokio::spawn(async move { server.sync_latest(&path).await });
    }

    /// Every server, its command and state.
    pub fn report(&self) -> Vec<ServerReport> {
        self.servers
            .iter()
            .map(|server| ServerReport {
                name: server.name().to_string(),
                command: server.spec.command.clone(),
                extensions: server.spec.extensions.clone(),
                origin: server.spec.origin,
                status: server.status(),
            })
            .collect()
    }

    /// Shuts every server down (each killed after a grace).
    pub async fn stop(&self) {
        futures_util::future::join_all(self.servers.iter().map(|s| s.stop())).await;
    }

    /// Kills every server now: from a destructor.
    pub fn stop_now(&self) {
        for server in &self.servers {
            server.stop_now();
        }
    }

    /// The servers `workspace_symbols` asks: `near`'s, else those running,
    /// else those for the files at the root (and in `src`).
    async fn symbol_servers(
        &self,
        workspace: &dyn Workspace,
        near: Option<&Path>,
    ) -> Result<Vec<Arc<Server>>, CodeError> {
        if let Some(near) = near {
            return Ok(vec![self.server_for(near)?.clone()]);
        }
        let mut running = Vec::new();
        for server in &self.servers {
            if server.is_running().await {
                running.push(server.clone());
            }
        }
        if !running.is_empty() {
            return Ok(running);
        }
        let root = workspace.paths().root().to_path_buf();
        let mut wanted: Vec<usize> = Vec::new();
        for dir in [root.clone(), root.join("src")] {
            for name in workspace.paths().file_names(&dir).unwrap_or_default() {
                if let Some(index) = self.resolved.for_path(Path::new(&name))
                    && !wanted.contains(&index)
                {
                    wanted.push(index);
                }
            }
        }
        if wanted.is_empty() {
            return Err(CodeError::NoServer {
                what: "the workspace's files".into(),
                hint: " (no server is configured or found for the languages at its root)".into(),
            });
        }
        Ok(wanted
            .into_iter()
            .map(|i| self.servers[i].clone())
            .collect())
    }
}

impl Drop for LanguageServers {
    fn drop(&mut self) {
        self.stop_now();
    }
}

#[async_trait]
impl Intelligence for LanguageServers {
    fn answerer(&self, path: &Path) -> String {
        match self.server_for(path) {
            Ok(server) => server.name().to_string(),
            Err(_) => "no language server".to_string(),
        }
    }

    async fn request(
        &self,
        workspace: &dyn Workspace,
        path: &Path,
        method: &str,
        params: Value,
    ) -> Result<Value, CodeError> {
        let server = self.server_for(path)?;
        let live = server.live().await?;
        // Answers across files see the user's unsaved buffers of the
        // language, and the file as the workspace reads it.
        let index = self.resolved.for_path(path);
        for (other, text) in workspace.buffers() {
            if other != path && self.resolved.for_path(&other) == index {
                server.sync(&live, &other, &text).await;
            }
        }
        match workspace.read_text(path).await {
            Ok(file) => server.sync(&live, path, &file.text).await,
            // The server reads it from disk, if it can.
            Err(error) => tracing::debug!(%error, "cannot read the file to open it in the server"),
        }
        server.request(&live, method, params).await
    }

    async fn workspace_symbols(
        &self,
        workspace: &dyn Workspace,
        query: &str,
        near: Option<&Path>,
    ) -> Result<Value, CodeError> {
        let servers = self.symbol_servers(workspace, near).await?;
        let mut found = Vec::new();
        let mut failed = None;
        for server in servers {
            let answer = match server.live().await {
                Ok(live) => {
                    server
                        .request(&live, "workspace/symbol", json!({"query": query}))
                        .await
                }
                Err(error) => Err(error),
            };
            match answer {
                Ok(Value::Array(symbols)) => found.extend(symbols),
                Ok(_) => {}
                Err(error) => failed = failed.or(Some(error)),
            }
        }
        match failed {
            Some(error) if found.is_empty() => Err(error),
            _ => Ok(Value::Array(found)),
        }
    }
}

/// A server's diagnostic as the agent keeps it: lines and columns from 1.
fn diagnostic(item: ls_types::Diagnostic) -> Diagnostic {
    let severity = match item.severity {
        Some(ls_types::DiagnosticSeverity::WARNING) => Severity::Warning,
        Some(ls_types::DiagnosticSeverity::INFORMATION) => Severity::Information,
        Some(ls_types::DiagnosticSeverity::HINT) => Severity::Hint,
        _ => Severity::Error,
    };
    Diagnostic {
        severity,
        line: item.range.start.line + 1,
        column: item.range.start.character + 1,
        end_line: item.range.end.line + 1,
        message: item.message,
        source: item.source,
        code: item.code.map(|code| match code {
            ls_types::NumberOrString::Number(n) => n.to_string(),
            ls_types::NumberOrString::String(s) => s,
        }),
    }
}

/// The path a `file:` URI names.
pub fn path_of(uri: &str) -> Option<PathBuf> {
    uri.parse::<ls_types::Uri>()
        .ok()?
        .to_file_path()
        .map(|p| p.into_owned())
}
