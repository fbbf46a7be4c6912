//! Anthropic's Messages API (`POST {base}/v1/messages`), streamed and not:
//! its [`WireFormat`], [`Messages`]; [`HttpProvider`] does the HTTP.
//!
//! Our history already has Anthropic's shape, so conversion is mostly
//! renaming. Every request marks up to four prompt-cache breakpoints
//! (`cache_control`, see [`breakpoints`]), so that in a long session
//! nearly every input token is read from the cache. Unknown block and event types are skipped, never fatal: the API
//! grows new ones, and an old client must keep working.
//!
//! How the model thinks is asked per call from the settings and the model
//! table ([`ThinkingParams`]); the thinking blocks it wrote go back exactly
//! as they came, signatures and redacted blocks included, as the API
//! requires of a tool-use loop.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Value, json};

use super::credentials::Credentials;
use super::http::HttpSettings;
use super::http_provider::HttpProvider;
use super::models::{self, AnthropicThinking, ModelReasoning};
use super::reasoning::{Effort, Reasoning, Thinking};
use super::sse::SseEvent;
use super::wire::{
    CallHeader, OwnHeader, SseDecoder, WireFormat, clip, encode, tool_use_from_json,
};
use super::{ProviderError, Request, Response, StreamEvent, Usage};
use crate::history::{ContentBlock, Image, Message, Role};

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";
/// Lets a Claude 4 model think between tool calls on a budget; adaptive
/// thinking does it without.
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";

/// The Messages API over HTTP.
pub type Anthropic = HttpProvider<Messages>;

impl Anthropic {
    /// Just a key; a gateway's token and headers go through
    /// [`HttpProvider::with_credentials`].
    pub fn new(
        base_url: &str,
        api_key: String,
        model: &str,
        settings: HttpSettings,
    ) -> Result<Self, ProviderError> {
        Self::with_credentials(base_url, Credentials::api_key(api_key), model, settings)
    }
}

/// The Messages API's wire format.
#[derive(Clone, Copy, Debug, Default)]
pub struct Messages;

impl WireFormat for Messages {
    const NAME: &'static str = "anthropic";
    const PATH: &'static str = "/v1/messages";
    type Decoder = StreamDecoder;

    /// As Claude Code does: the key goes as `x-api-key`, a gateway's token
    /// as `Authorization: Bearer` (both when both are set), and the custom
    /// headers with them.
    /// The base has no `/v1`; 1000 is the most a page holds (20 by default).
    const MODELS_PATH: &'static str = "/v1/models?limit=1000";

    fn auth_headers(&self, credentials: &Credentials) -> Result<Vec<OwnHeader>, ProviderError> {
        let proves_identity = credentials.api_key.is_some()
            || credentials.auth_token.is_some()
            || credentials.sets_header("x-api-key")
            || credentials.sets_header("authorization");
        if !proves_identity {
            return Err(ProviderError::Config(
                "anthropic: ANTHROPIC_API_KEY is not set (nor ANTHROPIC_AUTH_TOKEN, for a gateway; or use --provider openai, or --replay FILE)"
                    .into(),
            ));
        }
        let mut own = vec![("anthropic-version", API_VERSION.to_string(), false)];
        if let Some(key) = &credentials.api_key {
            own.push(("x-api-key", key.clone(), true));
        }
        if let Some(token) = &credentials.auth_token {
            own.push(("authorization", format!("Bearer {token}"), true));
        }
        Ok(own)
    }

    fn body(
        &self,
        model: &str,
        request: Request<'_>,
        stream: bool,
    ) -> Result<Bytes, ProviderError> {
        let marked = breakpoints(request.messages);
        let messages = request
            .messages
            .iter()
            .enumerate()
            .map(|(index, message)| {
                let mut wire = WireMessage::from(message);
                if marked.contains(&index)
                    && let Some(last) = wire.content.last_mut()
                {
                    last.mark();
                }
                wire
            })
            .collect();
        let last_tool = request.tools.len().checked_sub(1);
        let thinking = ThinkingParams::for_call(model, request.reasoning, request.max_tokens);
        if thinking.turned_down {
            tracing::info!(
                model,
                effort = ?thinking.effort,
                "the model cannot turn thinking off: it thinks at its lowest effort instead"
            );
        }
        let body = WireRequest {
            model,
            max_tokens: request.max_tokens,
            thinking: thinking.thinking,
            output_config: thinking.effort.map(|effort| OutputConfig { effort }),
            system: if request.system.is_empty() {
                Vec::new()
            } else {
                vec![SystemBlock {
                    kind: "text",
                    text: request.system,
                    cache_control: EPHEMERAL,
                }]
            },
            messages,
            tools: request
                .tools
                .iter()
                .enumerate()
                .map(|(index, tool)| WireTool {
                    name: &tool.name,
                    description: &tool.description,
                    input_schema: &tool.input_schema,
                    cache_control: (Some(index) == last_tool).then_some(EPHEMERAL),
                })
                .collect(),
            stream,
        };
        encode(&body)
    }

    fn call_headers(&self, model: &str, request: &Request<'_>) -> Vec<CallHeader> {
        let thinking = ThinkingParams::for_call(model, request.reasoning, request.max_tokens);
        if thinking.interleaved_beta {
            vec![("anthropic-beta", INTERLEAVED_THINKING_BETA.to_string())]
        } else {
            Vec::new()
        }
    }

    fn parse_response(&self, body: &Value) -> Result<Response, String> {
        parse_message(body)
    }
}

/// The `thinking` and `output_config.effort` of one call, from the
/// reasoning asked and what the model takes ([`models::info`]).
#[derive(Debug, Default, PartialEq)]
struct ThinkingParams {
    thinking: Option<WireThinking>,
    effort: Option<Effort>,
    /// The call thinks on a budget between tool calls: it needs the beta.
    interleaved_beta: bool,
    /// Thinking was asked off, but the model cannot stop thinking: it was
    /// turned down to the lowest effort instead (worth a log line).
    turned_down: bool,
}

/// `thinking` as the API takes it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireThinking {
    Enabled { budget_tokens: u32 },
    Adaptive,
    Disabled,
}

#[derive(Serialize)]
struct OutputConfig {
    effort: Effort,
}

/// The least thinking budget the API takes.
const MIN_BUDGET: u32 = 1024;

impl ThinkingParams {
    fn for_call(model: &str, asked: Reasoning, max_tokens: u32) -> ThinkingParams {
        let info = models::info(model).map(|info| info.reasoning);
        let Some(ModelReasoning::Anthropic {
            thinking,
            refuses_disabled,
            interleaved_beta,
            efforts,
        }) = info
        else {
            // A model the table does not know: only what the user set, as
            // they set it (`auto` is the default, so it sends nothing); a
            // refusal comes back as an error that names the setting.
            return ThinkingParams {
                thinking: (asked.thinking == Thinking::Off).then_some(WireThinking::Disabled),
                effort: asked.effort,
                ..ThinkingParams::default()
            };
        };
        let effort = asked
            .effort
            .and_then(|effort| models::effort_for(model, effort));
        match (thinking, asked.thinking) {
            (AnthropicThinking::None, _) | (AnthropicThinking::Budget, Thinking::Off) => {
                ThinkingParams::default()
            }
            (AnthropicThinking::Budget, Thinking::Auto) => {
                let budget = budget_tokens(asked.effort, max_tokens);
                ThinkingParams {
                    thinking: budget.map(|budget_tokens| WireThinking::Enabled { budget_tokens }),
                    interleaved_beta: interleaved_beta && budget.is_some(),
                    ..ThinkingParams::default()
                }
            }
            (AnthropicThinking::Adaptive | AnthropicThinking::AdaptiveOnly, Thinking::Auto) => {
                ThinkingParams {
                    thinking: Some(WireThinking::Adaptive),
                    effort,
                    ..ThinkingParams::default()
                }
            }
            // The 4.6 models do not think unless asked to.
            (AnthropicThinking::Adaptive, Thinking::Off) => ThinkingParams {
                effort,
                ..ThinkingParams::default()
            },
            (AnthropicThinking::AdaptiveOnly, Thinking::Off) if !refuses_disabled => {
                ThinkingParams {
                    thinking: Some(WireThinking::Disabled),
                    effort,
                    ..ThinkingParams::default()
                }
            }
            (AnthropicThinking::AdaptiveOnly, Thinking::Off) => ThinkingParams {
                effort: efforts.first().copied(),
                turned_down: true,
                ..ThinkingParams::default()
            },
        }
    }
}

/// A thinking budget for a model that thinks on one: sized by the effort
/// (none set: Anthropic's default effort, high), at least the API's least,
/// and below `max_tokens` as the API requires. `None` when `max_tokens`
/// leaves no room for the least budget.
fn budget_tokens(effort: Option<Effort>, max_tokens: u32) -> Option<u32> {
    let wanted = match effort.unwrap_or(Effort::High) {
        Effort::Minimal => MIN_BUDGET,
        Effort::Low => 4_096,
        Effort::Medium => 10_000,
        Effort::High => 16_000,
        Effort::Xhigh => 32_000,
        Effort::Max => 63_999,
    };
    let budget = wanted.min(max_tokens.saturating_sub(1));
    (budget >= MIN_BUDGET).then_some(budget)
}

/// Which messages get a cache breakpoint on their last block: the last
/// user message (the moving end: what this call writes to the cache) and
/// the user message before it (the end of the previous call's prompt,
/// which the cache already holds, so this call reads it back even when
/// the part between them is longer than the API looks back). With the one
/// on the tools and the one on the system prompt, four: the API's limit.
///
/// A message whose last block cannot carry a breakpoint (an empty text,
/// or thinking) is skipped, never moved to another block, so the
/// breakpoints of consecutive calls fall on the same places.
fn breakpoints(messages: &[Message]) -> Vec<usize> {
    messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| m.role == Role::User)
        .take(2)
        .filter(|(_, m)| match m.content.last() {
            Some(ContentBlock::Text { text }) => !text.is_empty(),
            Some(ContentBlock::ToolResult { .. } | ContentBlock::Image(_)) => true,
            _ => false,
        })
        .map(|(index, _)| index)
        .collect()
}

/// `{"type": "ephemeral"}`: the 5-minute prompt cache.
#[derive(Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

/// The request body, borrowed from the history: built afresh for every call,
/// so it must not copy the history into a `Value` tree first.
#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<WireThinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<SystemBlock<'a>>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

/// The system prompt as one text block, so it can carry a breakpoint.
#[derive(Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: CacheControl,
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: Role,
    content: Vec<WireBlock<'a>>,
}

/// Our blocks minus what the API must not see (`input_error`).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock<'a> {
    Text {
        /// Owned only for the note that stands in for a refused image.
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        /// Always an object: invalid input was stored as `{}`.
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ResultContent<'a>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

/// A tool result's content: a plain string, as always, unless the tool
/// returned images; then an array of its text and image blocks.
#[derive(Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(&'a str),
    Parts(Vec<WireBlock<'a>>),
}

/// `{"type": "base64", "media_type": …, "data": …}`.
#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

/// An image as its block, or, if it may not be sent, the text note that
/// says so (never dropped silently).
fn image_block(image: &Image) -> WireBlock<'_> {
    match image.refusal() {
        Some(note) => WireBlock::Text {
            text: Cow::Owned(note),
            cache_control: None,
        },
        None => WireBlock::Image {
            source: ImageSource {
                kind: "base64",
                media_type: &image.media_type,
                data: &image.data,
            },
            cache_control: None,
        },
    }
}

impl WireBlock<'_> {
    /// Puts a cache breakpoint on this block, where the API allows one.
    fn mark(&mut self) {
        match self {
            WireBlock::Text { cache_control, .. }
            | WireBlock::ToolResult { cache_control, .. }
            | WireBlock::Image { cache_control, .. } => *cache_control = Some(EPHEMERAL),
            _ => {}
        }
    }
}

impl<'a> From<&'a Message> for WireMessage<'a> {
    fn from(message: &'a Message) -> Self {
        let content = message
            .content
            .iter()
            .filter_map(|block| {
                Some(match block {
                    // Another API's reasoning: this one cannot take it.
                    ContentBlock::Reasoning { .. } => return None,
                    // Reasoning an OpenAI-compatible server sent
                    // (`reasoning_content`): unsigned, and the API refuses
                    // a thinking block without its signature.
                    ContentBlock::Thinking { signature, .. } if signature.is_empty() => {
                        return None;
                    }
                    ContentBlock::Text { text } => WireBlock::Text {
                        text: Cow::Borrowed(text),
                        cache_control: None,
                    },
                    ContentBlock::Image(image) => image_block(image),
                    ContentBlock::Thinking {
                        thinking,
                        signature,
                    } => WireBlock::Thinking {
                        thinking,
                        signature,
                    },
                    ContentBlock::RedactedThinking { data } => WireBlock::RedactedThinking { data },
                    ContentBlock::ToolUse {
                        id, name, input, ..
                    } => WireBlock::ToolUse { id, name, input },
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                        images,
                    } => WireBlock::ToolResult {
                        tool_use_id,
                        content: if images.is_empty() {
                            ResultContent::Text(content)
                        } else {
                            // The API refuses an empty text block: none then.
                            let text = (!content.is_empty()).then(|| WireBlock::Text {
                                text: Cow::Borrowed(content),
                                cache_control: None,
                            });
                            ResultContent::Parts(
                                text.into_iter()
                                    .chain(images.iter().map(image_block))
                                    .collect(),
                            )
                        },
                        is_error: *is_error,
                        cache_control: None,
                    },
                })
            })
            .collect();
        WireMessage {
            role: message.role,
            content,
        }
    }
}

/// Parses a non-streamed `message` object.
fn parse_message(value: &Value) -> Result<Response, String> {
    let blocks = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or("no `content` array in the message")?;
    let content = blocks.iter().filter_map(parse_block).collect();
    Ok(Response {
        content,
        stop_reason: value
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        usage: parse_usage(value.get("usage")),
    })
}

fn parse_block(block: &Value) -> Option<ContentBlock> {
    let text = |key: &str| {
        block
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    match block.get("type")?.as_str()? {
        "text" => Some(ContentBlock::Text { text: text("text") }),
        "thinking" => Some(ContentBlock::Thinking {
            thinking: text("thinking"),
            signature: text("signature"),
        }),
        "redacted_thinking" => Some(ContentBlock::RedactedThinking { data: text("data") }),
        "tool_use" => {
            let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
            let (input, input_error) = if input.is_object() {
                (input, None)
            } else {
                (
                    json!({}),
                    Some(format!("input is not a JSON object: {input}")),
                )
            };
            Some(ContentBlock::ToolUse {
                id: text("id"),
                name: text("name"),
                input,
                input_error,
            })
        }
        _ => None,
    }
}

fn parse_usage(usage: Option<&Value>) -> Usage {
    let field = |key: &str| {
        usage
            .and_then(|u| u.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Usage {
        input_tokens: field("input_tokens"),
        output_tokens: field("output_tokens"),
        cache_creation_input_tokens: field("cache_creation_input_tokens"),
        cache_read_input_tokens: field("cache_read_input_tokens"),
        // Anthropic counts thinking inside `output_tokens` and does not say
        // how much of it was thinking.
        reasoning_tokens: 0,
    }
}

/// A content block while its deltas arrive.
enum Partial {
    Block(ContentBlock),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    /// A block type we do not know: its deltas are ignored.
    Unknown,
}

/// Builds the response from `message_start`, `content_block_*`,
/// `message_delta` and `message_stop` events.
#[derive(Default)]
pub struct StreamDecoder {
    blocks: Vec<Partial>,
    stop_reason: Option<String>,
    usage: Usage,
    stopped: bool,
}

impl SseDecoder for StreamDecoder {
    fn on_event(&mut self, event: SseEvent) -> Result<Vec<StreamEvent>, String> {
        let data: Value = serde_json::from_str(&event.data)
            .map_err(|error| format!("malformed event data ({error}): {}", clip(&event.data)))?;
        let kind = data.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "message_start" => self.usage = parse_usage(data.pointer("/message/usage")),
            "content_block_start" => {
                let index = index_of(&data)?;
                let block = data.get("content_block").cloned().unwrap_or(Value::Null);
                let partial = if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                    Partial::ToolUse {
                        id: block
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .into(),
                        name: block
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .into(),
                        json: String::new(),
                    }
                } else {
                    parse_block(&block).map_or(Partial::Unknown, Partial::Block)
                };
                if self.blocks.len() <= index {
                    self.blocks.resize_with(index + 1, || Partial::Unknown);
                }
                self.blocks[index] = partial;
            }
            "content_block_delta" => return self.on_delta(index_of(&data)?, &data["delta"]),
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                // message_delta's usage is cumulative: it replaces, not adds.
                if let Some(output) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = output;
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(vec![StreamEvent::Done(self.finish())]);
            }
            "error" => {
                let message = data
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error");
                let kind = data
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                return Err(format!("{kind}: {message}"));
            }
            _ => {} // ping, content_block_stop, and types added after this was written
        }
        Ok(Vec::new())
    }

    fn on_end(&mut self) -> Result<Vec<StreamEvent>, String> {
        if self.stopped {
            Ok(Vec::new())
        } else {
            Err("the stream ended before `message_stop`".into())
        }
    }
}

impl StreamDecoder {
    fn on_delta(&mut self, index: usize, delta: &Value) -> Result<Vec<StreamEvent>, String> {
        let piece = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        let Some(block) = self.blocks.get_mut(index) else {
            return Err(format!("delta for block {index}, which never started"));
        };
        let kind = delta
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut events = Vec::new();
        match (kind, block) {
            ("text_delta", Partial::Block(ContentBlock::Text { text })) => {
                text.push_str(piece("text"));
                events.push(StreamEvent::TextDelta(piece("text").to_string()));
            }
            ("thinking_delta", Partial::Block(ContentBlock::Thinking { thinking, .. })) => {
                thinking.push_str(piece("thinking"));
                events.push(StreamEvent::ThinkingDelta(piece("thinking").to_string()));
            }
            ("signature_delta", Partial::Block(ContentBlock::Thinking { signature, .. })) => {
                signature.push_str(piece("signature"));
            }
            ("input_json_delta", Partial::ToolUse { json, .. }) => {
                json.push_str(piece("partial_json"))
            }
            _ => {}
        }
        Ok(events)
    }

    fn finish(&mut self) -> Response {
        let content = std::mem::take(&mut self.blocks)
            .into_iter()
            .filter_map(|partial| match partial {
                Partial::Block(block) => Some(block),
                Partial::ToolUse { id, name, json } => Some(tool_use_from_json(id, name, &json)),
                Partial::Unknown => None,
            })
            .collect();
        Response {
            content,
            stop_reason: self.stop_reason.take(),
            usage: self.usage,
        }
    }
}

fn index_of(data: &Value) -> Result<usize, String> {
    data.get("index")
        .and_then(Value::as_u64)
        .map(|i| i as usize)
        .filter(|&i| i < 4096)
        .ok_or_else(|| format!("event without a valid `index`: {}", clip(&data.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(decoder: &mut StreamDecoder, kind: &str, data: Value) -> Vec<StreamEvent> {
        decoder
            .on_event(SseEvent {
                event: Some(kind.into()),
                data: data.to_string(),
            })
            .unwrap()
    }

    #[test]
    fn thinking_and_tool_use_are_assembled_from_deltas() {
        let mut d = StreamDecoder::default();
        feed(
            &mut d,
            "message_start",
            json!({"type":"message_start","message":{"usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":1}}}),
        );
        feed(
            &mut d,
            "content_block_start",
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
        );
        let shown = feed(
            &mut d,
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me"}}),
        );
        assert_eq!(shown, vec![StreamEvent::ThinkingDelta("Let me".into())]);
        feed(
            &mut d,
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}),
        );
        feed(
            &mut d,
            "content_block_start",
            json!({"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use_v9"}}),
        );
        feed(
            &mut d,
            "content_block_delta",
            json!({"type":"content_block_delta","index":1,"delta":{"type":"mystery_delta"}}),
        );
        feed(
            &mut d,
            "content_block_start",
            json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t1","name":"read_file","input":{}}}),
        );
        for part in ["", "{\"pa", "th\": \"a.", "txt\"}"] {
            feed(
                &mut d,
                "content_block_delta",
                json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":part}}),
            );
        }
        feed(
            &mut d,
            "message_delta",
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}}),
        );
        let done = feed(&mut d, "message_stop", json!({"type":"message_stop"}));
        let StreamEvent::Done(response) = &done[0] else {
            panic!("{done:?}")
        };
        assert_eq!(response.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(response.usage.input_tokens, 7);
        assert_eq!(response.usage.cache_read_input_tokens, 3);
        assert_eq!(response.usage.output_tokens, 42);
        assert_eq!(
            response.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "Let me".into(),
                    signature: "EqQB".into()
                },
                ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "read_file".into(),
                    input: json!({"path":"a.txt"}),
                    input_error: None
                },
            ]
        );
    }

    #[test]
    fn an_error_event_and_an_early_end_are_errors() {
        let mut d = StreamDecoder::default();
        let error = d.on_event(SseEvent {
            event: Some("error".into()),
            data:
                json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})
                    .to_string(),
        });
        assert_eq!(error, Err("overloaded_error: Overloaded".into()));
        assert!(StreamDecoder::default().on_end().is_err());
    }

    #[test]
    fn truncated_tool_json_becomes_an_input_error() {
        let block = tool_use_from_json("t".into(), "read_file".into(), "{\"path\": \"a.t");
        let ContentBlock::ToolUse {
            input, input_error, ..
        } = block
        else {
            unreachable!()
        };
        assert_eq!(input, json!({}));
        assert!(input_error.unwrap().contains("not valid JSON"));
    }

    #[test]
    fn breakpoints_mark_the_last_two_user_messages_that_can_carry_one() {
        let user = |text: &str| Message::user_text(text);
        let results = Message {
            role: Role::User,
            content: vec![
                ContentBlock::tool_result("a", "one", false),
                ContentBlock::tool_result("b", "two", true),
            ],
        };
        let answer = Message::assistant(vec![ContentBlock::Text { text: "ok".into() }]);
        // (history, the messages marked)
        let cases: Vec<(Vec<Message>, Vec<usize>)> = vec![
            (vec![], vec![]),
            (vec![user("hi")], vec![0]),
            (
                vec![user("hi"), answer.clone(), results.clone()],
                vec![2, 0],
            ),
            (
                vec![
                    user("hi"),
                    answer.clone(),
                    results.clone(),
                    answer.clone(),
                    user("go on"),
                ],
                vec![4, 2],
            ),
            // An empty text cannot carry one: skipped, never moved elsewhere.
            (vec![user("hi"), answer.clone(), user("")], vec![0]),
        ];
        for (history, marked) in cases {
            assert_eq!(breakpoints(&history), marked, "{history:?}");
        }
    }

    #[test]
    fn the_body_carries_at_most_four_breakpoints() {
        let tools = vec![
            super::super::ToolSpec {
                name: "a".into(),
                description: "A".into(),
                input_schema: json!({"type": "object"}),
            },
            super::super::ToolSpec {
                name: "b".into(),
                description: "B".into(),
                input_schema: json!({"type": "object"}),
            },
        ];
        let answer = Message::assistant(vec![ContentBlock::Text { text: "ok".into() }]);
        let mut messages = vec![Message::user_text("hi")];
        for turn in 0..5 {
            messages.push(answer.clone());
            messages.push(Message::user_text(format!("turn {turn}")));
            let request = Request {
                system: "be brief",
                messages: &messages,
                tools: &tools,
                max_tokens: 10,
                reasoning: Default::default(),
            };
            let body = Messages.body("m", request, false).unwrap();
            let text = String::from_utf8(body.to_vec()).unwrap();
            assert_eq!(text.matches("\"cache_control\"").count(), 4, "{text}");
            let value: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(value["system"][0]["text"], "be brief");
            assert!(value["tools"][0].get("cache_control").is_none());
            assert!(value["tools"][1]["cache_control"].is_object());
        }
    }

    #[test]
    fn images_go_as_base64_blocks_and_refused_ones_as_notes() {
        let png = Image {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        };
        let svg = Image {
            media_type: "image/svg+xml".into(),
            data: "PHN2Zz4=".into(),
        };
        let message = Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "a".into(),
                    content: "shot".into(),
                    is_error: false,
                    images: vec![png.clone(), svg.clone()],
                },
                ContentBlock::tool_result("b", "plain", false),
                ContentBlock::ToolResult {
                    tool_use_id: "c".into(),
                    content: String::new(),
                    is_error: false,
                    images: vec![png.clone()],
                },
                ContentBlock::Image(png),
                ContentBlock::Image(svg),
            ],
        };
        let source = json!({"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="});
        let note = "[image (image/svg+xml) left out: its media type `image/svg+xml` is not one of image/png, image/jpeg, image/gif, image/webp]";
        assert_eq!(
            serde_json::to_value(WireMessage::from(&message)).unwrap(),
            json!({"role":"user","content":[
                {"type":"tool_result","tool_use_id":"a","content":[
                    {"type":"text","text":"shot"},
                    {"type":"image","source":source},
                    {"type":"text","text":note},
                ]},
                {"type":"tool_result","tool_use_id":"b","content":"plain"},
                {"type":"tool_result","tool_use_id":"c","content":[{"type":"image","source":source}]},
                {"type":"image","source":source},
                {"type":"text","text":note},
            ]})
        );
    }

    #[test]
    fn thinking_and_effort_follow_the_model() {
        use Effort::*;
        use Thinking::{Auto, Off};
        let asked = |thinking, effort| Reasoning { thinking, effort };
        let budget = |budget_tokens| Some(WireThinking::Enabled { budget_tokens });
        let adaptive = Some(WireThinking::Adaptive);
        let disabled = Some(WireThinking::Disabled);
        // (model, asked, max_tokens, thinking, effort, beta)
        let cases = [
            // Budget models: a budget sized by the effort, below max_tokens;
            // Claude 4 ones interleave with the beta, 3.7 cannot.
            (
                "claude-sonnet-4-5",
                asked(Auto, None),
                64_000,
                budget(16_000),
                None,
                true,
            ),
            (
                "claude-sonnet-4-5-20250929",
                asked(Auto, Some(Low)),
                64_000,
                budget(4_096),
                None,
                true,
            ),
            (
                "claude-opus-4-1",
                asked(Auto, Some(Max)),
                32_000,
                budget(31_999),
                None,
                true,
            ),
            (
                "claude-3-7-sonnet",
                asked(Auto, Some(Minimal)),
                64_000,
                budget(1_024),
                None,
                false,
            ),
            (
                "claude-haiku-4-5",
                asked(Auto, None),
                1_024,
                None,
                None,
                false,
            ),
            (
                "claude-sonnet-4-5",
                asked(Off, Some(High)),
                64_000,
                None,
                None,
                false,
            ),
            // No thinking at all.
            (
                "claude-3-5-haiku",
                asked(Auto, Some(High)),
                8_192,
                None,
                None,
                false,
            ),
            // Adaptive, with the effort clamped to a level the model takes.
            (
                "claude-opus-4-6",
                asked(Auto, None),
                128_000,
                adaptive,
                None,
                false,
            ),
            (
                "claude-opus-4-6",
                asked(Auto, Some(Xhigh)),
                128_000,
                adaptive,
                Some(High),
                false,
            ),
            (
                "claude-sonnet-4-6",
                asked(Off, Some(Low)),
                128_000,
                None,
                Some(Low),
                false,
            ),
            (
                "claude-opus-4-7",
                asked(Auto, Some(Xhigh)),
                128_000,
                adaptive,
                Some(Xhigh),
                false,
            ),
            (
                "claude-opus-4-7",
                asked(Auto, Some(Minimal)),
                128_000,
                adaptive,
                Some(Low),
                false,
            ),
            (
                "claude-opus-4-7",
                asked(Off, None),
                128_000,
                disabled,
                None,
                false,
            ),
            // Thinking cannot be turned off: turned down instead.
            (
                "claude-fable-5",
                asked(Off, Some(High)),
                128_000,
                None,
                Some(Low),
                false,
            ),
            (
                "claude-sonnet-5-5",
                asked(Off, None),
                128_000,
                None,
                Some(Low),
                false,
            ),
            (
                "claude-fable-5-1",
                asked(Auto, Some(Max)),
                128_000,
                adaptive,
                Some(Max),
                false,
            ),
            // Not in the table: only what the user set, as set.
            ("claude-test", asked(Auto, None), 8_192, None, None, false),
            (
                "claude-test",
                asked(Off, Some(Minimal)),
                8_192,
                disabled,
                Some(Minimal),
                false,
            ),
            (
                "glm-4.6",
                asked(Auto, Some(Max)),
                8_192,
                None,
                Some(Max),
                false,
            ),
        ];
        for (model, asked, max_tokens, thinking, effort, beta) in cases {
            let params = ThinkingParams::for_call(model, asked, max_tokens);
            assert_eq!(
                (params.thinking, params.effort, params.interleaved_beta),
                (thinking, effort, beta),
                "{model} {asked:?} {max_tokens}"
            );
            let request = Request {
                system: "",
                messages: &[],
                tools: &[],
                max_tokens,
                reasoning: asked,
            };
            let headers = Messages.call_headers(model, &request);
            assert_eq!(
                headers
                    .iter()
                    .any(|(name, value)| *name == "anthropic-beta"
                        && value == INTERLEAVED_THINKING_BETA),
                beta,
                "{model}"
            );
            let body: Value =
                serde_json::from_slice(&Messages.body(model, request, false).unwrap()).unwrap();
            assert_eq!(
                body.get("output_config"),
                effort.map(|e| json!({"effort": e.as_str()})).as_ref(),
                "{model}"
            );
        }
    }

    #[test]
    fn the_wire_names_of_thinking() {
        let cases = [
            (WireThinking::Adaptive, json!({"type": "adaptive"})),
            (WireThinking::Disabled, json!({"type": "disabled"})),
            (
                WireThinking::Enabled {
                    budget_tokens: 2048,
                },
                json!({"type": "enabled", "budget_tokens": 2048}),
            ),
        ];
        for (thinking, wire) in cases {
            assert_eq!(serde_json::to_value(thinking).unwrap(), wire);
        }
    }

    #[test]
    fn unsigned_thinking_from_another_server_is_left_out() {
        let message = Message::assistant(vec![
            ContentBlock::Thinking {
                thinking: "from reasoning_content".into(),
                signature: String::new(),
            },
            ContentBlock::Thinking {
                thinking: String::new(),
                signature: "sig-omitted-display".into(),
            },
            ContentBlock::RedactedThinking {
                data: "EmwK".into(),
            },
            ContentBlock::Text { text: "ok".into() },
        ]);
        assert_eq!(
            serde_json::to_value(WireMessage::from(&message)).unwrap(),
            json!({"role":"assistant","content":[
                {"type":"thinking","thinking":"","signature":"sig-omitted-display"},
                {"type":"redacted_thinking","data":"EmwK"},
                {"type":"text","text":"ok"},
            ]})
        );
    }

    #[test]
    fn thinking_blocks_go_back_unchanged() {
        let message = Message::assistant(vec![ContentBlock::Thinking {
            thinking: "t".into(),
            signature: "s".into(),
        }]);
        assert_eq!(
            serde_json::to_value(WireMessage::from(&message)).unwrap(),
            json!({"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"}]})
        );
    }
}
