//! One configured language server over a session: started on first use
//! (callers that arrive while it starts wait for that one start), kept
//! running, started again on the next use after it exits, and given up for
//! the session after [`MAX_STARTS`] failed starts in a row. Its documents
//! are kept in step with the workspace's text before each request.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tower_lsp_server::ls_types::{self, Uri};

use super::capabilities::{client_capabilities, supports};
use super::config::ServerSpec;
use super::connection::{Answers, Connection, Failure, Notified};
use crate::sandbox::Sandbox;
use crate::sync::Locked;
use crate::tools::code::CodeError;
use crate::workspace::reported::EditorDiagnostics;

/// Failed starts in a row after which a server is not tried again.
pub const MAX_STARTS: u32 = 3;
/// How long a server has to shut down and exit before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// How long to wait for answers.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    pub request: Duration,
    /// `initialize`, and the first request after it (the server indexes).
    pub first: Duration,
}

/// What a server is doing, for status.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Status {
    NotStarted,
    Running,
    Failed { error: String },
    GaveUp { error: String },
    Stopped,
}

pub struct Server {
    pub spec: ServerSpec,
    root: PathBuf,
    sandbox: Arc<Sandbox>,
    timeouts: Timeouts,
    diagnostics: Arc<EditorDiagnostics>,
    link: tokio::sync::Mutex<Link>,
    /// Found on `PATH` when the session began: what an edit may wait for.
    installed: bool,
    /// Given up for the session (or never installed): no report will come.
    given_up: AtomicBool,
    /// Its last start failed: no report comes until one succeeds.
    failing: AtomicBool,
    stopped: AtomicBool,
    status: Mutex<Status>,
    /// The text each file should have in the server: written by edits,
    /// sent by whoever syncs next.
    latest: Mutex<HashMap<PathBuf, String>>,
}

enum Link {
    Idle,
    Live(Arc<Live>),
    Failed {
        error: CodeError,
        attempts: u32,
        retry_at: Instant,
    },
    GaveUp(CodeError),
    Stopped,
}

/// A started server.
pub struct Live {
    pub connection: Connection,
    capabilities: Value,
    /// Documents open in it: their version and text. Held while a sync is
    /// sent, so versions go out in order.
    documents: tokio::sync::Mutex<HashMap<PathBuf, (i32, String)>>,
    /// The last version sent of each document, for the diagnostics reader.
    versions: Arc<Mutex<HashMap<PathBuf, i32>>>,
    /// The first request after the start is still to come.
    first: AtomicBool,
}

impl Live {
    pub fn supports(&self, method: &str) -> bool {
        supports(
            &self.capabilities,
            &self.connection.registered.locked(),
            method,
        )
    }
}

impl Server {
    pub fn new(
        spec: ServerSpec,
        root: &Path,
        sandbox: Arc<Sandbox>,
        timeouts: Timeouts,
        diagnostics: Arc<EditorDiagnostics>,
    ) -> Server {
        let installed = super::config::find_program(&spec.command).is_some();
        Server {
            spec,
            root: root.to_path_buf(),
            sandbox,
            timeouts,
            diagnostics,
            link: tokio::sync::Mutex::new(Link::Idle),
            installed,
            given_up: AtomicBool::new(!installed),
            failing: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            status: Mutex::new(Status::NotStarted),
            latest: Mutex::default(),
        }
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn status(&self) -> Status {
        self.status.locked().clone()
    }

    /// Whether it may be started: installed, not given up.
    pub fn usable(&self) -> bool {
        self.installed && !self.given_up.load(Ordering::Relaxed)
    }

    /// Whether a report follows each change of its files: usable, and its
    /// last start did not fail.
    pub fn reports(&self) -> bool {
        self.usable() && !self.failing.load(Ordering::Relaxed)
    }

    /// Whether it has been started and still runs.
    pub async fn is_running(&self) -> bool {
        matches!(&*self.link.lock().await, Link::Live(live) if live.connection.ended().is_none())
    }

    /// The running server, started now if it is not (unless it failed
    /// too recently, or too often).
    pub async fn live(&self) -> Result<Arc<Live>, CodeError> {
        let mut link = self.link.lock().await;
        if self.stopped.load(Ordering::SeqCst) {
            *link = Link::Stopped;
        }
        let attempts = match &*link {
            Link::Live(live) => match live.connection.ended() {
                None => return Ok(live.clone()),
                // It exited since: started again now.
                Some(_) => 0,
            },
            Link::Stopped => {
                return Err(CodeError::Start {
                    server: self.name().into(),
                    reason: "the session has ended".into(),
                });
            }
            Link::GaveUp(error) => return Err(error.clone()),
            Link::Failed {
                error, retry_at, ..
            } if Instant::now() < *retry_at => return Err(error.clone()),
            Link::Failed { attempts, .. } => *attempts,
            Link::Idle => 0,
        };
        let started = Instant::now();
        match self.start().await {
            Ok(live) => {
                tracing::info!(
                    server = self.name(),
                    ms = started.elapsed().as_millis() as u64,
                    "language server started"
                );
                *self.status.locked() = Status::Running;
                self.failing.store(false, Ordering::Relaxed);
                *link = Link::Live(live.clone());
                Ok(live)
            }
            Err(error @ CodeError::NotInstalled { .. }) => {
                self.give_up(&mut link, error.clone());
                Err(error)
            }
            Err(error) if attempts + 1 >= MAX_STARTS => {
                let error = match error {
                    CodeError::Start { server, reason } => CodeError::Start {
                        server,
                        reason: format!(
                            "{reason}; it failed to start {MAX_STARTS} times in a row and is not tried again this session"
                        ),
                    },
                    other => other,
                };
                self.give_up(&mut link, error.clone());
                Err(error)
            }
            Err(error) => {
                tracing::info!(server = self.name(), %error, attempts = attempts + 1, "language server did not start");
                *self.status.locked() = Status::Failed {
                    error: error.to_string(),
                };
                self.failing.store(true, Ordering::Relaxed);
                *link = Link::Failed {
                    error: error.clone(),
                    attempts: attempts + 1,
                    retry_at: Instant::now() + backoff(attempts),
                };
                Err(error)
            }
        }
    }

    fn give_up(&self, link: &mut Link, error: CodeError) {
        tracing::warn!(server = self.name(), %error, "language server given up for the session");
        self.given_up.store(true, Ordering::Relaxed);
        *self.status.locked() = Status::GaveUp {
            error: error.to_string(),
        };
        *link = Link::GaveUp(error);
    }

    /// Spawns the server and initializes it.
    async fn start(&self) -> Result<Arc<Live>, CodeError> {
        let versions: Arc<Mutex<HashMap<PathBuf, i32>>> = Arc::default();
        let root_uri = Uri::from_file_path(&self.root);
        let folders = json!([{
            "uri": root_uri.as_ref().map(|u| u.as_str().to_string()),
            "name": self.root.file_name().and_then(|n| n.to_str()).unwrap_or("workspace"),
        }]);
        let answers = Answers {
            settings: self.spec.settings.clone(),
            folders: folders.clone(),
            notified: notified(self.name(), self.diagnostics.clone(), versions.clone()),
        };
        let language = self
            .spec
            .extensions
            .first()
            .map(|e| self.spec.language_id(e))
            .unwrap_or_default();
        let connection =
            Connection::spawn(&self.spec, &language, &self.root, &self.sandbox, answers)?;
        let start_error = |reason: String| CodeError::Start {
            server: self.name().into(),
            reason,
        };
        let mut params = json!({
            // Not our pid: a server given one probes it with kill(pid, 0)
            // every few seconds and exits when that fails — and the sandbox
            // forbids signals out of it (Landlock's signal scope), so it
            // would always fail. The reaper ends it with us instead.
            "processId": null,
            "clientInfo": {"name": "bareagent", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root_uri.as_ref().map(|u| u.as_str().to_string()),
            "rootPath": self.root.to_string_lossy(),
            "workspaceFolders": folders,
            "capabilities": client_capabilities(),
        });
        if let Some(options) = &self.spec.initialization_options {
            params["initializationOptions"] = options.clone();
        }
        let initialized = connection
            .request("initialize", params, self.timeouts.first)
            .await
            .map_err(|failure| match failure {
                Failure::Ended(reason) => start_error(format!("it exited ({reason})")),
                Failure::Timeout(after) => start_error(format!(
                    "it did not answer `initialize` within {} s",
                    after.as_secs()
                )),
                Failure::Refused(message) => {
                    start_error(format!("it refused `initialize`: {message}"))
                }
                Failure::Garbage(reason) => {
                    start_error(format!("it answered `initialize` with {reason}"))
                }
            })?;
        let capabilities = initialized
            .get("capabilities")
            .cloned()
            .unwrap_or(Value::Null);
        connection
            .notify("initialized", json!({}))
            .await
            .map_err(|_| start_error("it exited after `initialize`".into()))?;
        Ok(Arc::new(Live {
            connection,
            capabilities,
            documents: tokio::sync::Mutex::default(),
            versions,
            first: AtomicBool::new(true),
        }))
    }

    /// Sends one request about the server's files, in step with their texts.
    pub async fn request(
        &self,
        live: &Live,
        method: &str,
        params: Value,
    ) -> Result<Value, CodeError> {
        if !live.supports(method) {
            return Err(CodeError::Unsupported {
                server: self.name().into(),
                method: method.into(),
            });
        }
        let timeout = match live.first.swap(false, Ordering::SeqCst) {
            true => self.timeouts.first,
            false => self.timeouts.request,
        };
        live.connection
            .request(method, params, timeout)
            .await
            .map_err(|failure| failure.into_error(self.name(), method))
    }

    /// Notes the text a file now has (an edit, a rewind): sent at the next
    /// sync, which [`sync_latest`](Self::sync_latest) does at once.
    pub fn changed(&self, path: &Path, text: Option<&str>) {
        let mut latest = self.latest.locked();
        match text {
            Some(text) => latest.insert(path.to_path_buf(), text.to_string()),
            None => latest.remove(path),
        };
    }

    /// Sends what [`changed`](Self::changed) noted, starting the server if
    /// it is not running.
    pub async fn sync_latest(&self, path: &Path) {
        let text = self.latest.locked().get(path).cloned();
        let live = match self.live().await {
            Ok(live) => live,
            Err(error) => {
                tracing::info!(server = self.name(), %error, "cannot tell the language server of an edit");
                self.diagnostics.none_coming(path.to_path_buf());
                return;
            }
        };
        match text {
            Some(text) => self.sync(&live, path, &text).await,
            None => self.close(&live, path).await,
        }
    }

    /// Makes the server's copy of `path` hold `text`: opened with it, or
    /// changed to it (the whole text) when it differs.
    pub async fn sync(&self, live: &Live, path: &Path, text: &str) {
        let Some(uri) = Uri::from_file_path(path) else {
            return;
        };
        let mut documents = live.documents.lock().await;
        // An edit noted meanwhile is newer than what the caller read.
        let text = self
            .latest
            .locked()
            .get(path)
            .cloned()
            .unwrap_or_else(|| text.to_string());
        let sent = match documents.get(path) {
            Some((_, open)) if *open == text => return,
            Some((version, _)) => {
                let version = version + 1;
                live.versions.locked().insert(path.to_path_buf(), version);
                let params = ls_types::DidChangeTextDocumentParams {
                    text_document: ls_types::VersionedTextDocumentIdentifier { uri, version },
                    content_changes: vec![ls_types::TextDocumentContentChangeEvent {
                        range: None,
                        range_length: None,
                        text: text.clone(),
                    }],
                };
                (
                    version,
                    "textDocument/didChange",
                    serde_json::to_value(params),
                )
            }
            None => {
                let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                live.versions.locked().insert(path.to_path_buf(), 1);
                let params = ls_types::DidOpenTextDocumentParams {
                    text_document: ls_types::TextDocumentItem {
                        uri,
                        language_id: self.spec.language_id(extension),
                        version: 1,
                        text: text.clone(),
                    },
                };
                (1, "textDocument/didOpen", serde_json::to_value(params))
            }
        };
        let (version, method, params) = sent;
        let Ok(params) = params else {
            return;
        };
        if live.connection.notify(method, params).await.is_ok() {
            documents.insert(path.to_path_buf(), (version, text));
        }
    }

    async fn close(&self, live: &Live, path: &Path) {
        let Some(uri) = Uri::from_file_path(path) else {
            return;
        };
        let mut documents = live.documents.lock().await;
        if documents.remove(path).is_some() {
            live.versions.locked().remove(path);
            let _ = live
                .connection
                .notify(
                    "textDocument/didClose",
                    json!({"textDocument": {"uri": uri.as_str()}}),
                )
                .await;
        }
    }

    /// Shuts the server down (killed after a grace), and starts it no more.
    pub async fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let mut link = self.link.lock().await;
        if let Link::Live(live) = std::mem::replace(&mut *link, Link::Stopped) {
            live.connection.stop(STOP_GRACE).await;
        }
        *self.status.locked() = Status::Stopped;
    }

    /// Kills it now, without waiting: from a destructor.
    pub fn stop_now(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        if let Ok(mut link) = self.link.try_lock()
            && let Link::Live(live) = std::mem::replace(&mut *link, Link::Stopped)
        {
            live.connection.kill_now();
        }
    }
}

/// How long before the start after `attempts` failed ones: 1 s, doubling.
fn backoff(attempts: u32) -> Duration {
    Duration::from_secs(1u64 << attempts.min(5))
}

/// What the server's notifications do: its diagnostics go to `store` (a
/// report for a version older than the last one sent is stale, dropped);
/// its log messages to the log.
fn notified(
    server: &str,
    store: Arc<EditorDiagnostics>,
    versions: Arc<Mutex<HashMap<PathBuf, i32>>>,
) -> Notified {
    let server = server.to_string();
    Box::new(move |method, params| match method {
        "textDocument/publishDiagnostics" => {
            let Ok(report) = serde_json::from_value::<ls_types::PublishDiagnosticsParams>(params)
            else {
                tracing::debug!(server, "a diagnostics report that does not parse");
                return;
            };
            let Some(path) = report.uri.to_file_path().map(|p| p.into_owned()) else {
                return;
            };
            if let Some(version) = report.version
                && versions
                    .locked()
                    .get(&path)
                    .is_some_and(|sent| version < *sent)
            {
                return;
            }
            let items = report
                .diagnostics
                .into_iter()
                .map(super::diagnostic)
                .collect();
            store.replace(path, items);
        }
        "window/logMessage" | "window/showMessage" => {
            let message = params["message"].as_str().unwrap_or_default();
            tracing::debug!(server, "{message}");
        }
        _ => {}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_kept_from_1_and_a_stale_one_dropped() {
        let store = Arc::new(EditorDiagnostics::default());
        let versions: Arc<Mutex<HashMap<PathBuf, i32>>> = Arc::default();
        let path = PathBuf::from("/w/a.py");
        versions.locked().insert(path.clone(), 3);
        let notified = notified("fake", store.clone(), versions);
        let report = |version: i32, message: &str| {
            json!({"uri": "file:///w/a.py", "version": version, "diagnostics": [{
                "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 9}},
                "severity": 2, "code": 7, "source": "fake", "message": message,
            }]})
        };
        notified("textDocument/publishDiagnostics", report(2, "stale"));
        assert_eq!(
            store.of(&path),
            None,
            "a report on version 2 after 3 was sent"
        );
        notified("textDocument/publishDiagnostics", report(3, "fresh"));
        let kept = store.of(&path).expect("the report on the version sent");
        assert_eq!(
            kept,
            [crate::workspace::reported::Diagnostic {
                severity: crate::workspace::reported::Severity::Warning,
                line: 2,
                column: 5,
                end_line: 2,
                message: "fresh".into(),
                source: Some("fake".into()),
                code: Some("7".into()),
            }]
        );
    }
}
