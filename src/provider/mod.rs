//! Model providers: one model call, as a single response (`create`) or as a
//! stream of events whose last item carries the complete response (`stream`),
//! the Rust form of the seed article's generator-with-return-value.
//!
//! Providers convert between our [`Message`] history and their wire format at
//! their edge; nothing outside this module knows a wire format.
//!
//! The model APIs are one [`HttpProvider`] over a wire format each
//! (`wire.rs` says what a format is): [`Anthropic`] speaks the Messages API
//! (`anthropic.rs`), [`OpenAi`] Chat Completions (`openai.rs`),
//! [`OpenAiResponses`] OpenAI's Responses API (`responses.rs`). Another API
//! is one new file beside them: a `WireFormat`, its stream decoder and a
//! type alias; retries, timeouts, streaming, credentials and secret
//! scrubbing come with `HttpProvider`.

pub mod anthropic;
mod choice;
pub mod credentials;
mod error;
mod http;
mod http_provider;
pub mod model_list;
pub mod models;
pub mod openai;
pub mod reasoning;
mod record;
mod replay;
pub mod responses;
pub mod retry;
pub mod sse;
mod wire;

use std::pin::Pin;

use async_trait::async_trait;
use futures_util::Stream;
use serde::{Deserialize, Serialize};

use crate::history::{ContentBlock, Message};
pub use crate::history::{ToolSpec, Usage};

pub use anthropic::Anthropic;
pub use choice::{
    DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_MODEL, FromEnvironment, MODEL_ENV, PROVIDER_ENV,
    ProviderChoice, default_model, is_configured, parse_kind, suggested_models,
};
pub use credentials::Credentials;
pub use error::ProviderError;
pub use http::HttpSettings;
pub use http_provider::HttpProvider;
pub use models::{Price, builtin_price, context_window};
pub use openai::OpenAi;
pub use reasoning::{Effort, OpenAiWire, Reasoning, Thinking};
pub use record::Recorder;
pub use replay::Replay;
pub use responses::OpenAiResponses;
pub use wire::{OwnHeader, SseDecoder, WireFormat};

/// One model call's input. Borrowed: the history can be long, and a call
/// never needs to own it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Request<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub max_tokens: u32,
    /// How hard to think: each wire maps it onto its API, as the model takes it.
    pub reasoning: Reasoning,
}

/// One complete model response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub content: Vec<ContentBlock>,
    /// `end_turn`, `tool_use`, `max_tokens`, … (OpenAI's reasons are mapped to these).
    pub stop_reason: Option<String>,
    pub usage: Usage,
}

impl Response {
    pub fn into_message(self) -> Message {
        Message::assistant(self.content)
    }
}

/// What a stream yields: deltas to show while the response grows, then the
/// complete response as the last item.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    ThinkingDelta(String),
    Done(Response),
}

pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// One model call, over whatever the model speaks.
///
/// Contract: a call either returns the complete response or an error; it
/// retries what is safe to retry (connection errors, 408, 409, 429, 5xx,
/// honouring `retry-after`) only before any of the body was read, so a
/// paid, streamed answer is never asked for twice. A stream yields events
/// and then the complete response as its last item; a stream that ends
/// before the API's end marker is an error, never a short answer. Errors
/// never hold a credential. The history it is given is valid
/// (`check_history`); it converts it at its edge and drops no block.
#[warn(missing_docs)]
#[async_trait]
pub trait Provider: Send + Sync {
    /// A short name for messages and logs (`anthropic`, `openai`, `replay`).
    fn name(&self) -> &str;

    /// One call, answered whole.
    async fn create(&self, request: Request<'_>) -> Result<Response, ProviderError>;

    /// Opens a streamed call. The default says streaming is unsupported, which
    /// makes the caller fall back to [`Provider::create`].
    async fn stream(&self, request: Request<'_>) -> Result<EventStream, ProviderError> {
        let _ = request;
        Err(ProviderError::StreamingUnsupported {
            provider: self.name().to_string(),
        })
    }

    /// The models the credentials may use, as the API lists them
    /// (`GET /v1/models`). The default: this provider has no such list (a
    /// replay); callers fall back to [`suggested_models`].
    async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        Err(ProviderError::Config(format!(
            "{} cannot list its models",
            self.name()
        )))
    }
}

/// Which wire protocol to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Anthropic,
    Openai,
    Replay,
}
