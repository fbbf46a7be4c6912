//! One running language server: its process (sandboxed, in a process group
//! of its own registered with the reaper, killed whole when dropped), and
//! JSON-RPC over its stdio — our requests matched to its answers, its
//! requests answered, its notifications handed on.
//!
//! Every failure is data: an answer that is not JSON-RPC fails the requests
//! waiting ([`Reply::Garbage`]); a server that exits fails them all
//! ([`Reply::Ended`]), and the connection stays ended; a request that is
//! not answered in time is cancelled (`$/cancelRequest`).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::config::{ServerSpec, find_program};
use super::framing::{self, Frame};
use crate::sandbox::Sandbox;
use crate::sync::Locked;
use crate::tools::code::CodeError;

/// What is kept of a server's stderr, for the error that says why it ended.
const STDERR_TAIL: usize = 2048;

/// How a request ended, short of an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The server answered with an error.
    Refused(String),
    /// What came back is not JSON-RPC.
    Garbage(String),
    /// The server is gone: why, as far as it said.
    Ended(String),
    /// No answer within this long (the request was cancelled).
    Timeout(Duration),
}

impl Failure {
    /// As the model reads it.
    pub fn into_error(self, server: &str, method: &str) -> CodeError {
        let server = server.to_string();
        let method = method.to_string();
        match self {
            Failure::Refused(message) => CodeError::Refused {
                server,
                method,
                message,
            },
            Failure::Garbage(reason) => CodeError::Garbage {
                server,
                method,
                reason,
            },
            Failure::Ended(reason) => CodeError::Crashed { server, reason },
            Failure::Timeout(after) => CodeError::Timeout {
                server,
                method,
                seconds: after.as_secs().max(1),
            },
        }
    }
}

type Waiting = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, Failure>>>>>;

/// Where a server's notifications go: their method and params.
pub type Notified = Box<dyn Fn(&str, Value) + Send + Sync>;

/// What the server is told when it asks, and where its notifications go.
pub struct Answers {
    /// `workspace/configuration` is answered from it, by section.
    pub settings: Option<Value>,
    /// `workspace/workspaceFolders`.
    pub folders: Value,
    /// Every notification: its method and params.
    pub notified: Notified,
}

pub struct Connection {
    name: String,
    input: Arc<tokio::sync::Mutex<tokio::process::ChildStdin>>,
    waiting: Waiting,
    next_id: AtomicI64,
    /// Why it ended, once it has.
    ended: Arc<Mutex<Option<String>>>,
    /// Methods the server registered dynamically (`client/registerCapability`).
    pub registered: Arc<Mutex<HashSet<String>>>,
    process: tokio::sync::Mutex<ServerProcess>,
    reader: tokio::task::JoinHandle<()>,
}

impl Connection {
    /// Starts the server `spec` names in `root`, inside `sandbox`.
    pub fn spawn(
        spec: &ServerSpec,
        language: &str,
        root: &Path,
        sandbox: &Sandbox,
        answers: Answers,
    ) -> Result<Connection, CodeError> {
        let Some(program) = find_program(&spec.command) else {
            return Err(CodeError::NotInstalled {
                program: spec.command.clone(),
                language: language.to_string(),
                reason: "not found on PATH".into(),
            });
        };
        let start_error = |reason: String| CodeError::Start {
            server: spec.name.clone(),
            reason,
        };
        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(&spec.args)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // As a `bash` command runs: its own process group, registered with
        // the reaper, the provider keys removed, in the command sandbox
        // (it reads the workspace and its toolchain, writes its caches).
        let view = crate::workspace::CommandView::default();
        let confined = crate::tools::confine(&mut cmd, sandbox, &view)
            .map_err(|error| start_error(format!("cannot sandbox it: {error}")))?;
        // The user's own settings for it, over the inherited ones.
        cmd.envs(&spec.env);
        let mut child = crate::tools::spawn_confined(&mut cmd).map_err(|error| {
            start_error(format!("cannot start `{}`: {error}", program.display()))
        })?;
        drop(confined.confinement);
        let pgid = child.id().map(|id| id as i32).unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(start_error("its pipes could not be opened".into()));
        };
        let process = ServerProcess {
            child,
            pgid,
            _temp: confined.temp,
        };
        let tail: Arc<Mutex<String>> = Arc::default();
        crate::tools::keep_stderr_tail(spec.name.clone(), stderr, tail.clone(), STDERR_TAIL);
        let input = Arc::new(tokio::sync::Mutex::new(stdin));
        let waiting: Waiting = Arc::default();
        let ended: Arc<Mutex<Option<String>>> = Arc::default();
        let registered: Arc<Mutex<HashSet<String>>> = Arc::default();
        let reader = tokio::spawn(
            Reader {
                name: spec.name.clone(),
                input: input.clone(),
                waiting: waiting.clone(),
                ended: ended.clone(),
                registered: registered.clone(),
                tail,
                answers,
            }
            .run(tokio::io::BufReader::new(stdout)),
        );
        Ok(Connection {
            name: spec.name.clone(),
            input,
            waiting,
            next_id: AtomicI64::new(1),
            ended,
            registered,
            process: tokio::sync::Mutex::new(process),
            reader,
        })
    }

    /// Why the server is gone, if it is.
    pub fn ended(&self) -> Option<String> {
        self.ended.locked().clone()
    }

    /// Sends a request and waits up to `timeout` for its answer; on the
    /// timeout (or when the caller stops waiting) it is cancelled.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, Failure> {
        if let Some(reason) = self.ended() {
            return Err(Failure::Ended(reason));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, answer) = oneshot::channel();
        self.waiting.locked().insert(id, sender);
        let mut guard = Cancelling {
            connection: self,
            id,
            armed: true,
        };
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.send(&message).await.is_err() {
            guard.armed = false;
            self.waiting.locked().remove(&id);
            return Err(Failure::Ended(
                self.ended()
                    .unwrap_or_else(|| "it stopped reading its input".to_string()),
            ));
        }
        let reply = tokio::time::timeout(timeout, answer).await;
        match reply {
            Ok(Ok(reply)) => {
                guard.armed = false;
                reply
            }
            Ok(Err(_)) => {
                guard.armed = false;
                Err(Failure::Ended(
                    self.ended()
                        .unwrap_or_else(|| "the connection closed".into()),
                ))
            }
            // The guard cancels it.
            Err(_) => Err(Failure::Timeout(timeout)),
        }
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), Failure> {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send(&message).await.map_err(|_| {
            Failure::Ended(
                self.ended()
                    .unwrap_or_else(|| "it stopped reading its input".into()),
            )
        })
    }

    async fn send(&self, message: &Value) -> std::io::Result<()> {
        let mut input = self.input.lock().await;
        framing::write(&mut *input, message).await
    }

    /// Asks the server to shut down and exit, waits up to `grace` for it to
    /// go, then kills its process group.
    pub async fn stop(&self, grace: Duration) {
        if self.ended().is_none() {
            let polite = async {
                let _ = self.request("shutdown", Value::Null, grace).await;
                let _ = self.notify("exit", Value::Null).await;
                let _ = self.process.lock().await.child.wait().await;
            };
            let _ = tokio::time::timeout(grace, polite).await;
        }
        self.process.lock().await.kill();
    }

    /// Kills its process group now (from a destructor).
    pub fn kill_now(&self) {
        if let Ok(mut process) = self.process.try_lock() {
            process.kill();
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
        tracing::debug!(server = self.name, "language server connection dropped");
    }
}

/// Cancels a request whose caller stopped waiting (a timeout, a cancelled
/// turn): forgotten here, `$/cancelRequest` to the server.
struct Cancelling<'c> {
    connection: &'c Connection,
    id: i64,
    armed: bool,
}

impl Drop for Cancelling<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.connection.waiting.locked().remove(&self.id);
        if self.connection.ended().is_some() {
            return;
        }
        let input = self.connection.input.clone();
        let message =
            json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": self.id}});
        tokio::spawn(async move {
            let mut input = input.lock().await;
            let _ = framing::write(&mut *input, &message).await;
        });
    }
}

/// Reads what the server sends until it closes its output.
struct Reader {
    name: String,
    input: Arc<tokio::sync::Mutex<tokio::process::ChildStdin>>,
    waiting: Waiting,
    ended: Arc<Mutex<Option<String>>>,
    registered: Arc<Mutex<HashSet<String>>>,
    tail: Arc<Mutex<String>>,
    answers: Answers,
}

impl Reader {
    async fn run(self, mut output: tokio::io::BufReader<tokio::process::ChildStdout>) {
        let why = loop {
            match framing::read(&mut output).await {
                Ok(Frame::Message(message)) => self.dispatch(message).await,
                Ok(Frame::NotJson(why)) => {
                    self.fail_all(Failure::Garbage(format!("invalid JSON ({why})")))
                }
                Err(error) => break error.to_string(),
            }
        };
        // Its stderr may still be arriving: a moment for its last words.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let reason = match self.tail.locked().trim().lines().last() {
            Some(line) => format!("{why}; its last words: {line}"),
            None => why,
        };
        tracing::info!(server = self.name, reason, "language server ended");
        *self.ended.locked() = Some(reason.clone());
        self.fail_all(Failure::Ended(reason));
    }

    fn fail_all(&self, failure: Failure) {
        let waiting: Vec<_> = self.waiting.locked().drain().collect();
        for (_, sender) in waiting {
            let _ = sender.send(Err(failure.clone()));
        }
    }

    async fn dispatch(&self, message: Value) {
        let Some(object) = message.as_object() else {
            self.fail_all(Failure::Garbage(
                "a message that is not a JSON object".into(),
            ));
            return;
        };
        let id = object.get("id");
        match (object.get("method").and_then(Value::as_str), id) {
            (Some(method), Some(id)) => {
                let params = object.get("params").cloned().unwrap_or(Value::Null);
                let answer = self.answer(method, params);
                let reply = match answer {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err(message) => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": message}}),
                };
                let mut input = self.input.lock().await;
                let _ = framing::write(&mut *input, &reply).await;
            }
            (Some(method), None) => {
                let params = object.get("params").cloned().unwrap_or(Value::Null);
                (self.answers.notified)(method, params);
            }
            (None, Some(id)) => {
                let sender = id.as_i64().and_then(|id| self.waiting.locked().remove(&id));
                let Some(sender) = sender else {
                    tracing::debug!(server = self.name, %id, "an answer to no request waiting");
                    return;
                };
                let reply = if let Some(result) = object.get("result") {
                    Ok(result.clone())
                } else if let Some(error) = object.get("error") {
                    Err(Failure::Refused(
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .map(String::from)
                            .unwrap_or_else(|| error.to_string()),
                    ))
                } else {
                    Err(Failure::Garbage(
                        "an answer with neither a result nor an error".into(),
                    ))
                };
                let _ = sender.send(reply);
            }
            (None, None) => {
                self.fail_all(Failure::Garbage(
                    "a JSON object that is neither a request, a notification nor an answer".into(),
                ));
            }
        }
    }

    /// The server's request, answered as a client that edits nothing:
    /// the settings asked for, the one workspace folder, and `null` to
    /// what only needs acknowledging.
    fn answer(&self, method: &str, params: Value) -> Result<Value, String> {
        match method {
            "workspace/configuration" => {
                let items = params["items"].as_array().cloned().unwrap_or_default();
                Ok(Value::Array(
                    items
                        .iter()
                        .map(|item| {
                            setting(self.answers.settings.as_ref(), item["section"].as_str())
                        })
                        .collect(),
                ))
            }
            "client/registerCapability" => {
                let mut registered = self.registered.locked();
                for registration in params["registrations"].as_array().into_iter().flatten() {
                    if let Some(method) = registration["method"].as_str() {
                        registered.insert(method.to_string());
                    }
                }
                Ok(Value::Null)
            }
            "client/unregisterCapability" | "window/workDoneProgress/create" => Ok(Value::Null),
            "workspace/workspaceFolders" => Ok(self.answers.folders.clone()),
            _ => Err(format!("bareagent does not handle {method}")),
        }
    }
}

/// The value at a dotted `section` of `settings` (all of them without
/// one); `null` where there is none.
fn setting(settings: Option<&Value>, section: Option<&str>) -> Value {
    let Some(mut value) = settings else {
        return Value::Null;
    };
    for key in section
        .into_iter()
        .flat_map(|s| s.split('.'))
        .filter(|k| !k.is_empty())
    {
        match value.get(key) {
            Some(inner) => value = inner,
            None => return Value::Null,
        }
    }
    value.clone()
}

/// The server's process group.
struct ServerProcess {
    child: tokio::process::Child,
    pgid: i32,
    /// The sandbox's private temp folder, kept while it runs.
    _temp: Option<Arc<tempfile::TempDir>>,
}

impl ServerProcess {
    /// The whole group goes (a wrapper's children too), and the reaper
    /// forgets it.
    fn kill(&mut self) {
        if self.pgid > 0 {
            // SAFETY: killpg only sends a signal; a group that is gone gives ESRCH.
            unsafe {
                libc::killpg(self.pgid, libc::SIGKILL);
            }
            let _ = self.child.start_kill();
            crate::tools::reaper::forget(self.pgid);
            self.pgid = 0;
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_is_answered_by_section() {
        let settings = json!({"python": {"analysis": {"strict": true}}});
        let cases = [
            (Some("python.analysis"), json!({"strict": true})),
            (Some("python.analysis.strict"), json!(true)),
            (Some("rust-analyzer"), Value::Null),
            (None, settings.clone()),
        ];
        for (section, expected) in cases {
            assert_eq!(setting(Some(&settings), section), expected, "{section:?}");
        }
        assert_eq!(setting(None, Some("python")), Value::Null);
    }
}
