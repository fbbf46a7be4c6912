//! One MCP server: its connection (started with a timeout, `initialize`
//! answered and tools listed), its tool list (kept current through
//! `notifications/tools/list_changed`), its state for status, and its
//! restart after a crash — on next use, with backoff.
//!
//! A stdio server is spawned the way commands are (`tools::process`): in
//! its own process group, registered with the reaper between fork and exec
//! (so it dies with the agent, even by SIGKILL), and killed, group and all,
//! when its connection is dropped. It runs as the user, unsandboxed: it is
//! a program the user (or a project the user trusts) configured.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, Implementation, Tool};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceError};

use super::config::{ServerSpec, Transport, expand_env};
use crate::sync::Locked;

/// The longest wait before a crashed server is started again.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// What is kept of a server's stderr, for the error that says why it ended.
const STDERR_TAIL: usize = 2048;

/// What a server is doing, for `bareagent mcp list` and `bareagent.status`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Status {
    NotStarted,
    Starting,
    Running {
        tools: usize,
    },
    /// Left out until its next use after `retry_in_secs`.
    Failed {
        error: String,
        retry_in_secs: u64,
    },
    Stopped,
}

/// A state change the user is told about, once per change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub server: String,
    /// `running` or `failed`.
    pub state: &'static str,
    pub message: String,
}

/// Where notices go: stderr for `run`, the chat file and `bareagent/event`
/// in the editor.
pub type Notify = Arc<dyn Fn(Notice) + Send + Sync>;

/// Why a call did not reach the tool, or what the server answered instead.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("the MCP server `{server}` is not available: {reason}")]
    Unavailable { server: String, reason: String },
    #[error(
        "the MCP server `{server}` ended during the call ({reason}); it will be started again on next use"
    )]
    Crashed { server: String, reason: String },
    #[error("the MCP server `{server}` answered with an error: {message}")]
    Server { server: String, message: String },
    #[error("the call to the MCP server `{server}` failed: {reason}")]
    Failed { server: String, reason: String },
}

pub struct Server {
    pub spec: ServerSpec,
    /// Relative `cwd`s are under it.
    root: PathBuf,
    /// Held while connecting, so one start serves every waiting caller.
    link: tokio::sync::Mutex<Link>,
    status: Mutex<Status>,
    /// The tools last listed (replaced on `tools/list_changed`).
    tools: Arc<Mutex<Vec<Tool>>>,
    notify: Notify,
    /// Set when the session ends: a start still under way is dropped.
    stopped: AtomicBool,
    /// Set once the user was told the server failed: a server that keeps
    /// crashing is said once a session (its state is in the status).
    told: AtomicBool,
}

enum Link {
    Idle,
    Live(Box<Connection>),
    Failed {
        error: String,
        attempts: u32,
        retry_at: Instant,
    },
    Stopped,
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// For a stdio server: its process group, killed on drop.
    process: Option<ServerProcess>,
    stderr: Arc<Mutex<String>>,
}

impl Connection {
    fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// Why the connection ended, as far as the server said: its stderr's end.
    fn ending(&self) -> String {
        let tail = self.stderr.locked().trim().to_string();
        match tail.lines().last() {
            Some(line) => format!("the connection closed; its last words: {line}"),
            None => "the connection closed".to_string(),
        }
    }
}

/// Receives what the server sends unasked: a changed tool list.
struct Handler {
    server: String,
    tools: Arc<Mutex<Vec<Tool>>>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            Default::default(),
            Implementation::new("bareagent", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        // Listed in a task of its own: the answer arrives through the same
        // service loop that is running this handler.
        let (peer, tools, server) = (context.peer, self.tools.clone(), self.server.clone());
        tokio::spawn(async move {
            match peer.list_all_tools().await {
                Ok(listed) => {
                    tracing::info!(server, tools = listed.len(), "MCP tool list changed");
                    *tools.locked() = listed;
                }
                Err(error) => tracing::warn!(server, %error, "cannot list the changed MCP tools"),
            }
        });
    }
}

impl Server {
    pub fn new(spec: ServerSpec, root: &Path, notify: Notify) -> Server {
        Server {
            spec,
            root: root.to_path_buf(),
            link: tokio::sync::Mutex::new(Link::Idle),
            status: Mutex::new(Status::NotStarted),
            tools: Arc::default(),
            notify,
            stopped: AtomicBool::new(false),
            told: AtomicBool::new(false),
        }
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn status(&self) -> Status {
        self.status.locked().clone()
    }

    fn set_status(&self, status: Status) {
        *self.status.locked() = status;
    }

    /// The tools as last listed; empty unless the server is running.
    pub fn tools(&self) -> Vec<Tool> {
        match self.status() {
            Status::Running { .. } => self.tools.locked().clone(),
            _ => Vec::new(),
        }
    }

    /// Starts the server unless it runs (or failed too recently to try
    /// again); waits while another caller starts it.
    pub async fn ensure_started(&self) -> Result<(), String> {
        self.peer().await.map(drop)
    }

    /// The live connection's peer, (re)starting the server if it is not
    /// running and its backoff has passed.
    async fn peer(&self) -> Result<rmcp::Peer<RoleClient>, String> {
        let mut link = self.link.lock().await;
        if self.stopped.load(Ordering::SeqCst) {
            *link = Link::Stopped;
        }
        if let Link::Live(connection) = &*link {
            if !connection.is_closed() {
                return Ok(connection.service.peer().clone());
            }
            let error = connection.ending();
            *link = self.crashed(error);
        }
        // Failed starts in a row.
        let attempts = match &*link {
            Link::Stopped => return Err("the session has ended".into()),
            Link::Failed {
                error, retry_at, ..
            } if Instant::now() < *retry_at => return Err(error.clone()),
            Link::Failed { attempts, .. } => *attempts,
            _ => 0,
        };
        self.set_status(Status::Starting);
        let started = Instant::now();
        match tokio::time::timeout(self.spec.start_timeout, self.connect()).await {
            Ok(Ok(_)) if self.stopped.load(Ordering::SeqCst) => {
                *link = Link::Stopped;
                self.set_status(Status::Stopped);
                Err("the session has ended".into())
            }
            Ok(Ok(connection)) => {
                let count = self.tools.locked().len();
                tracing::info!(
                    server = self.name(),
                    tools = count,
                    ms = started.elapsed().as_millis() as u64,
                    "MCP server started"
                );
                self.set_status(Status::Running { tools: count });
                let peer = connection.service.peer().clone();
                *link = Link::Live(Box::new(connection));
                Ok(peer)
            }
            Ok(Err(error)) => {
                *link = self.failed(error.clone(), attempts + 1, backoff(attempts));
                Err(error)
            }
            Err(_) => {
                let error = format!(
                    "it did not answer `initialize` and list its tools within {} s",
                    self.spec.start_timeout.as_secs_f32()
                );
                *link = self.failed(error.clone(), attempts + 1, backoff(attempts));
                Err(error)
            }
        }
    }

    /// The failed state after `attempts` failed starts in a row, next tried
    /// after `wait`; told to the user the first time only.
    fn failed(&self, error: String, attempts: u32, wait: Duration) -> Link {
        tracing::info!(server = self.name(), %error, attempts, "MCP server failed");
        self.set_status(Status::Failed {
            error: error.clone(),
            retry_in_secs: wait.as_secs(),
        });
        if !self.told.swap(true, Ordering::SeqCst) {
            (self.notify)(Notice {
                server: self.name().to_string(),
                state: "failed",
                message: format!(
                    "MCP server `{}` ({}) is not available, its tools are left out: {error}",
                    self.name(),
                    self.spec.origin.describe()
                ),
            });
        }
        Link::Failed {
            error,
            attempts,
            retry_at: Instant::now() + wait,
        }
    }

    /// A running server's connection ended: said at once, and started
    /// again on next use.
    fn crashed(&self, error: String) -> Link {
        self.failed(error, 0, Duration::ZERO)
    }

    async fn connect(&self) -> Result<Connection, String> {
        let handler = Handler {
            server: self.name().to_string(),
            tools: self.tools.clone(),
        };
        let stderr: Arc<Mutex<String>> = Arc::default();
        let (service, process) = match &self.spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                // Forking (and, before the session's first process, the
                // check of the commands' cgroup, a grace period of 10-20 ms)
                // blocks: on a thread of its own, so the first model
                // request goes out meanwhile.
                let (name, root) = (self.name().to_string(), self.root.clone());
                let (command, args, env) = (command.clone(), args.clone(), env.clone());
                let (cwd, tail) = (cwd.clone(), stderr.clone());
                let (process, stdout, stdin) = tokio::task::spawn_blocking(move || {
                    ServerProcess::spawn(&name, &root, &command, &args, &env, cwd.as_deref(), &tail)
                })
                .await
                .map_err(|error| format!("cannot start it: {error}"))??;
                let service = rmcp::serve_client(handler, (stdout, stdin))
                    .await
                    .map_err(|error| self.start_error(&error.to_string(), &stderr))?;
                (service, Some(process))
            }
            Transport::Http { url, headers } => {
                let expanded = expand_env(url)
                    .map_err(|var| format!("the environment variable `{var}` is not set"))?;
                let transport = http_transport(&expanded, headers)?;
                // The URL as configured, never as expanded: `${TOKEN}` in a
                // query stays out of messages and logs.
                let service = rmcp::serve_client(handler, transport)
                    .await
                    .map_err(|error| {
                        format!("cannot initialize at {url}: {}", root_cause(&error))
                            .replace(&expanded, url)
                    })?;
                (service, None)
            }
        };
        let listed = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|error| format!("cannot list its tools: {error}"))?;
        *self.tools.locked() = listed;
        Ok(Connection {
            service,
            process,
            stderr,
        })
    }

    fn start_error(&self, error: &str, stderr: &Mutex<String>) -> String {
        let tail = stderr.locked().clone();
        match tail.trim().lines().last() {
            Some(line) => format!("{error} (its stderr: {line})"),
            None => error.to_string(),
        }
    }

    /// Calls the tool `name` (as the server calls it). Dropping the future
    /// (a cancelled turn) sends `notifications/cancelled` for the request.
    pub async fn call(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, CallError> {
        let peer = self.peer().await.map_err(|reason| CallError::Unavailable {
            server: self.name().to_string(),
            reason,
        })?;
        let params =
            CallToolRequestParams::new(Cow::Owned(name.to_string())).with_arguments(arguments);
        match peer.call_tool(params).await {
            Ok(result) => Ok(result),
            Err(ServiceError::McpError(error)) => Err(CallError::Server {
                server: self.name().to_string(),
                message: error.message.to_string(),
            }),
            Err(error) => {
                let server = self.name().to_string();
                Err(match self.ended(&error).await {
                    Some(reason) => CallError::Crashed { server, reason },
                    None => CallError::Failed {
                        server,
                        reason: error.to_string(),
                    },
                })
            }
        }
    }

    /// After a call failed below the protocol: if the connection is gone,
    /// the server is marked failed (and said so once), and this is why.
    async fn ended(&self, error: &ServiceError) -> Option<String> {
        let mut link = self.link.lock().await;
        if let Link::Live(connection) = &*link {
            // The process may need a moment to be seen gone after its pipe closed.
            if connection.is_closed()
                || matches!(
                    error,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                )
            {
                let reason = connection.ending();
                *link = self.crashed(reason.clone());
                return Some(reason);
            }
        }
        None
    }

    /// Ends the connection and kills a stdio server's process group.
    pub async fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let mut link = self.link.lock().await;
        if let Link::Live(connection) = std::mem::replace(&mut *link, Link::Stopped) {
            drop(connection);
        }
        self.set_status(Status::Stopped);
    }

    /// [`stop`](Self::stop) without waiting: from a destructor. A start
    /// under way keeps the lock; its process dies with the reaper then.
    pub fn stop_now(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        if let Ok(mut link) = self.link.try_lock() {
            *link = Link::Stopped;
        }
        self.set_status(Status::Stopped);
    }

    /// The pid of a running stdio server (its group id), for tests and status.
    pub async fn pid(&self) -> Option<i32> {
        match &*self.link.lock().await {
            Link::Live(connection) => connection.process.as_ref().map(|p| p.pgid),
            _ => None,
        }
    }
}

/// The transport of a Streamable HTTP server at `url` (expanded), its
/// header values expanded.
fn http_transport(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, String> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        let value = expand_env(value)
            .map_err(|var| format!("the environment variable `{var}` is not set"))?;
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a header name"))?;
        // The value is never put in a message: it may be a token.
        let mut value = reqwest::header::HeaderValue::from_str(&value)
            .map_err(|_| format!("the value of the header `{name}` is not a valid header value"))?;
        value.set_sensitive(true);
        custom.insert(name, value);
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|error| format!("cannot make an HTTP client: {error}"))?;
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(custom);
    Ok(rmcp::transport::StreamableHttpClientTransport::with_client(
        client, config,
    ))
}

/// What went wrong at the start of a Streamable HTTP server, without the
/// SDK's transport type names (its innermost error is not kept).
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    let text = cause.to_string();
    if text.contains("error sending request") {
        return "it cannot be reached (is it running, and is the URL right?)".into();
    }
    // `Send message error Transport [a::very::Long<Type>] error: …`
    match (text.find(" ["), text.find("] ")) {
        (Some(start), Some(end)) if start < end => {
            format!("{}{}", &text[..start], &text[end + 1..])
        }
        _ => text,
    }
}

/// How long to wait before the start after `attempts` failed ones: 1 s,
/// doubling, at most [`MAX_BACKOFF`].
fn backoff(attempts: u32) -> Duration {
    Duration::from_secs(1u64 << attempts.min(6)).min(MAX_BACKOFF)
}

/// A stdio server's process group.
struct ServerProcess {
    child: tokio::process::Child,
    pgid: i32,
}

impl ServerProcess {
    fn spawn(
        name: &str,
        root: &Path,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        cwd: Option<&str>,
        stderr_tail: &Arc<Mutex<String>>,
    ) -> Result<
        (
            ServerProcess,
            tokio::process::ChildStdout,
            tokio::process::ChildStdin,
        ),
        String,
    > {
        let missing = |var: String| format!("the environment variable `{var}` is not set");
        let program = expand_env(command).map_err(missing)?;
        let mut cmd = tokio::process::Command::new(&program);
        for arg in args {
            cmd.arg(expand_env(arg).map_err(missing)?);
        }
        // The agent's provider keys are not the server's business.
        for (name, _) in std::env::vars_os() {
            if name.to_str().is_some_and(crate::tools::is_secret_variable) {
                cmd.env_remove(name);
            }
        }
        for (name, value) in env {
            cmd.env(name, expand_env(value).map_err(missing)?);
        }
        let cwd = match cwd {
            Some(cwd) => root.join(expand_env(cwd).map_err(missing)?),
            None => root.to_path_buf(),
        };
        cmd.current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        crate::tools::reaper::check_cgroup();
        // SAFETY: one send on a socket, async-signal-safe as the child of a
        // threaded process requires (see `tools::reaper`).
        unsafe {
            cmd.pre_exec(crate::tools::reaper::register_self);
        }
        let mut child = cmd
            .spawn()
            .map_err(|error| format!("cannot start `{program}`: {error}"))?;
        let pgid = child.id().map(|id| id as i32).unwrap_or(0);
        let (Some(stdout), Some(stdin), Some(stderr)) =
            (child.stdout.take(), child.stdin.take(), child.stderr.take())
        else {
            return Err("its pipes could not be opened".into());
        };
        crate::tools::keep_stderr_tail(name.to_string(), stderr, stderr_tail.clone(), STDERR_TAIL);
        Ok((ServerProcess { child, pgid }, stdout, stdin))
    }
}

impl Drop for ServerProcess {
    /// The whole group goes: a server's own children (an `npx` wrapper's
    /// node, a `uvx` wrapper's python) included.
    fn drop(&mut self) {
        if self.pgid > 0 {
            // SAFETY: killpg only sends a signal; a group that is gone gives ESRCH.
            unsafe {
                libc::killpg(self.pgid, libc::SIGKILL);
            }
            let _ = self.child.start_kill();
            crate::tools::reaper::forget(self.pgid);
        }
    }
}
