//! OpenAI's Responses API (`POST {base}/responses`): its [`WireFormat`],
//! [`Responses`], and its stream decoder; [`HttpProvider`] does the HTTP.
//!
//! Stateless on purpose (`store: false`): every call sends the whole
//! history as input items, so a session resumes from our own file and
//! nothing is kept on OpenAI's side. A reasoning model's thinking survives
//! between calls as its reasoning items, sent back exactly as they came
//! (id, summary and the encrypted content asked for with
//! `include: ["reasoning.encrypted_content"]`). Other items go without
//! their ids: under `store: false` an id names an item the API did not keep.
//!
//! The prompt prefix is kept byte for byte the same between calls, as on
//! the chat wire (`openai.rs`), and the same session `prompt_cache_key`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::credentials::Credentials;
use super::http_provider::HttpProvider;
use super::models::{self, ModelReasoning};
use super::openai::{UsageFields, tool_text, usage_of};
use super::sse::SseEvent;
use super::wire::{OwnHeader, SseDecoder, WireFormat, clip, encode, tool_use_from_json};
use super::{ProviderError, Reasoning, Request, Response, StreamEvent, Thinking, Usage};
use crate::history::{ContentBlock, Image, Message, Role};

/// The Responses API over HTTP.
pub type OpenAiResponses = HttpProvider<Responses>;

/// The Responses wire format.
#[derive(Clone, Debug, Default)]
pub struct Responses {
    /// Sent as `prompt_cache_key` on every call, when set.
    pub prompt_cache_key: Option<String>,
}

impl WireFormat for Responses {
    const NAME: &'static str = "openai";
    const PATH: &'static str = "/responses";
    type Decoder = StreamDecoder;

    /// The key as `Authorization: Bearer`, as on the chat wire.
    fn auth_headers(&self, credentials: &Credentials) -> Result<Vec<OwnHeader>, ProviderError> {
        super::openai::ChatCompletions::default().auth_headers(credentials)
    }

    fn body(
        &self,
        model: &str,
        request: Request<'_>,
        stream: bool,
    ) -> Result<Bytes, ProviderError> {
        let mut input = Vec::with_capacity(request.messages.len() * 2);
        for message in request.messages {
            push_items(message, &mut input);
        }
        let reasoning = reasoning_param(model, request.reasoning);
        let has_tools = !request.tools.is_empty();
        let body = ResponsesRequest {
            model,
            instructions: (!request.system.is_empty()).then_some(request.system),
            input,
            tools: request
                .tools
                .iter()
                .map(|tool| FunctionTool {
                    kind: "function",
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.input_schema,
                    // Strict schemas need every property required and no
                    // others allowed; ours are plain JSON Schema.
                    strict: false,
                })
                .collect(),
            tool_choice: has_tools.then_some("auto"),
            parallel_tool_calls: has_tools.then_some(true),
            store: false,
            include: if reasoning.is_some() {
                vec!["reasoning.encrypted_content"]
            } else {
                Vec::new()
            },
            reasoning,
            max_output_tokens: request.max_tokens,
            prompt_cache_key: self.prompt_cache_key.as_deref(),
            stream,
        };
        encode(&body)
    }

    fn parse_response(&self, body: &Value) -> Result<Response, String> {
        parse_response(body)
    }
}

#[derive(Serialize)]
struct ResponsesRequest<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<FunctionTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    store: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningParam>,
    max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

#[derive(Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: bool,
}

#[derive(Debug, PartialEq, Serialize)]
struct ReasoningParam {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    summary: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputItem<'a> {
    Message {
        role: &'static str,
        content: Vec<ContentPart<'a>>,
    },
    Reasoning {
        id: &'a str,
        summary: Vec<SummaryText<'a>>,
        encrypted_content: &'a str,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        /// JSON text, as the API sends it.
        arguments: String,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: ToolOutput<'a>,
    },
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart<'a> {
    InputText { text: Cow<'a, str> },
    InputImage { image_url: String },
    OutputText { text: &'a str },
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "summary_text")]
struct SummaryText<'a> {
    text: &'a str,
}

/// A tool's output: its text, or, with images, text and image parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ToolOutput<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<ContentPart<'a>>),
}

/// An image as an `input_image` part, or the note saying why it is not sent.
fn image_part(image: &Image) -> ContentPart<'_> {
    match image.refusal() {
        Some(note) => ContentPart::InputText {
            text: Cow::Owned(note),
        },
        None => ContentPart::InputImage {
            image_url: format!("data:{};base64,{}", image.media_type, image.data),
        },
    }
}

/// One of our messages as input items, in the blocks' order: a user
/// message's tool results first (each a `function_call_output`), then its
/// text and images as one message; an assistant message's reasoning, text
/// and calls each as their own item. Anthropic's thinking is left out: this
/// API cannot take it.
fn push_items<'a>(message: &'a Message, out: &mut Vec<InputItem<'a>>) {
    match message.role {
        Role::User => {
            let mut parts = Vec::new();
            for block in &message.content {
                match block {
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                        images,
                    } => {
                        let text = tool_text(content, *is_error);
                        let output = if images.is_empty() {
                            ToolOutput::Text(text)
                        } else {
                            let mut parts = vec![ContentPart::InputText { text }];
                            parts.extend(images.iter().map(image_part));
                            ToolOutput::Parts(parts)
                        };
                        out.push(InputItem::FunctionCallOutput {
                            call_id: tool_use_id,
                            output,
                        });
                    }
                    ContentBlock::Text { text } if !text.is_empty() => {
                        parts.push(ContentPart::InputText {
                            text: Cow::Borrowed(text),
                        });
                    }
                    ContentBlock::Image(image) => parts.push(image_part(image)),
                    _ => {}
                }
            }
            if !parts.is_empty() {
                out.push(InputItem::Message {
                    role: "user",
                    content: parts,
                });
            }
        }
        Role::Assistant => {
            for block in &message.content {
                match block {
                    ContentBlock::Reasoning {
                        id,
                        summary,
                        encrypted_content: Some(encrypted),
                    } => out.push(InputItem::Reasoning {
                        id,
                        summary: summary.iter().map(|text| SummaryText { text }).collect(),
                        encrypted_content: encrypted,
                    }),
                    // Without its encrypted content the API would look the
                    // item up by id, and under `store: false` it has none.
                    ContentBlock::Reasoning { .. } => {}
                    ContentBlock::Text { text } if !text.is_empty() => {
                        out.push(InputItem::Message {
                            role: "assistant",
                            content: vec![ContentPart::OutputText { text }],
                        });
                    }
                    ContentBlock::ToolUse {
                        id, name, input, ..
                    } => out.push(InputItem::FunctionCall {
                        call_id: id,
                        name,
                        arguments: input.to_string(),
                    }),
                    _ => {}
                }
            }
        }
    }
}

/// The `reasoning` object for `model`, from the model table
/// (`models.rs`): the effort asked (the nearest the model takes), none when
/// the model's default is wanted, for thinking off `none` where the model
/// takes it and else its lowest effort; a summary always. `None` for a
/// model that does not reason. A model the table does not know gets one
/// only when the user set an effort, as asked (its API is the judge).
fn reasoning_param(model: &str, reasoning: Reasoning) -> Option<ReasoningParam> {
    let (efforts, takes_none) = match models::info(model).map(|info| info.reasoning) {
        Some(ModelReasoning::OpenAi {
            efforts,
            takes_none,
        }) if !efforts.is_empty() => (efforts, takes_none),
        Some(_) => return None,
        None => {
            let effort = reasoning.effort?;
            return Some(ReasoningParam {
                effort: Some(effort.as_str()),
                summary: "auto",
            });
        }
    };
    let effort = match (reasoning.thinking, reasoning.effort) {
        (Thinking::Off, _) if takes_none => Some("none"),
        (Thinking::Off, _) => efforts.first().map(|effort| effort.as_str()),
        (Thinking::Auto, None) => None,
        (Thinking::Auto, Some(asked)) => {
            let sent = models::effort_for(model, asked);
            if sent != Some(asked) {
                tracing::debug!(
                    model,
                    asked = asked.as_str(),
                    sent = sent.map(|effort| effort.as_str()),
                    "the model does not take this effort; the nearest it takes is sent"
                );
            }
            sent.map(|effort| effort.as_str())
        }
    };
    Some(ReasoningParam {
        effort,
        summary: "auto",
    })
}

/// A `summary_text` list's texts.
fn summary_texts(item: &Value) -> Vec<String> {
    item.get("summary")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// One output item as our blocks: a reasoning item, a message's text, a
/// function call; anything else (a tool of OpenAI's own, a type newer than
/// this code) is left out.
fn item_blocks(item: &Value, index: usize, out: &mut Vec<ContentBlock>) {
    let field = |name: &str| item.get(name).and_then(Value::as_str);
    match field("type") {
        Some("reasoning") => out.push(ContentBlock::Reasoning {
            id: field("id").map_or_else(|| format!("rs_{index}"), str::to_string),
            summary: summary_texts(item),
            encrypted_content: field("encrypted_content").map(str::to_string),
        }),
        Some("message") => {
            let text: String = item
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|part| match part.get("type").and_then(Value::as_str) {
                    Some("output_text") => part.get("text").and_then(Value::as_str),
                    Some("refusal") => part.get("refusal").and_then(Value::as_str),
                    _ => None,
                })
                .collect();
            if !text.is_empty() {
                out.push(ContentBlock::Text { text });
            }
        }
        Some("function_call") => {
            let id = field("call_id")
                .or_else(|| field("id"))
                .map_or_else(|| format!("call_{index}"), str::to_string);
            let name = field("name").unwrap_or_default().to_string();
            out.push(tool_use_from_json(
                id,
                name,
                field("arguments").unwrap_or_default(),
            ));
        }
        other => tracing::debug!(kind = ?other, "an output item of a type we do not use, left out"),
    }
}

fn parse_usage(usage: &Value) -> Usage {
    const FIELDS: UsageFields = UsageFields {
        input: "/input_tokens",
        cached: "/input_tokens_details/cached_tokens",
        cache_write: "/input_tokens_details/cache_write_tokens",
        output: "/output_tokens",
        reasoning: "/output_tokens_details/reasoning_tokens",
    };
    usage_of(usage, &FIELDS)
}

/// The stop reason in our names: cut at the output limit, a tool call, or
/// the end of the turn.
fn stop_reason(response: &Value, content: &[ContentBlock]) -> String {
    let incomplete = response
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str);
    match incomplete {
        Some("max_output_tokens") => "max_tokens".to_string(),
        Some(other) => other.to_string(),
        None if content
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolUse { .. })) =>
        {
            "tool_use".to_string()
        }
        None => "end_turn".to_string(),
    }
}

/// The error a failed response carries, in the API's words.
fn failure(response: &Value) -> String {
    let error = response.get("error").unwrap_or(&Value::Null);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the response failed without a message");
    match error.get("code").and_then(Value::as_str) {
        Some(code) => format!("{message} ({code})"),
        None => message.to_string(),
    }
}

/// A whole response object: its output items, stop reason and usage.
fn parse_response(value: &Value) -> Result<Response, String> {
    if value.get("status").and_then(Value::as_str) == Some("failed") {
        return Err(failure(value));
    }
    let output = value
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("no output in the response: {}", clip(&value.to_string())))?;
    let mut content = Vec::new();
    for (index, item) in output.iter().enumerate() {
        item_blocks(item, index, &mut content);
    }
    finish(value, content)
}

/// The response around `content`; an incomplete one with nothing usable in
/// it is an error, not an empty answer.
fn finish(response: &Value, content: Vec<ContentBlock>) -> Result<Response, String> {
    let incomplete = response.get("status").and_then(Value::as_str) == Some("incomplete");
    let usable = content.iter().any(|block| {
        matches!(
            block,
            ContentBlock::Text { .. } | ContentBlock::ToolUse { .. }
        )
    });
    if incomplete && !usable {
        let reason = response
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
            .unwrap_or("no reason given");
        return Err(format!(
            "the response is incomplete ({reason}) and holds no answer"
        ));
    }
    Ok(Response {
        stop_reason: Some(stop_reason(response, &content)),
        usage: parse_usage(response.get("usage").unwrap_or(&Value::Null)),
        content,
    })
}

/// Decodes a Responses stream: text and reasoning-summary deltas as they
/// come, each output item as it is done, and the response at
/// `response.completed` (or `response.incomplete`). A stream that ends
/// before either is an error.
#[derive(Default)]
pub struct StreamDecoder {
    /// Output items by `output_index`, as built from their events.
    items: BTreeMap<u64, Value>,
    done: bool,
}

impl StreamDecoder {
    /// The item at `index`, created empty if it has not been announced
    /// (or was announced as something other than an object).
    fn item(&mut self, event: &Value) -> &mut Value {
        let index = event
            .get("output_index")
            .and_then(Value::as_u64)
            .unwrap_or_default();
        let item = self
            .items
            .entry(index)
            .or_insert_with(|| serde_json::json!({}));
        object(item)
    }

    /// The final response: the completed response's own output when it
    /// has one, else the items the stream built.
    fn finish(&mut self, response: &Value) -> Result<Vec<StreamEvent>, String> {
        self.done = true;
        let own = response
            .get("output")
            .and_then(Value::as_array)
            .filter(|output| !output.is_empty());
        let mut content = Vec::new();
        match own {
            Some(output) => {
                for (index, item) in output.iter().enumerate() {
                    item_blocks(item, index, &mut content);
                }
            }
            None => {
                for (index, item) in std::mem::take(&mut self.items).values().enumerate() {
                    item_blocks(item, index, &mut content);
                }
            }
        }
        Ok(vec![StreamEvent::Done(finish(response, content)?)])
    }
}

/// `value` as an object: what a server sent as anything else is replaced
/// by an empty one (indexing a JSON number by a key panics).
fn object(value: &mut Value) -> &mut Value {
    if !value.is_object() {
        *value = serde_json::json!({});
    }
    value
}

/// Appends `delta` to the text in `field` of `item`, creating it.
fn append(item: &mut Value, field: &str, delta: &str) {
    let item = object(item);
    match item.get_mut(field) {
        Some(Value::String(text)) => text.push_str(delta),
        _ => item[field] = Value::String(delta.to_string()),
    }
}

/// Appends `delta` to the text of part `index` (of type `kind`) in the list
/// `list` of `item`, creating the list and the parts up to it; says whether
/// the part is new. An index far past any real answer's is ignored rather
/// than allocated.
fn append_part(item: &mut Value, list: &str, kind: &str, index: u64, delta: &str) -> bool {
    const MOST_PARTS: u64 = 1024;
    if index >= MOST_PARTS {
        return false;
    }
    if !item[list].is_array() {
        item[list] = Value::Array(Vec::new());
    }
    let Some(parts) = item[list].as_array_mut() else {
        return false;
    };
    let new = parts.len() as u64 <= index;
    while parts.len() as u64 <= index {
        parts.push(serde_json::json!({"type": kind, "text": ""}));
    }
    append(&mut parts[index as usize], "text", delta);
    new
}

impl SseDecoder for StreamDecoder {
    fn on_event(&mut self, event: SseEvent) -> Result<Vec<StreamEvent>, String> {
        let data: Value = serde_json::from_str(&event.data)
            .map_err(|error| format!("malformed event ({error}): {}", clip(&event.data)))?;
        let kind = data.get("type").and_then(Value::as_str).unwrap_or_default();
        let text = |name: &str| {
            data.get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let index = |name: &str| data.get(name).and_then(Value::as_u64).unwrap_or_default();
        match kind {
            "response.output_item.added" | "response.output_item.done" => {
                if let Some(item) = data.get("item") {
                    *self.item(&data) = item.clone();
                }
            }
            "response.output_text.delta" => {
                let delta = text("delta");
                let item = self.item(&data);
                item["type"] = Value::from("message");
                let _ = append_part(
                    item,
                    "content",
                    "output_text",
                    index("content_index"),
                    &delta,
                );
                return Ok(vec![StreamEvent::TextDelta(delta)]);
            }
            "response.reasoning_summary_text.delta" => {
                let delta = text("delta");
                let item = self.item(&data);
                item["type"] = Value::from("reasoning");
                let part = index("summary_index");
                let new = append_part(item, "summary", "summary_text", part, &delta);
                // A summary's parts are paragraphs: shown apart.
                if new && part > 0 {
                    return Ok(vec![
                        StreamEvent::ThinkingDelta("\n\n".into()),
                        StreamEvent::ThinkingDelta(delta),
                    ]);
                }
                return Ok(vec![StreamEvent::ThinkingDelta(delta)]);
            }
            "response.function_call_arguments.delta" => {
                let delta = text("delta");
                append(self.item(&data), "arguments", &delta);
            }
            "response.function_call_arguments.done" => {
                let arguments = text("arguments");
                self.item(&data)["arguments"] = Value::String(arguments);
            }
            "response.completed" | "response.incomplete" => {
                return self.finish(data.get("response").unwrap_or(&Value::Null));
            }
            "response.failed" => {
                return Err(failure(data.get("response").unwrap_or(&Value::Null)));
            }
            "error" => {
                let message = data
                    .get("message")
                    .or_else(|| data.pointer("/error/message"))
                    .and_then(Value::as_str)
                    .map_or_else(|| clip(&event.data), str::to_string);
                return Err(message);
            }
            other => tracing::debug!(kind = other, "a Responses event we do not use"),
        }
        Ok(Vec::new())
    }

    fn on_end(&mut self) -> Result<Vec<StreamEvent>, String> {
        if self.done {
            return Ok(Vec::new());
        }
        Err("the stream ended before response.completed".into())
    }
}

#[cfg(test)]
mod tests {
    use super::super::Effort;
    use super::super::openai::ERROR_PREFIX;
    use super::*;
    use serde_json::json;

    fn events(decoder: &mut StreamDecoder, events: &[Value]) -> Result<Vec<StreamEvent>, String> {
        let mut out = Vec::new();
        for event in events {
            out.extend(decoder.on_event(SseEvent {
                event: event["type"].as_str().map(str::to_string),
                data: event.to_string(),
            })?);
        }
        Ok(out)
    }

    #[test]
    fn history_becomes_items_with_reasoning_sent_back_exactly() {
        let assistant = Message::assistant(vec![
            ContentBlock::Reasoning {
                id: "rs_1".into(),
                summary: vec!["thought".into()],
                encrypted_content: Some("gAAAA".into()),
            },
            ContentBlock::Reasoning {
                id: "rs_gone".into(),
                summary: vec![],
                encrypted_content: None,
            },
            ContentBlock::Thinking {
                thinking: "anthropic's".into(),
                signature: "sig".into(),
            },
            ContentBlock::Text {
                text: "reading".into(),
            },
            ContentBlock::ToolUse {
                id: "call_1".into(),
                name: "read_file".into(),
                input: json!({"path": "a"}),
                input_error: None,
            },
        ]);
        let user = Message {
            role: Role::User,
            content: vec![
                ContentBlock::tool_result("call_1", "boom", true),
                ContentBlock::Text {
                    text: "and also".into(),
                },
            ],
        };
        let mut out = Vec::new();
        push_items(&assistant, &mut out);
        push_items(&user, &mut out);
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            json!([
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thought"}], "encrypted_content": "gAAAA"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "reading"}]},
                {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": format!("{ERROR_PREFIX}boom")},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "and also"}]},
            ])
        );
    }

    #[test]
    fn images_go_as_input_images_and_a_refused_one_as_its_note() {
        let png = Image {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        };
        let bmp = Image {
            media_type: "image/bmp".into(),
            data: "Qk0=".into(),
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
                ContentBlock::Image(bmp),
            ],
        };
        let mut out = Vec::new();
        push_items(&message, &mut out);
        let note = "[image (image/bmp) left out: its media type `image/bmp` is not one of image/png, image/jpeg, image/gif, image/webp]";
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            json!([
                {"type": "function_call_output", "call_id": "c1", "output": [
                    {"type": "input_text", "text": "shot"},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                ]},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "look"},
                    {"type": "input_text", "text": note},
                ]},
            ])
        );
    }

    #[test]
    fn effort_goes_to_the_nearest_level_the_model_takes() {
        let asked = |thinking, effort| Reasoning { thinking, effort };
        let cases = [
            // (model, thinking, effort, the reasoning object's effort; None: no object)
            ("gpt-4.1", Thinking::Auto, Some(Effort::High), None),
            ("gpt-5", Thinking::Auto, None, Some(None)),
            (
                "gpt-5",
                Thinking::Auto,
                Some(Effort::High),
                Some(Some("high")),
            ),
            (
                "gpt-5",
                Thinking::Auto,
                Some(Effort::Max),
                Some(Some("high")),
            ),
            ("gpt-5", Thinking::Off, None, Some(Some("minimal"))),
            (
                "gpt-5-mini",
                Thinking::Off,
                Some(Effort::High),
                Some(Some("minimal")),
            ),
            ("gpt-5.1", Thinking::Off, None, Some(Some("none"))),
            (
                "gpt-5.1",
                Thinking::Auto,
                Some(Effort::Minimal),
                Some(Some("low")),
            ),
            (
                "gpt-5.2",
                Thinking::Auto,
                Some(Effort::Max),
                Some(Some("xhigh")),
            ),
            ("o3", Thinking::Off, None, Some(Some("low"))),
            (
                "o4-mini",
                Thinking::Auto,
                Some(Effort::Medium),
                Some(Some("medium")),
            ),
            // Known, not a reasoning model: no reasoning object.
            ("gpt-4.1", Thinking::Auto, Some(Effort::High), None),
            // Not in the table: the effort the user set, as set (the API
            // judges; a refusal is the one-line error), none otherwise.
            (
                "gpt-5-chat-latest",
                Thinking::Auto,
                Some(Effort::High),
                Some(Some("high")),
            ),
            ("omni", Thinking::Auto, None, None),
        ];
        for (model, thinking, effort, want) in cases {
            let got = reasoning_param(model, asked(thinking, effort)).map(|r| r.effort);
            assert_eq!(got, want, "{model} {thinking:?} {effort:?}");
        }
    }

    #[test]
    fn a_streamed_response_keeps_reasoning_text_and_calls() {
        let mut d = StreamDecoder::default();
        let out = events(
            &mut d,
            &[
                json!({"type": "response.created", "response": {"status": "in_progress", "output": []}}),
                json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
                json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "Think"}),
                json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "ing"}),
                json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": "More"}),
                json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Thinking"}], "encrypted_content": "enc"}}),
                json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "call_id": "call_a", "name": "glob", "arguments": ""}}),
                json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"pattern\":"}),
                json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "\"*\"}"}),
                json!({"type": "response.future_event", "output_index": 1}),
                json!({"type": "response.completed", "response": {"status": "completed", "output": [], "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 2}, "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 3}}}}),
            ],
        )
        .unwrap();
        let thinking: String = out
            .iter()
            .filter_map(|event| match event {
                StreamEvent::ThinkingDelta(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(thinking, "Thinking\n\nMore");
        let Some(StreamEvent::Done(response)) = out.last() else {
            panic!("{out:?}")
        };
        assert_eq!(
            response.content,
            vec![
                ContentBlock::Reasoning {
                    id: "rs_1".into(),
                    summary: vec!["Thinking".into()],
                    encrypted_content: Some("enc".into()),
                },
                tool_use_from_json("call_a".into(), "glob".into(), "{\"pattern\":\"*\"}"),
            ]
        );
        assert_eq!(response.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 4,
                output_tokens: 7,
                cache_creation_input_tokens: 2,
                cache_read_input_tokens: 4,
                reasoning_tokens: 3,
            }
        );
        assert_eq!(d.on_end(), Ok(Vec::new()));
    }

    #[test]
    fn an_unfinished_or_failed_stream_is_an_error() {
        let text = json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hi"});
        let mut d = StreamDecoder::default();
        events(&mut d, std::slice::from_ref(&text)).unwrap();
        assert!(d.on_end().unwrap_err().contains("response.completed"));

        let failed = json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "server_error", "message": "The model broke"}}});
        let error = events(&mut StreamDecoder::default(), &[text.clone(), failed]).unwrap_err();
        assert_eq!(error, "The model broke (server_error)");

        let cut = json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}});
        let mut d = StreamDecoder::default();
        let out = events(&mut d, &[text, cut.clone()]).unwrap();
        let Some(StreamEvent::Done(response)) = out.last() else {
            panic!("{out:?}")
        };
        assert_eq!(response.stop_reason.as_deref(), Some("max_tokens"));
        assert_eq!(
            response.content,
            vec![ContentBlock::Text { text: "Hi".into() }]
        );
        let error = events(&mut StreamDecoder::default(), &[cut]).unwrap_err();
        assert!(error.contains("incomplete (max_output_tokens)"), "{error}");
    }

    /// Found by fuzzing (fuzz/fuzz_targets/stream_decoders.rs): an item,
    /// or a part of one, that is not an object (`"item": 0`) panicked the
    /// decoder at the next delta for it — a server could crash the agent.
    #[test]
    fn items_and_parts_that_are_not_objects_do_not_panic() {
        let added = |item: Value| json!({"type": "response.output_item.added", "output_index": 0, "item": item});
        let text = json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "hi"});
        let summary = json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "so"});
        let arguments = json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"});
        for item in [
            json!(0),
            json!("x"),
            json!([1]),
            json!({"content": [1], "summary": ["s"]}),
        ] {
            for delta in [&text, &summary, &arguments] {
                let mut d = StreamDecoder::default();
                assert!(
                    events(&mut d, &[added(item.clone()), delta.clone()]).is_ok(),
                    "{item} {delta}"
                );
            }
        }
    }
}
