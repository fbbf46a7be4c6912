//! Compaction: keeping a long session inside the model's context window.
//!
//! Before every model call the loop measures the context
//! ([`super::context`]) and hands it to a [`Compactor`]. [`Compaction`], the
//! one that does something, acts when the context passes its threshold
//! (80 % of the window by default), when the user asked
//! ([`CompactRequest`]), or when the provider refused the last request as
//! too long. In two stages, the cheap one first:
//!
//! 1. **Old tool results shrink**: outside the last few exchanges (an
//!    assistant message and its results), a result becomes a one-line stub
//!    naming the tool, its arguments (clipped) and the size it had.
//! 2. **The older part is summarised**, if still over: one model call (the
//!    same provider, system prompt and tools, so it shares the cache) asks
//!    for the user's goals and constraints verbatim, decisions, files
//!    touched and why, the plan and todo list, open problems. The summary
//!    replaces everything before the last exchanges, which stay verbatim;
//!    the latest todo list is re-injected as written, not summarised.
//!
//! Architecture Invariant: compaction works on a copy and replaces the
//! history only when it succeeded, and only at an exchange boundary, so a
//! `tool_use` is never separated from its `tool_result` and a failed
//! summary leaves the history exactly as it was; the turn goes on.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde_json::Value;

use super::context::{context_window, estimate_fixed, estimate_messages};
use crate::events::{AgentEvent, CompactHow, EventSink};
use crate::history::{ContentBlock, Message, Role, push_user_blocks};
use crate::provider::{Provider, ProviderError, Reasoning, Request, ToolSpec};
use crate::sync::Locked;

/// The share of the window at which compaction starts, by default.
pub const DEFAULT_COMPACT_AT: f64 = 0.8;
/// Exchanges at the end of the history kept verbatim, by default.
pub const DEFAULT_KEEP_TURNS: usize = 3;

/// What a shrunk tool result begins with.
pub const STUB_PREFIX: &str = "[result shrunk to save context:";

/// What the model is asked for when the older part is summarised.
pub const SUMMARY_PROMPT: &str = "The conversation so far is about to be replaced by your summary of it, \
except the last few exchanges, which stay verbatim; you will go on working from the summary alone. \
Do not call any tools: answer with the summary only, under these headings.\n\
1. The user's goals and constraints: every request and constraint the user stated, quoted verbatim.\n\
2. Decisions made, and why.\n\
3. Files touched: each path, what was done to it (read, edited, created) and why.\n\
4. The current plan and todo list: what is done, what is in progress, what is left.\n\
5. Open problems: errors not yet fixed, questions not answered, what you were about to check.\n\
Be complete about the user's words and about paths; be brief about everything else.";

/// When compaction acts and what it keeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompactionSettings {
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Compact once the context passes this share of the window.
    pub compact_at: f64,
    /// Exchanges at the end kept verbatim.
    pub keep_turns: usize,
}

impl CompactionSettings {
    /// The defaults for `model`, its window from the built-in table, each
    /// overridden where the settings give one. A share outside (0, 1] is
    /// refused for the default, with a log line.
    pub fn for_model(model: &str, window: Option<u64>, compact_at: Option<f64>) -> Self {
        let compact_at = match compact_at {
            Some(share) if share > 0.0 && share <= 1.0 => share,
            Some(share) => {
                tracing::warn!(share, "compact_at must be above 0 and at most 1; using 0.8");
                DEFAULT_COMPACT_AT
            }
            None => DEFAULT_COMPACT_AT,
        };
        CompactionSettings {
            context_window: window
                .filter(|w| *w > 0)
                .unwrap_or_else(|| context_window(model)),
            compact_at,
            keep_turns: DEFAULT_KEEP_TURNS,
        }
    }

    /// The size, in tokens, above which the context is compacted.
    pub fn threshold(&self) -> u64 {
        (self.context_window as f64 * self.compact_at) as u64
    }
}

/// Why compaction is asked at this step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Before a model call: compact if over the threshold (or asked to).
    Step,
    /// The provider refused the request as too long: compact whatever the
    /// measure says (it was wrong).
    TooLong,
}

/// What a compactor is given: the context's size, and what a summary call
/// needs.
pub struct CompactStep<'a> {
    /// The context's size now, in tokens.
    pub tokens: u64,
    /// What every request carries besides the messages (system, tools), estimated.
    pub fixed_tokens: u64,
    pub trigger: Trigger,
    pub provider: &'a dyn Provider,
    pub system: &'a str,
    pub tools: &'a [ToolSpec],
    pub max_tokens: u32,
    /// The turn's, so the summary call asks as the turn's calls do.
    pub reasoning: Reasoning,
    /// Where the summary call's usage is counted.
    pub sink: &'a dyn EventSink,
    /// The user's agent (not a sub-agent): only it takes the user's request.
    pub main: bool,
}

/// What a compaction did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compacted {
    pub before_tokens: u64,
    pub after_tokens: u64,
    pub how: CompactHow,
    /// What the summary call used (nothing when no call was made): the
    /// session file records it with the compaction.
    pub usage: crate::history::Usage,
}

/// Why a compaction did not happen. The history is untouched in every case.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error("the summary call failed: {0}")]
    Summary(#[from] ProviderError),
    #[error("the model's summary was empty")]
    EmptySummary,
}

/// Shrinks the history when it grows too large. Called before every model
/// call, and once more when the provider refuses a request as too long.
///
/// Contract: `messages` is changed only on success (`Ok(Some(_))`), and
/// stays a valid history (`check_history`); on an error it is as it was.
#[async_trait]
pub trait Compactor: Send + Sync {
    async fn compact(
        &self,
        step: &CompactStep<'_>,
        messages: &mut Vec<Message>,
    ) -> Result<Option<Compacted>, CompactError>;
}

/// Never compacts: the sessions of tests that measure growth.
pub struct NoCompaction;

#[async_trait]
impl Compactor for NoCompaction {
    async fn compact(
        &self,
        _step: &CompactStep<'_>,
        _messages: &mut Vec<Message>,
    ) -> Result<Option<Compacted>, CompactError> {
        Ok(None)
    }
}

/// The user's "compact now" (`bareagent.compact`), shared between the
/// session that receives it and the compaction that acts at the next step.
#[derive(Clone, Debug, Default)]
pub struct CompactRequest(Arc<AtomicBool>);

impl CompactRequest {
    pub fn ask(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether it was asked, clearing it.
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}

/// The compactor: tool results first, then a summary.
pub struct Compaction {
    settings: CompactionSettings,
    request: CompactRequest,
    /// After a summary failed, or left the context over the threshold (the
    /// verbatim tail alone is too big), no new one — another paid call —
    /// until the context has grown to this size (a twentieth of the window
    /// more), or the user or the provider asks.
    no_summary_until: Mutex<Option<u64>>,
}

impl Compaction {
    pub fn new(settings: CompactionSettings) -> Self {
        Compaction {
            settings,
            request: CompactRequest::default(),
            no_summary_until: Mutex::default(),
        }
    }

    /// Takes the user's requests from `request`.
    pub fn with_request(mut self, request: CompactRequest) -> Self {
        self.request = request;
        self
    }

    /// Compacts `messages` now, outside a turn (`bareagent.compact` on an
    /// idle session): as at a turn's step the user asked at.
    pub async fn compact_idle(
        &self,
        provider: &dyn Provider,
        system: &str,
        tools: &[ToolSpec],
        (max_tokens, reasoning): (u32, Reasoning),
        sink: &dyn EventSink,
        messages: &mut Vec<Message>,
    ) -> Result<Option<Compacted>, CompactError> {
        self.request.ask();
        let fixed = estimate_fixed(system, tools);
        let step = CompactStep {
            tokens: fixed + estimate_messages(messages),
            fixed_tokens: fixed,
            trigger: Trigger::Step,
            provider,
            system,
            tools,
            max_tokens,
            reasoning,
            sink,
            main: true,
        };
        self.compact(&step, messages).await
    }

    fn may_summarise(&self, tokens: u64) -> bool {
        let until = *self.no_summary_until.locked();
        until.is_none_or(|until| tokens >= until)
    }

    /// No summary until the context has grown a little past `tokens`.
    fn hold_summaries(&self, tokens: Option<u64>) {
        let until = tokens.map(|tokens| tokens + self.settings.context_window / 20);
        *self.no_summary_until.locked() = until;
    }
}

#[async_trait]
impl Compactor for Compaction {
    async fn compact(
        &self,
        step: &CompactStep<'_>,
        messages: &mut Vec<Message>,
    ) -> Result<Option<Compacted>, CompactError> {
        let asked = step.trigger == Trigger::TooLong || (step.main && self.request.take());
        let threshold = self.settings.threshold();
        if !asked && step.tokens < threshold {
            return Ok(None);
        }
        let measure = |messages: &[Message]| step.fixed_tokens + estimate_messages(messages);
        let keep = self.settings.keep_turns;
        let mut work = messages.clone();
        let shrunk = shrink_tool_results(&mut work, keep);
        let done = |messages: &mut Vec<Message>, work: Vec<Message>, how, usage| {
            *messages = work;
            Some(Compacted {
                before_tokens: step.tokens,
                after_tokens: measure(messages),
                how,
                usage,
            })
        };
        let none = crate::history::Usage::default();
        if shrunk > 0 && !asked && measure(&work) < threshold {
            return Ok(done(messages, work, CompactHow::ToolResults, none));
        }
        if !asked && !self.may_summarise(step.tokens) {
            return Ok((shrunk > 0)
                .then(|| done(messages, work, CompactHow::ToolResults, none))
                .flatten());
        }
        match summarise(step, &work, keep).await {
            Ok(Some((summarised, usage))) => {
                let done = done(messages, summarised, CompactHow::Summary, usage);
                let still_over = done.filter(|done| done.after_tokens >= threshold);
                self.hold_summaries(still_over.map(|done| done.after_tokens));
                Ok(done)
            }
            // Too short to summarise: what shrinking did is all there is.
            Ok(None) if shrunk > 0 => Ok(done(messages, work, CompactHow::ToolResults, none)),
            Ok(None) => Ok(None),
            Err(error) => {
                self.hold_summaries(Some(step.tokens));
                Err(error)
            }
        }
    }
}

/// Where the verbatim tail begins: at the `keep`-th assistant message from
/// the end (an exchange boundary: the message before it is the user's).
/// `None` when there are no more exchanges than that.
fn tail_start(messages: &[Message], keep: usize) -> Option<usize> {
    let mut assistants = messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, message)| message.role == Role::Assistant)
        .map(|(index, _)| index);
    let start = assistants.nth(keep.max(1) - 1)?;
    // Something before it must be worth replacing.
    messages[..start]
        .iter()
        .any(|m| m.role == Role::Assistant)
        .then_some(start)
}

/// Replaces the tool results before the verbatim tail by stubs; returns
/// how many. A result already shrunk, or shorter than its stub, stays.
fn shrink_tool_results(messages: &mut [Message], keep: usize) -> usize {
    let Some(end) = tail_start(messages, keep) else {
        return 0;
    };
    let mut shrunk = 0;
    for index in 1..end {
        let (before, after) = messages.split_at_mut(index);
        let calls = &before[index - 1];
        for block in &mut after[0].content {
            let ContentBlock::ToolResult {
                tool_use_id,
                content,
                images,
                ..
            } = block
            else {
                continue;
            };
            if content.starts_with(STUB_PREFIX) {
                continue;
            }
            let call = calls.tool_calls().find(|call| call.id == tool_use_id);
            let (name, input) = call.map_or(("a tool", String::new()), |call| {
                (call.name, crate::text::clip(&call.input.to_string(), 120))
            });
            // A stub drops the result's images too: they are the bulk of
            // its tokens (see `context::IMAGE_TOKENS`).
            let pictures = match images.len() {
                0 => String::new(),
                1 => " and an image".to_string(),
                n => format!(" and {n} images"),
            };
            let stub = format!(
                "{STUB_PREFIX} {name} {input} returned {} bytes{pictures}; call it again if you need it]",
                content.len()
            );
            if stub.len() < content.len() || !images.is_empty() {
                *content = stub;
                images.clear();
                shrunk += 1;
            }
        }
    }
    shrunk
}

/// The history with everything before the verbatim tail replaced by the
/// model's summary of it (and the latest todo list), with the summary
/// call's usage; `None` when there is too little to summarise.
async fn summarise(
    step: &CompactStep<'_>,
    messages: &[Message],
    keep: usize,
) -> Result<Option<(Vec<Message>, crate::history::Usage)>, CompactError> {
    let Some(start) = tail_start(messages, keep) else {
        return Ok(None);
    };
    let mut asked = messages[..start].to_vec();
    push_user_blocks(
        &mut asked,
        vec![ContentBlock::Text {
            text: SUMMARY_PROMPT.into(),
        }],
    );
    let request = Request {
        system: step.system,
        messages: &asked,
        tools: step.tools,
        max_tokens: step.max_tokens,
        reasoning: step.reasoning,
    };
    let response = step.provider.create(request).await?;
    // Through the loop's usage tally (the step's sink), which adds it to
    // the turn's total and prices it.
    step.sink.emit(AgentEvent::Usage {
        call: response.usage,
        total: response.usage,
        call_cost_usd: None,
        spend: crate::events::Spend::default(),
    });
    let usage = response.usage;
    let summary = response.into_message().text();
    if summary.trim().is_empty() {
        return Err(CompactError::EmptySummary);
    }
    let mut text = format!(
        "<conversation-summary>\nThe conversation before this point was summarised to fit the model's context window; what follows it is verbatim.\n\n{}\n</conversation-summary>",
        summary.trim()
    );
    if let Some(todos) = latest_todos(&messages[..start]) {
        text.push_str(&format!(
            "\n\n<todos>\nYour todo list as you last wrote it (todo_write):\n{todos}\n</todos>"
        ));
    }
    let mut compacted = vec![Message::user_text(text)];
    compacted.extend_from_slice(&messages[start..]);
    Ok(Some((compacted, usage)))
}

/// The todo list of the last `todo_write` call, as JSON.
fn latest_todos(messages: &[Message]) -> Option<String> {
    let call = messages
        .iter()
        .rev()
        .flat_map(|m| m.tool_calls().collect::<Vec<_>>().into_iter().rev())
        .find(|call| call.name == "todo_write")?;
    let todos = call.input.get("todos").unwrap_or(&Value::Null);
    serde_json::to_string_pretty(todos).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::check_history;
    use serde_json::json;

    fn exchange(n: usize, output: &str) -> [Message; 2] {
        let id = format!("t{n}");
        [
            Message::assistant(vec![ContentBlock::ToolUse {
                id: id.clone(),
                name: "read_file".into(),
                input: json!({"path": format!("f{n}.txt")}),
                input_error: None,
            }]),
            Message {
                role: Role::User,
                content: vec![ContentBlock::tool_result(&id, output, false)],
            },
        ]
    }

    #[test]
    fn old_results_shrink_and_the_last_exchanges_stay_verbatim() {
        let big = "x".repeat(5000);
        let mut messages = vec![Message::user_text("go")];
        for n in 0..6 {
            messages.extend(exchange(n, &big));
        }
        let before = messages.clone();
        assert_eq!(shrink_tool_results(&mut messages, 3), 3);
        assert_eq!(check_history(&messages), Ok(()));
        assert_eq!(
            messages[7..],
            before[7..],
            "the last 3 exchanges are verbatim"
        );
        let ContentBlock::ToolResult { content, .. } = &messages[2].content[0] else {
            panic!("a result");
        };
        assert_eq!(
            content,
            "[result shrunk to save context: read_file {\"path\":\"f0.txt\"} returned 5000 bytes; call it again if you need it]"
        );
        assert_eq!(shrink_tool_results(&mut messages, 3), 0, "once only");
    }

    #[test]
    fn an_old_result_with_a_short_text_and_an_image_is_stubbed_without_it() {
        let mut messages = vec![Message::user_text("go")];
        for n in 0..4 {
            messages.extend(exchange(n, "ok"));
        }
        let image = crate::history::Image {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        };
        let ContentBlock::ToolResult { images, .. } = &mut messages[2].content[0] else {
            panic!("a result");
        };
        images.push(image);
        assert_eq!(
            shrink_tool_results(&mut messages, 3),
            1,
            "only the one with an image"
        );
        let ContentBlock::ToolResult {
            content, images, ..
        } = &messages[2].content[0]
        else {
            panic!("a result");
        };
        assert!(images.is_empty());
        assert!(
            content.contains("returned 2 bytes and an image"),
            "{content}"
        );
        assert_eq!(check_history(&messages), Ok(()));
    }

    #[test]
    fn the_tail_starts_at_an_exchange_with_something_before_it() {
        let mut messages = vec![Message::user_text("go")];
        assert_eq!(tail_start(&messages, 3), None);
        for n in 0..3 {
            messages.extend(exchange(n, "ok"));
        }
        assert_eq!(tail_start(&messages, 3), None, "nothing before the tail");
        messages.extend(exchange(3, "ok"));
        assert_eq!(tail_start(&messages, 3), Some(3));
    }
}
