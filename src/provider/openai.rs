//! OpenAI Chat Completions (`POST {base}/chat/completions`), the dialect that
//! OpenAI, Ollama, llama.cpp's server, vLLM, LM Studio and OpenRouter share:
//! its [`WireFormat`], [`ChatCompletions`]; [`HttpProvider`] does the HTTP.
//!
//! The prompt prefix is kept byte for byte the same between calls (the
//! tools in the registry's order, the system prompt first, no timestamps),
//! so OpenAI's automatic prompt cache can serve it; a stable
//! `prompt_cache_key` per session helps its routing find that cache.
//!
//! Parsing is lenient on purpose: compatible servers differ in small ways
//! (missing ids, `null` where OpenAI sends `""`, no `[DONE]`), and a field we
//! do not need must never fail a call.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::credentials::Credentials;
use super::http::HttpSettings;
use super::http_provider::HttpProvider;
use super::sse::SseEvent;
use super::wire::{OwnHeader, SseDecoder, WireFormat, clip, encode, tool_use_from_json};
use super::{ProviderError, Request, Response, StreamEvent, Usage};
use crate::history::{ContentBlock, Image, Message, Role};

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// What marks a tool result as an error in the text, where the API has no
/// flag for it.
pub(super) const ERROR_PREFIX: &str = "Error: ";

/// Chat Completions over HTTP.
pub type OpenAi = HttpProvider<ChatCompletions>;

impl OpenAi {
    /// `api_key` is optional: local servers need none.
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        model: &str,
        settings: HttpSettings,
    ) -> Result<Self, ProviderError> {
        let credentials = api_key.map(Credentials::api_key).unwrap_or_default();
        Self::with_credentials(base_url, credentials, model, settings)
    }
}

/// The Chat Completions wire format.
#[derive(Clone, Debug, Default)]
pub struct ChatCompletions {
    /// Sent as `prompt_cache_key` on every call, when set.
    pub prompt_cache_key: Option<String>,
    /// Send the request's output limit as `max_completion_tokens`: only to
    /// OpenAI's own endpoint ([`sends_output_limit`]).
    pub send_output_limit: bool,
}

/// Whether to send the output limit to `base_url` (`None`: OpenAI's own).
///
/// OpenAI deprecated `max_tokens` for `max_completion_tokens` (its
/// reasoning models refuse `max_tokens`), and there the limit comes from
/// the model table, which knows OpenAI's models. A compatible server is
/// sent no limit: many take only `max_tokens`, its default is the rest of
/// the context, and our limit for a model the table does not know (8192)
/// would cut a local reasoning model's answer short or be refused by a
/// server (vLLM) when it is more than what fits beside the prompt.
pub fn sends_output_limit(base_url: Option<&str>) -> bool {
    base_url.is_none_or(is_openai_endpoint)
}

/// A session's `prompt_cache_key`: the same for every call of the session
/// (so they reach the same cache), different between sessions and
/// workspaces, and without the path in it.
pub fn session_cache_key(root: &std::path::Path, started: std::time::SystemTime) -> String {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: the same value in every run of this binary.
    let mut hasher = std::hash::DefaultHasher::new();
    root.hash(&mut hasher);
    started.hash(&mut hasher);
    format!("bareagent-{:016x}", hasher.finish())
}

/// Whether to send `prompt_cache_key` to `base_url` (`None`: OpenAI's own)
/// when the settings do not say: only to api.openai.com, since a strict
/// compatible server may refuse a field it does not know.
pub fn sends_cache_key_by_default(base_url: Option<&str>) -> bool {
    base_url.is_none_or(is_openai_endpoint)
}

/// Whether `url` is OpenAI's own API (not a compatible server's).
pub fn is_openai_endpoint(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|url| url.host_str() == Some("api.openai.com"))
}

impl WireFormat for ChatCompletions {
    const NAME: &'static str = "openai";
    const PATH: &'static str = "/chat/completions";
    type Decoder = StreamDecoder;

    /// The key as `Authorization: Bearer`, and the custom headers with it.
    fn auth_headers(&self, credentials: &Credentials) -> Result<Vec<OwnHeader>, ProviderError> {
        Ok(credentials
            .api_key
            .iter()
            .map(|key| ("authorization", format!("Bearer {key}"), true))
            .collect())
    }

    fn body(
        &self,
        model: &str,
        request: Request<'_>,
        stream: bool,
    ) -> Result<Bytes, ProviderError> {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(ChatMessage::System {
                content: request.system,
            });
        }
        for message in request.messages {
            push_wire_messages(message, &mut messages);
        }
        let body = ChatRequest {
            model,
            messages,
            // Only when the user set one: a strict server may refuse a
            // field it does not know. A model the table knows gets the
            // nearest level it takes (none for one that takes none); any
            // other the level as named (OpenRouter and DeepSeek map it).
            reasoning_effort: request
                .reasoning
                .effort
                .and_then(|effort| super::models::effort_for(model, effort))
                .map(|effort| effort.as_str()),
            max_completion_tokens: self.send_output_limit.then_some(request.max_tokens),
            tools: request
                .tools
                .iter()
                .map(|tool| ChatTool {
                    kind: "function",
                    function: ChatFunction {
                        name: &tool.name,
                        description: &tool.description,
                        parameters: &tool.input_schema,
                    },
                })
                .collect(),
            stream,
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
            prompt_cache_key: self.prompt_cache_key.as_deref(),
        };
        encode(&body)
    }

    fn parse_response(&self, body: &Value) -> Result<Response, String> {
        parse_completion(body)
    }
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ChatTool<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct ChatTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunction<'a>,
}

#[derive(Serialize)]
struct ChatFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        content: Option<String>,
        /// The server's own reasoning, sent back with the tool calls it led
        /// to ([`reasoning_to_send_back`]).
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

#[derive(Debug, Serialize)]
struct ChatToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatCall<'a>,
}

#[derive(Debug, Serialize)]
struct ChatCall<'a> {
    name: &'a str,
    /// Chat Completions carries arguments as JSON text.
    arguments: String,
}

/// A user message's content: a string, as always, unless it has images;
/// then an array of text and `image_url` parts, in the blocks' order.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(String),
    Parts(Vec<UserPart<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum UserPart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    /// `data:MEDIA;base64,DATA`.
    url: String,
}

/// An image as its part, or, if it may not be sent, the note saying so.
fn image_part(image: &Image) -> UserPart<'_> {
    match image.refusal() {
        Some(note) => UserPart::Text {
            text: Cow::Owned(note),
        },
        None => UserPart::ImageUrl {
            image_url: ImageUrl {
                url: format!("data:{};base64,{}", image.media_type, image.data),
            },
        },
    }
}

/// One of our messages becomes one or more chat messages: tool results each
/// become a `role: tool` message, and other user text follows them.
fn push_wire_messages<'a>(message: &'a Message, out: &mut Vec<ChatMessage<'a>>) {
    let text = message.text();
    match message.role {
        Role::Assistant => out.push(ChatMessage::Assistant {
            content: (!text.is_empty()).then_some(text),
            reasoning_content: reasoning_to_send_back(message),
            tool_calls: message
                .tool_calls()
                .map(|call| ChatToolCall {
                    id: call.id,
                    kind: "function",
                    function: ChatCall {
                        name: call.name,
                        arguments: call.input.to_string(),
                    },
                })
                .collect(),
        }),
        Role::User => {
            for block in &message.content {
                if let ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    images,
                } = block
                {
                    let mut content = tool_text(content, *is_error);
                    // Chat Completions' tool messages take text only: the
                    // model is told what it is not seeing.
                    if !images.is_empty() {
                        let note = format!(
                            "\n[{} image(s) the tool returned left out: this provider's tool results carry text only]",
                            images.len()
                        );
                        content.to_mut().push_str(&note);
                    }
                    out.push(ChatMessage::Tool {
                        tool_call_id: tool_use_id,
                        content,
                    });
                }
            }
            let has_images = message
                .content
                .iter()
                .any(|block| matches!(block, ContentBlock::Image(_)));
            if has_images {
                let parts: Vec<UserPart<'a>> = message
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text { text } if !text.is_empty() => Some(UserPart::Text {
                            text: Cow::Borrowed(text),
                        }),
                        ContentBlock::Image(image) => Some(image_part(image)),
                        _ => None,
                    })
                    .collect();
                out.push(ChatMessage::User {
                    content: UserContent::Parts(parts),
                });
                return;
            }
            // Several texts (a prompt joined by one queued after it, a
            // background notice) stay apart: one string, a blank line between.
            let texts: Vec<&str> = message
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text } if !text.is_empty() => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            if !texts.is_empty() {
                out.push(ChatMessage::User {
                    content: UserContent::Text(texts.join("\n\n")),
                });
            }
        }
    }
}

/// The reasoning a compatible server wants back on an assistant message:
/// its own unsigned thinking (signature `""`; a signed block is
/// Anthropic's and never goes to this wire), on a message with tool calls
/// only.
///
/// DeepSeek's thinking mode (api-docs.deepseek.com/guides/thinking_mode,
/// read 2026-12-02) requires the `reasoning_content` of every assistant
/// message that made tool calls in all later requests (a 400 without it),
/// and ignores it on an answer without tool calls; its older
/// `deepseek-reasoner` refused it in the input, but that model had no tool
/// calls, so it never sees one here. vLLM and llama.cpp render it into the
/// template or ignore it. So: the tool-call messages of every turn, not
/// only the current one (a plain answer's reasoning stays out, as the
/// servers drop it anyway).
fn reasoning_to_send_back(message: &Message) -> Option<String> {
    message.tool_calls().next()?;
    let thinking: String = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Thinking {
                thinking,
                signature,
            } if signature.is_empty() => Some(thinking.as_str()),
            _ => None,
        })
        .collect();
    (!thinking.is_empty()).then_some(thinking)
}

/// The reasoning text of a message or a delta: servers name it
/// `reasoning_content` (DeepSeek, llama.cpp, older vLLM) or `reasoning`
/// (vLLM since 0.11, Ollama, OpenRouter); one that sends both sends the
/// same text twice, so the first present wins.
fn reasoning_text(value: &Value) -> Option<&str> {
    ["reasoning_content", "reasoning"]
        .into_iter()
        .find_map(|key| {
            value
                .get(key)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
        })
}

/// A tool result's text as Chat Completions carries it. The API has no
/// error flag, so the block's `is_error` becomes the text's [`ERROR_PREFIX`]:
/// the flag alone decides (a result that merely reads like an error is sent
/// as it is), and a text that carries the mark already does not get it twice.
pub(super) fn tool_text(content: &str, is_error: bool) -> Cow<'_, str> {
    if is_error && !content.starts_with(ERROR_PREFIX) {
        Cow::Owned(format!("{ERROR_PREFIX}{content}"))
    } else {
        Cow::Borrowed(content)
    }
}

fn stop_reason(finish_reason: &str) -> String {
    match finish_reason {
        "tool_calls" | "function_call" => "tool_use",
        "stop" => "end_turn",
        "length" => "max_tokens",
        other => other,
    }
    .to_string()
}

/// Where an OpenAI usage object keeps its counts: Chat Completions and the
/// Responses API name them differently.
pub(super) struct UsageFields {
    pub input: &'static str,
    pub cached: &'static str,
    /// Tokens written to the cache (newer answers report them, older ones not).
    pub cache_write: &'static str,
    pub output: &'static str,
    pub reasoning: &'static str,
}

const CHAT_USAGE: UsageFields = UsageFields {
    input: "/prompt_tokens",
    cached: "/prompt_tokens_details/cached_tokens",
    cache_write: "/prompt_tokens_details/cache_write_tokens",
    output: "/completion_tokens",
    reasoning: "/completion_tokens_details/reasoning_tokens",
};

/// An OpenAI usage object read at `fields`.
pub(super) fn usage_of(usage: &Value, fields: &UsageFields) -> Usage {
    let field = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let cached = field(fields.cached);
    let written = field(fields.cache_write);
    Usage {
        // OpenAI counts cached and cache-written tokens inside the input; we
        // keep them apart as Anthropic does, so totals and costs add up the
        // same way.
        input_tokens: field(fields.input)
            .saturating_sub(cached)
            .saturating_sub(written),
        output_tokens: field(fields.output),
        cache_creation_input_tokens: written,
        cache_read_input_tokens: cached,
        reasoning_tokens: field(fields.reasoning),
    }
}

fn parse_usage(usage: &Value) -> Usage {
    usage_of(usage, &CHAT_USAGE)
}

fn parse_completion(value: &Value) -> Result<Response, String> {
    let choice = value
        .pointer("/choices/0")
        .ok_or_else(|| format!("no choices in the completion: {}", clip(&value.to_string())))?;
    let message = &choice["message"];
    let mut content = Vec::new();
    if let Some(thinking) = reasoning_text(message) {
        content.push(ContentBlock::Thinking {
            thinking: thinking.to_string(),
            signature: String::new(),
        });
    }
    if let Some(text) = message
        .get("content")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        content.push(ContentBlock::Text {
            text: text.to_string(),
        });
    }
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for (index, call) in calls.iter().enumerate() {
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("call_{index}"), str::to_string);
            let name = call
                .pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let arguments = call.pointer("/function/arguments");
            let json = match arguments {
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(), // some servers send an object
                None => String::new(),
            };
            content.push(tool_use_from_json(id, name, &json));
        }
    }
    Ok(Response {
        content,
        stop_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(stop_reason),
        usage: parse_usage(value.get("usage").unwrap_or(&Value::Null)),
    })
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates `chat.completion.chunk`s: text deltas, tool calls by `index`,
/// the finish reason and the trailing usage chunk.
#[derive(Default)]
pub struct StreamDecoder {
    /// The server's reasoning, kept as an unsigned thinking block.
    thinking: String,
    text: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Usage,
    done: bool,
}

impl SseDecoder for StreamDecoder {
    fn on_event(&mut self, event: SseEvent) -> Result<Vec<StreamEvent>, String> {
        if event.data.trim() == "[DONE]" {
            return Ok(vec![StreamEvent::Done(self.finish())]);
        }
        let chunk: Value = serde_json::from_str(&event.data)
            .map_err(|error| format!("malformed chunk ({error}): {}", clip(&event.data)))?;
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(message);
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = parse_usage(usage);
        }
        let mut events = Vec::new();
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(events);
        };
        let delta = &choice["delta"];
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            self.text.push_str(text);
            events.push(StreamEvent::TextDelta(text.to_string()));
        }
        if let Some(text) = reasoning_text(delta) {
            self.thinking.push_str(text);
            events.push(StreamEvent::ThinkingDelta(text.to_string()));
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index =
                call.get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(self.calls.len().saturating_sub(1) as u64) as usize;
            if index >= 1024 {
                return Err(format!("tool call index {index} is out of range"));
            }
            if self.calls.len() <= index {
                self.calls.resize_with(index + 1, PartialCall::default);
            }
            let partial = &mut self.calls[index];
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                partial.id = id.to_string();
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                partial.name.push_str(name);
            }
            if let Some(arguments) = call.pointer("/function/arguments").and_then(Value::as_str) {
                partial.arguments.push_str(arguments);
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
        Ok(events)
    }

    fn on_end(&mut self) -> Result<Vec<StreamEvent>, String> {
        if self.done {
            return Ok(Vec::new());
        }
        // Some servers close without `[DONE]`; a finish reason says the answer is whole.
        match self.finish_reason {
            Some(_) => Ok(vec![StreamEvent::Done(self.finish())]),
            None => Err("the stream ended before a finish_reason or [DONE]".into()),
        }
    }
}

impl StreamDecoder {
    fn finish(&mut self) -> Response {
        self.done = true;
        let mut content = Vec::new();
        let thinking = std::mem::take(&mut self.thinking);
        if !thinking.is_empty() {
            content.push(ContentBlock::Thinking {
                thinking,
                signature: String::new(),
            });
        }
        let text = std::mem::take(&mut self.text);
        if !text.is_empty() {
            content.push(ContentBlock::Text { text });
        }
        for (index, call) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            if call.name.is_empty() && call.arguments.is_empty() {
                continue;
            }
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            content.push(tool_use_from_json(id, call.name, &call.arguments));
        }
        Response {
            content,
            stop_reason: self.finish_reason.as_deref().map(stop_reason),
            usage: self.usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_results_become_tool_messages_and_text_follows() {
        let message = Message {
            role: Role::User,
            content: vec![
                ContentBlock::tool_result("c1", "fine", false),
                ContentBlock::tool_result("c2", "boom", true),
                ContentBlock::Text {
                    text: "and also".into(),
                },
            ],
        };
        let mut out = Vec::new();
        push_wire_messages(&message, &mut out);
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            json!(vec![
                json!({"role":"tool","tool_call_id":"c1","content":"fine"}),
                json!({"role":"tool","tool_call_id":"c2","content":"Error: boom"}),
                json!({"role":"user","content":"and also"}),
            ])
        );
    }

    #[test]
    fn user_images_become_data_urls_and_tool_images_a_note() {
        let png = Image {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        };
        let big = Image {
            media_type: "image/png".into(),
            data: "A".repeat(crate::history::MAX_IMAGE_BASE64 + 4),
        };
        let message = Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: "shot".into(),
                    is_error: false,
                    images: vec![png.clone()],
                },
                ContentBlock::Text {
                    text: "look".into(),
                },
                ContentBlock::Image(png),
                ContentBlock::Image(big),
            ],
        };
        let mut out = Vec::new();
        push_wire_messages(&message, &mut out);
        let note = format!(
            "[image (image/png) left out: it is {} bytes of base64, over the limit of {}]",
            crate::history::MAX_IMAGE_BASE64 + 4,
            crate::history::MAX_IMAGE_BASE64
        );
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            json!([
                {"role":"tool","tool_call_id":"c1","content":"shot\n[1 image(s) the tool returned left out: this provider's tool results carry text only]"},
                {"role":"user","content":[
                    {"type":"text","text":"look"},
                    {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},
                    {"type":"text","text":note},
                ]},
            ])
        );
    }

    #[test]
    fn the_cache_key_goes_by_default_only_to_openai_itself() {
        let cases = [
            (None, true),
            (Some("https://api.openai.com/v1"), true),
            (Some("http://127.0.0.1:11434/v1"), false),
            (Some("https://openrouter.ai/api/v1"), false),
            (Some("https://api.openai.com.evil.example/v1"), false),
            (Some("not a url"), false),
        ];
        for (base, sent) in cases {
            assert_eq!(sends_cache_key_by_default(base), sent, "{base:?}");
        }
        let root = std::path::Path::new("/home/u/project");
        let start = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        let later = start + std::time::Duration::from_secs(1);
        assert_eq!(
            session_cache_key(root, start),
            session_cache_key(root, start)
        );
        assert_ne!(
            session_cache_key(root, start),
            session_cache_key(root, later)
        );
        assert!(!session_cache_key(root, start).contains("project"));
    }

    #[test]
    fn the_error_flag_alone_marks_a_tool_result_as_an_error() {
        let cases = [
            // (content, is_error, what the model reads)
            ("fine", false, "fine"),
            ("boom", true, "Error: boom"),
            ("Error: boom", true, "Error: boom"),
            // Text that reads like an error is not one without the flag ...
            ("Error: not really", false, "Error: not really"),
            // ... and an error whose text begins with "Error" is still marked.
            ("Errors: 3 found", true, "Error: Errors: 3 found"),
            ("Cancelled by user", true, "Error: Cancelled by user"),
        ];
        for (content, is_error, want) in cases {
            assert_eq!(tool_text(content, is_error), want, "{content:?} {is_error}");
        }
    }

    fn decode(chunks: &[Value]) -> Response {
        let mut d = StreamDecoder::default();
        for chunk in chunks {
            d.on_event(SseEvent {
                event: None,
                data: chunk.to_string(),
            })
            .unwrap();
        }
        match d.on_end().unwrap().pop() {
            Some(StreamEvent::Done(response)) => response,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn streamed_and_whole_reasoning_is_kept_as_an_unsigned_thinking_block() {
        let thinking = |t: &str| ContentBlock::Thinking {
            thinking: t.into(),
            signature: String::new(),
        };
        // Either name; a server sending both sends one text, kept once.
        let streamed = decode(&[
            json!({"choices":[{"index":0,"delta":{"reasoning_content":"look at ","reasoning":"look at "}}]}),
            json!({"choices":[{"index":0,"delta":{"reasoning":"a.rs"}}]}),
            json!({"choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}),
        ]);
        assert_eq!(
            streamed.content,
            vec![
                thinking("look at a.rs"),
                ContentBlock::Text {
                    text: "done".into()
                }
            ]
        );
        let whole = parse_completion(&json!({"choices":[{"message":{
            "role":"assistant","content":null,"reasoning_content":"why",
            "tool_calls":[{"id":"c1","type":"function","function":{"name":"glob","arguments":"{}"}}]},
            "finish_reason":"tool_calls"}]}))
        .unwrap();
        assert_eq!(whole.content[0], thinking("why"));
        assert_eq!(whole.content.len(), 2);
    }

    #[test]
    fn reasoning_goes_back_only_with_the_tool_calls_it_led_to() {
        let thinking = |t: &str, signature: &str| ContentBlock::Thinking {
            thinking: t.into(),
            signature: signature.into(),
        };
        let call = ContentBlock::ToolUse {
            id: "c1".into(),
            name: "glob".into(),
            input: json!({}),
            input_error: None,
        };
        let text = |t: &str| ContentBlock::Text { text: t.into() };
        let cases = [
            // (the assistant message, the reasoning_content sent)
            (vec![thinking("plan", ""), call.clone()], Some("plan")),
            // A plain answer's reasoning: the servers drop it.
            (vec![thinking("plan", ""), text("hi")], None),
            // Anthropic's signed thinking never goes to this wire.
            (vec![thinking("signed", "sig"), call.clone()], None),
            (vec![call.clone()], None),
        ];
        for (content, want) in cases {
            let message = Message::assistant(content.clone());
            let mut out = Vec::new();
            push_wire_messages(&message, &mut out);
            let sent = serde_json::to_value(&out).unwrap();
            assert_eq!(
                sent[0].get("reasoning_content").and_then(Value::as_str),
                want,
                "{content:?}"
            );
        }
    }

    #[test]
    fn effort_and_the_output_limit_are_sent_only_when_they_apply() {
        let body = |wire: &ChatCompletions, effort: Option<crate::provider::Effort>| {
            let request = Request {
                system: "",
                messages: &[],
                tools: &[],
                max_tokens: 1234,
                reasoning: crate::provider::Reasoning {
                    effort,
                    ..Default::default()
                },
            };
            serde_json::from_slice::<Value>(&wire.body("m", request, false).unwrap()).unwrap()
        };
        let compatible = ChatCompletions::default();
        let plain = body(&compatible, None);
        assert!(plain.get("reasoning_effort").is_none(), "{plain}");
        assert!(plain.get("max_completion_tokens").is_none(), "{plain}");
        assert!(plain.get("max_tokens").is_none(), "{plain}");
        let high = body(&compatible, Some(crate::provider::Effort::High));
        assert_eq!(high["reasoning_effort"], "high");
        let openai = ChatCompletions {
            send_output_limit: sends_output_limit(None),
            ..Default::default()
        };
        assert_eq!(body(&openai, None)["max_completion_tokens"], 1234);
        assert!(!sends_output_limit(Some("http://127.0.0.1:8000/v1")));
    }

    #[test]
    fn streamed_tool_calls_accumulate_by_index() {
        let mut d = StreamDecoder::default();
        let chunks = [
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"glob","arguments":"{}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":6}}}),
        ];
        for chunk in chunks {
            d.on_event(SseEvent {
                event: None,
                data: chunk.to_string(),
            })
            .unwrap();
        }
        let done = d
            .on_event(SseEvent {
                event: None,
                data: "[DONE]".into(),
            })
            .unwrap();
        let StreamEvent::Done(response) = &done[0] else {
            panic!()
        };
        assert_eq!(response.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 4,
                output_tokens: 4,
                cache_creation_input_tokens: 0,
                cache_read_input_tokens: 6,
                reasoning_tokens: 0,
            }
        );
        let calls: Vec<_> = Message::assistant(response.content.clone())
            .tool_calls()
            .map(|c| (c.id.to_string(), c.input.clone()))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("a".to_string(), json!({"path":"x"})),
                ("b".to_string(), json!({}))
            ]
        );
    }
}
