//! What the user sees of a turn, as data. The loop emits events; a sink shows
//! them: a terminal, JSON lines, or (in the language server) the chat file and
//! `bareagent/event` notifications.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::history::Usage;
use crate::workspace::Touch;

#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
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
    /// Usage of one model call, and the turn's running total, with what
    /// they cost and how full the context is (see [`Spend`]).
    Usage {
        call: Usage,
        total: Usage,
        /// The call's cost in USD; `None` when the model has no price.
        call_cost_usd: Option<f64>,
        #[serde(flatten)]
        spend: Spend,
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
    /// A file was created, modified or deleted while a tool we cannot see
    /// into (an MCP server's) ran: seen by looking at the workspace before
    /// and after it. No diff: what the file held before is not known.
    FileTouched {
        path: String,
        /// The tool's name, as the model called it.
        tool: String,
        how: Touch,
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
    /// A line for the user between the turn's events: a model call tried
    /// again, the sandbox not enforced, an instruction file not read.
    Notice {
        text: String,
    },
}

/// How a compaction made room: old tool results shrunk to one-line stubs,
/// or the older part of the conversation summarised by the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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

/// What tokens cost so far (a turn's, or a session's), and how full the
/// context of the last model call was.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Spend {
    /// USD; `None` when some call's model has no price (unknown, never 0).
    pub cost_usd: Option<f64>,
    /// The last call's prompt (input, cache write and cache read) and
    /// answer: what the next call starts from.
    pub context_tokens: u64,
    /// The model's context window, if known.
    pub context_window: Option<u64>,
    /// `context_tokens` as a percentage of the window, if known.
    pub context_percent: Option<f64>,
}

impl Default for Spend {
    /// Nothing spent yet: zero dollars, an empty context.
    fn default() -> Self {
        Spend {
            cost_usd: Some(0.0),
            context_tokens: 0,
            context_window: None,
            context_percent: None,
        }
    }
}

impl Spend {
    /// This spend followed by `later`'s: costs add (unknown stays unknown),
    /// the context is the later one's, unless it made no call.
    pub fn then(&self, later: &Spend) -> Spend {
        let context = if later.context_tokens == 0 {
            self
        } else {
            later
        };
        Spend {
            cost_usd: self
                .cost_usd
                .zip(later.cost_usd)
                .map(|(a, b)| round_usd(a + b)),
            ..*context
        }
    }

    /// The context of `call`, the last call made, in a window of `window`.
    pub fn with_context(mut self, call: &Usage, window: Option<u64>) -> Spend {
        self.context_tokens = call.input_tokens
            + call.cache_creation_input_tokens
            + call.cache_read_input_tokens
            + call.output_tokens;
        self.context_window = window;
        self.context_percent = window
            .filter(|w| *w > 0)
            .map(|w| self.context_tokens as f64 * 100.0 / w as f64);
        self
    }
}

/// USD to the nano-dollar: sums of prices with a few decimals stay the
/// figures a person works out (0.000315, not 0.00031499999999999996).
pub fn round_usd(usd: f64) -> f64 {
    (usd * 1e9).round() / 1e9
}

/// One line for people: `1,200 in · 300 cache write · 5,000 cache read ·
/// 400 out · $0.0123 · context 3% of 200k`. Both front ends show this.
pub fn usage_line(usage: &Usage, spend: &Spend) -> String {
    let cost = match spend.cost_usd {
        Some(usd) => format!("${usd:.4}"),
        None => "cost unknown (no price for this model: add [prices.\"MODEL\"] to config.toml)"
            .to_string(),
    };
    // Of the output, the tokens spent thinking, where the API counts them.
    let reasoning = match usage.reasoning_tokens {
        0 => String::new(),
        tokens => format!(" ({} reasoning)", thousands(tokens)),
    };
    let mut line = format!(
        "{} in · {} cache write · {} cache read · {} out{reasoning} · {cost}",
        thousands(usage.input_tokens),
        thousands(usage.cache_creation_input_tokens),
        thousands(usage.cache_read_input_tokens),
        thousands(usage.output_tokens),
    );
    match (spend.context_percent, spend.context_window) {
        (Some(percent), Some(window)) => {
            line.push_str(&format!(" · context {percent:.1}% of {}k", window / 1000))
        }
        _ if spend.context_tokens > 0 => line.push_str(&format!(
            " · context {} tokens (window unknown)",
            thousands(spend.context_tokens)
        )),
        _ => {}
    }
    line
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
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

    /// A command the `bash` tool runs started (an empty `chunk`, once) or
    /// wrote `chunk` (stdout and stderr as they came, lossy UTF-8), before
    /// its `ToolResult`, which carries the output the model sees. Not an
    /// event: it is for a live view (the terminal's), never recorded or
    /// sent. A sink that passes events on passes this on too.
    fn command_output(&self, _chunk: &str) {}
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spends_add_up_and_unknown_stays_unknown() {
        let known = Spend {
            cost_usd: Some(0.5),
            ..Spend::default()
        };
        let unknown = Spend {
            cost_usd: None,
            context_tokens: 10,
            ..Spend::default()
        };
        assert_eq!(known.then(&known).cost_usd, Some(1.0));
        assert_eq!(known.then(&unknown).cost_usd, None);
        assert_eq!(unknown.then(&known).cost_usd, None);
        assert_eq!(unknown.then(&Spend::default()).context_tokens, 10);
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }
}
