//! A Language Server Protocol client that behaves like an editor, for driving
//! the built `bareagent` binary (a language server on stdio) in tests.
//!
//! [`LspClient::start`] spawns the server; a reader thread parses its stdout
//! (`Content-Length` framed JSON-RPC), records every notification, response
//! and server→client request, and answers those requests the way an editor
//! would: `workspace/applyEdit` edits the client's model of open documents
//! and tells the server with `didOpen`/`didChange`, `window/showMessageRequest`
//! picks a scripted answer, and so on (see [`ClientOptions`]).
//!
//! Messages are plain `serde_json::Value`s so the client shares no types (and
//! no bugs) with the server's LSP crates. For the same reason its framing
//! ([`frame`], [`read_frame`]) is written here apart from the server's
//! `src/lsp/pump.rs` on purpose: one framer for both would hide the bugs they share. Everything is std threads and
//! blocking IO, so sync and async tests can both use it.
//!
//! Every wait has a timeout and panics with the recent traffic and the
//! server's stderr, so a broken server fails a test instead of hanging it.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

/// How the client answers `workspace/applyEdit`.
#[derive(Clone, Debug)]
pub enum ApplyEditBehaviour {
    /// Like VS Code: a `TextDocumentEdit` whose version is not the buffer's
    /// fails the whole edit (`applied: false`) and nothing changes.
    Honest,
    /// Like Neovim: a `TextDocumentEdit` with a stale version is silently
    /// skipped, yet the reply says `applied: true`.
    NeovimLike,
    /// Every edit is refused with `applied: false`.
    Refuse,
}

/// How the client answers one `window/showMessageRequest`.
#[derive(Clone, Debug)]
pub enum MessageRequestAnswer {
    /// Picks the action with this title (`null` if the request has none).
    Pick(String),
    /// Answers `null`, as when the user dismisses the prompt.
    Null,
    /// Answers JSON-RPC error -32601, like Helix ≤ 25.07.
    MethodNotFound,
    /// Never answers.
    NeverAnswer,
}

#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Workspace root: sent as `rootUri` and the single workspace folder, and
    /// the server's working directory (when it exists).
    pub root: PathBuf,
    /// Extra environment for the server process.
    pub env: Vec<(String, String)>,
    /// Extra command-line arguments for the server.
    pub args: Vec<String>,
    /// Offered in `capabilities.general.positionEncodings`; empty omits the key.
    pub position_encodings: Vec<String>,
    /// Advertise `capabilities.window.showMessage` (message action items).
    pub show_message_request: bool,
    /// Advertise `capabilities.window.workDoneProgress`.
    pub work_done_progress: bool,
    /// Advertise create/rename/delete in `workspace.workspaceEdit`.
    pub resource_operations: bool,
    pub apply_edit: ApplyEditBehaviour,
    /// Consumed in order, one per `window/showMessageRequest`; once empty,
    /// `default_message_answer` is used.
    pub message_answers: Vec<MessageRequestAnswer>,
    pub default_message_answer: MessageRequestAnswer,
    /// Sent as `initializationOptions`; `Null` omits the key.
    pub initialization_options: Value,
    /// The answer to `workspace/configuration`, once per requested item.
    pub configuration: Value,
    /// Top-level `initialize` params sent in place of the built ones: a real
    /// editor's `capabilities` and `clientInfo`, from a fixture.
    pub initialize_overrides: serde_json::Map<String, Value>,
    /// Sent as `initialize`'s `processId` (default: this test process).
    pub process_id: u32,
    /// Consumed in order, one per `bareagent/codeIntelligence` (announce
    /// `codeIntelligence` in `initialization_options` to be asked); once
    /// empty, method not found.
    pub code_answers: Vec<CodeAnswer>,
}

/// How the client answers one `bareagent/codeIntelligence`, as an editor
/// whose language servers said this would.
#[derive(Clone, Debug)]
pub enum CodeAnswer {
    /// The LSP result.
    Result(Value),
    /// An error response with this message (request failed, -32803).
    Error(String),
    /// Never answers.
    NeverAnswer,
}

impl ClientOptions {
    /// An editor with the common capabilities that allows a tool once when
    /// asked.
    pub fn new(root: &Path) -> Self {
        ClientOptions {
            root: root.to_path_buf(),
            // Not the developer's own state (the record of their sessions).
            env: vec![(
                "XDG_STATE_HOME".to_string(),
                root.join(".no-user-state").display().to_string(),
            )],
            args: Vec::new(),
            position_encodings: vec!["utf-8".to_string(), "utf-16".to_string()],
            show_message_request: true,
            work_done_progress: true,
            resource_operations: true,
            apply_edit: ApplyEditBehaviour::Honest,
            message_answers: Vec::new(),
            default_message_answer: MessageRequestAnswer::Pick("Allow once".to_string()),
            initialization_options: Value::Null,
            configuration: Value::Null,
            initialize_overrides: serde_json::Map::new(),
            process_id: std::process::id(),
            code_answers: Vec::new(),
        }
    }
}

// ---------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------

const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// Traffic entries kept in memory, and how many a failure message shows.
const TRAFFIC_KEPT: usize = 2000;
const TRAFFIC_SHOWN: usize = 30;
/// Long messages (a whole file in `didOpen`) are cut in the traffic log.
const TRAFFIC_ENTRY_CHARS: usize = 600;
const STDERR_SHOWN_CHARS: usize = 4000;
/// A larger `Content-Length` is surely garbage; refuse to allocate for it.
const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;
const METHOD_NOT_FOUND: i64 = -32601;

// ---------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------

/// A running language server and the editor-like client driving it.
/// Dropping it kills the server if it is still running.
pub struct LspClient {
    inner: Arc<Inner>,
    child: Mutex<Child>,
    next_id: AtomicI64,
}

/// State shared with the reader thread.
///
/// Lock order, to avoid deadlocks: `docs` → `stdin` → `state`. Document
/// changes hold `docs` while sending their `didChange`, so the server sees
/// versions in order even when a test edit races a `workspace/applyEdit`.
struct Inner {
    options: ClientOptions,
    stdin: Mutex<Option<ChildStdin>>,
    docs: Mutex<HashMap<String, Document>>,
    state: Mutex<State>,
    /// Signalled whenever `state` changes, for the waits.
    changed: Condvar,
    stderr: Mutex<Vec<u8>>,
}

struct State {
    /// Human-readable log of every frame in both directions, plus anomalies.
    traffic: VecDeque<String>,
    notifications: Vec<(String, Value)>,
    server_requests: Vec<(String, Value)>,
    /// Responses to our requests not yet claimed by `response`.
    responses: HashMap<i64, Result<Value, Value>>,
    /// Responses whose id is null or not an integer (e.g. parse errors).
    orphan_responses: Vec<Value>,
    /// Negotiated position encoding name.
    encoding: String,
    message_answers: VecDeque<MessageRequestAnswer>,
    code_answers: VecDeque<CodeAnswer>,
    stdout_closed: bool,
}

/// The client's buffer of an open document.
#[derive(Clone, Debug)]
struct Document {
    text: String,
    version: i32,
    language_id: String,
}

impl LspClient {
    /// Spawns `binary` with piped stdio and starts reading its output. Does
    /// not initialize: call [`LspClient::initialize`].
    pub fn start(binary: &Path, options: ClientOptions) -> LspClient {
        let mut command = Command::new(binary);
        command
            .args(&options.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &options.env {
            command.env(key, value);
        }
        // Editors start servers inside the project; it also keeps a server
        // that writes relative paths out of the repository under test.
        if options.root.is_dir() {
            command.current_dir(&options.root);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("lsp client: cannot start {}: {e}", binary.display()));
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");

        let state = State {
            traffic: VecDeque::new(),
            notifications: Vec::new(),
            server_requests: Vec::new(),
            responses: HashMap::new(),
            orphan_responses: Vec::new(),
            encoding: "utf-16".to_string(),
            message_answers: options.message_answers.iter().cloned().collect(),
            code_answers: options.code_answers.iter().cloned().collect(),
            stdout_closed: false,
        };
        let inner = Arc::new(Inner {
            options,
            stdin: Mutex::new(Some(stdin)),
            docs: Mutex::new(HashMap::new()),
            state: Mutex::new(state),
            changed: Condvar::new(),
            stderr: Mutex::new(Vec::new()),
        });

        let reader_inner = inner.clone();
        std::thread::Builder::new()
            .name("lsp-client-reader".into())
            .spawn(move || read_loop(reader_inner, stdout))
            .expect("lsp client: spawn reader thread");
        let stderr_inner = inner.clone();
        std::thread::Builder::new()
            .name("lsp-client-stderr".into())
            .spawn(move || collect_stderr(stderr_inner, stderr))
            .expect("lsp client: spawn stderr thread");

        LspClient {
            inner,
            child: Mutex::new(child),
            next_id: AtomicI64::new(1),
        }
    }

    /// Sends `initialize`, records the negotiated position encoding, sends
    /// `initialized`, and returns the server's `InitializeResult`.
    pub fn initialize(&self) -> Value {
        let result = match self.request("initialize", self.initialize_params()) {
            Ok(result) => result,
            Err(error) => panic!("{}", self.report(&format!("initialize failed: {error}"))),
        };
        let encoding = result
            .pointer("/capabilities/positionEncoding")
            .and_then(Value::as_str)
            .unwrap_or("utf-16")
            .to_string();
        self.inner.state().encoding = encoding;
        self.notify("initialized", json!({}));
        result
    }

    /// The negotiated position encoding ("utf-16" until initialized).
    pub fn encoding(&self) -> String {
        self.inner.state().encoding.clone()
    }

    /// Sends a request and waits up to 15 s for its response: `Ok(result)`
    /// or `Err(error object)`. Panics if none comes.
    pub fn request(&self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.request_async(method, params);
        match self.wait_state(REQUEST_TIMEOUT, |state| state.responses.remove(&id)) {
            Ok(response) => response,
            Err(why) => panic!(
                "{}",
                self.report(&format!(
                    "request {method} (id {id}) got no response: {why}"
                ))
            ),
        }
    }

    /// Sends a request without waiting; returns its id for [`LspClient::response`].
    /// `Null` params are omitted from the message.
    /// `workspace/executeCommand` of `command` with `arguments` (a JSON
    /// array; `[]` sends none).
    pub fn execute(&self, command: &str, arguments: Value) -> Result<Value, Value> {
        let mut params = json!({"command": command});
        if arguments.as_array().is_some_and(|a| !a.is_empty()) {
            params["arguments"] = arguments;
        }
        self.request("workspace/executeCommand", params)
    }

    /// The code actions at the start of `line` of `uri`, with no
    /// diagnostics in the context.
    pub fn code_actions(&self, uri: &str, line: u32) -> Vec<Value> {
        let at = json!({"line": line, "character": 0});
        let params = json!({
            "textDocument": {"uri": uri}, "range": {"start": at, "end": at},
            "context": {"diagnostics": []},
        });
        match self.request("textDocument/codeAction", params) {
            Ok(Value::Array(actions)) => actions,
            other => panic!("{}", self.report(&format!("codeAction: {other:?}"))),
        }
    }

    pub fn request_async(&self, method: &str, params: Value) -> i64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        self.inner.send(&message);
        id
    }

    /// Waits for the response to request `id`; `None` on timeout or if the
    /// server closed its stdout first. A response is handed out only once.
    pub fn response(&self, id: i64, timeout: Duration) -> Option<Result<Value, Value>> {
        self.wait_state(timeout, |state| state.responses.remove(&id))
            .ok()
    }

    /// Sends a notification. `Null` params are omitted from the message.
    pub fn notify(&self, method: &str, params: Value) {
        self.inner.send_notification(method, params);
    }

    /// Writes `bytes` to the server's stdin as they are (malformed frames).
    pub fn send_raw(&self, bytes: &[u8]) {
        let shown = truncate(&String::from_utf8_lossy(bytes));
        self.inner
            .write_bytes(bytes, format!("→ raw {} bytes: {shown}", bytes.len()));
    }

    /// Opens `relative_path` (under the root) with `text` as version 1 and
    /// returns its URI. Nothing is written to disk. Opening an open document
    /// again replaces the buffer and sends another `didOpen`.
    pub fn open(&self, relative_path: &str, text: &str) -> String {
        let uri = self.uri(relative_path);
        let mut docs = self.inner.docs();
        open_document(&self.inner, &mut docs, &uri, text.to_string());
        uri
    }

    /// The `file://` URI of `relative_path` under the root (`""` gives the
    /// `rootUri` itself, without a trailing slash).
    pub fn uri(&self, relative_path: &str) -> String {
        let root = &self.inner.options.root;
        if relative_path.is_empty() {
            return path_to_uri(root);
        }
        path_to_uri(&root.join(relative_path))
    }

    /// The client's current text of an open document.
    pub fn text(&self, uri: &str) -> Option<String> {
        let docs = self.inner.docs();
        docs.get(&normalize_uri(uri)).map(|doc| doc.text.clone())
    }

    /// The client's current version of an open document.
    pub fn version(&self, uri: &str) -> Option<i32> {
        let docs = self.inner.docs();
        docs.get(&normalize_uri(uri)).map(|doc| doc.version)
    }

    /// A user edit: replaces `start..end` ((line, character) in the
    /// negotiated encoding, clamped to the document) with `new_text`, bumps
    /// the version and sends one incremental `didChange`.
    pub fn edit(&self, uri: &str, start: (u32, u32), end: (u32, u32), new_text: &str) {
        self.user_edit(uri, new_text, |_, _| (start, end));
    }

    /// A user edit that appends `new_text` at the document's end.
    pub fn type_at_end(&self, uri: &str, new_text: &str) {
        self.user_edit(uri, new_text, |text, encoding| {
            let end = offset_to_position(text, text.len(), encoding);
            (end, end)
        });
    }

    /// Closes an open document (`didClose`).
    pub fn close(&self, uri: &str) {
        let uri = normalize_uri(uri);
        let mut docs = self.inner.docs();
        if docs.remove(&uri).is_none() {
            drop(docs);
            panic!("lsp client: close of {uri}, which is not open");
        }
        self.inner.send_notification(
            "textDocument/didClose",
            json!({"textDocument": {"uri": uri}}),
        );
    }

    /// Every notification from the server so far, in order.
    pub fn notifications(&self) -> Vec<(String, Value)> {
        self.inner.state().notifications.clone()
    }

    /// Every server→client request so far, in order. A request is recorded
    /// once it has been handled, so its effects (e.g. an applied edit) are
    /// already visible.
    pub fn server_requests(&self) -> Vec<(String, Value)> {
        self.inner.state().server_requests.clone()
    }

    /// Responses the server sent with a null or non-integer id, such as the
    /// error answering a frame it could not parse.
    pub fn orphan_responses(&self) -> Vec<Value> {
        self.inner.state().orphan_responses.clone()
    }

    /// The traffic log: every frame both ways (long ones cut) and anomalies.
    pub fn traffic(&self) -> Vec<String> {
        self.inner.state().traffic.iter().cloned().collect()
    }

    /// The params of the first notification (already received or arriving
    /// within `timeout`) for which `pred(method, params)` holds. Panics with
    /// `what` and the recent traffic otherwise.
    pub fn wait_for_notification(
        &self,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&str, &Value) -> bool,
    ) -> Value {
        let found = self.wait_state(timeout, |state| {
            state
                .notifications
                .iter()
                .find(|(method, params)| pred(method, params))
                .map(|(_, params)| params.clone())
        });
        match found {
            Ok(params) => params,
            Err(why) => panic!(
                "{}",
                self.report(&format!("waiting for notification \"{what}\": {why}"))
            ),
        }
    }

    /// Polls `cond` every 10 ms until it holds; panics with `what` and the
    /// recent traffic after `timeout`.
    pub fn wait_until(&self, timeout: Duration, what: &str, cond: impl Fn(&LspClient) -> bool) {
        let deadline = Instant::now() + timeout;
        loop {
            if cond(self) {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "{}",
                    self.report(&format!(
                        "waiting until \"{what}\": timed out after {timeout:?}"
                    ))
                );
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.inner.stderr_bytes()).into_owned()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child().id()
    }

    /// Whether the server process is still alive.
    pub fn is_running(&self) -> bool {
        matches!(self.child().try_wait(), Ok(None))
    }

    /// The polite exit: `shutdown` request, `exit` notification, then waits up
    /// to 10 s for the process (killing it after) and returns its status.
    /// Panics if a running server does not answer `shutdown` within 10 s.
    pub fn shutdown(&self) -> ExitStatus {
        if let Ok(Some(status)) = self.child().try_wait() {
            return status;
        }
        let id = self.request_async("shutdown", Value::Null);
        match self.response(id, SHUTDOWN_TIMEOUT) {
            Some(Ok(_)) => {}
            Some(Err(error)) => panic!("{}", self.report(&format!("shutdown failed: {error}"))),
            None => panic!("{}", self.report("shutdown got no response")),
        }
        self.notify("exit", Value::Null);
        match self.wait_for_exit(EXIT_TIMEOUT) {
            Some(status) => status,
            None => self.kill(),
        }
    }

    /// Closes the server's stdin (as a crashed editor would) and waits up to
    /// `timeout` for it to exit; `None` if it is still running.
    pub fn close_stdin_and_wait(&self, timeout: Duration) -> Option<ExitStatus> {
        self.inner.close_stdin();
        self.wait_for_exit(timeout)
    }

    // -- internals ----------------------------------------------------------

    fn child(&self) -> MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn wait_for_exit(&self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child().try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    fn kill(&self) -> ExitStatus {
        let mut child = self.child();
        let _ = child.kill();
        child
            .wait()
            .unwrap_or_else(|e| panic!("lsp client: waiting for the killed server: {e}"))
    }

    /// Applies one user edit whose range `locate` computes from the current
    /// text, under one lock so a concurrent `applyEdit` cannot slip between.
    fn user_edit(
        &self,
        uri: &str,
        new_text: &str,
        locate: impl FnOnce(&str, Encoding) -> ((u32, u32), (u32, u32)),
    ) {
        let uri = normalize_uri(uri);
        let encoding = self.inner.encoding();
        let mut docs = self.inner.docs();
        let Some(doc) = docs.get_mut(&uri) else {
            drop(docs);
            panic!("lsp client: edit of {uri}, which is not open");
        };
        let (start, end) = locate(&doc.text, encoding);
        let edit = TextEdit {
            start,
            end,
            new_text: new_text.to_string(),
        };
        let changes = apply_text_edits(&mut doc.text, &[edit], encoding);
        doc.version += 1;
        let version = doc.version;
        self.inner.send_did_change(&uri, version, changes);
    }

    /// Waits until `found` extracts something from the state. Errs when the
    /// deadline passes or the server closed its stdout (nothing more can come).
    fn wait_state<T>(
        &self,
        timeout: Duration,
        mut found: impl FnMut(&mut State) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + timeout;
        let mut state = self.inner.state();
        loop {
            if let Some(value) = found(&mut state) {
                return Ok(value);
            }
            if state.stdout_closed {
                return Err("the server closed its stdout".to_string());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(format!("timed out after {timeout:?}"));
            }
            state = self
                .inner
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// A failure message: `what`, the process state, the last messages and
    /// the tail of the server's stderr.
    fn report(&self, what: &str) -> String {
        let recent: Vec<String> = {
            let state = self.inner.state();
            let skip = state.traffic.len().saturating_sub(TRAFFIC_SHOWN);
            state.traffic.iter().skip(skip).cloned().collect()
        };
        let stderr = self.stderr();
        let stderr_tail: String = {
            let chars: Vec<char> = stderr.chars().collect();
            let skip = chars.len().saturating_sub(STDERR_SHOWN_CHARS);
            chars[skip..].iter().collect()
        };
        let process = match self.child().try_wait() {
            Ok(None) => "running".to_string(),
            Ok(Some(status)) => format!("exited ({status})"),
            Err(e) => format!("unknown ({e})"),
        };
        format!(
            "lsp client: {what}\nserver process: {process}\n\
             --- last {} messages (→ sent, ← received) ---\n{}\n\
             --- server stderr (tail) ---\n{stderr_tail}",
            recent.len(),
            recent.join("\n"),
        )
    }

    fn initialize_params(&self) -> Value {
        let options = &self.inner.options;
        let mut params = json!({
            "processId": options.process_id,
            "clientInfo": {"name": "test-client", "version": "0"},
            "rootUri": path_to_uri(&options.root),
            "rootPath": options.root.to_string_lossy(),
            "workspaceFolders": self.inner.workspace_folders(),
            "capabilities": client_capabilities(options),
        });
        if !options.initialization_options.is_null() {
            params["initializationOptions"] = options.initialization_options.clone();
        }
        for (key, value) in &options.initialize_overrides {
            params[key] = value.clone();
        }
        params
    }
}

impl Drop for LspClient {
    /// Stops the server; then every `bareagent/event` it sent must be one
    /// the editors' schema allows (unless the test failed already).
    fn drop(&mut self) {
        self.inner.close_stdin();
        let child = self.child.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            return;
        }
        let events = self.notifications().into_iter();
        for (_, event) in events.filter(|(method, _)| method == "bareagent/event") {
            if let Some(why) = super::event_schema::violation(&event) {
                panic!(
                    "the server sent a bareagent/event its schema does not allow: {event}\n{why}"
                );
            }
        }
    }
}

/// The capabilities of a typical editor, shaped by `options`.
fn client_capabilities(options: &ClientOptions) -> Value {
    let workspace_edit = if options.resource_operations {
        json!({"documentChanges": true, "resourceOperations": ["create", "rename", "delete"]})
    } else {
        json!({"documentChanges": true})
    };
    let mut capabilities = json!({
        "workspace": {
            "applyEdit": true,
            "workspaceEdit": workspace_edit,
            "configuration": true,
            "workspaceFolders": true,
            "executeCommand": {"dynamicRegistration": false},
        },
        "textDocument": {
            "synchronization": {"dynamicRegistration": false, "didSave": true},
            "codeAction": {
                "dynamicRegistration": false,
                "codeActionLiteralSupport": {
                    "codeActionKind": {
                        "valueSet": ["", "quickfix", "refactor", "refactor.rewrite", "source"]
                    }
                }
            },
            "publishDiagnostics": {"relatedInformation": true},
        },
        "window": {
            "workDoneProgress": options.work_done_progress,
            "showDocument": {"support": true},
        },
    });
    if options.show_message_request {
        capabilities["window"]["showMessage"] =
            json!({"messageActionItem": {"additionalPropertiesSupport": false}});
    }
    if !options.position_encodings.is_empty() {
        capabilities["general"] = json!({"positionEncodings": options.position_encodings});
    }
    capabilities
}

// ---------------------------------------------------------------------------
// Shared state helpers
// ---------------------------------------------------------------------------

impl Inner {
    /// Locks the state even if a panicking test thread poisoned it: the data
    /// is plain lists, always consistent.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn docs(&self) -> MutexGuard<'_, HashMap<String, Document>> {
        self.docs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn stderr_bytes(&self) -> Vec<u8> {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn encoding(&self) -> Encoding {
        Encoding::from_name(&self.state().encoding)
    }

    /// Appends to the traffic log and wakes the waiters.
    fn note(&self, entry: String) {
        let mut state = self.state();
        if state.traffic.len() == TRAFFIC_KEPT {
            state.traffic.pop_front();
        }
        state.traffic.push_back(entry);
        self.changed.notify_all();
    }

    /// Records something under the state lock and wakes the waiters.
    fn record(&self, update: impl FnOnce(&mut State)) {
        update(&mut self.state());
        self.changed.notify_all();
    }

    fn close_stdin(&self) {
        let taken = self
            .stdin
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if taken.is_some() {
            self.note("→ (stdin closed)".to_string());
        }
    }

    /// Frames and sends one JSON-RPC message.
    fn send(&self, message: &Value) {
        let body = message.to_string();
        self.write_bytes(&frame(message), format!("→ {}", truncate(&body)));
    }

    fn send_notification(&self, method: &str, params: Value) {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        self.send(&message);
    }

    fn send_did_change(&self, uri: &str, version: i32, content_changes: Vec<Value>) {
        self.send_notification(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": content_changes,
            }),
        );
    }

    /// Writes to the server's stdin. A failed write (the server died) is
    /// logged, not fatal: the test's next wait reports it with context.
    fn write_bytes(&self, bytes: &[u8], description: String) {
        let mut stdin = self.stdin.lock().unwrap_or_else(PoisonError::into_inner);
        let outcome = match stdin.as_mut() {
            Some(pipe) => pipe.write_all(bytes).and_then(|()| pipe.flush()),
            None => Err(io::Error::other("stdin is closed")),
        };
        // Logged while still holding `stdin`, so the log keeps send order.
        match outcome {
            Ok(()) => self.note(description),
            Err(e) => self.note(format!("{description}  [NOT SENT: {e}]")),
        }
    }

    fn workspace_folders(&self) -> Value {
        let root = &self.options.root;
        let name = root
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        json!([{"uri": path_to_uri(root), "name": name}])
    }
}

/// Puts `text` in a fresh version-1 buffer for `uri` and sends `didOpen`.
fn open_document(inner: &Inner, docs: &mut HashMap<String, Document>, uri: &str, text: String) {
    let language_id = language_id(uri).to_string();
    inner.send_notification(
        "textDocument/didOpen",
        json!({"textDocument": {
            "uri": uri, "languageId": language_id, "version": 1, "text": text,
        }}),
    );
    let doc = Document {
        text,
        version: 1,
        language_id,
    };
    docs.insert(uri.to_string(), doc);
}

fn language_id(path: &str) -> &'static str {
    match Path::new(path).extension().and_then(|ext| ext.to_str()) {
        Some("rs") => "rust",
        Some("py") => "python",
        Some("md") => "markdown",
        _ => "plaintext",
    }
}

/// Cuts a log entry to a readable length (on a char boundary).
fn truncate(text: &str) -> String {
    match text.char_indices().nth(TRAFFIC_ENTRY_CHARS) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
        None => text.to_string(),
    }
}

// ---------------------------------------------------------------------------
// Reading the server's output
// ---------------------------------------------------------------------------

/// The reader thread: parses frames until the server closes its stdout.
/// Anything malformed is logged to the traffic and skipped.
fn read_loop(inner: Arc<Inner>, stdout: ChildStdout) {
    let mut reader = BufReader::new(stdout);
    let mut note = |problem: String| inner.note(format!("← !! {problem}"));
    while let Some(body) = read_frame(&mut reader, &mut note) {
        match serde_json::from_slice::<Value>(&body) {
            Ok(message) => dispatch(&inner, message),
            Err(e) => inner.note(format!(
                "← !! unparseable JSON ({e}): {}",
                truncate(&String::from_utf8_lossy(&body))
            )),
        }
    }
    inner.note("← (server closed stdout)".to_string());
    inner.record(|state| state.stdout_closed = true);
}

/// One message as a `Content-Length` frame.
pub fn frame(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(body.as_bytes());
    frame
}

/// Reads the next frame's body; `None` at end of stream. Stray lines, frames
/// without a usable `Content-Length` and other anomalies go to `note`.
pub fn read_frame(reader: &mut impl BufRead, note: &mut impl FnMut(String)) -> Option<Vec<u8>> {
    loop {
        let length = read_header(reader, note)?;
        let Some(length) = length else {
            note("frame header without a usable Content-Length".to_string());
            continue;
        };
        if length > MAX_FRAME_BYTES {
            note(format!("Content-Length {length} is too large; skipped"));
            continue;
        }
        let mut body = vec![0; length];
        return match reader.read_exact(&mut body) {
            Ok(()) => Some(body),
            Err(e) => {
                note(format!("frame body cut short ({e})"));
                None
            }
        };
    }
}

/// Reads one header block up to its blank line: `None` at end of stream,
/// else the Content-Length if there was a valid one.
fn read_header(reader: &mut impl BufRead, note: &mut impl FnMut(String)) -> Option<Option<usize>> {
    let mut content_length = None;
    let mut saw_header_line = false;
    loop {
        let mut raw = Vec::new();
        match reader.read_until(b'\n', &mut raw) {
            Ok(0) => {
                if saw_header_line {
                    note("end of stream inside a frame header".to_string());
                }
                return None;
            }
            Ok(_) => {}
            Err(e) => {
                note(format!("read error: {e}"));
                return None;
            }
        }
        let line = String::from_utf8_lossy(&raw);
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if saw_header_line {
                return Some(content_length);
            }
            // A stray blank line between frames: tolerated, like editors do.
            continue;
        }
        saw_header_line = true;
        match line.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                match value.trim().parse::<usize>() {
                    Ok(length) => content_length = Some(length),
                    Err(_) => note(format!("bad Content-Length header: {line:?}")),
                }
            }
            // Content-Type and the like carry nothing we need.
            Some(_) => {}
            None => note(format!("stray output on stdout: {:?}", truncate(line))),
        }
    }
}

/// Sorts one incoming message into request, notification or response.
fn dispatch(inner: &Inner, message: Value) {
    inner.note(format!("← {}", truncate(&message.to_string())));
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    match (method, message.get("id")) {
        (Some(method), Some(id)) => {
            answer_server_request(inner, id.clone(), &method, &params);
            // Recorded after handling, so a test that sees the request also
            // sees its effects on the documents.
            inner.record(|state| state.server_requests.push((method, params)));
        }
        (Some(method), None) => inner.record(|state| state.notifications.push((method, params))),
        (None, Some(id)) => record_response(inner, id, &message),
        (None, None) => inner.note("← !! neither a request, a notification nor a response".into()),
    }
}

fn record_response(inner: &Inner, id: &Value, message: &Value) {
    let outcome = match message.get("error") {
        Some(error) => Err(error.clone()),
        None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
    };
    match id.as_i64() {
        Some(id) => inner.record(|state| {
            state.responses.insert(id, outcome);
        }),
        None => inner.record(|state| state.orphan_responses.push(message.clone())),
    }
}

// ---------------------------------------------------------------------------
// Answering the server's requests
// ---------------------------------------------------------------------------

enum Reply {
    Result(Value),
    Error(i64, String),
    /// Leave the request unanswered.
    Silence,
}

fn answer_server_request(inner: &Inner, id: Value, method: &str, params: &Value) {
    let reply = match method {
        "workspace/applyEdit" => Reply::Result(apply_workspace_edit(inner, params)),
        "window/showMessageRequest" => answer_message_request(inner, params),
        "window/workDoneProgress/create"
        | "client/registerCapability"
        | "client/unregisterCapability" => Reply::Result(Value::Null),
        "workspace/configuration" => {
            let items = params
                .get("items")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            Reply::Result(Value::Array(vec![
                inner.options.configuration.clone();
                items
            ]))
        }
        "window/showDocument" => Reply::Result(json!({"success": true})),
        "workspace/workspaceFolders" => Reply::Result(inner.workspace_folders()),
        "bareagent/saveDocuments" => Reply::Result(save_documents(inner, params)),
        "bareagent/codeIntelligence" => match inner.state().code_answers.pop_front() {
            Some(CodeAnswer::Result(result)) => Reply::Result(result),
            Some(CodeAnswer::Error(message)) => Reply::Error(-32803, message),
            Some(CodeAnswer::NeverAnswer) => Reply::Silence,
            None => Reply::Error(METHOD_NOT_FOUND, "Method not found".into()),
        },
        _ => Reply::Error(METHOD_NOT_FOUND, "Method not found".into()),
    };
    match reply {
        Reply::Result(result) => inner.send(&json!({"jsonrpc": "2.0", "id": id, "result": result})),
        Reply::Error(code, message) => inner.send(&json!({
            "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message},
        })),
        Reply::Silence => inner.note(format!("→ (request {id} left unanswered)")),
    }
}

fn answer_message_request(inner: &Inner, params: &Value) -> Reply {
    let scripted = inner.state().message_answers.pop_front();
    let answer = scripted.unwrap_or_else(|| inner.options.default_message_answer.clone());
    match answer {
        MessageRequestAnswer::Pick(title) => {
            let action = params
                .get("actions")
                .and_then(Value::as_array)
                .and_then(|actions| {
                    actions
                        .iter()
                        .find(|action| action.get("title").and_then(Value::as_str) == Some(&title))
                });
            Reply::Result(action.cloned().unwrap_or(Value::Null))
        }
        MessageRequestAnswer::Null => Reply::Result(Value::Null),
        MessageRequestAnswer::MethodNotFound => {
            Reply::Error(METHOD_NOT_FOUND, "Method not found".into())
        }
        MessageRequestAnswer::NeverAnswer => Reply::Silence,
    }
}

/// `bareagent/saveDocuments`: writes each open document to disk as an
/// editor's `:w` does, sends `didSave`, and answers the URIs saved.
fn save_documents(inner: &Inner, params: &Value) -> Value {
    let mut saved = Vec::new();
    let docs = inner.docs();
    for uri in params["uris"].as_array().into_iter().flatten() {
        let Some(uri) = uri.as_str() else { continue };
        let uri = normalize_uri(uri);
        let (Some(doc), Some(path)) = (docs.get(&uri), uri_to_path(&uri)) else {
            continue;
        };
        if std::fs::write(&path, &doc.text).is_ok() {
            inner.send(&json!({
                "jsonrpc": "2.0", "method": "textDocument/didSave",
                "params": {"textDocument": {"uri": uri}},
            }));
            saved.push(uri);
        }
    }
    json!({ "saved": saved })
}

// ---------------------------------------------------------------------------
// workspace/applyEdit
// ---------------------------------------------------------------------------

/// One operation of a `WorkspaceEdit`, URIs normalized.
#[derive(Clone, Debug)]
enum Op {
    Edit {
        uri: String,
        version: Option<i32>,
        edits: Vec<TextEdit>,
    },
    Create {
        uri: String,
        overwrite: bool,
        ignore_if_exists: bool,
    },
    Rename {
        old_uri: String,
        new_uri: String,
        overwrite: bool,
        ignore_if_exists: bool,
    },
    Delete {
        uri: String,
        recursive: bool,
        ignore_if_not_exists: bool,
    },
}

/// A `TextEdit`; positions are (line, character) in the negotiated encoding.
#[derive(Clone, Debug)]
struct TextEdit {
    start: (u32, u32),
    end: (u32, u32),
    new_text: String,
}

fn applied() -> Value {
    json!({"applied": true})
}

fn failure(reason: &str) -> Value {
    json!({"applied": false, "failureReason": reason})
}

/// Applies a `workspace/applyEdit` like an editor and returns the
/// `ApplyWorkspaceEditResult`. Every operation is checked before any is
/// executed, so a refused edit changes nothing.
fn apply_workspace_edit(inner: &Inner, params: &Value) -> Value {
    let behaviour = &inner.options.apply_edit;
    if matches!(behaviour, ApplyEditBehaviour::Refuse) {
        return failure("refused");
    }
    let ops = match parse_workspace_edit(params.get("edit").unwrap_or(&Value::Null)) {
        Ok(ops) => ops,
        Err(e) => return failure(&format!("malformed edit: {e}")),
    };
    let mut docs = inner.docs();
    let plan = match plan_workspace_edit(&ops, &docs, &inner.options) {
        Ok(plan) => plan,
        Err(reason) => return failure(&reason),
    };
    for (op, execute) in ops.iter().zip(plan) {
        if !execute {
            continue;
        }
        if let Err(reason) = execute_op(inner, &mut docs, op) {
            return failure(&reason);
        }
    }
    applied()
}

fn parse_workspace_edit(edit: &Value) -> Result<Vec<Op>, String> {
    // documentChanges wins when both are present: we advertise support.
    if let Some(changes) = edit.get("documentChanges") {
        let changes = changes
            .as_array()
            .ok_or("documentChanges is not an array")?;
        changes.iter().map(parse_document_change).collect()
    } else if let Some(changes) = edit.get("changes") {
        let changes = changes.as_object().ok_or("changes is not an object")?;
        changes
            .iter()
            .map(|(uri, edits)| {
                Ok(Op::Edit {
                    uri: normalize_uri(uri),
                    version: None,
                    edits: parse_text_edits(edits)?,
                })
            })
            .collect()
    } else {
        Ok(Vec::new())
    }
}

fn parse_document_change(change: &Value) -> Result<Op, String> {
    let uri_at = |key: &str| -> Result<String, String> {
        change
            .get(key)
            .and_then(Value::as_str)
            .map(normalize_uri)
            .ok_or(format!("{key} missing"))
    };
    let option = |key: &str| {
        change
            .get("options")
            .and_then(|options| options.get(key))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    match change.get("kind").and_then(Value::as_str) {
        Some("create") => Ok(Op::Create {
            uri: uri_at("uri")?,
            overwrite: option("overwrite"),
            ignore_if_exists: option("ignoreIfExists"),
        }),
        Some("rename") => Ok(Op::Rename {
            old_uri: uri_at("oldUri")?,
            new_uri: uri_at("newUri")?,
            overwrite: option("overwrite"),
            ignore_if_exists: option("ignoreIfExists"),
        }),
        Some("delete") => Ok(Op::Delete {
            uri: uri_at("uri")?,
            recursive: option("recursive"),
            ignore_if_not_exists: option("ignoreIfNotExists"),
        }),
        Some(other) => Err(format!("unknown resource operation {other:?}")),
        None => {
            let document = change.get("textDocument").ok_or("textDocument missing")?;
            let uri = document
                .get("uri")
                .and_then(Value::as_str)
                .map(normalize_uri)
                .ok_or("textDocument.uri missing")?;
            let version = match document.get("version") {
                None | Some(Value::Null) => None,
                Some(version) => Some(
                    version
                        .as_i64()
                        .and_then(|version| i32::try_from(version).ok())
                        .ok_or(format!("bad version {version}"))?,
                ),
            };
            let edits = parse_text_edits(change.get("edits").unwrap_or(&Value::Null))?;
            Ok(Op::Edit {
                uri,
                version,
                edits,
            })
        }
    }
}

/// Parses `TextEdit[]` (annotated edits parse the same; the annotation is
/// ignored).
fn parse_text_edits(edits: &Value) -> Result<Vec<TextEdit>, String> {
    let edits = edits.as_array().ok_or("edits is not an array")?;
    edits
        .iter()
        .map(|edit| {
            let position = |key: &str| -> Result<(u32, u32), String> {
                let position = edit
                    .get("range")
                    .and_then(|range| range.get(key))
                    .ok_or(format!("range.{key} missing in {edit}"))?;
                let number = |field: &str| {
                    position
                        .get(field)
                        .and_then(Value::as_u64)
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or(format!("bad range.{key}.{field} in {edit}"))
                };
                Ok((number("line")?, number("character")?))
            };
            Ok(TextEdit {
                start: position("start")?,
                end: position("end")?,
                new_text: edit
                    .get("newText")
                    .and_then(Value::as_str)
                    .ok_or(format!("newText missing in {edit}"))?
                    .to_string(),
            })
        })
        .collect()
}

/// What the filesystem and buffers will look like partway through a
/// workspace edit, so every operation can be checked before any runs.
struct Simulation<'a> {
    docs: &'a HashMap<String, Document>,
    /// Files created, renamed or deleted by earlier operations.
    exists: HashMap<String, bool>,
    /// Documents earlier operations will have opened from disk.
    opened: HashSet<String>,
}

impl Simulation<'_> {
    fn exists(&self, uri: &str) -> bool {
        match self.exists.get(uri) {
            Some(&exists) => exists,
            None => uri_to_path(uri).is_some_and(|path| path.exists()),
        }
    }

    fn is_open(&self, uri: &str) -> bool {
        self.docs.contains_key(uri) || self.opened.contains(uri)
    }
}

/// Checks every operation in order against the simulated state. Returns
/// which ones to execute (NeovimLike skips stale ones), or the failure
/// reason that refuses the whole edit.
fn plan_workspace_edit(
    ops: &[Op],
    docs: &HashMap<String, Document>,
    options: &ClientOptions,
) -> Result<Vec<bool>, String> {
    let neovim_like = matches!(options.apply_edit, ApplyEditBehaviour::NeovimLike);
    let mut sim = Simulation {
        docs,
        exists: HashMap::new(),
        opened: HashSet::new(),
    };
    let mut plan = Vec::with_capacity(ops.len());
    for op in ops {
        let is_edit = matches!(op, Op::Edit { .. });
        if !is_edit && !options.resource_operations {
            return Err("resource operations not supported".to_string());
        }
        match op {
            Op::Edit {
                uri,
                version,
                edits,
            } => {
                if overlapping(edits) {
                    return Err("overlapping edits".to_string());
                }
                // Checked against the buffer as it was before this edit, as
                // VS Code does. A versioned edit of an unopened file cannot
                // match: the client has no version for it.
                let current = docs.get(uri).map(|doc| doc.version);
                let version_ok = match version {
                    None => true,
                    Some(version) => current == Some(*version),
                };
                if !version_ok {
                    if neovim_like {
                        plan.push(false);
                        continue;
                    }
                    return Err("version mismatch".to_string());
                }
                // Neovim loads a missing file as an empty buffer.
                if !sim.is_open(uri) && !sim.exists(uri) && !neovim_like {
                    return Err(format!("file not found: {uri}"));
                }
                sim.opened.insert(uri.clone());
            }
            // Neovim would truncate an existing file here; we follow the
            // spec (and VS Code) in every mode.
            Op::Create {
                uri,
                overwrite,
                ignore_if_exists,
            } => {
                if sim.exists(uri) && !overwrite && !ignore_if_exists {
                    return Err("file exists".to_string());
                }
                sim.exists.insert(uri.clone(), true);
            }
            Op::Rename {
                old_uri,
                new_uri,
                overwrite,
                ignore_if_exists,
            } => {
                if !sim.exists(old_uri) {
                    return Err(format!("file not found: {old_uri}"));
                }
                if sim.exists(new_uri) && !overwrite && !ignore_if_exists {
                    return Err("file exists".to_string());
                }
                sim.exists.insert(old_uri.clone(), false);
                sim.exists.insert(new_uri.clone(), true);
            }
            Op::Delete {
                uri,
                ignore_if_not_exists,
                ..
            } => {
                if !sim.exists(uri) && !ignore_if_not_exists {
                    return Err(format!("file not found: {uri}"));
                }
                sim.exists.insert(uri.clone(), false);
            }
        }
        plan.push(true);
    }
    Ok(plan)
}

/// Whether any two edits' ranges overlap (touching is fine), which the spec
/// forbids and editors reject.
fn overlapping(edits: &[TextEdit]) -> bool {
    let mut ranges: Vec<_> = edits.iter().map(|edit| (edit.start, edit.end)).collect();
    ranges.sort();
    ranges.windows(2).any(|pair| pair[0].1 > pair[1].0)
}

fn execute_op(inner: &Inner, docs: &mut HashMap<String, Document>, op: &Op) -> Result<(), String> {
    match op {
        Op::Edit { uri, edits, .. } => execute_text_edit(inner, docs, uri, edits),
        Op::Create { uri, overwrite, .. } => execute_create(uri, *overwrite),
        Op::Rename {
            old_uri,
            new_uri,
            overwrite,
            ..
        } => execute_rename(inner, docs, old_uri, new_uri, *overwrite),
        Op::Delete { uri, recursive, .. } => execute_delete(inner, docs, uri, *recursive),
    }
}

/// Edits a buffer. An unopened file is first loaded from disk and opened
/// (version 1); like an editor, the edit stays in the unsaved buffer and the
/// file on disk is untouched.
fn execute_text_edit(
    inner: &Inner,
    docs: &mut HashMap<String, Document>,
    uri: &str,
    edits: &[TextEdit],
) -> Result<(), String> {
    if !docs.contains_key(uri) {
        let text = uri_to_path(uri)
            .and_then(|path| std::fs::read(path).ok())
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        open_document(inner, docs, uri, text);
    }
    if edits.is_empty() {
        return Ok(());
    }
    let encoding = inner.encoding();
    let doc = docs
        .get_mut(uri)
        .ok_or(format!("{uri} vanished while editing"))?;
    let changes = apply_text_edits(&mut doc.text, edits, encoding);
    doc.version += 1;
    let version = doc.version;
    inner.send_did_change(uri, version, changes);
    Ok(())
}

/// Creates an empty file (and its directories). An existing file is kept
/// unless `overwrite`: the plan already refused the conflicting cases.
fn execute_create(uri: &str, overwrite: bool) -> Result<(), String> {
    let path = file_path(uri)?;
    if path.exists() && !overwrite {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("create {uri}: {e}"))?;
    }
    std::fs::write(&path, "").map_err(|e| format!("create {uri}: {e}"))
}

/// Renames on disk; an open buffer follows (closed under the old URI,
/// reopened under the new one, as VS Code reports it).
fn execute_rename(
    inner: &Inner,
    docs: &mut HashMap<String, Document>,
    old_uri: &str,
    new_uri: &str,
    overwrite: bool,
) -> Result<(), String> {
    let (old, new) = (file_path(old_uri)?, file_path(new_uri)?);
    if new.exists() && !overwrite {
        return Ok(()); // ignoreIfExists: the plan refused the other cases
    }
    if let Some(parent) = new.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("rename {old_uri}: {e}"))?;
    }
    std::fs::rename(&old, &new).map_err(|e| format!("rename {old_uri}: {e}"))?;
    if let Some(doc) = docs.remove(old_uri) {
        inner.send_notification(
            "textDocument/didClose",
            json!({"textDocument": {"uri": old_uri}}),
        );
        open_document(inner, docs, new_uri, doc.text);
    }
    Ok(())
}

/// Deletes on disk and closes the buffers of everything deleted.
fn execute_delete(
    inner: &Inner,
    docs: &mut HashMap<String, Document>,
    uri: &str,
    recursive: bool,
) -> Result<(), String> {
    let path = file_path(uri)?;
    let removed = if path.is_dir() {
        if recursive {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_dir(&path)
        }
    } else if path.exists() {
        std::fs::remove_file(&path)
    } else {
        Ok(()) // ignoreIfNotExists: the plan refused the other case
    };
    removed.map_err(|e| format!("delete {uri}: {e}"))?;
    let closed: Vec<String> = docs
        .keys()
        .filter(|open| uri_to_path(open).is_some_and(|open| open.starts_with(&path)))
        .cloned()
        .collect();
    for open in closed {
        docs.remove(&open);
        inner.send_notification(
            "textDocument/didClose",
            json!({"textDocument": {"uri": open}}),
        );
    }
    Ok(())
}

fn file_path(uri: &str) -> Result<PathBuf, String> {
    uri_to_path(uri).ok_or(format!("not a file URI: {uri}"))
}

// ---------------------------------------------------------------------------
// Document model: positions, offsets, edits
// ---------------------------------------------------------------------------

/// A position encoding: what one unit of `Position.character` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

impl Encoding {
    /// LSP's default is UTF-16, so anything unknown is read as that.
    fn from_name(name: &str) -> Encoding {
        match name {
            "utf-8" => Encoding::Utf8,
            "utf-32" => Encoding::Utf32,
            _ => Encoding::Utf16,
        }
    }

    fn units(self, ch: char) -> usize {
        match self {
            Encoding::Utf8 => ch.len_utf8(),
            Encoding::Utf16 => ch.len_utf16(),
            Encoding::Utf32 => 1,
        }
    }
}

/// The byte range of each line's content, terminator excluded. Per LSP a
/// line ends at `\n`, `\r\n` or `\r`; text ending in a terminator has a
/// final empty line. Scanning bytes is safe: `\r` and `\n` never occur
/// inside a multi-byte UTF-8 character.
fn line_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                spans.push((start, i));
                i += 1;
                start = i;
            }
            b'\r' => {
                spans.push((start, i));
                i += if bytes.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                start = i;
            }
            _ => i += 1,
        }
    }
    spans.push((start, bytes.len()));
    spans
}

/// The byte offset of `(line, character)`. A character past the line's end
/// clamps to the line end (before its terminator), a line past the last
/// clamps to the end of the text, and a character inside a multi-unit
/// character (half a surrogate pair) snaps back to that character's start.
fn position_to_offset(text: &str, (line, character): (u32, u32), encoding: Encoding) -> usize {
    let spans = line_spans(text);
    let Some(&(start, end)) = spans.get(line as usize) else {
        return text.len();
    };
    let mut units = 0;
    for (index, ch) in text[start..end].char_indices() {
        let next = units + encoding.units(ch);
        if next > character as usize {
            return start + index;
        }
        units = next;
    }
    end
}

/// The `(line, character)` of a byte offset (clamped to the text and to a
/// character boundary; an offset inside a `\r\n` maps to the line end).
fn offset_to_position(text: &str, offset: usize, encoding: Encoding) -> (u32, u32) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let spans = line_spans(text);
    // spans[0] starts at 0, so at least one span starts at or before offset.
    let line = spans.partition_point(|&(start, _)| start <= offset) - 1;
    let (start, end) = spans[line];
    let character: usize = text[start..offset.min(end)]
        .chars()
        .map(|ch| encoding.units(ch))
        .sum();
    (line as u32, character as u32)
}

fn range_json(start: (u32, u32), end: (u32, u32)) -> Value {
    json!({
        "start": {"line": start.0, "character": start.1},
        "end": {"line": end.0, "character": end.1},
    })
}

/// Applies edits whose ranges all refer to the original `text`, returning
/// the equivalent incremental `contentChanges`.
///
/// Edits are applied from last to first so each one's range is still valid
/// when its turn comes; the changes are listed in that same order, so a
/// server applying them one after another gets the same text. Inserts at
/// the same position end up in array order, as the spec requires.
fn apply_text_edits(text: &mut String, edits: &[TextEdit], encoding: Encoding) -> Vec<Value> {
    let mut resolved: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|edit| {
            let start = position_to_offset(text, edit.start, encoding);
            let end = position_to_offset(text, edit.end, encoding).max(start);
            (start, end, edit.new_text.as_str())
        })
        .collect();
    resolved.sort_by_key(|&(start, end, _)| (start, end)); // stable
    let mut changes = Vec::with_capacity(resolved.len());
    for &(start, end, new_text) in resolved.iter().rev() {
        // Positions recomputed from offsets: a clamped range is sent as the
        // range actually replaced, as an editor would.
        let range = range_json(
            offset_to_position(text, start, encoding),
            offset_to_position(text, end, encoding),
        );
        text.replace_range(start..end, new_text);
        changes.push(json!({"range": range, "text": new_text}));
    }
    changes
}

// ---------------------------------------------------------------------------
// URIs
// ---------------------------------------------------------------------------

/// `file://` + the absolute path, percent-encoding everything but unreserved
/// characters and `/` (so spaces become `%20`).
fn path_to_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for &byte in path.to_string_lossy().as_bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// The path of a `file://` URI (local host only); `None` for other schemes.
fn uri_to_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    Some(PathBuf::from(percent_decode(rest)))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One spelling per file, so a server's `file:///a%3Ab` and our
/// `file:///a:b`-style differences still find the same buffer.
fn normalize_uri(uri: &str) -> String {
    match uri_to_path(uri) {
        Some(path) => path_to_uri(&path),
        None => uri.to_string(),
    }
}

// ---------------------------------------------------------------------------
// stderr
// ---------------------------------------------------------------------------

fn collect_stderr(inner: Arc<Inner>, mut stderr: impl Read) {
    let mut chunk = [0u8; 8192];
    loop {
        match stderr.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => inner
                .stderr
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend_from_slice(&chunk[..n]),
        }
    }
}

// ---------------------------------------------------------------------------
// Unit tests of the document model and framing
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    use Encoding::{Utf8, Utf16, Utf32};

    #[test]
    fn lines_end_at_lf_crlf_and_cr() {
        assert_eq!(
            line_spans("a\nbb\r\nc\rd"),
            vec![(0, 1), (2, 4), (6, 7), (8, 9)]
        );
        assert_eq!(line_spans("a\n"), vec![(0, 1), (2, 2)]);
        assert_eq!(line_spans(""), vec![(0, 0)]);
        assert_eq!(line_spans("\r\n\r\n"), vec![(0, 0), (2, 2), (4, 4)]);
    }

    #[test]
    fn emoji_counts_two_utf16_units_and_four_utf8_bytes() {
        let text = "a😀b";
        assert_eq!(position_to_offset(text, (0, 3), Utf16), 5); // before b
        assert_eq!(position_to_offset(text, (0, 5), Utf8), 5);
        assert_eq!(position_to_offset(text, (0, 2), Utf32), 5);
        assert_eq!(offset_to_position(text, 5, Utf16), (0, 3));
        assert_eq!(offset_to_position(text, 5, Utf8), (0, 5));
        assert_eq!(offset_to_position(text, 5, Utf32), (0, 2));
    }

    #[test]
    fn cjk_is_one_utf16_unit_and_three_utf8_bytes() {
        let text = "x\n日本語z";
        assert_eq!(position_to_offset(text, (1, 2), Utf16), 2 + 6);
        assert_eq!(position_to_offset(text, (1, 6), Utf8), 2 + 6);
        assert_eq!(offset_to_position(text, 2 + 9, Utf16), (1, 3));
        assert_eq!(offset_to_position(text, 2 + 9, Utf8), (1, 9));
    }

    #[test]
    fn half_a_surrogate_pair_snaps_to_the_character_start() {
        assert_eq!(position_to_offset("a😀b", (0, 2), Utf16), 1);
        assert_eq!(position_to_offset("a😀b", (0, 3), Utf8), 1);
    }

    #[test]
    fn positions_past_the_line_end_clamp_before_the_terminator() {
        let text = "ab\r\ncd\re";
        assert_eq!(position_to_offset(text, (0, 99), Utf16), 2);
        assert_eq!(position_to_offset(text, (1, 99), Utf8), 6);
        assert_eq!(position_to_offset(text, (2, 99), Utf8), 8);
        // A line past the last clamps to the end of the text.
        assert_eq!(position_to_offset(text, (7, 0), Utf16), text.len());
        // CRLF is one terminator: line 1 starts after both bytes.
        assert_eq!(position_to_offset(text, (1, 0), Utf16), 4);
        // An offset between \r and \n is on line 0, at its end.
        assert_eq!(offset_to_position(text, 3, Utf16), (0, 2));
    }

    #[test]
    fn offsets_and_positions_round_trip() {
        let text = "fn 😀() {\r\n    日本\n}\r";
        for encoding in [Utf8, Utf16, Utf32] {
            for (offset, _) in text.char_indices() {
                let position = offset_to_position(text, offset, encoding);
                let back = position_to_offset(text, position, encoding);
                let is_terminator = matches!(text.as_bytes()[offset], b'\r' | b'\n');
                if !is_terminator {
                    assert_eq!(back, offset, "{encoding:?} offset {offset}");
                }
            }
            let end = offset_to_position(text, text.len(), encoding);
            assert_eq!(end, (3, 0));
        }
    }

    fn edit(start: (u32, u32), end: (u32, u32), new_text: &str) -> TextEdit {
        TextEdit {
            start,
            end,
            new_text: new_text.to_string(),
        }
    }

    /// Replays contentChanges the way a server does: one after another.
    fn replay(text: &str, changes: &[Value], encoding: Encoding) -> String {
        let mut text = text.to_string();
        for change in changes {
            let at = |key: &str| {
                let position = &change["range"][key];
                let number = |field: &str| position[field].as_u64().unwrap() as u32;
                (number("line"), number("character"))
            };
            let start = position_to_offset(&text, at("start"), encoding);
            let end = position_to_offset(&text, at("end"), encoding);
            text.replace_range(start..end, change["text"].as_str().unwrap());
        }
        text
    }

    #[test]
    fn edits_against_the_original_text_apply_last_to_first() {
        let original = "let 😀 = 1;\nlet b = 2;\n";
        let edits = [
            edit((0, 4), (0, 6), "a"), // the emoji, in UTF-16
            edit((1, 8), (1, 9), "3"),
            edit((0, 0), (0, 0), "// hi\n"),
        ];
        let mut text = original.to_string();
        let changes = apply_text_edits(&mut text, &edits, Utf16);
        assert_eq!(text, "// hi\nlet a = 1;\nlet b = 3;\n");
        assert_eq!(changes.len(), 3);
        assert_eq!(
            changes[0]["range"]["start"],
            json!({"line": 1, "character": 8})
        );
        assert_eq!(replay(original, &changes, Utf16), text);
    }

    #[test]
    fn inserts_at_one_position_keep_array_order() {
        let mut text = "x".to_string();
        let edits = [edit((0, 1), (0, 1), "A"), edit((0, 1), (0, 1), "B")];
        let changes = apply_text_edits(&mut text, &edits, Utf8);
        assert_eq!(text, "xAB");
        assert_eq!(replay("x", &changes, Utf8), "xAB");
    }

    #[test]
    fn overlapping_edits_are_detected_but_touching_ones_are_not() {
        assert!(overlapping(&[
            edit((0, 0), (0, 3), ""),
            edit((0, 2), (0, 4), "")
        ]));
        assert!(!overlapping(&[
            edit((0, 0), (0, 2), ""),
            edit((0, 2), (0, 4), "")
        ]));
        assert!(!overlapping(&[
            edit((1, 0), (1, 0), "a"),
            edit((1, 0), (1, 0), "b")
        ]));
    }

    #[test]
    fn uris_percent_encode_minimally_and_round_trip() {
        let path = Path::new("/tmp/a dir/ü#1.rs");
        let uri = path_to_uri(path);
        assert_eq!(uri, "file:///tmp/a%20dir/%C3%BC%231.rs");
        assert_eq!(uri_to_path(&uri).unwrap(), path);
        assert_eq!(normalize_uri("file:///tmp/a%20dir/%c3%bc%231.rs"), uri);
        assert_eq!(normalize_uri("untitled:Untitled-1"), "untitled:Untitled-1");
    }

    #[test]
    fn frames_are_read_past_stray_output_and_extra_headers() {
        let stream = b"hello from println\n\
            Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc\r\n\r\n{}\
            Content-Length: 7\r\n\r\n[1,2,3]\
            Content-Length: 50\r\n\r\n{\"cut";
        let mut reader = &stream[..];
        let mut notes = Vec::new();
        let mut note = |problem: String| notes.push(problem);
        assert_eq!(read_frame(&mut reader, &mut note).unwrap(), b"{}");
        assert_eq!(read_frame(&mut reader, &mut note).unwrap(), b"[1,2,3]");
        assert_eq!(read_frame(&mut reader, &mut note), None);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("stray output"), "{notes:?}");
        assert!(notes[1].contains("cut short"), "{notes:?}");
    }

    #[test]
    fn a_frame_without_content_length_is_skipped() {
        let stream = b"Content-Type: x\r\n\r\nContent-Length: 2\r\n\r\n{}";
        let mut reader = &stream[..];
        let mut notes = Vec::new();
        let body = read_frame(&mut reader, &mut |problem| notes.push(problem));
        assert_eq!(body.unwrap(), b"{}");
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    fn open_docs(uri: &str, version: i32) -> HashMap<String, Document> {
        let doc = Document {
            text: String::new(),
            version,
            language_id: "rust".to_string(),
        };
        HashMap::from([(uri.to_string(), doc)])
    }

    #[test]
    fn stale_versions_fail_honestly_and_are_skipped_neovim_like() {
        let uri = "file:///nowhere/a.rs";
        let docs = open_docs(uri, 3);
        let stale = Op::Edit {
            uri: uri.to_string(),
            version: Some(2),
            edits: vec![edit((0, 0), (0, 0), "x")],
        };
        let mut options = ClientOptions::new(Path::new("/nowhere"));
        let honest = plan_workspace_edit(std::slice::from_ref(&stale), &docs, &options);
        assert_eq!(honest, Err("version mismatch".to_string()));
        options.apply_edit = ApplyEditBehaviour::NeovimLike;
        let neovim = plan_workspace_edit(&[stale], &docs, &options);
        assert_eq!(neovim, Ok(vec![false]));
    }

    #[test]
    fn an_unopened_file_can_be_edited_after_a_create_in_the_same_edit() {
        let dir = tempfile::tempdir().unwrap();
        let uri = path_to_uri(&dir.path().join("new.rs"));
        let ops = [
            Op::Create {
                uri: uri.clone(),
                overwrite: false,
                ignore_if_exists: false,
            },
            Op::Edit {
                uri: uri.clone(),
                version: None,
                edits: vec![edit((0, 0), (0, 0), "fn main() {}\n")],
            },
        ];
        let options = ClientOptions::new(dir.path());
        let docs = HashMap::new();
        assert_eq!(
            plan_workspace_edit(&ops, &docs, &options),
            Ok(vec![true, true])
        );
        // Without the create the file is missing, which an editor refuses.
        let missing = plan_workspace_edit(&ops[1..], &docs, &options);
        assert!(missing.unwrap_err().starts_with("file not found"));
        // A create over an existing file needs overwrite or ignoreIfExists.
        std::fs::write(dir.path().join("new.rs"), "old").unwrap();
        let exists = plan_workspace_edit(&ops, &docs, &options);
        assert_eq!(exists, Err("file exists".to_string()));
    }
}
