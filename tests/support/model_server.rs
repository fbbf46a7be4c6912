//! A scripted LLM server for tests: a real HTTP/1.1 server on 127.0.0.1 that
//! speaks the Anthropic Messages API, the OpenAI Chat Completions API and
//! OpenAI's Responses API, streaming (SSE) and not.
//!
//! Each request consumes the next [`Step`] of a per-test script: either a
//! [`Reply`] rendered in the wire format of the path it arrived on, or a
//! [`Fault`] (error status, connection reset, malformed SSE, stall, error
//! event). Every request is recorded for later assertions, and every TCP
//! connection accepted is counted: connections are kept alive across
//! requests, as the APIs keep them, so the count is the client's choice.
//!
//! The server is hand-rolled on a tokio `TcpListener` so faults can be exact
//! down to the byte (a chunked body cut short by a TCP RST, a stall between
//! two SSE events). It runs on its own thread with its own current-thread
//! runtime, so sync tests, async tests and benches can all use it, and every
//! public method is sync.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

#[path = "prompt_cache.rs"]
pub mod prompt_cache;

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

/// A running scripted model server. Dropping it stops the server.
pub struct ModelServer {
    addr: SocketAddr,
    state: Shared,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ModelServer {
    /// Binds 127.0.0.1 on a random port and starts serving `script`.
    pub fn start(script: Vec<Step>) -> ModelServer {
        // Bind here, not on the server thread, so the port is known (and
        // already accepting) when `start` returns.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("model server: bind");
        listener
            .set_nonblocking(true)
            .expect("model server: set_nonblocking");
        let addr = listener.local_addr().expect("model server: local_addr");
        let state: Shared = Arc::new(Mutex::new(State {
            script: script.into(),
            ..State::default()
        }));
        let (stop, stop_rx) = oneshot::channel();
        let thread_state = state.clone();
        let thread = std::thread::Builder::new()
            .name("model-server".into())
            .spawn(move || serve(listener, thread_state, stop_rx))
            .expect("model server: spawn thread");
        ModelServer {
            addr,
            state,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Serves `ids` at `GET /v1/models`, in Anthropic's shape (pages of
    /// `limit`, default 20, `after_id`) to a request with
    /// `anthropic-version`, else in OpenAI's.
    pub fn serve_models(&self, ids: &[&str]) {
        let ids = ids.iter().map(|id| id.to_string()).collect();
        lock(&self.state).models = Some(models::Listing::Models(ids));
    }

    /// Refuses `GET /v1/models` with a 401 and each API's error body.
    pub fn refuse_models(&self) {
        lock(&self.state).models = Some(models::Listing::Unauthorized);
    }

    /// Base URL for an Anthropic client, which POSTs `{base}/v1/messages`.
    pub fn anthropic_base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Base URL for an OpenAI client, which POSTs `{base}/chat/completions`.
    pub fn openai_base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Appends a step to the script.
    pub fn push(&self, step: Step) {
        lock(&self.state).script.push_back(step);
    }

    /// Every request received so far, in arrival order, including those
    /// answered with faults or with "no scripted response left".
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    /// Answers every request whose body `matches` with `step`, outside the
    /// script (which such requests leave alone): for calls the client makes
    /// at moments the test does not fix, such as a compaction's summary.
    pub fn answer_matching(&self, matches: Matcher, step: impl Into<Step>) {
        lock(&self.state).routes.push((matches, step.into()));
    }

    /// From now on, Anthropic replies report the usage Anthropic's prompt
    /// cache would give each request (see `prompt_cache.rs`), in place of
    /// the scripted input and cache figures.
    pub fn simulate_prompt_cache(&self) {
        lock(&self.state).prompt_cache = Some(prompt_cache::PromptCache::default());
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        lock(&self.state).connections
    }

    /// Script steps not yet consumed.
    pub fn remaining(&self) -> usize {
        lock(&self.state).script.len()
    }

    /// The text deltas of [`Reply::paced_text`] replies, each with the
    /// instant it had been written to the socket.
    pub fn deltas_written(&self) -> Vec<(String, std::time::Instant)> {
        lock(&self.state).deltas_written.clone()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        // The accept loop ends on this signal; dropping the runtime then
        // cancels every connection task, including stalled ones, so the join
        // cannot hang.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// The request target as sent, e.g. `/v1/messages`.
    pub path: String,
    /// Header names are lowercased; values are trimmed.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body; a body that is not JSON is kept as a
    /// `Value::String` of its (lossy UTF-8) text, an empty one as `Null`.
    pub body: Value,
    /// The body's bytes as sent (lossy UTF-8), for byte-for-byte checks.
    pub raw_body: String,
    /// When the whole request had arrived.
    pub received: std::time::Instant,
    /// The connection it came on: 1 for the first the server accepted, 2
    /// for the second, and so on.
    pub connection: usize,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the body asks for a streamed response (`"stream": true`).
    pub fn is_stream(&self) -> bool {
        self.body.get("stream") == Some(&Value::Bool(true))
    }

    /// Whether an OpenAI request asks for the trailing usage chunk.
    fn wants_usage_chunk(&self) -> bool {
        self.body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true))
    }
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Step {
    Reply(Reply),
    Fault(Fault),
}

impl From<Reply> for Step {
    fn from(reply: Reply) -> Step {
        Step::Reply(reply)
    }
}

impl From<Fault> for Step {
    fn from(fault: Fault) -> Step {
        Step::Fault(fault)
    }
}

/// A successful model answer, rendered per provider.
#[derive(Clone, Debug, Default)]
pub struct Reply {
    pub blocks: Vec<Block>,
    /// `None` derives it: `"tool_use"` if any block is a tool use, else `"end_turn"`.
    pub stop_reason: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    /// Wait this long before answering (to make concurrent calls overlap).
    pub delay: Option<Duration>,
    /// Answer only once this is released (after any `delay`).
    pub hold: Option<Hold>,
    /// Stream the text as exactly these deltas, each after a pause.
    pub paced: Option<Paced>,
    /// An OpenAI-compatible server's reasoning (`reasoning_content`, as
    /// DeepSeek and llama.cpp send it) and its count in
    /// `completion_tokens_details.reasoning_tokens`; OpenAI path only.
    pub reasoning: Option<(String, u64)>,
    /// Reasoning items, before the blocks (the Responses API only).
    pub reasoning_items: Vec<ReasoningItem>,
    /// `output_tokens_details.reasoning_tokens` (the Responses API only).
    pub reasoning_tokens: u64,
}

/// A reasoning item of the Responses API: its id, summary texts and
/// encrypted content (`None`: the item carries none).
#[derive(Clone, Debug, Default)]
pub struct ReasoningItem {
    pub id: String,
    pub summary: Vec<String>,
    pub encrypted_content: Option<String>,
}

/// A steady stream for benchmarks: the text as these deltas, each written
/// after a pause drawn from `gap`; the server records when each was written
/// ([`ModelServer::deltas_written`]).
#[derive(Clone, Debug)]
pub struct Paced {
    pub deltas: Vec<String>,
    pub gap: std::ops::RangeInclusive<Duration>,
}

/// Keeps a reply back until the test releases it: for tests that must act
/// while the model is known to be answering.
#[derive(Clone, Debug)]
pub struct Hold(Arc<tokio::sync::Semaphore>);

impl Hold {
    pub fn new() -> Hold {
        Hold(Arc::new(tokio::sync::Semaphore::new(0)))
    }

    /// Lets the held reply go.
    pub fn release(&self) {
        self.0.add_permits(1);
    }

    async fn wait(&self) {
        // Closed never happens (the semaphore is never closed): either way, go on.
        let _ = self.0.acquire().await.map(|permit| permit.forget());
    }
}

impl Default for Hold {
    fn default() -> Self {
        Hold::new()
    }
}

#[derive(Clone, Debug)]
pub enum Block {
    Text(String),
    /// Anthropic only; skipped in OpenAI responses.
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Anthropic only: thinking the safety systems encrypted; `data` is
    /// opaque and must come back as it went.
    RedactedThinking {
        data: String,
    },
    /// `input_json` is raw JSON text and may be deliberately invalid or truncated.
    ToolUse {
        id: String,
        name: String,
        input_json: String,
    },
    /// The Responses API only: a call of a custom (freeform) tool, whose
    /// input is plain text, such as Codex's `apply_patch`; the other APIs
    /// have none, and leave it out.
    CustomToolUse {
        id: String,
        name: String,
        input: String,
    },
}

impl Reply {
    /// One text block.
    pub fn text(t: &str) -> Reply {
        Reply::with_blocks(vec![Block::Text(t.to_string())])
    }

    /// One tool use with a process-unique id `toolu_<n>`.
    pub fn tool(name: &str, input: Value) -> Reply {
        Reply::tools(vec![(name, input)])
    }

    /// Several tool uses in one response.
    pub fn tools(calls: Vec<(&str, Value)>) -> Reply {
        let blocks = calls
            .into_iter()
            .map(|(name, input)| tool_block(name, input.to_string()))
            .collect();
        Reply::with_blocks(blocks)
    }

    /// One call of a custom tool with freeform `input` (Responses API only).
    pub fn custom_tool(name: &str, input: &str) -> Reply {
        Reply::with_blocks(vec![Block::CustomToolUse {
            id: next_tool_id(),
            name: name.to_string(),
            input: input.to_string(),
        }])
    }

    /// One tool use whose input is `input_json` verbatim (possibly invalid JSON).
    pub fn raw_tool(name: &str, input_json: &str) -> Reply {
        Reply::with_blocks(vec![tool_block(name, input_json.to_string())])
    }

    /// One text block streamed as `deltas`, each after a pause drawn from `gap`.
    pub fn paced_text(deltas: Vec<String>, gap: std::ops::RangeInclusive<Duration>) -> Reply {
        let mut reply = Reply::text(&deltas.concat());
        reply.paced = Some(Paced { deltas, gap });
        reply
    }

    /// Prepends a text block.
    pub fn with_text_first(mut self, t: &str) -> Reply {
        self.blocks.insert(0, Block::Text(t.to_string()));
        self
    }

    /// Answers only after `ms` milliseconds.
    pub fn with_delay(mut self, ms: u64) -> Reply {
        self.delay = Some(Duration::from_millis(ms));
        self
    }

    /// Answers only after `hold` is released.
    pub fn held(mut self, hold: &Hold) -> Reply {
        self.hold = Some(hold.clone());
        self
    }

    /// Ends with this `stop_reason` (Anthropic's names; OpenAI's are mapped).
    pub fn stopping_for(mut self, reason: &str) -> Reply {
        self.stop_reason = Some(reason.to_string());
        self
    }

    /// No content at all: an empty assistant message.
    pub fn empty() -> Reply {
        Reply::with_blocks(Vec::new())
    }

    /// Reasoning before the answer, as a compatible server streams it in
    /// `reasoning_content` (OpenAI path only), counted as `tokens`.
    pub fn with_reasoning(mut self, reasoning: &str, tokens: u64) -> Reply {
        self.reasoning = Some((reasoning.to_string(), tokens));
        self
    }

    /// Prepends a thinking block.
    pub fn with_thinking(mut self, thinking: &str, signature: &str) -> Reply {
        let block = Block::Thinking {
            thinking: thinking.to_string(),
            signature: signature.to_string(),
        };
        self.blocks.insert(0, block);
        self
    }

    /// Prepends a redacted thinking block.
    pub fn with_redacted_thinking(mut self, data: &str) -> Reply {
        let block = Block::RedactedThinking {
            data: data.to_string(),
        };
        self.blocks.insert(0, block);
        self
    }

    /// Adds a reasoning item after those already added (Responses API only).
    pub fn with_reasoning_item(
        mut self,
        id: &str,
        summary: &[&str],
        encrypted: Option<&str>,
    ) -> Reply {
        self.reasoning_items.push(ReasoningItem {
            id: id.to_string(),
            summary: summary.iter().map(|s| s.to_string()).collect(),
            encrypted_content: encrypted.map(str::to_string),
        });
        self.reasoning_tokens += 3;
        self
    }

    fn with_blocks(blocks: Vec<Block>) -> Reply {
        Reply {
            blocks,
            input_tokens: 10,
            output_tokens: 5,
            ..Reply::default()
        }
    }

    fn effective_stop_reason(&self) -> String {
        if let Some(reason) = &self.stop_reason {
            return reason.clone();
        }
        let uses_tool = self
            .blocks
            .iter()
            .any(|b| matches!(b, Block::ToolUse { .. } | Block::CustomToolUse { .. }));
        if uses_tool { "tool_use" } else { "end_turn" }.to_string()
    }
}

fn tool_block(name: &str, input_json: String) -> Block {
    Block::ToolUse {
        id: next_tool_id(),
        name: name.to_string(),
        input_json,
    }
}

/// A process-unique tool call id, `toolu_<n>`.
fn next_tool_id() -> String {
    static NEXT_TOOL_ID: AtomicU64 = AtomicU64::new(1);
    format!("toolu_{}", NEXT_TOOL_ID.fetch_add(1, Ordering::Relaxed))
}

/// A scripted failure. `after_text` chooses where a mid-stream fault strikes:
/// `false` right after the opening events (before any content delta), `true`
/// right after the first text delta (or the first delta of any kind if the
/// reply has no text).
#[derive(Clone, Debug)]
pub enum Fault {
    /// HTTP 429 with a `retry-after` header and an error body.
    RateLimited { retry_after_secs: u64 },
    /// HTTP 500 with an error body.
    ServerError,
    /// HTTP 529 with an `overloaded_error` body (OpenAI-shaped on the OpenAI path).
    Overloaded,
    /// Stream: the opening events (and first text delta), then a TCP RST.
    /// Non-stream: a 200 head and half the JSON body, then a TCP RST.
    ResetMidStream { reply: Reply, after_text: bool },
    /// Stream: a `data: {not json` event at the cut point, then the rest of
    /// the reply as usual. Non-stream: a 200 whose body is `{not json`.
    MalformedSse { reply: Reply, after_text: bool },
    /// Stream: silence for `secs` at the cut point, then the rest of the
    /// reply. Non-stream: the 200 head, silence, then the body.
    Stall {
        reply: Reply,
        after_text: bool,
        secs: u64,
    },
    /// Stream: a 200 stream that carries an error event at the cut point of a
    /// short text reply, then ends. Non-stream: the same as `Overloaded`.
    ErrorEvent { after_text: bool },
    /// HTTP 400: the request is longer than the model's context window, as
    /// each API says it (Anthropic: `invalid_request_error` "prompt is too
    /// long: …"; OpenAI: code `context_length_exceeded`).
    ContextTooLong,
    /// HTTP 400: the model does not take a parameter the request set, as
    /// each API says it (Anthropic: `invalid_request_error` naming
    /// `thinking.type.enabled`; OpenAI: `unsupported_value` with `param`
    /// `reasoning.effort`).
    RefusedParameter,
    /// Stream: the opening events (and first text delta), then the body
    /// ends cleanly, without the API's end marker. Non-stream: half the
    /// JSON body, ended cleanly.
    EndsEarly { reply: Reply, after_text: bool },
    /// A 200 SSE body of exactly these bytes, for streams no renderer
    /// makes (unknown event and item types, hand-cut events).
    RawStream(String),
}

// ---------------------------------------------------------------------------
// Server loop
// ---------------------------------------------------------------------------

/// Longest a client may take to send a request once it has begun one. A
/// connection idle between requests is kept until the client closes it (or
/// the server stops): a real API keeps it for a while, and no test idles
/// longer than that.
const REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_LINE_BYTES: u64 = 64 * 1024;
const MAX_HEADERS: usize = 200;
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// Pause before a scripted RST so the client has read what was sent:
/// `SO_LINGER(0)` discards unsent data, and the test wants the partial
/// stream to arrive before the reset does.
const RESET_GRACE: Duration = Duration::from_millis(50);

#[derive(Default)]
struct State {
    script: VecDeque<Step>,
    /// Answers to requests that match, taken before the script.
    routes: Vec<(Matcher, Step)>,
    requests: Vec<RecordedRequest>,
    connections: usize,
    deltas_written: Vec<(String, std::time::Instant)>,
    prompt_cache: Option<prompt_cache::PromptCache>,
    /// What `GET …/models` answers; `None`: 404, as a server without it.
    models: Option<models::Listing>,
}

type Shared = Arc<Mutex<State>>;

/// Which request bodies a route answers.
type Matcher = fn(&Value) -> bool;

/// Locks the state even if a panicking test thread poisoned it: the data is
/// plain lists, always consistent.
fn lock(state: &Shared) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The server thread: a current-thread runtime running the accept loop until
/// `stop` fires (or its sender is dropped).
fn serve(listener: std::net::TcpListener, state: Shared, stop: oneshot::Receiver<()>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("model_server: cannot build runtime: {e}");
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("model_server: cannot register listener: {e}");
                return;
            }
        };
        tokio::select! {
            _ = stop => {}
            _ = accept_loop(listener, state) => {}
        }
    });
    // Dropping the runtime here cancels all connection tasks.
}

async fn accept_loop(listener: TcpListener, state: Shared) {
    loop {
        match listener.accept().await {
            // One task per connection so a stalled response does not block others.
            Ok((stream, _)) => {
                let number = {
                    let mut state = lock(&state);
                    state.connections += 1;
                    state.connections
                };
                drop(tokio::spawn(handle_connection(
                    stream,
                    number,
                    state.clone(),
                )));
            }
            Err(e) => {
                // E.g. EMFILE: back off instead of spinning.
                eprintln!("model_server: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// A client's connection: kept open across requests (HTTP/1.1 keep-alive)
/// until the client closes it or a scripted reset aborts it.
struct Connection {
    stream: Reader,
    /// False once a reset has aborted it: dropping it then sends the RST.
    open: bool,
}

/// Answers the requests of one connection, each with the next script step,
/// until the client closes it, a write fails or a reset aborts it. Errors
/// are logged; the server carries on.
async fn handle_connection(stream: TcpStream, number: usize, state: Shared) {
    let _ = stream.set_nodelay(true);
    let mut connection = Connection {
        stream: BufReader::new(stream),
        open: true,
    };
    while connection.open {
        // Idle until the client sends its next request or closes.
        match connection.stream.fill_buf().await {
            Ok([]) | Err(_) => return,
            Ok(_) => {}
        }
        let request = match tokio::time::timeout(
            REQUEST_READ_TIMEOUT,
            read_request(&mut connection.stream, number),
        )
        .await
        {
            Ok(Ok(Some(request))) => request,
            Ok(Ok(None)) => return, // closed without a request
            Ok(Err(e)) => {
                eprintln!("model_server: dropping connection, bad request: {e}");
                return;
            }
            Err(_) => {
                eprintln!("model_server: dropping connection, request not received in time");
                return;
            }
        };
        if let Err(e) = answer(&mut connection, &state, request).await {
            eprintln!("model_server: {e}");
            return;
        }
    }
}

/// Records `request` and answers it on `connection` with the next script
/// step.
async fn answer(
    connection: &mut Connection,
    state: &Shared,
    request: RecordedRequest,
) -> Result<(), String> {
    let provider = Provider::for_path(&request.path);
    let stream_wanted = request.is_stream();
    let include_usage = request.wants_usage_chunk();
    let path = request.path.clone();
    let (number, step) = record(state, request, provider.is_some());
    let written = |result: io::Result<()>| {
        result.map_err(|e| format!("request {number}: writing the response failed: {e}"))
    };

    let Some(provider) = provider else {
        let listing = lock(state).models.clone();
        let request = lock(state).requests.get(number - 1).cloned();
        if let (Some(listing), Some(request)) = (listing, request)
            && models::is_models_path(&path)
        {
            let (status, body) = models::answer(&listing, &request);
            let out = Responder::new(connection, Provider::OpenAi, number);
            return written(send_json(out, status, &body.to_string(), &[]).await);
        }
        let out = Responder::new(connection, Provider::Anthropic, number);
        let message = format!("scripted model server: unknown path {path}");
        return written(send_error(out, 404, ErrorKind::NotFound, &message, &[]).await);
    };
    let out = Responder::new(connection, provider, number);
    let Some(step) = step else {
        let message =
            format!("scripted model server: no scripted response left (request {number})");
        return written(send_error(out, 400, ErrorKind::InvalidRequest, &message, &[]).await);
    };
    let call = Call {
        provider,
        number,
        stream: stream_wanted,
        include_usage,
        state: state.clone(),
    };
    written(respond(out, &call, step).await)
}

/// Records the request and, for a known route, takes the next step, both
/// under one lock so request N always gets step N.
fn record(state: &Shared, request: RecordedRequest, takes_step: bool) -> (usize, Option<Step>) {
    let mut state = lock(state);
    let routed = state
        .routes
        .iter()
        .find(|(matches, _)| matches(&request.body))
        .map(|(_, step)| step.clone());
    let simulated = match (&mut state.prompt_cache, Provider::for_path(&request.path)) {
        (Some(cache), Some(Provider::Anthropic)) => Some(cache.request(&request.body)),
        _ => None,
    };
    state.requests.push(request);
    let number = state.requests.len();
    let mut step = match (takes_step, routed) {
        (false, _) => None,
        (true, Some(step)) => Some(step),
        (true, None) => state.script.pop_front(),
    };
    if let (Some(usage), Some(Step::Reply(reply))) = (simulated, &mut step) {
        reply.input_tokens = usage.input_tokens;
        reply.cache_creation_input_tokens = usage.cache_creation_input_tokens;
        reply.cache_read_input_tokens = usage.cache_read_input_tokens;
    }
    (number, step)
}

// ---------------------------------------------------------------------------
// Reading requests
// ---------------------------------------------------------------------------

/// Reads the request line, headers and body of a request on `connection`
/// (its number). `Ok(None)` if the client closed before sending anything.
async fn read_request(
    reader: &mut Reader,
    connection: usize,
) -> io::Result<Option<RecordedRequest>> {
    let Some(request_line) = read_line(reader).await? else {
        return Ok(None);
    };
    let path = request_line
        .split_whitespace()
        .nth(1)
        .ok_or_else(|| invalid(format!("malformed request line {request_line:?}")))?
        .to_string();
    let headers = read_headers(reader).await?;
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    if header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        reader
            .get_mut()
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await?;
    }
    let chunked =
        header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        read_chunked_body(reader).await?
    } else {
        let length = match header("content-length") {
            Some(v) => v
                .parse::<usize>()
                .map_err(|_| invalid(format!("bad content-length {v:?}")))?,
            None => 0,
        };
        read_exact_body(reader, length).await?
    };
    Ok(Some(RecordedRequest {
        path,
        headers,
        body: parse_body(&body),
        raw_body: String::from_utf8_lossy(&body).into_owned(),
        received: std::time::Instant::now(),
        connection,
    }))
}

type Reader = BufReader<TcpStream>;

/// One line without its line end; `None` at a clean end of stream.
async fn read_line(reader: &mut Reader) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let n = (&mut *reader)
        .take(MAX_LINE_BYTES)
        .read_until(b'\n', &mut line)
        .await?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return Err(invalid("line too long or connection closed mid-line"));
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(String::from_utf8_lossy(&line).into_owned()))
}

async fn read_headers(reader: &mut Reader) -> io::Result<Vec<(String, String)>> {
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader)
            .await?
            .ok_or_else(|| invalid("connection closed inside the headers"))?;
        if line.is_empty() {
            return Ok(headers);
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| invalid(format!("malformed header line {line:?}")))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        if headers.len() > MAX_HEADERS {
            return Err(invalid("too many headers"));
        }
    }
}

async fn read_exact_body(reader: &mut Reader, length: usize) -> io::Result<Vec<u8>> {
    if length > MAX_BODY_BYTES {
        return Err(invalid(format!("body of {length} bytes is too large")));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    Ok(body)
}

/// Decodes a `Transfer-Encoding: chunked` body, discarding any trailers.
async fn read_chunked_body(reader: &mut Reader) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let size_line = read_line(reader)
            .await?
            .ok_or_else(|| invalid("connection closed inside a chunked body"))?;
        let size_hex = size_line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| invalid(format!("bad chunk size {size_line:?}")))?;
        if size == 0 {
            while read_line(reader).await?.is_some_and(|l| !l.is_empty()) {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(invalid("chunked body is too large"));
        }
        let mut chunk = read_exact_body(reader, size).await?;
        body.append(&mut chunk);
        read_line(reader).await?; // the CRLF closing the chunk
    }
}

fn parse_body(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.into())
}

// ---------------------------------------------------------------------------
// Writing responses
// ---------------------------------------------------------------------------

const SSE: &str = "text/event-stream";
const JSON: &str = "application/json";

/// Writes one chunked HTTP response and then either ends it, leaving the
/// connection open for the next request (`finish`), or aborts the
/// connection with an RST (`reset`). Every body is chunked so a reset is
/// visible to the client as an incomplete body.
struct Responder<'c> {
    connection: &'c mut Connection,
    provider: Provider,
    number: usize,
}

impl<'c> Responder<'c> {
    fn new(connection: &'c mut Connection, provider: Provider, number: usize) -> Responder<'c> {
        Responder {
            connection,
            provider,
            number,
        }
    }

    async fn head(
        &mut self,
        status: u16,
        content_type: &str,
        extra: &[(&str, String)],
    ) -> io::Result<()> {
        let mut head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\n",
            reason_phrase(status)
        );
        if content_type == SSE {
            head.push_str("cache-control: no-cache\r\n");
        }
        let (id_name, id_value) = self.provider.request_id_header(self.number);
        head.push_str(&format!("{id_name}: {id_value}\r\n"));
        for (name, value) in extra {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("transfer-encoding: chunked\r\n\r\n");
        self.write(head.as_bytes()).await
    }

    /// Sends `data` as one chunk. Empty data is skipped: a zero-size chunk
    /// would end the body.
    async fn chunk(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let mut frame = format!("{:x}\r\n", data.len()).into_bytes();
        frame.extend_from_slice(data);
        frame.extend_from_slice(b"\r\n");
        self.write(&frame).await
    }

    async fn events(&mut self, events: &[Event]) -> io::Result<()> {
        for event in events {
            self.chunk(event.wire.as_bytes()).await?;
        }
        Ok(())
    }

    /// Like [`Responder::events`], with a pause before each text delta and
    /// the instant after its write recorded.
    async fn paced_events(
        &mut self,
        events: &[Event],
        paced: &Paced,
        state: &Shared,
    ) -> io::Result<()> {
        let micros = |gap: &Duration| u64::try_from(gap.as_micros()).unwrap_or(u64::MAX);
        let (low, high) = (micros(paced.gap.start()), micros(paced.gap.end()));
        for event in events {
            if event.kind == EventKind::TextDelta {
                tokio::time::sleep(Duration::from_micros(fastrand::u64(low..=high))).await;
            }
            self.chunk(event.wire.as_bytes()).await?;
            if let Some(text) = &event.text {
                let written = std::time::Instant::now();
                lock(state).deltas_written.push((text.clone(), written));
            }
        }
        Ok(())
    }

    /// Ends the body; the connection stays open for the next request.
    async fn finish(mut self) -> io::Result<()> {
        self.write(b"0\r\n\r\n").await
    }

    /// Aborts the connection with a TCP RST: zero linger, then (when
    /// [`handle_connection`] drops it) close.
    async fn reset(self) -> io::Result<()> {
        tokio::time::sleep(RESET_GRACE).await;
        self.connection.stream.get_ref().set_zero_linger()?;
        self.connection.open = false;
        Ok(())
    }

    async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        let stream = self.connection.stream.get_mut();
        stream.write_all(bytes).await?;
        stream.flush().await
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        529 => "Overloaded",
        _ => "Unknown",
    }
}

/// A complete JSON response.
async fn send_json(
    mut out: Responder<'_>,
    status: u16,
    body: &str,
    extra: &[(&str, String)],
) -> io::Result<()> {
    out.head(status, JSON, extra).await?;
    out.chunk(body.as_bytes()).await?;
    out.finish().await
}

/// An error status with the provider's error body.
async fn send_error(
    out: Responder<'_>,
    status: u16,
    kind: ErrorKind,
    message: &str,
    extra: &[(&str, String)],
) -> io::Result<()> {
    let body = out.provider.error_body(kind, message).to_string();
    send_json(out, status, &body, extra).await
}

/// What the response depends on besides the step.
struct Call {
    provider: Provider,
    number: usize,
    stream: bool,
    include_usage: bool,
    state: Shared,
}

impl Call {
    fn events(&self, reply: &Reply) -> Vec<Event> {
        match self.provider {
            Provider::Anthropic => anthropic::stream(reply, self.number),
            Provider::OpenAi => openai::stream(reply, self.number, self.include_usage),
            Provider::Responses => responses::stream(reply, self.number),
        }
    }

    fn body(&self, reply: &Reply) -> String {
        match self.provider {
            Provider::Anthropic => anthropic::message(reply, self.number),
            Provider::OpenAi => openai::completion(reply, self.number),
            Provider::Responses => responses::response(reply, self.number),
        }
        .to_string()
    }
}

async fn respond(out: Responder<'_>, call: &Call, step: Step) -> io::Result<()> {
    if let Step::Reply(Reply {
        delay: Some(delay), ..
    }) = &step
    {
        tokio::time::sleep(*delay).await;
    }
    if let Step::Reply(Reply {
        hold: Some(hold), ..
    }) = &step
    {
        hold.wait().await;
    }
    match step {
        Step::Reply(reply) if call.stream => {
            let mut out = out;
            out.head(200, SSE, &[]).await?;
            match &reply.paced {
                Some(paced) => {
                    out.paced_events(&call.events(&reply), paced, &call.state)
                        .await?
                }
                None => out.events(&call.events(&reply)).await?,
            }
            out.finish().await
        }
        Step::Reply(reply) => send_json(out, 200, &call.body(&reply), &[]).await,
        Step::Fault(fault) => respond_fault(out, call, fault).await,
    }
}

async fn respond_fault(mut out: Responder<'_>, call: &Call, fault: Fault) -> io::Result<()> {
    let reset = matches!(fault, Fault::ResetMidStream { .. });
    match fault {
        Fault::RateLimited { retry_after_secs } => {
            let retry_after = [("retry-after", retry_after_secs.to_string())];
            let message = "Rate limit exceeded; please retry later";
            send_error(out, 429, ErrorKind::RateLimit, message, &retry_after).await
        }
        Fault::ServerError => {
            send_error(out, 500, ErrorKind::Server, "Internal server error", &[]).await
        }
        Fault::Overloaded => send_error(out, 529, ErrorKind::Overloaded, "Overloaded", &[]).await,
        Fault::ContextTooLong => {
            let body = call.provider.context_too_long().to_string();
            send_json(out, 400, &body, &[]).await
        }
        Fault::RefusedParameter => {
            let body = call.provider.refused_parameter().to_string();
            send_json(out, 400, &body, &[]).await
        }
        Fault::ResetMidStream { reply, after_text } | Fault::EndsEarly { reply, after_text } => {
            if call.stream {
                let events = call.events(&reply);
                let cut = cut_point(&events, after_text);
                out.head(200, SSE, &[]).await?;
                out.events(&events[..cut]).await?;
            } else {
                let body = call.body(&reply);
                out.head(200, JSON, &[]).await?;
                out.chunk(&body.as_bytes()[..body.len() / 2]).await?;
            }
            if reset {
                out.reset().await
            } else {
                out.finish().await
            }
        }
        Fault::MalformedSse { reply, after_text } => {
            if call.stream {
                let events = call.events(&reply);
                let cut = cut_point(&events, after_text);
                out.head(200, SSE, &[]).await?;
                out.events(&events[..cut]).await?;
                out.chunk(b"data: {not json\n\n").await?;
                out.events(&events[cut..]).await?;
                out.finish().await
            } else {
                send_json(out, 200, "{not json", &[]).await
            }
        }
        Fault::Stall {
            reply,
            after_text,
            secs,
        } => {
            let stall = tokio::time::sleep(Duration::from_secs(secs));
            if call.stream {
                let events = call.events(&reply);
                let cut = cut_point(&events, after_text);
                out.head(200, SSE, &[]).await?;
                out.events(&events[..cut]).await?;
                stall.await;
                out.events(&events[cut..]).await?;
            } else {
                out.head(200, JSON, &[]).await?;
                stall.await;
                out.chunk(call.body(&reply).as_bytes()).await?;
            }
            out.finish().await
        }
        Fault::RawStream(body) => {
            out.head(200, SSE, &[]).await?;
            out.chunk(body.as_bytes()).await?;
            out.finish().await
        }
        Fault::ErrorEvent { after_text } => {
            if !call.stream {
                return send_error(out, 529, ErrorKind::Overloaded, "Overloaded", &[]).await;
            }
            let events = call.events(&Reply::text("Partial answer before the error."));
            let cut = cut_point(&events, after_text);
            out.head(200, SSE, &[]).await?;
            out.events(&events[..cut]).await?;
            out.chunk(call.provider.error_event().as_bytes()).await?;
            out.finish().await
        }
    }
}

// ---------------------------------------------------------------------------
// Rendering shared by both providers
// ---------------------------------------------------------------------------

/// One SSE event, ready to send, tagged so faults know where to strike.
struct Event {
    wire: String,
    kind: EventKind,
    /// A text delta's text.
    text: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EventKind {
    /// Framing: message start, block start/stop, ping, role chunk.
    Frame,
    TextDelta,
    /// Thinking, signature or tool-call delta.
    OtherDelta,
    /// Stop reason, usage, end of stream.
    End,
}

impl Event {
    /// Anthropic style: a named event.
    fn named(name: &str, data: impl std::fmt::Display, kind: EventKind) -> Event {
        Event {
            wire: format!("event: {name}\ndata: {data}\n\n"),
            kind,
            text: None,
        }
    }

    /// OpenAI style: data only.
    fn data(data: impl std::fmt::Display, kind: EventKind) -> Event {
        Event {
            wire: format!("data: {data}\n\n"),
            kind,
            text: None,
        }
    }

    fn with_text(mut self, text: &str) -> Event {
        self.text = Some(text.to_string());
        self
    }
}

/// Where a mid-stream fault strikes: after the opening frames (before the
/// first delta or, with no deltas, before the end), or with `after_text`
/// after the first text delta (falling back to the first delta of any kind).
fn cut_point(events: &[Event], after_text: bool) -> usize {
    let first = |wanted: &dyn Fn(EventKind) -> bool| events.iter().position(|e| wanted(e.kind));
    let opening = first(&|k| k != EventKind::Frame).unwrap_or(events.len());
    if !after_text {
        return opening;
    }
    first(&|k| k == EventKind::TextDelta)
        .or_else(|| first(&|k| k == EventKind::OtherDelta))
        .map_or(opening, |i| i + 1)
}

/// A text block's deltas: a paced reply's own, else [`pieces`].
fn text_pieces<'r>(reply: &'r Reply, text: &'r str) -> Vec<&'r str> {
    match &reply.paced {
        Some(paced) => paced.deltas.iter().map(String::as_str).collect(),
        None => pieces(text),
    }
}

/// Splits `s` into up to three non-empty pieces at byte positions a third of
/// the way apart (moved forward to char boundaries), so clients must join
/// deltas cut mid-word and mid-JSON.
fn pieces(s: &str) -> Vec<&str> {
    let parts = s.len().min(3);
    let mut cuts = vec![0];
    for k in 1..parts {
        let mut at = s.len() * k / parts;
        while !s.is_char_boundary(at) {
            at += 1;
        }
        cuts.push(at);
    }
    cuts.push(s.len());
    cuts.windows(2)
        .map(|w| &s[w[0]..w[1]])
        .filter(|p| !p.is_empty())
        .collect()
}

/// A JSON value. serde_json's `preserve_order` feature (a dev-dependency
/// feature) keeps keys in the order they are written here, which is the
/// order of the providers' published examples.
type Json = Value;

#[derive(Clone, Copy)]
enum Provider {
    Anthropic,
    OpenAi,
    Responses,
}

#[derive(Clone, Copy)]
enum ErrorKind {
    RateLimit,
    Server,
    Overloaded,
    InvalidRequest,
    NotFound,
}

impl Provider {
    /// Routes on the path without its query string.
    fn for_path(path: &str) -> Option<Provider> {
        let path = path.split('?').next().unwrap_or(path);
        if path.ends_with("/v1/messages") {
            Some(Provider::Anthropic)
        } else if path.ends_with("/chat/completions") {
            Some(Provider::OpenAi)
        } else if path.ends_with("/v1/responses") {
            Some(Provider::Responses)
        } else {
            None
        }
    }

    fn request_id_header(self, number: usize) -> (&'static str, String) {
        match self {
            Provider::Anthropic => ("request-id", format!("req_01TEST{number:014}")),
            Provider::OpenAi | Provider::Responses => {
                ("x-request-id", format!("req_test{number:014}"))
            }
        }
    }

    fn error_body(self, kind: ErrorKind, message: &str) -> Json {
        match self {
            Provider::Anthropic => anthropic::error(kind, message),
            Provider::OpenAi | Provider::Responses => openai::error(kind, message),
        }
    }

    /// The body of `Fault::ContextTooLong`, as each API's documentation shows it.
    fn context_too_long(self) -> Json {
        match self {
            Provider::Anthropic => anthropic::error(
                ErrorKind::InvalidRequest,
                "prompt is too long: 214321 tokens > 200000 maximum",
            ),
            Provider::OpenAi | Provider::Responses => serde_json::json!({"error": {
                "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130552 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }}),
        }
    }

    /// The body of `Fault::RefusedParameter`, in the words each API uses.
    fn refused_parameter(self) -> Json {
        match self {
            Provider::Anthropic => anthropic::error(
                ErrorKind::InvalidRequest,
                "\"thinking.type.enabled\" is not supported for this model. Use \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior.",
            ),
            Provider::OpenAi | Provider::Responses => serde_json::json!({"error": {
                "message": "Unsupported value: 'minimal' is not supported with the 'gpt-5.1' model. Supported values are: 'none', 'low', 'medium', and 'high'.",
                "type": "invalid_request_error",
                "param": "reasoning.effort",
                "code": "unsupported_value",
            }}),
        }
    }

    /// The in-stream error event of `Fault::ErrorEvent`.
    fn error_event(self) -> String {
        match self {
            Provider::Anthropic => {
                let data = anthropic::error(ErrorKind::Overloaded, "Overloaded");
                Event::named("error", data, EventKind::End).wire
            }
            Provider::OpenAi => {
                let error =
                    serde_json::json!({"error": {"message": "Overloaded", "type": "server_error"}});
                Event::data(error, EventKind::End).wire
            }
            Provider::Responses => responses::failed_event(),
        }
    }
}

// ---------------------------------------------------------------------------
// Anthropic Messages API
// ---------------------------------------------------------------------------

mod anthropic {
    use super::{Block, ErrorKind, Event, EventKind, Json, Reply, pieces, text_pieces};
    use serde_json::json;

    const MODEL: &str = "claude-sonnet-4-5";

    fn message_id(number: usize) -> String {
        format!("msg_01TEST{number:016}")
    }

    /// The blocks this API has (no custom tool calls).
    fn blocks(reply: &Reply) -> impl Iterator<Item = &Block> {
        reply
            .blocks
            .iter()
            .filter(|b| !matches!(b, Block::CustomToolUse { .. }))
    }

    /// The non-stream response body.
    pub fn message(reply: &Reply, number: usize) -> Json {
        let content: Vec<Json> = blocks(reply).map(block).collect();
        json!({
            "id": message_id(number),
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": reply.effective_stop_reason(),
            "stop_sequence": null,
            "usage": usage(reply, reply.output_tokens),
        })
    }

    fn block(block: &Block) -> Json {
        match block {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::Thinking {
                thinking,
                signature,
            } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
            Block::RedactedThinking { data } => json!({"type": "redacted_thinking", "data": data}),
            Block::ToolUse {
                id,
                name,
                input_json,
            } => {
                // Valid JSON goes in as parsed (keeping its key order); invalid
                // text degenerates to a string, as documented.
                let input = serde_json::from_str::<Json>(input_json)
                    .unwrap_or_else(|_| Json::String(input_json.clone()));
                json!({"type": "tool_use", "id": id, "name": name, "input": input})
            }
            Block::CustomToolUse { .. } => unreachable!("left out by blocks()"),
        }
    }

    fn usage(reply: &Reply, output_tokens: u64) -> Json {
        json!({
            "input_tokens": reply.input_tokens,
            "cache_creation_input_tokens": reply.cache_creation_input_tokens,
            "cache_read_input_tokens": reply.cache_read_input_tokens,
            "output_tokens": output_tokens,
        })
    }

    /// The stream: message_start, per block start/deltas/stop (a ping after
    /// the first start), message_delta, message_stop.
    pub fn stream(reply: &Reply, number: usize) -> Vec<Event> {
        let start = json!({
            "id": message_id(number),
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": MODEL,
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage(reply, 1),
        });
        let mut events = vec![frame(
            "message_start",
            json!({"type": "message_start", "message": start}),
        )];
        for (index, block) in blocks(reply).enumerate() {
            events.push(frame(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": empty_block(block)}),
            ));
            if index == 0 {
                // Byte for byte as in the published example (with its space).
                events.push(Event::named(
                    "ping",
                    r#"{"type": "ping"}"#,
                    EventKind::Frame,
                ));
            }
            events.extend(block_deltas(reply, index, block));
            events.push(frame(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
        events.push(Event::named(
            "message_delta",
            json!({
                "type": "message_delta",
                "delta": {"stop_reason": reply.effective_stop_reason(), "stop_sequence": null},
                "usage": {"output_tokens": reply.output_tokens},
            }),
            EventKind::End,
        ));
        events.push(Event::named(
            "message_stop",
            json!({"type": "message_stop"}),
            EventKind::End,
        ));
        events
    }

    fn frame(name: &str, data: Json) -> Event {
        Event::named(name, data, EventKind::Frame)
    }

    /// The `content_block` of a content_block_start: the block with empty content.
    fn empty_block(block: &Block) -> Json {
        match block {
            Block::Text(_) => json!({"type": "text", "text": ""}),
            Block::Thinking { .. } => json!({"type": "thinking", "thinking": ""}),
            // Whole in its start event: it has no deltas.
            Block::RedactedThinking { data } => json!({"type": "redacted_thinking", "data": data}),
            Block::ToolUse { id, name, .. } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": {}})
            }
            Block::CustomToolUse { .. } => unreachable!("left out by blocks()"),
        }
    }

    fn block_deltas(reply: &Reply, index: usize, block: &Block) -> Vec<Event> {
        let delta = |kind: EventKind, delta: Json| {
            let data = json!({"type": "content_block_delta", "index": index, "delta": delta});
            Event::named("content_block_delta", data, kind)
        };
        match block {
            Block::Text(text) => text_pieces(reply, text)
                .into_iter()
                .map(|p| {
                    delta(
                        EventKind::TextDelta,
                        json!({"type": "text_delta", "text": p}),
                    )
                    .with_text(p)
                })
                .collect(),
            Block::Thinking {
                thinking,
                signature,
            } => {
                let mut events: Vec<Event> = pieces(thinking)
                    .into_iter()
                    .map(|p| {
                        delta(
                            EventKind::OtherDelta,
                            json!({"type": "thinking_delta", "thinking": p}),
                        )
                    })
                    .collect();
                events.push(delta(
                    EventKind::OtherDelta,
                    json!({"type": "signature_delta", "signature": signature}),
                ));
                events
            }
            Block::RedactedThinking { .. } | Block::CustomToolUse { .. } => Vec::new(),
            Block::ToolUse { input_json, .. } => {
                // The API opens every tool input with an empty partial_json.
                std::iter::once("")
                    .chain(pieces(input_json))
                    .map(|p| {
                        delta(
                            EventKind::OtherDelta,
                            json!({"type": "input_json_delta", "partial_json": p}),
                        )
                    })
                    .collect()
            }
        }
    }

    pub fn error(kind: ErrorKind, message: &str) -> Json {
        let kind = match kind {
            ErrorKind::RateLimit => "rate_limit_error",
            ErrorKind::Server => "api_error",
            ErrorKind::Overloaded => "overloaded_error",
            ErrorKind::InvalidRequest => "invalid_request_error",
            ErrorKind::NotFound => "not_found_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": message}})
    }
}

// ---------------------------------------------------------------------------
// OpenAI Chat Completions API
// ---------------------------------------------------------------------------

mod openai {
    use super::{Block, ErrorKind, Event, EventKind, Json, Reply, pieces, text_pieces};
    use serde_json::json;

    const MODEL: &str = "gpt-4o-mini";
    const CREATED: u64 = 1700000000;

    fn completion_id(number: usize) -> String {
        format!("chatcmpl-test{number:014}")
    }

    /// Text blocks (thinking is Anthropic-only and skipped).
    fn texts(reply: &Reply) -> impl Iterator<Item = &str> {
        reply.blocks.iter().filter_map(|b| match b {
            Block::Text(text) => Some(text.as_str()),
            _ => None,
        })
    }

    /// Tool uses as (id, name, raw arguments).
    fn tool_calls(reply: &Reply) -> impl Iterator<Item = (&str, &str, &str)> {
        reply.blocks.iter().filter_map(|b| match b {
            Block::ToolUse {
                id,
                name,
                input_json,
            } => Some((id.as_str(), name.as_str(), input_json.as_str())),
            _ => None,
        })
    }

    fn finish_reason(reply: &Reply) -> Json {
        let reason = reply.effective_stop_reason();
        Json::from(match reason.as_str() {
            "end_turn" | "stop_sequence" => "stop",
            "tool_use" => "tool_calls",
            "max_tokens" => "length",
            other => other,
        })
    }

    /// `input_tokens` maps to `prompt_tokens` as is (not summed with cache tokens).
    fn usage(reply: &Reply) -> Json {
        let mut usage = json!({
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cache_read_input_tokens},
        });
        if let Some((_, tokens)) = &reply.reasoning {
            usage["completion_tokens_details"] = json!({"reasoning_tokens": tokens});
        }
        usage
    }

    /// The non-stream response body.
    pub fn completion(reply: &Reply, number: usize) -> Json {
        let text: Vec<&str> = texts(reply).collect();
        let content = if text.is_empty() {
            Json::Null
        } else {
            Json::from(text.concat())
        };
        let calls: Vec<Json> = tool_calls(reply)
            .map(|(id, name, arguments)| {
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": content});
        if let Some((reasoning, _)) = &reply.reasoning {
            message["reasoning_content"] = Json::from(reasoning.as_str());
        }
        if !calls.is_empty() {
            message["tool_calls"] = Json::from(calls);
        }
        message["refusal"] = Json::Null;
        json!({
            "id": completion_id(number),
            "object": "chat.completion",
            "created": CREATED,
            "model": MODEL,
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": null,
                "finish_reason": finish_reason(reply),
            }],
            "usage": usage(reply),
        })
    }

    /// The stream: role chunk, text pieces, per tool call a header chunk and
    /// argument pieces, the finish chunk, the usage chunk if asked, `[DONE]`.
    pub fn stream(reply: &Reply, number: usize, include_usage: bool) -> Vec<Event> {
        let chunk = |choices: Json| {
            json!({
                "id": completion_id(number),
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": MODEL,
                "system_fingerprint": "fp_test",
                "choices": choices,
            })
        };
        let choice = |delta: Json, finish: Json| json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]);
        let delta =
            |kind: EventKind, delta: Json| Event::data(chunk(choice(delta, Json::Null)), kind);

        let mut events = vec![delta(
            EventKind::Frame,
            json!({"role": "assistant", "content": ""}),
        )];
        if let Some((reasoning, _)) = &reply.reasoning {
            for piece in pieces(reasoning) {
                events.push(delta(
                    EventKind::OtherDelta,
                    json!({"reasoning_content": piece}),
                ));
            }
        }
        for piece in texts(reply).flat_map(|text| text_pieces(reply, text)) {
            events.push(delta(EventKind::TextDelta, json!({"content": piece})).with_text(piece));
        }
        for (index, (id, name, arguments)) in tool_calls(reply).enumerate() {
            let header = json!({
                "index": index,
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            });
            events.push(delta(
                EventKind::OtherDelta,
                json!({"tool_calls": [header]}),
            ));
            for piece in pieces(arguments) {
                let call = json!({"index": index, "function": {"arguments": piece}});
                events.push(delta(EventKind::OtherDelta, json!({"tool_calls": [call]})));
            }
        }
        let finish = chunk(choice(json!({}), finish_reason(reply)));
        events.push(Event::data(finish, EventKind::End));
        if include_usage {
            let mut usage_chunk = chunk(json!([]));
            usage_chunk["usage"] = usage(reply);
            events.push(Event::data(usage_chunk, EventKind::End));
        }
        events.push(Event::data("[DONE]", EventKind::End));
        events
    }

    pub fn error(kind: ErrorKind, message: &str) -> Json {
        let kind = match kind {
            ErrorKind::RateLimit => "rate_limit_error",
            ErrorKind::Server | ErrorKind::Overloaded => "server_error",
            ErrorKind::InvalidRequest | ErrorKind::NotFound => "invalid_request_error",
        };
        json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
    }
}

// ---------------------------------------------------------------------------
// GET /v1/models: the models a key may use (Anthropic's and OpenAI's shapes)
// ---------------------------------------------------------------------------

mod models {
    use super::{Json, RecordedRequest};
    use serde_json::json;

    #[derive(Clone, Debug)]
    pub enum Listing {
        Models(Vec<String>),
        Unauthorized,
    }

    pub fn is_models_path(path: &str) -> bool {
        path.split('?')
            .next()
            .unwrap_or(path)
            .ends_with("/v1/models")
    }

    /// A query parameter's value.
    fn query<'a>(path: &'a str, name: &str) -> Option<&'a str> {
        let (_, query) = path.split_once('?')?;
        query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value)
    }

    /// The status and body: Anthropic's shape to a request that names its
    /// API version, paged as Anthropic pages (newest first, `limit` per
    /// page, `after_id` the cursor); OpenAI's (all at once) otherwise.
    pub fn answer(listing: &Listing, request: &RecordedRequest) -> (u16, Json) {
        let anthropic = request.header("anthropic-version").is_some();
        let ids = match listing {
            Listing::Unauthorized if anthropic => {
                return (
                    401,
                    json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
                );
            }
            Listing::Unauthorized => {
                return (
                    401,
                    json!({"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}),
                );
            }
            Listing::Models(ids) => ids,
        };
        if !anthropic {
            let data: Vec<Json> = ids
                .iter()
                .map(|id| json!({"id": id, "object": "model", "created": 1700000000, "owned_by": "system"}))
                .collect();
            return (200, json!({"object": "list", "data": data}));
        }
        let limit = query(&request.path, "limit")
            .and_then(|limit| limit.parse::<usize>().ok())
            .unwrap_or(20)
            .clamp(1, 1000);
        let start = query(&request.path, "after_id")
            .and_then(|after| ids.iter().position(|id| id == after))
            .map_or(0, |at| at + 1);
        let page: Vec<&String> = ids.iter().skip(start).take(limit).collect();
        let data: Vec<Json> = page
            .iter()
            .map(|id| json!({"type": "model", "id": id, "display_name": id, "created_at": "2025-09-29T00:00:00Z"}))
            .collect();
        (
            200,
            json!({
                "data": data,
                "has_more": start + page.len() < ids.len(),
                "first_id": page.first(),
                "last_id": page.last(),
            }),
        )
    }
}

// ---------------------------------------------------------------------------
// OpenAI Responses API
// ---------------------------------------------------------------------------

mod responses {
    use super::{Block, Event, EventKind, Json, Reply, pieces, text_pieces};
    use serde_json::json;

    const MODEL: &str = "gpt-5";
    const CREATED: u64 = 1700000000;

    fn response_id(number: usize) -> String {
        format!("resp_test{number:014}")
    }

    /// The output items, each whole: reasoning items first, then one item
    /// per block (Anthropic's thinking is left out).
    fn items(reply: &Reply, number: usize) -> Vec<Json> {
        let mut items: Vec<Json> = reply
            .reasoning_items
            .iter()
            .map(|reasoning| {
                let summary: Vec<Json> = reasoning
                    .summary
                    .iter()
                    .map(|text| json!({"type": "summary_text", "text": text}))
                    .collect();
                let mut item = json!({"id": reasoning.id, "type": "reasoning", "summary": summary});
                if let Some(encrypted) = &reasoning.encrypted_content {
                    item["encrypted_content"] = Json::from(encrypted.as_str());
                }
                item
            })
            .collect();
        for (index, block) in reply.blocks.iter().enumerate() {
            match block {
                Block::Text(text) => items.push(json!({
                    "id": format!("msg_test{number:08}_{index}"),
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
                })),
                Block::ToolUse {
                    id,
                    name,
                    input_json,
                } => items.push(json!({
                    "id": format!("fc_{id}"),
                    "type": "function_call",
                    "status": "completed",
                    "call_id": id,
                    "name": name,
                    "arguments": input_json,
                })),
                Block::CustomToolUse { id, name, input } => items.push(json!({
                    "id": format!("ctc_{id}"),
                    "type": "custom_tool_call",
                    "call_id": id,
                    "name": name,
                    "input": input,
                })),
                Block::Thinking { .. } | Block::RedactedThinking { .. } => {}
            }
        }
        items
    }

    fn usage(reply: &Reply) -> Json {
        json!({
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {
                "cached_tokens": reply.cache_read_input_tokens,
                "cache_write_tokens": reply.cache_creation_input_tokens,
            },
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        })
    }

    /// The response object with `status` and `output` as given.
    fn object(reply: &Reply, number: usize, status: &str, output: Vec<Json>) -> Json {
        let cut = reply.effective_stop_reason() == "max_tokens";
        let finished = status != "in_progress";
        json!({
            "id": response_id(number),
            "object": "response",
            "created_at": CREATED,
            "status": status,
            "error": null,
            "incomplete_details": if cut && finished { json!({"reason": "max_output_tokens"}) } else { Json::Null },
            "instructions": null,
            "max_output_tokens": null,
            "model": MODEL,
            "output": output,
            "parallel_tool_calls": true,
            "previous_response_id": null,
            "reasoning": {"effort": null, "summary": null},
            "store": false,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": if finished { usage(reply) } else { Json::Null },
            "user": null,
            "metadata": {},
        })
    }

    fn final_status(reply: &Reply) -> &'static str {
        if reply.effective_stop_reason() == "max_tokens" {
            "incomplete"
        } else {
            "completed"
        }
    }

    /// The non-stream response body.
    pub fn response(reply: &Reply, number: usize) -> Json {
        object(reply, number, final_status(reply), items(reply, number))
    }

    /// Numbers each event's `sequence_number` as the API does.
    struct Sequence {
        events: Vec<Event>,
    }

    impl Sequence {
        fn push(&mut self, kind: EventKind, mut data: Json) -> &mut Event {
            let name = data["type"].as_str().unwrap_or_default().to_string();
            data["sequence_number"] = Json::from(self.events.len());
            self.events.push(Event::named(&name, data, kind));
            self.events.last_mut().expect("just pushed")
        }
    }

    /// The stream: created, in_progress, per item its added event, content
    /// events and done event, then completed (or incomplete).
    pub fn stream(reply: &Reply, number: usize) -> Vec<Event> {
        let mut out = Sequence { events: Vec::new() };
        let opening = object(reply, number, "in_progress", Vec::new());
        out.push(
            EventKind::Frame,
            json!({"type": "response.created", "response": opening}),
        );
        out.push(
            EventKind::Frame,
            json!({"type": "response.in_progress", "response": opening}),
        );
        let whole = items(reply, number);
        for (output_index, item) in whole.iter().enumerate() {
            let item_id = item["id"].clone();
            out.push(
                EventKind::Frame,
                json!({"type": "response.output_item.added", "output_index": output_index, "item": opened(item)}),
            );
            match item["type"].as_str() {
                Some("reasoning") => {
                    let parts = item["summary"].as_array().cloned().unwrap_or_default();
                    for (summary_index, part) in parts.iter().enumerate() {
                        let text = part["text"].as_str().unwrap_or_default();
                        let at = json!({"item_id": item_id, "output_index": output_index, "summary_index": summary_index});
                        let with = |kind: &str, extra: Json| located(kind, &at, extra);
                        out.push(
                            EventKind::Frame,
                            with(
                                "response.reasoning_summary_part.added",
                                json!({"part": {"type": "summary_text", "text": ""}}),
                            ),
                        );
                        for piece in pieces(text) {
                            out.push(
                                EventKind::OtherDelta,
                                with(
                                    "response.reasoning_summary_text.delta",
                                    json!({"delta": piece}),
                                ),
                            );
                        }
                        out.push(
                            EventKind::Frame,
                            with(
                                "response.reasoning_summary_text.done",
                                json!({"text": text}),
                            ),
                        );
                        out.push(
                            EventKind::Frame,
                            with(
                                "response.reasoning_summary_part.done",
                                json!({"part": part}),
                            ),
                        );
                    }
                }
                Some("message") => {
                    let text = item["content"][0]["text"].as_str().unwrap_or_default();
                    let at = json!({"item_id": item_id, "output_index": output_index, "content_index": 0});
                    let with = |kind: &str, extra: Json| located(kind, &at, extra);
                    out.push(EventKind::Frame, with("response.content_part.added", json!({"part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}})));
                    for piece in text_pieces(reply, text) {
                        out.push(
                            EventKind::TextDelta,
                            with(
                                "response.output_text.delta",
                                json!({"delta": piece, "logprobs": []}),
                            ),
                        )
                        .text = Some(piece.to_string());
                    }
                    out.push(
                        EventKind::Frame,
                        with(
                            "response.output_text.done",
                            json!({"text": text, "logprobs": []}),
                        ),
                    );
                    out.push(
                        EventKind::Frame,
                        with(
                            "response.content_part.done",
                            json!({"part": item["content"][0]}),
                        ),
                    );
                }
                Some("custom_tool_call") => {
                    let input = item["input"].as_str().unwrap_or_default();
                    let at = json!({"item_id": item_id, "output_index": output_index});
                    for piece in pieces(input) {
                        out.push(
                            EventKind::OtherDelta,
                            located(
                                "response.custom_tool_call_input.delta",
                                &at,
                                json!({"delta": piece}),
                            ),
                        );
                    }
                    out.push(
                        EventKind::Frame,
                        located(
                            "response.custom_tool_call_input.done",
                            &at,
                            json!({"input": input}),
                        ),
                    );
                }
                _ => {
                    let arguments = item["arguments"].as_str().unwrap_or_default();
                    for piece in pieces(arguments) {
                        out.push(EventKind::OtherDelta, json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": output_index, "delta": piece}));
                    }
                    out.push(EventKind::Frame, json!({"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": output_index, "name": item["name"], "arguments": arguments}));
                }
            }
            out.push(
                EventKind::Frame,
                json!({"type": "response.output_item.done", "output_index": output_index, "item": item}),
            );
        }
        let status = final_status(reply);
        let end = object(reply, number, status, whole);
        out.push(
            EventKind::End,
            json!({"type": format!("response.{status}"), "response": end}),
        );
        out.events
    }

    /// An item as `response.output_item.added` announces it: its content
    /// still empty, its encrypted content not yet there.
    fn opened(item: &Json) -> Json {
        let mut empty = item.clone();
        match item["type"].as_str() {
            Some("reasoning") => {
                empty["summary"] = json!([]);
                if let Some(map) = empty.as_object_mut() {
                    map.remove("encrypted_content");
                }
            }
            Some("message") => {
                empty["content"] = json!([]);
                empty["status"] = json!("in_progress");
            }
            Some("custom_tool_call") => empty["input"] = json!(""),
            _ => {
                empty["arguments"] = json!("");
                empty["status"] = json!("in_progress");
            }
        }
        empty
    }

    /// An event of `kind` at a place in the output (`at`), with `extra` fields.
    fn located(kind: &str, at: &Json, extra: Json) -> Json {
        let mut data = json!({"type": kind});
        for fields in [at, &extra] {
            if let (Some(data), Some(fields)) = (data.as_object_mut(), fields.as_object()) {
                data.extend(fields.clone());
            }
        }
        data
    }

    /// `response.failed` with a server error, as `Fault::ErrorEvent` sends it.
    pub fn failed_event() -> String {
        let mut failed = object(&Reply::default(), 0, "failed", Vec::new());
        failed["error"] = json!({"code": "server_error", "message": "Overloaded"});
        let data = json!({"type": "response.failed", "sequence_number": 99, "response": failed});
        Event::named("response.failed", data, EventKind::End).wire
    }
}
