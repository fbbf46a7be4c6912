//! The HTTP transport under [`super::HttpProvider`]: one `reqwest` client,
//! retries on the request, an idle timer on every body read, and error
//! messages that name the provider and the status but never a key or header
//! value.
//!
//! There is deliberately no whole-request timeout: a long answer streams for
//! minutes. A connect timeout and a per-read idle timeout bound the waiting.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio::sync::oneshot;

use super::retry::{RetryObserver, RetryPolicy, parse_retry_after};
use super::sse::{SseEvent, SseParser};
use super::wire::{CallHeader, SseDecoder};
use super::{EventStream, ProviderError, StreamEvent};

#[derive(Clone, Debug)]
pub struct HttpSettings {
    pub connect_timeout: Duration,
    /// No bytes for this long, while waiting for headers or body, is an error.
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
    /// Told of each retry; without one, retries are only logged.
    pub on_retry: Option<RetryObserver>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            on_retry: None,
        }
    }
}

pub(crate) struct HttpClient {
    client: ClientBuild,
    provider: &'static str,
    /// The model every request asks for: named when it refuses a setting.
    model: String,
    settings: HttpSettings,
    /// Sent with every request: the key, a gateway's token and headers.
    headers: HeaderMap,
    /// Scrubbed from every error message (servers sometimes echo a bad
    /// key), longest first so a value holding another goes whole.
    secrets: Vec<String>,
}

/// The `reqwest` client, built on a thread of its own. With TLS, building
/// it loads the system's root store: on a Debian machine some 300
/// certificates, from a bundle and a folder, read and parsed, 5 ms and
/// more. Built beside the rest of start-up (the settings, the session's
/// files, the tools), it is ready by the first request instead of before
/// everything else.
struct ClientBuild {
    built: tokio::sync::OnceCell<Result<reqwest::Client, String>>,
    /// Awaited in place, never taken out: a first request cancelled while
    /// it waits leaves it for the next one.
    building: tokio::sync::Mutex<Option<oneshot::Receiver<Result<reqwest::Client, String>>>>,
}

impl ClientBuild {
    fn start(provider: &'static str, connect_timeout: Duration, tls: bool) -> ClientBuild {
        let build = move || {
            // reqwest is built without a default TLS provider (aws-lc takes
            // minutes to compile on small machines); ring is installed once,
            // here.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let mut builder = reqwest::Client::builder()
                .connect_timeout(connect_timeout)
                .user_agent(concat!("bareagent/", env!("CARGO_PKG_VERSION")));
            if !tls {
                // A plain-HTTP endpoint (a local model server) needs no
                // roots. With none, a redirect to HTTPS fails verification.
                builder = builder.tls_certs_only(Vec::new());
            }
            builder
                .build()
                .map_err(|error| format!("{provider}: HTTP client: {error}"))
        };
        let (send, receive) = oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("bareagent-http".into())
            .spawn(move || {
                let _ = send.send(build());
            });
        match spawned {
            Ok(_) => ClientBuild::waiting_for(receive),
            // No thread to be had: built here, as it was before.
            Err(_) => ClientBuild {
                built: tokio::sync::OnceCell::new_with(Some(build())),
                building: tokio::sync::Mutex::new(None),
            },
        }
    }

    fn waiting_for(receive: oneshot::Receiver<Result<reqwest::Client, String>>) -> ClientBuild {
        ClientBuild {
            built: tokio::sync::OnceCell::new(),
            building: tokio::sync::Mutex::new(Some(receive)),
        }
    }

    /// The client, once built (waiting for the build the first time).
    async fn get(&self, provider: &'static str) -> Result<&reqwest::Client, ProviderError> {
        let built = self
            .built
            .get_or_init(|| async {
                let failed = || Err(format!("{provider}: HTTP client: its build failed"));
                match self.building.lock().await.as_mut() {
                    Some(building) => building.await.unwrap_or_else(|_| failed()),
                    None => failed(),
                }
            })
            .await;
        built
            .as_ref()
            .map_err(|message| ProviderError::Config(message.clone()))
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

impl HttpClient {
    pub fn new(
        provider: &'static str,
        model: &str,
        settings: HttpSettings,
        headers: HeaderMap,
        mut secrets: Vec<String>,
        tls: bool,
    ) -> Self {
        let client = ClientBuild::start(provider, settings.connect_timeout, tls);
        secrets.retain(|secret| !secret.is_empty());
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        HttpClient {
            client,
            provider,
            model: model.to_string(),
            settings,
            headers,
            secrets,
        }
    }

    /// POSTs `body` with the client's headers and `extra` (this call's
    /// own, such as a beta flag), retrying failures that happen before any
    /// response body was read. Returns a response with a success status.
    pub async fn post(
        &self,
        url: &str,
        body: &Bytes,
        extra: &[CallHeader],
    ) -> Result<reqwest::Response, ProviderError> {
        self.settings
            .retry
            .run(self.settings.on_retry.as_ref(), || {
                self.post_once(url, body.clone(), extra)
            })
            .await
    }

    async fn post_once(
        &self,
        url: &str,
        body: Bytes,
        extra: &[CallHeader],
    ) -> Result<reqwest::Response, ProviderError> {
        let mut request = self
            .client
            .get(self.provider)
            .await?
            .post(url)
            .header("content-type", "application/json")
            .headers(self.headers.clone());
        for (name, value) in extra {
            request = request.header(*name, value);
        }
        self.send_once(request.body(body.clone()), &body).await
    }

    /// GETs a JSON body once, without retries: for a question a person is
    /// waiting on (the model list), whose caller has an answer without it.
    pub async fn get_json(&self, url: &str) -> Result<Value, ProviderError> {
        let client = self.client.get(self.provider).await?;
        let request = client.get(url).headers(self.headers.clone());
        let response = self.send_once(request, &Bytes::new()).await?;
        self.read_json(response).await
    }

    /// Sends `request` (whose body is `body`) with the idle timer; a status
    /// other than success is an error carrying the server's message
    /// (scrubbed), a refused setting named from what `body` sent.
    async fn send_once(
        &self,
        request: reqwest::RequestBuilder,
        body: &Bytes,
    ) -> Result<reqwest::Response, ProviderError> {
        let response = tokio::time::timeout(self.settings.idle_timeout, request.send())
            .await
            .map_err(|_| self.idle())?
            .map_err(|error| {
                let provider = self.provider.to_string();
                let message = self.redact(&describe_send_error(&error));
                match tls_cause(&error) {
                    Some(rustls::Error::InvalidCertificate(_)) => {
                        ProviderError::Certificate { provider, message }
                    }
                    _ => ProviderError::Connect { provider, message },
                }
            })?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let retry_after = parse_retry_after(response.headers());
        let text = self.read_to_end(response).await.unwrap_or_default();
        if says_context_too_long(status, &text) {
            return Err(ProviderError::ContextTooLong {
                provider: self.provider.to_string(),
                message: self.redact(&server_message(&text)),
            });
        }
        if let Some(setting) = refused_setting(status, &text) {
            return Err(ProviderError::Refused {
                provider: self.provider.to_string(),
                model: self.model.clone(),
                setting,
                sent: sent_for(setting, body),
                message: self.redact(&server_message(&text)),
            });
        }
        Err(ProviderError::Status {
            provider: self.provider.to_string(),
            status,
            message: self.redact(&server_message(&text)),
            retry_after,
        })
    }

    /// POSTs and reads a whole JSON body. The whole exchange is retried:
    /// nothing is shown before the body is complete, so a body cut short is
    /// as retryable as a refused connection.
    pub async fn post_for_json(
        &self,
        url: &str,
        body: &Bytes,
        extra: &[CallHeader],
    ) -> Result<Value, ProviderError> {
        self.settings
            .retry
            .run(self.settings.on_retry.as_ref(), || async {
                let response = self.post_once(url, body.clone(), extra).await?;
                self.read_json(response).await.map_err(|error| match error {
                    ProviderError::Stream { provider, message } => {
                        ProviderError::Connect { provider, message }
                    }
                    other => other,
                })
            })
            .await
    }

    /// Reads a whole JSON body under the idle timer.
    async fn read_json(&self, response: reqwest::Response) -> Result<Value, ProviderError> {
        let bytes = self.read_to_end(response).await?;
        serde_json::from_slice(&bytes)
            .map_err(|error| self.decode(format!("invalid JSON body: {error}")))
    }

    async fn read_to_end(&self, response: reqwest::Response) -> Result<Vec<u8>, ProviderError> {
        let mut body: ByteStream = Box::pin(response.bytes_stream());
        let mut bytes = Vec::new();
        while let Some(chunk) = self.next_chunk(&mut body).await? {
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }

    async fn next_chunk(&self, body: &mut ByteStream) -> Result<Option<Bytes>, ProviderError> {
        match tokio::time::timeout(self.settings.idle_timeout, body.next()).await {
            Err(_) => Err(self.idle()),
            Ok(None) => Ok(None),
            Ok(Some(Ok(chunk))) => Ok(Some(chunk)),
            Ok(Some(Err(error))) => Err(ProviderError::Stream {
                provider: self.provider.to_string(),
                message: self.redact(&format!("connection lost: {}", error_chain(&error))),
            }),
        }
    }

    /// Turns an SSE response into our event stream, with `decoder` mapping
    /// each wire event to zero or more [`StreamEvent`]s.
    pub fn event_stream<D: SseDecoder>(
        self: std::sync::Arc<Self>,
        response: reqwest::Response,
        decoder: D,
    ) -> EventStream {
        let state = StreamState {
            http: self,
            body: Box::pin(response.bytes_stream()),
            parser: SseParser::new(),
            wire: VecDeque::new(),
            ready: VecDeque::new(),
            decoder,
            finished: false,
        };
        Box::pin(futures_util::stream::unfold(
            state,
            |mut state| async move {
                let item = state.next().await?;
                Some((item, state))
            },
        ))
    }

    pub fn stream_error(&self, message: impl Into<String>) -> ProviderError {
        ProviderError::Stream {
            provider: self.provider.to_string(),
            message: self.redact(&message.into()),
        }
    }

    pub fn decode(&self, message: impl Into<String>) -> ProviderError {
        ProviderError::Decode {
            provider: self.provider.to_string(),
            message: self.redact(&message.into()),
        }
    }

    fn idle(&self) -> ProviderError {
        ProviderError::Idle {
            provider: self.provider.to_string(),
            after: self.settings.idle_timeout,
        }
    }

    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_string();
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "[redacted]");
            }
        }
        text
    }
}

struct StreamState<D> {
    http: std::sync::Arc<HttpClient>,
    body: ByteStream,
    parser: SseParser,
    wire: VecDeque<SseEvent>,
    ready: VecDeque<StreamEvent>,
    decoder: D,
    finished: bool,
}

impl<D: SseDecoder> StreamState<D> {
    async fn next(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                if matches!(event, StreamEvent::Done(_)) {
                    self.finished = true;
                }
                return Some(Ok(event));
            }
            if self.finished {
                return None;
            }
            if let Some(wire) = self.wire.pop_front() {
                match self.decoder.on_event(wire) {
                    Ok(events) => self.ready.extend(events),
                    Err(message) => return Some(self.fail(self.http.stream_error(message))),
                }
                continue;
            }
            match self.http.next_chunk(&mut self.body).await {
                Ok(Some(chunk)) => {
                    let mut events = Vec::new();
                    self.parser.feed(&chunk, &mut events);
                    self.wire.extend(events);
                }
                Ok(None) => match self.decoder.on_end() {
                    Ok(events) if !events.is_empty() => self.ready.extend(events),
                    Ok(_) => return Some(self.fail(self.http.stream_error("stream ended early"))),
                    Err(message) => return Some(self.fail(self.http.stream_error(message))),
                },
                Err(error) => return Some(self.fail(error)),
            }
        }
    }

    fn fail(&mut self, error: ProviderError) -> Result<StreamEvent, ProviderError> {
        self.finished = true;
        self.ready.clear();
        Err(error)
    }
}

/// The server's own words from an error body: `error.message` in both APIs'
/// shapes, else the raw text, shortened.
fn server_message(body: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let from_json = parsed.as_ref().and_then(|value| {
        value
            .pointer("/error/message")
            .or_else(|| value.get("error"))
            .or_else(|| value.get("message"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
    if text.is_empty() {
        return "(no message)".to_string();
    }
    crate::text::clip(&text, 500)
}

/// Whether an error answer says the request was longer than the model's
/// context window, in either API's shape: Anthropic's `invalid_request_error`
/// "prompt is too long", OpenAI's code `context_length_exceeded` (and the
/// message compatible servers copy from it, "maximum context length").
fn says_context_too_long(status: u16, body: &[u8]) -> bool {
    if status != 400 {
        return false;
    }
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let field = |pointer: &str| value.pointer(pointer).and_then(Value::as_str);
    let message = field("/error/message").unwrap_or_default().to_lowercase();
    field("/error/code") == Some("context_length_exceeded")
        || (field("/error/type") == Some("invalid_request_error")
            && (message.contains("prompt is too long")
                || message.contains("maximum context length")))
}

/// The settings a refusal may name, by the words the APIs use for them
/// (in `error.param` or the message), and the name the user knows each by.
const SETTINGS: &[(&str, &str)] = &[
    ("thinking", "thinking"),
    ("budget_tokens", "thinking"),
    ("output_config", "effort"),
    ("reasoning_effort", "effort"),
    ("reasoning", "effort"),
    ("effort", "effort"),
    ("temperature", "temperature"),
    ("top_p", "temperature"),
    ("top_k", "temperature"),
];

/// Which setting a 400 says the model does not take, in either API's
/// shape: OpenAI names it in `error.param` (`reasoning.effort`); Anthropic
/// in the message (`"thinking.type.enabled" is not supported for this
/// model`). A message must also say it refuses ("not supported"…): a 400
/// that merely mentions thinking (a malformed history) is not a refusal.
/// The setting named first wins: Anthropic's message goes on to name the
/// one to use instead.
fn refused_setting(status: u16, body: &[u8]) -> Option<&'static str> {
    if status != 400 {
        return None;
    }
    let value: Value = serde_json::from_slice(body).ok()?;
    let named_first = |text: &str| {
        SETTINGS
            .iter()
            .filter_map(|(word, setting)| text.find(word).map(|at| (at, *setting)))
            .min_by_key(|(at, _)| *at)
            .map(|(_, setting)| setting)
    };
    if let Some(param) = value.pointer("/error/param").and_then(Value::as_str)
        && let Some(setting) = named_first(param)
    {
        return Some(setting);
    }
    let message = value.pointer("/error/message").and_then(Value::as_str)?;
    let lower = message.to_lowercase();
    let refuses = [
        "not supported",
        "unsupported",
        "does not support",
        "cannot be disabled",
        "not available",
        "unrecognized",
        "supported values",
    ]
    .iter()
    .any(|words| lower.contains(words));
    refuses.then(|| named_first(&lower)).flatten()
}

/// What the request body sent for `setting`, in whichever API's shape it
/// has: `thinking.type` (and its budget), `output_config.effort`,
/// `reasoning.effort`, `reasoning_effort`, `temperature`.
fn sent_for(setting: &str, body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let text = |pointer: &str| {
        value.pointer(pointer).map(|v| match v {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
    };
    match setting {
        "thinking" => text("/thinking/type"),
        "effort" => text("/output_config/effort")
            .or_else(|| text("/reasoning/effort"))
            .or_else(|| text("/reasoning_effort")),
        "temperature" => text("/temperature"),
        _ => None,
    }
}

/// A request that got no response, in a few words that say what and to
/// where: `connection refused to 127.0.0.1:9`, `cannot resolve the host
/// api.example.com`, not reqwest's chain of five wrappers.
fn describe_send_error(error: &reqwest::Error) -> String {
    let to = error
        .url()
        .and_then(|url| {
            let host = url.host_str()?;
            Some(match url.port_or_known_default() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_string(),
            })
        })
        .unwrap_or_else(|| "the server".to_string());
    let host = error
        .url()
        .and_then(|url| url.host_str().map(str::to_string))
        .unwrap_or_else(|| to.clone());
    let causes =
        || std::iter::successors(Some(error as &dyn std::error::Error), |e| e.source()).skip(1);
    let innermost = causes()
        .last()
        .map_or_else(|| error.to_string(), |cause| cause.to_string());
    if let Some(io) = causes().find_map(|e| e.downcast_ref::<std::io::Error>()) {
        use std::io::ErrorKind;
        match io.kind() {
            ErrorKind::ConnectionRefused => return format!("connection refused to {to}"),
            ErrorKind::ConnectionReset => return format!("connection reset by {to}"),
            ErrorKind::TimedOut => return format!("connection to {to} timed out"),
            ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => {
                return format!("{to} is unreachable ({io})");
            }
            _ => {}
        }
    }
    if let Some(tls) = tls_cause(error) {
        return format!("TLS with {to} failed: {tls}");
    }
    if causes().any(|e| e.to_string().starts_with("dns error")) {
        return format!("cannot resolve the host {host} ({innermost})");
    }
    if error.is_timeout() {
        return format!("no connection to {to} in time (connect timeout)");
    }
    if error.is_connect() {
        return format!("cannot connect to {to}: {innermost}");
    }
    format!("the request to {to} failed: {innermost}")
}

/// The TLS failure under a send error, if that is what it was. rustls's
/// error reaches reqwest inside `io::Error`s (two, today), whose `source()`
/// skips the error each wraps: those are opened here.
fn tls_cause(error: &reqwest::Error) -> Option<&rustls::Error> {
    std::iter::successors(Some(error as &dyn std::error::Error), |e| e.source())
        .find_map(|e| unwrap_io(e).downcast_ref::<rustls::Error>())
}

/// What a chain of `io::Error`s wraps, innermost.
fn unwrap_io<'e>(
    mut error: &'e (dyn std::error::Error + 'static),
) -> &'e (dyn std::error::Error + 'static) {
    while let Some(inner) = error
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())
    {
        error = inner;
    }
    error
}

/// reqwest's top-level message is vague ("error sending request"); the cause
/// chain says what happened (refused, reset, DNS).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{refused_setting, says_context_too_long, sent_for};

    /// A first request cancelled while the client is still being built
    /// (a turn cancelled in its first milliseconds) leaves the build for
    /// the next request, which gets what the build made.
    #[tokio::test]
    async fn a_wait_for_the_client_cancelled_leaves_it_for_the_next() {
        let (send, receive) = tokio::sync::oneshot::channel();
        let build = super::ClientBuild::waiting_for(receive);
        let first = tokio::time::timeout(std::time::Duration::ZERO, build.get("test")).await;
        assert!(first.is_err(), "still building: the wait is cancelled");
        send.send(Err("made by the build".to_string())).unwrap();
        let second = build.get("test").await.map(|_| ()).unwrap_err();
        assert_eq!(second.to_string(), "made by the build");
    }

    #[test]
    fn a_refused_setting_is_told_from_other_bad_requests() {
        let cases = [
            // Anthropic, as the API words it (and the setting it names first).
            (
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"\"thinking.type.enabled\" is not supported for this model. Use \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior."}}"#,
                Some("thinking"),
            ),
            (
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"output_config.effort: \"xhigh\" is not supported for this model"}}"#,
                Some("effort"),
            ),
            (
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"temperature is not supported when thinking is enabled"}}"#,
                Some("temperature"),
            ),
            // OpenAI names it in `param`.
            (
                r#"{"error":{"message":"Unsupported value: 'minimal' is not supported with the 'gpt-5.1' model. Supported values are: 'none', 'low', 'medium', and 'high'.","type":"invalid_request_error","param":"reasoning.effort","code":"unsupported_value"}}"#,
                Some("effort"),
            ),
            (
                r#"{"error":{"message":"Unsupported parameter: 'reasoning_effort' is not supported with this model.","type":"invalid_request_error","param":"reasoning_effort","code":"unsupported_parameter"}}"#,
                Some("effort"),
            ),
            // Older servers' words, without `param`.
            (
                r#"{"error":{"message":"Unrecognized request argument supplied: reasoning_effort","type":"invalid_request_error","param":null,"code":null}}"#,
                Some("effort"),
            ),
            // A malformed history mentions thinking but refuses no setting.
            (
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."}}"#,
                None,
            ),
            (
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}"#,
                None,
            ),
            (
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 200000 > 128000, which is the maximum allowed number of output tokens"}}"#,
                None,
            ),
        ];
        for (body, want) in cases {
            assert_eq!(refused_setting(400, body.as_bytes()), want, "{body}");
        }
        let body = cases[0].0.as_bytes();
        assert_eq!(refused_setting(500, body), None);
        assert_eq!(refused_setting(429, body), None);
    }

    #[test]
    fn what_was_sent_is_read_from_either_apis_body() {
        let cases = [
            (
                r#"{"thinking":{"type":"adaptive"}}"#,
                "thinking",
                Some("adaptive"),
            ),
            (
                r#"{"output_config":{"effort":"max"}}"#,
                "effort",
                Some("max"),
            ),
            (
                r#"{"reasoning":{"effort":"minimal"}}"#,
                "effort",
                Some("minimal"),
            ),
            (r#"{"reasoning_effort":"high"}"#, "effort", Some("high")),
            (r#"{"temperature":0.2}"#, "temperature", Some("0.2")),
            (r#"{"model":"m"}"#, "thinking", None),
        ];
        for (body, setting, want) in cases {
            assert_eq!(
                sent_for(setting, body.as_bytes()).as_deref(),
                want,
                "{body}"
            );
        }
    }

    #[test]
    fn a_context_too_long_answer_is_told_from_other_bad_requests() {
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 214321 tokens > 200000 maximum"}}"#;
        let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130552 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let other = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}"#;
        let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"prompt is too long"}}"#;
        let cases = [
            (400, anthropic, true),
            (400, openai, true),
            (400, other, false),
            (400, overloaded, false),
            (500, anthropic, false),
            (400, "prompt is too long", false),
        ];
        for (status, body, want) in cases {
            assert_eq!(
                says_context_too_long(status, body.as_bytes()),
                want,
                "{status} {body}"
            );
        }
    }
}
