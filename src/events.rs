//! What the user sees of a turn, as data. The loop emits events; a sink shows
//! them: a terminal, JSON lines, or (in the language server) the chat file and
//! `bareagent/event` notifications.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::history::Usage;

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        text: String,
    },
    ToolCall {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        id: String,
        name: String,
        content: String,
        is_error: bool,
    },
    /// Usage of one model call, and the turn's running total.
    Usage {
        call: Usage,
        total: Usage,
    },
    /// The provider failed to stream and the call was made again without streaming.
    StreamFallback {
        reason: String,
    },
    /// A prompt the user sent during the turn reaches the model now.
    UserMessage {
        text: String,
    },
    /// A file tool changed a file: the unified diff of what it wrote.
    /// `asked`: the user was shown this diff in a question and allowed it.
    FileChanged {
        path: String,
        diff: String,
        asked: bool,
    },
    /// The model's plan, as it just wrote it.
    Todos {
        todos: Vec<TodoItem>,
    },
    /// The history was compacted to fit the model's context window.
    Compacted {
        before_tokens: u64,
        after_tokens: u64,
        how: CompactHow,
    },
    /// A compaction failed; the history is as it was and the turn goes on.
    CompactionFailed {
        reason: String,
    },
}

/// How a compaction made room: old tool results shrunk to one-line stubs,
/// or the older part of the conversation summarised by the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactHow {
    ToolResults,
    Summary,
}

impl CompactHow {
    /// What a compaction did, in a few words for the user.
    pub fn describe(self, before_tokens: u64, after_tokens: u64) -> String {
        let how = match self {
            CompactHow::ToolResults => "old tool results shrunk",
            CompactHow::Summary => "older messages summarised",
        };
        format!("context compacted: about {before_tokens} → {after_tokens} tokens, {how}")
    }
}

/// Where a turn's events go: a terminal, JSON lines, the chat file.
///
/// Contract: `emit` is called in the order things happened, from the loop's
/// task, and must not block (a sink that writes slowly queues). It cannot
/// fail: what a sink cannot show is its own business, never the turn's.
#[warn(missing_docs)]
pub trait EventSink: Send + Sync {
    /// Shows one event.
    fn emit(&self, event: AgentEvent);
}

/// A sink that shows nothing: for sub-agents and tests that only want the result.
pub struct Discard;

impl EventSink for Discard {
    fn emit(&self, _event: AgentEvent) {}
}

/// One step of the model's plan (the `todo_write` tool's input, and what
/// the user sees).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    pub content: String,
    pub status: TodoStatus,
}
