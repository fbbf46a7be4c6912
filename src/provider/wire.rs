//! What one model API is on the wire: the [`WireFormat`] trait, and the
//! small pieces the formats share.
//!
//! A wire format knows its endpoint's path, its request body, its auth
//! headers, how to read a whole response and how to decode a stream of
//! server-sent events. It knows nothing of HTTP, retries, timeouts or
//! secrets: [`super::HttpProvider`] owns those, once for every format.
//!
//! Adding an API (the OpenAI Responses API, say) is one new file: a type
//! that implements [`WireFormat`] and an [`SseDecoder`], and a type alias
//! `HttpProvider<ThatFormat>`.

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Value, json};

use super::credentials::Credentials;
use super::sse::SseEvent;
use super::{ProviderError, Request, Response, StreamEvent};
use crate::history::ContentBlock;

/// A header a wire format sets itself: name, value, and whether the value
/// is a secret (marked sensitive, never indexed by HTTP/2).
pub type OwnHeader = (&'static str, String, bool);

/// A header one call carries besides the provider's own: `(name, value)`.
pub type CallHeader = (&'static str, String);

/// One model API's request and response shapes.
pub trait WireFormat: Send + Sync + 'static {
    /// The provider's name in messages and logs (`anthropic`, `openai`).
    const NAME: &'static str;
    /// The endpoint, appended to the base URL (`/v1/messages`).
    const PATH: &'static str;
    /// Where the API lists the models a key may use (`GET`), appended to
    /// the base URL: OpenAI's and every compatible server's `/models`
    /// beside `/chat/completions` (the base ends in `/v1`).
    const MODELS_PATH: &'static str = "/models";
    /// Builds the response of a streamed call from its events.
    type Decoder: SseDecoder + Default;

    /// The headers that prove who the user is, from `credentials`. An error
    /// when the credentials cannot prove it for this API: the provider is
    /// then never built.
    fn auth_headers(&self, credentials: &Credentials) -> Result<Vec<OwnHeader>, ProviderError>;

    /// The JSON body for one call to `model`; `stream` asks for SSE.
    fn body(&self, model: &str, request: Request<'_>, stream: bool)
    -> Result<Bytes, ProviderError>;

    /// Headers this one call needs besides the provider's own (a beta flag
    /// that depends on what the body asks for). None by default.
    fn call_headers(&self, model: &str, request: &Request<'_>) -> Vec<CallHeader> {
        let _ = (model, request);
        Vec::new()
    }

    /// Reads a whole (non-streamed) response body. The error says what is
    /// missing or malformed; the provider names itself around it.
    fn parse_response(&self, body: &Value) -> Result<Response, String>;

    /// A fresh decoder for one streamed call.
    fn decoder(&self) -> Self::Decoder {
        Self::Decoder::default()
    }
}

/// A format's streaming state machine: wire events in, stream events out.
pub trait SseDecoder: Send + 'static {
    /// One server-sent event. An error ends the stream (an `error` event in
    /// a 200 stream, malformed data).
    fn on_event(&mut self, event: SseEvent) -> Result<Vec<StreamEvent>, String>;
    /// The body ended; either produce the final `Done` or say what is missing.
    fn on_end(&mut self) -> Result<Vec<StreamEvent>, String>;
}

/// Serialises a request body.
pub(crate) fn encode(body: &impl Serialize) -> Result<Bytes, ProviderError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|error| ProviderError::Config(format!("cannot encode the request: {error}")))
}
/// A tool call whose input arrived as JSON text. Empty text means `{}` (a
/// tool without parameters); text that does not parse to an object is kept
/// as an error for the loop to report, with `{}` standing in.
pub(crate) fn tool_use_from_json(id: String, name: String, json: &str) -> ContentBlock {
    let parsed = if json.trim().is_empty() {
        Ok(json!({}))
    } else {
        serde_json::from_str::<Value>(json)
    };
    let (input, input_error) = match parsed {
        Ok(value) if value.is_object() => (value, None),
        Ok(value) => (
            json!({}),
            Some(format!(
                "input must be a JSON object, got: {}",
                clip(&value.to_string())
            )),
        ),
        Err(error) => (
            json!({}),
            Some(format!("input is not valid JSON ({error}): {}", clip(json))),
        ),
    };
    ContentBlock::ToolUse {
        id,
        name,
        input,
        input_error,
    }
}

/// Shortens text quoted in an error message.
pub(crate) fn clip(text: &str) -> String {
    crate::text::clip(text, 200)
}
