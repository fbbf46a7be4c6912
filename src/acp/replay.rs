//! A stored session shown again (`session/load`): its history as the
//! `session/update` notifications a live turn would have sent — the
//! user's prompts (images included), the agent's text and thinking, each
//! tool call with its result, an edit with its diff.

use std::collections::HashMap;
use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock as AcpBlock, ContentChunk, ImageContent, SessionUpdate, ToolCallContent,
};

use super::sink::{ClientSink, asked_diffs, text_chunk, tool_call, tool_result};
use crate::agent::{ContentBlock, Message, Role};

pub fn replay(sink: &ClientSink, root: &Path, messages: &[Message]) {
    // By call id: an edit's diffs, which its result keeps showing.
    let mut diffs: HashMap<&str, Vec<ToolCallContent>> = HashMap::new();
    for message in messages {
        for block in &message.content {
            match (message.role, block) {
                (Role::User, ContentBlock::Text { text }) => {
                    sink.send(SessionUpdate::UserMessageChunk(text_chunk(text.clone())));
                }
                (_, ContentBlock::Image(image)) => {
                    let image = ImageContent::new(image.data.clone(), image.media_type.clone());
                    sink.send(SessionUpdate::UserMessageChunk(ContentChunk::new(
                        AcpBlock::Image(image),
                    )));
                }
                (Role::Assistant, ContentBlock::Text { text }) => {
                    sink.send(SessionUpdate::AgentMessageChunk(text_chunk(text.clone())));
                }
                (_, ContentBlock::Thinking { thinking, .. }) => {
                    sink.send(SessionUpdate::AgentThoughtChunk(text_chunk(
                        thinking.clone(),
                    )));
                }
                (
                    _,
                    ContentBlock::ToolUse {
                        id, name, input, ..
                    },
                ) => {
                    let asked = asked_diffs(root, name, input);
                    sink.show_call(tool_call(root, id, name, input).content(asked.clone()));
                    diffs.insert(id, asked);
                }
                (
                    _,
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                        ..
                    },
                ) => {
                    let kept = diffs.remove(tool_use_id.as_str()).unwrap_or_default();
                    sink.send(SessionUpdate::ToolCallUpdate(tool_result(
                        tool_use_id,
                        kept,
                        content,
                        *is_error,
                    )));
                }
                _ => {}
            }
        }
    }
}
