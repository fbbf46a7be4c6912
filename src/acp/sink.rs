//! The loop's events as `session/update` notifications, sent in the order
//! they happen: text and thinking as `agent_message_chunk` and
//! `agent_thought_chunk`, each tool call as `tool_call` (kind, title,
//! locations) and `tool_call_update` (status, output, the diff of an
//! edit, the terminal of a command), the plan from `todo_write` as `plan`,
//! and each model call's context and cost as `usage_update`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Cost, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionId, SessionNotification, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use serde_json::Value;

use agent_client_protocol::UntypedMessage;

use super::Peer;
use super::calls::Calls;
use crate::events::{AgentEvent, EventSink, TodoStatus};

/// Characters of a tool's output shown in the panel (the model gets all).
const SHOWN_OUTPUT: usize = 4000;

pub struct ClientSink {
    pub peer: Peer,
    pub session: SessionId,
    pub root: PathBuf,
    pub calls: Arc<Calls>,
}

impl ClientSink {
    pub fn send(&self, update: SessionUpdate) {
        let notification = SessionNotification::new(self.session.clone(), update);
        if let Err(error) = self.peer.send_notification(notification) {
            tracing::debug!(%error, "cannot send session/update");
        }
    }

    /// Shows a new call, its status said even when `pending`: the schema
    /// leaves its default out, and a client that reads none shows none.
    pub fn show_call(&self, call: ToolCall) {
        let status = serde_json::to_value(call.status).unwrap_or_default();
        let notification =
            SessionNotification::new(self.session.clone(), SessionUpdate::ToolCall(call));
        let sent = serde_json::to_value(&notification)
            .map_err(agent_client_protocol::Error::from)
            .and_then(|mut params| {
                if let Some(update) = params.get_mut("update").and_then(Value::as_object_mut) {
                    update.entry("status").or_insert(status);
                }
                UntypedMessage::new("session/update", params)
            })
            .and_then(|message| self.peer.send_notification(message));
        if let Err(error) = sent {
            tracing::debug!(%error, "cannot send session/update");
        }
    }
}

/// A text as a chunk of the agent's message.
pub fn text_chunk(text: impl Into<String>) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

/// What the client shows for a tool: its kind (the icon).
pub fn kind_of(tool: &str) -> ToolKind {
    match tool {
        "read_file" | "diagnostics" => ToolKind::Read,
        "grep" | "glob" => ToolKind::Search,
        "edit_file" | "write_file" | "multi_edit" => ToolKind::Edit,
        "bash" | "bash_output" | "kill_bash" => ToolKind::Execute,
        "todo_write" | "task" => ToolKind::Think,
        "web_fetch" | "fetch" => ToolKind::Fetch,
        _ => ToolKind::Other,
    }
}

/// The call as the panel first shows it.
pub fn tool_call(root: &Path, id: &str, tool: &str, input: &Value) -> ToolCall {
    let brief = crate::tool_line::brief(input);
    let title = if brief.is_empty() {
        tool.to_string()
    } else {
        format!("{tool} {brief}")
    };
    let locations = input
        .get("path")
        .and_then(Value::as_str)
        .map(|path| {
            let path = Path::new(path);
            let mut location = ToolCallLocation::new(if path.is_absolute() {
                path.to_path_buf()
            } else {
                root.join(path)
            });
            location.line = input
                .get("offset")
                .and_then(Value::as_u64)
                .and_then(|line| u32::try_from(line).ok());
            vec![location]
        })
        .unwrap_or_default();
    ToolCall::new(id.to_string(), title)
        .kind(kind_of(tool))
        .status(ToolCallStatus::Pending)
        .locations(locations)
        .raw_input(input.clone())
}

/// An edit call's change as `diff` content, from what it asked: each
/// replaced text and its replacement, a written file's whole text. What a
/// stored session shows of its edits again (the files' texts then are not
/// in the history).
pub fn asked_diffs(root: &Path, tool: &str, input: &Value) -> Vec<ToolCallContent> {
    let Some(path) = input.get("path").and_then(Value::as_str) else {
        return Vec::new();
    };
    let path = root.join(path);
    let text =
        |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let replaced = |edit: &Value| -> Option<ToolCallContent> {
        let new = text(edit, "new_string")?;
        Some(
            Diff::new(path.clone(), new)
                .old_text(text(edit, "old_string"))
                .into(),
        )
    };
    match tool {
        "edit_file" => replaced(input).into_iter().collect(),
        "multi_edit" => input
            .get("edits")
            .and_then(Value::as_array)
            .map(|edits| edits.iter().filter_map(replaced).collect())
            .unwrap_or_default(),
        "write_file" => text(input, "content")
            .map(|content| Diff::new(path.clone(), content).into())
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// A tool's result as the panel's update of its call, after `kept`: what
/// the call showed that stays (the update's content replaces it).
pub fn tool_result(
    id: &str,
    kept: Vec<ToolCallContent>,
    content: &str,
    is_error: bool,
) -> ToolCallUpdate {
    let status = if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    let shown = crate::text::prefix(content, SHOWN_OUTPUT);
    let block: ToolCallContent = ContentBlock::Text(TextContent::new(shown)).into();
    let mut shown = kept;
    shown.push(block);
    ToolCallUpdate::new(
        id.to_string(),
        ToolCallUpdateFields::new().status(status).content(shown),
    )
}

impl EventSink for ClientSink {
    fn emit(&self, event: AgentEvent) {
        match event {
            AgentEvent::TextDelta { text } => {
                self.send(SessionUpdate::AgentMessageChunk(text_chunk(text)));
            }
            AgentEvent::ThinkingDelta { text } => {
                self.send(SessionUpdate::AgentThoughtChunk(text_chunk(text)));
            }
            AgentEvent::UserMessage { text } => {
                self.send(SessionUpdate::UserMessageChunk(text_chunk(text)));
            }
            AgentEvent::ToolCall { id, name, input } => {
                self.calls.opened(&id, &name, &input);
                self.show_call(tool_call(&self.root, &id, &name, &input));
            }
            AgentEvent::ToolResult {
                id,
                content,
                is_error,
                ..
            } => {
                // The terminal a command ran in and an edit's diffs stay in
                // the panel (the update's content replaces what it showed),
                // with the result after them.
                let kept = self.calls.closed(&id);
                self.send(SessionUpdate::ToolCallUpdate(tool_result(
                    &id, kept, &content, is_error,
                )));
            }
            AgentEvent::FileChanged { path, .. } => {
                let resolved = self.root.join(&path);
                let Some((before, after)) = self.calls.take_written(&resolved) else {
                    return;
                };
                let Some(id) = self.calls.find_editing(&path) else {
                    return;
                };
                let diff: ToolCallContent = Diff::new(resolved, after).old_text(before).into();
                let fields = ToolCallUpdateFields::new().content(self.calls.showed_diff(&id, diff));
                self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    id, fields,
                )));
            }
            // The files an MCP tool changed become its call's locations, so
            // a client that follows the agent can open them.
            AgentEvent::FileTouched { path, tool, .. } => {
                let resolved = self.root.join(&path);
                let Some((id, touched)) = self.calls.touched(&tool, &resolved) else {
                    return;
                };
                let locations: Vec<ToolCallLocation> =
                    touched.into_iter().map(ToolCallLocation::new).collect();
                let fields = ToolCallUpdateFields::new().locations(locations);
                self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    id, fields,
                )));
            }
            AgentEvent::Todos { todos } => {
                let entries = todos
                    .into_iter()
                    .map(|todo| {
                        let status = match todo.status {
                            TodoStatus::Pending => PlanEntryStatus::Pending,
                            TodoStatus::InProgress => PlanEntryStatus::InProgress,
                            TodoStatus::Completed => PlanEntryStatus::Completed,
                        };
                        PlanEntry::new(todo.content, PlanEntryPriority::Medium, status)
                    })
                    .collect();
                self.send(SessionUpdate::Plan(Plan::new(entries)));
            }
            AgentEvent::Usage { spend, .. } => {
                if let Some(size) = spend.context_window {
                    let mut usage = UsageUpdate::new(spend.context_tokens, size);
                    usage.cost = spend.cost_usd.map(|usd| Cost::new(usd, "USD"));
                    self.send(SessionUpdate::UsageUpdate(usage));
                }
            }
            AgentEvent::Compacted {
                before_tokens,
                after_tokens,
                how,
            } => {
                let line = how.describe(before_tokens, after_tokens);
                self.send(SessionUpdate::AgentThoughtChunk(text_chunk(format!(
                    "\n({line})\n"
                ))));
            }
            // As the client shows the agent's own words, set apart.
            AgentEvent::Notice { text } => {
                let text = text.strip_prefix("bareagent: ").unwrap_or(&text);
                self.send(SessionUpdate::AgentMessageChunk(text_chunk(format!(
                    "_{text}_\n\n"
                ))));
            }
            AgentEvent::CompactionFailed { .. } | AgentEvent::StreamFallback { .. } => {}
        }
    }
}
