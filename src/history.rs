//! The conversation as data: the one piece of state the loop has, and the
//! tokens it cost. A leaf: it depends on nothing else in the crate, so the
//! providers, the loop, the tools and the front ends can all speak it.
//!
//! The shape follows Anthropic's Messages API (content blocks, tool results in
//! a `user` message) because it is the richer of the two; the OpenAI provider
//! converts at its edge. Every `tool_use` block in an assistant message is
//! answered by exactly one `tool_result` block in the user message after it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Tokens one model call (or a turn, summed) used, as the APIs report them.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// Of `output_tokens`, those the model spent thinking, where the API
    /// says (OpenAI's `reasoning_tokens`); priced as output, shown apart.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }
}

/// What the model is told about one tool: here, below both the tools that
/// describe themselves and the providers that send it, so neither names the
/// other.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

/// One piece of a message.
///
/// Contract: every `ToolUse` in an assistant message is answered by exactly
/// one `ToolResult` with its id in the next user message ([`check_history`]
/// says whether a history keeps this). Providers convert blocks to their
/// wire format at their edge and never drop one: `Thinking` and
/// `RedactedThinking` must be sent back verbatim.
#[warn(missing_docs)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text, from the user or the model.
    Text {
        /// The text, as written.
        text: String,
    },
    /// Extended thinking. Kept verbatim, signature included: the Anthropic API
    /// rejects a tool-use turn whose thinking blocks were altered or dropped.
    Thinking {
        /// The model's reasoning text.
        thinking: String,
        /// The provider's signature over it.
        signature: String,
    },
    /// Thinking the provider encrypted; opaque to us, sent back as is.
    RedactedThinking {
        /// The encrypted payload.
        data: String,
    },
    /// A reasoning item of OpenAI's Responses API: sent back as is (its
    /// encrypted content under `store: false`) to the wire that made it;
    /// the other wires leave it out (their APIs cannot take it).
    Reasoning {
        /// The item's id (`rs_…`).
        id: String,
        /// Its summary, shown as thinking.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        summary: Vec<String>,
        /// Its encrypted content (`include: ["reasoning.encrypted_content"]`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
    },
    /// A tool call the model asked for.
    ToolUse {
        /// The call's id, unique in the history (repeats are renamed).
        id: String,
        /// The tool's name, as the model wrote it (it may name no tool).
        name: String,
        /// The tool's input, as the model wrote it.
        input: Value,
        /// Set when the model's input was not valid JSON (`input` is then `{}`
        /// so the history stays sendable); the loop answers with this error.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_error: Option<String>,
    },
    /// The answer to one `ToolUse`.
    ToolResult {
        /// The id of the call it answers.
        tool_use_id: String,
        /// What the model reads.
        content: String,
        /// The call failed; `content` says why and what to do.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// Images the tool returned (an MCP tool's), after `content`.
        /// Absent in older session files, hence the default.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    /// An image the user attached (an ACP prompt's).
    Image(Image),
}

/// An image as the APIs take it: base64 data and its media type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`; see [`Image::refusal`].
    pub media_type: String,
    /// The image, base64 (standard alphabet, padded).
    pub data: String,
}

/// The media types both providers take.
pub const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The most base64 an image may have: Anthropic refuses an image over 5 MB.
pub const MAX_IMAGE_BASE64: usize = 5 * 1024 * 1024;

impl Image {
    /// Why this image may not be sent, as the note the model reads in its
    /// place; `None` when it may. Fails closed: a media type not in
    /// [`IMAGE_MEDIA_TYPES`], data over [`MAX_IMAGE_BASE64`], empty data or
    /// a character outside base64's alphabet are all refused. Checked where
    /// an image enters the history and again at each provider's edge, so an
    /// image from an old or edited session file is checked too.
    pub fn refusal(&self) -> Option<String> {
        let why = if !IMAGE_MEDIA_TYPES.contains(&self.media_type.as_str()) {
            format!(
                "its media type `{}` is not one of {}",
                self.media_type,
                IMAGE_MEDIA_TYPES.join(", ")
            )
        } else if self.data.len() > MAX_IMAGE_BASE64 {
            format!(
                "it is {} bytes of base64, over the limit of {MAX_IMAGE_BASE64}",
                self.data.len()
            )
        } else if self.data.is_empty()
            || !self
                .data
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        {
            "its data is not base64".to_string()
        } else {
            return None;
        };
        Some(format!("[image ({}) left out: {why}]", self.media_type))
    }
}

/// One tool call the model asked for, borrowed from an assistant message.
#[derive(Clone, Copy, Debug)]
pub struct ToolCall<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub input: &'a Value,
    pub input_error: Option<&'a str>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    pub fn assistant(content: Vec<ContentBlock>) -> Message {
        Message {
            role: Role::Assistant,
            content,
        }
    }

    /// The concatenated text blocks (thinking excluded).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = ToolCall<'_>> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolUse {
                id,
                name,
                input,
                input_error,
            } => Some(ToolCall {
                id,
                name,
                input,
                input_error: input_error.as_deref(),
            }),
            _ => None,
        })
    }
}

impl ContentBlock {
    pub fn tool_result(tool_use_id: &str, content: impl Into<String>, is_error: bool) -> Self {
        ContentBlock::ToolResult {
            tool_use_id: tool_use_id.to_string(),
            content: content.into(),
            is_error,
            images: Vec::new(),
        }
    }
}

/// Appends blocks as user content. When the history already ends with a user
/// message (tool results, say), the blocks join it instead of starting a second
/// user turn in a row: both APIs prefer strict alternation, and Anthropic wants
/// tool results first in their message, which appending preserves.
pub fn push_user_blocks(messages: &mut Vec<Message>, blocks: Vec<ContentBlock>) {
    if blocks.is_empty() {
        return;
    }
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.extend(blocks),
        _ => messages.push(Message {
            role: Role::User,
            content: blocks,
        }),
    }
}

/// Gives every `tool_use` of `message` an id no earlier `tool_use` of the
/// history has, nor another of its own: a model (often an OpenAI-compatible
/// local server) may repeat an id, and a history with a repeated id is one
/// the APIs refuse — each id must be answered by exactly one result. A
/// repeat becomes `<id>_2`, `<id>_3`, …; an empty id becomes `toolu_<n>`.
pub fn make_tool_use_ids_unique(history: &[Message], message: &mut Message) {
    let mut seen: std::collections::HashSet<String> = history
        .iter()
        .flat_map(|m| m.tool_calls().map(|call| call.id.to_string()))
        .collect();
    for block in &mut message.content {
        let ContentBlock::ToolUse { id, .. } = block else {
            continue;
        };
        if !id.is_empty() && seen.insert(id.clone()) {
            continue;
        }
        let base = if id.is_empty() { "toolu" } else { id.as_str() };
        let fresh = (2..)
            .map(|n| format!("{base}_{n}"))
            .find(|candidate| !seen.contains(candidate))
            .unwrap_or_default();
        tracing::warn!(repeated = %id, given = %fresh, "the model repeated a tool_use id; renamed");
        seen.insert(fresh.clone());
        *id = fresh;
    }
}

/// Checks the invariant the APIs enforce: every `tool_use` is answered by
/// exactly one `tool_result` in the next message, and no result is orphaned.
/// Returns a description of the first violation.
pub fn check_history(messages: &[Message]) -> Result<(), String> {
    for (index, message) in messages.iter().enumerate() {
        let wanted: Vec<&str> = message.tool_calls().map(|call| call.id).collect();
        let answered: Vec<&str> = messages
            .get(index + 1)
            .map(|next| {
                next.content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        if message.role == Role::Assistant && wanted != answered {
            return Err(format!(
                "message {index}: tool_use ids {wanted:?} answered by tool_result ids {answered:?}"
            ));
        }
        let has_results = message
            .content
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolResult { .. }));
        let follows_assistant =
            index > 0 && messages[index - 1].role == Role::Assistant && message.role == Role::User;
        if has_results && !follows_assistant {
            return Err(format!(
                "message {index}: tool_result without a preceding tool_use"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool_use(id: &str) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: "read_file".into(),
            input: json!({}),
            input_error: None,
        }
    }

    #[test]
    fn history_check_catches_a_missing_result() {
        let mut messages = vec![
            Message::user_text("hi"),
            Message::assistant(vec![tool_use("a"), tool_use("b")]),
        ];
        assert!(check_history(&messages).is_err());
        push_user_blocks(
            &mut messages,
            vec![ContentBlock::tool_result("a", "ok", false)],
        );
        assert!(check_history(&messages).is_err());
        push_user_blocks(
            &mut messages,
            vec![ContentBlock::tool_result("b", "ok", false)],
        );
        assert_eq!(check_history(&messages), Ok(()));
        assert_eq!(messages.len(), 3, "results join one user message");
    }

    #[test]
    fn repeated_tool_use_ids_are_renamed() {
        let history = vec![
            Message::user_text("hi"),
            Message::assistant(vec![tool_use("a")]),
            Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result("a", "ok", false)],
            },
        ];
        let mut message = Message::assistant(vec![
            tool_use("a"),
            tool_use("b"),
            tool_use("b"),
            tool_use(""),
            tool_use("b_2"),
        ]);
        make_tool_use_ids_unique(&history, &mut message);
        let ids: Vec<&str> = message.tool_calls().map(|call| call.id).collect();
        assert_eq!(ids, ["a_2", "b", "b_2", "toolu_2", "b_2_2"]);
    }

    #[test]
    fn blocks_round_trip_through_json() {
        let message = Message::assistant(vec![
            ContentBlock::Thinking {
                thinking: "hmm".into(),
                signature: "sig".into(),
            },
            tool_use("x"),
        ]);
        let text = serde_json::to_string(&message).unwrap();
        assert!(!text.contains("input_error"));
        let back: Message = serde_json::from_str(&text).unwrap();
        assert_eq!(back, message);
    }

    #[test]
    fn images_round_trip_and_old_tool_results_still_load() {
        let image = Image {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        };
        let message = Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "a".into(),
                    content: "shot".into(),
                    is_error: false,
                    images: vec![image.clone()],
                },
                ContentBlock::Image(image),
            ],
        };
        let text = serde_json::to_string(&message).unwrap();
        assert!(
            text.contains(r#"{"type":"image","media_type":"image/png""#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Message>(&text).unwrap(), message);
        // A session file written before images: no `images` field.
        let old = r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"ok"}]}"#;
        let old: Message = serde_json::from_str(old).unwrap();
        assert_eq!(old.content[0], ContentBlock::tool_result("a", "ok", false));
        let plain = serde_json::to_string(&old).unwrap();
        assert!(!plain.contains("images"), "{plain}");
    }

    #[test]
    fn images_are_refused_unless_plainly_acceptable() {
        let big = "A".repeat(MAX_IMAGE_BASE64 + 1);
        // (media type, data, refused)
        let cases = [
            ("image/png", "iVBORw0KGgo=", false),
            ("image/jpeg", "/9j/4AAQ", false),
            ("image/gif", "R0lGOD", false),
            ("image/webp", "UklGR+/=", false),
            ("image/svg+xml", "PHN2Zz4=", true),
            ("IMAGE/PNG", "iVBORw0KGgo=", true),
            ("image/png; x=1", "iVBORw0KGgo=", true),
            ("text/html", "PGh0bWw+", true),
            ("", "iVBORw0KGgo=", true),
            ("image/png", "", true),
            ("image/png", "not base64!", true),
            ("image/png", "iVBO\nRw0K", true),
            ("image/png", "data:image/png;base64,iVBO", true),
            ("image/png", big.as_str(), true),
        ];
        for (media_type, data, refused) in cases {
            let image = Image {
                media_type: media_type.into(),
                data: data.into(),
            };
            assert_eq!(
                image.refusal().is_some(),
                refused,
                "{media_type} {data:.40}"
            );
        }
    }
}
