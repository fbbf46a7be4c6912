//! The agent loop, after the seed article: compact, call the model, return
//! if it asked for no tools, else run the tools and append their results —
//! and again, up to an iteration cap.
//!
//! Two rules hold whatever happens inside a turn:
//! - a tool call never fails the loop: an unknown tool, bad input, a denial,
//!   an error or even a panic in the handler becomes a `tool_result` with
//!   `is_error`, and the model decides what to do next;
//! - every `tool_use` gets exactly one `tool_result`, all of one response's
//!   results in one user message, so the history is always valid to send
//!   (repeated ids from the model are renamed first);
//! - no tool result carries the agent's own keys: each is scrubbed of them
//!   where it is made, before anything else sees it.
//!
//! The `messages` list is the only state. Callers may add to it between
//! turns, or through the [`Inbox`] during one; the loop holds nothing else.
//!
//! A turn ends with an answer only when there is one: an empty answer is an
//! error (and is left out of the history, which stays sendable), an answer
//! cut at the output limit is continued (a few times at most), and a prompt
//! the user sent while the model answered keeps the turn going.

use std::panic::AssertUnwindSafe;
use std::sync::Mutex;

use futures_util::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;

use super::Inbox;
use super::inbox::Arrival;
use crate::events::{AgentEvent, EventSink};
use crate::history::{ContentBlock, Message, ToolCall, make_tool_use_ids_unique, push_user_blocks};
use crate::permission::{ActionKind, PermissionGate};
use crate::provider::{Provider, ProviderError, Request, Response, StreamEvent, Usage};
use crate::secrets::Secrets;
use crate::tools::{BackgroundTasks, ReadLedger, ToolContext, ToolError, ToolRegistry};
use crate::workspace::Workspace;

#[derive(Clone, Debug)]
pub struct LoopConfig {
    pub system: String,
    /// Model calls per turn before the turn ends with an error.
    pub max_iterations: usize,
    pub max_tokens: u32,
    /// Stream responses (falling back to a plain call where streaming fails).
    pub stream: bool,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            system: String::new(),
            max_iterations: 200,
            max_tokens: 8192,
            stream: true,
        }
    }
}

/// Shrinks the history when it grows too large. Called before every model call.
pub trait Compactor: Send + Sync {
    fn compact(&self, messages: &mut Vec<Message>);
}

pub struct NoCompaction;

impl Compactor for NoCompaction {
    fn compact(&self, _messages: &mut Vec<Message>) {}
}

/// Everything a turn uses, borrowed: the loop owns nothing but its locals.
pub struct Agent<'a> {
    pub provider: &'a dyn Provider,
    pub tools: &'a ToolRegistry,
    pub gate: &'a PermissionGate,
    pub workspace: &'a dyn Workspace,
    pub sink: &'a dyn EventSink,
    pub compactor: &'a dyn Compactor,
    pub inbox: Option<&'a Inbox>,
    pub config: &'a LoopConfig,
    /// Cancels the model call and every running tool; the turn then ends
    /// with [`LoopError::Cancelled`] and a valid history.
    pub cancel: CancellationToken,
    /// Commands started with `run_in_background`, if this agent may start any.
    pub background: Option<&'a BackgroundTasks>,
    /// 0 for the user's agent, 1 for its sub-agents.
    pub depth: usize,
    /// Which version of each file the model has seen.
    pub reads: &'a ReadLedger,
    /// What confines the commands this agent runs.
    pub sandbox: &'a crate::sandbox::Sandbox,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TurnOutcome {
    /// The last assistant message's text.
    pub text: String,
    pub usage: Usage,
    pub iterations: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    #[error(
        "the turn reached its cap of {cap} iterations without a final answer; the history is intact, so a new message can let the agent go on"
    )]
    IterationCap { cap: usize },
    #[error("the turn was cancelled; the history is intact")]
    Cancelled,
    #[error(
        "the model's answer was cut at the output limit ({max_tokens} tokens) {times} times in a row; the history is intact: ask it to go on, or to answer in smaller pieces"
    )]
    Truncated { max_tokens: u32, times: usize },
    #[error(
        "the model returned an empty answer{}; the history is intact, so a new message can let the agent go on",
        if *.cut { " (it reached its output limit before writing any text)" } else { "" }
    )]
    EmptyAnswer { cut: bool },
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// The result every unanswered tool call gets when the turn is cancelled.
pub const CANCELLED: &str = "Cancelled by user";

/// Answers cut at the output limit that are continued before the turn ends
/// with [`LoopError::Truncated`]: enough for a long answer, bounded so a
/// model that never stops cannot spend without end.
pub const MAX_CONTINUATIONS: usize = 3;

/// What the model is told when its answer was cut at the output limit.
pub const CONTINUE: &str = "Your answer was cut off at the output token limit. Continue exactly where it stopped, without repeating anything.";

/// Read-only calls of one response that may run at the same time.
const MAX_PARALLEL_TOOLS: usize = 8;

/// Runs one turn: the model and its tools until the model answers without
/// asking for a tool. `messages` must end with the user's message (or tool
/// results); on return, success or error, it is a valid history.
pub async fn run_loop(
    agent: &Agent<'_>,
    messages: &mut Vec<Message>,
) -> Result<TurnOutcome, LoopError> {
    let mut usage = Usage::default();
    // The pieces of an answer cut at the output limit, joined as they come.
    let mut answer = String::new();
    let mut continuations = 0;
    for iteration in 1..=agent.config.max_iterations {
        if let Some(inbox) = agent.inbox {
            deliver(agent, inbox, messages);
        }
        agent.compactor.compact(messages);

        let request = Request {
            system: &agent.config.system,
            messages,
            tools: agent.tools.specs(),
            max_tokens: agent.config.max_tokens,
        };
        let response = tokio::select! {
            biased;
            _ = agent.cancel.cancelled() => return Err(LoopError::Cancelled),
            response = call_model(agent, request) => response?,
        };
        usage += response.usage;
        agent.sink.emit(AgentEvent::Usage {
            call: response.usage,
            total: usage,
        });

        let cut = response.stop_reason.as_deref() == Some("max_tokens");
        let mut assistant = response.into_message();
        make_tool_use_ids_unique(messages, &mut assistant);
        let asks_for_tools = assistant.tool_calls().next().is_some();
        if !asks_for_tools && assistant.text().trim().is_empty() {
            // Left out: an empty (or blank) assistant message would make the
            // history unsendable; without it, it still ends with the user's
            // message or the tool results, as it did before this call.
            return Err(LoopError::EmptyAnswer { cut });
        }
        messages.push(assistant.clone());
        let calls: Vec<ToolCall<'_>> = assistant.tool_calls().collect();
        if calls.is_empty() {
            answer.push_str(&assistant.text());
            if cut {
                if continuations == MAX_CONTINUATIONS {
                    return Err(LoopError::Truncated {
                        max_tokens: agent.config.max_tokens,
                        times: continuations + 1,
                    });
                }
                continuations += 1;
                tracing::info!(
                    continuations,
                    "the answer was cut at the output limit; asking the model to go on"
                );
                push_user_blocks(
                    messages,
                    vec![ContentBlock::Text {
                        text: CONTINUE.into(),
                    }],
                );
                continue;
            }
            // The user wrote while the model answered: the turn goes on with
            // their message, so it is answered now and in the order sent.
            if agent.inbox.is_some_and(Inbox::has_user_message) {
                answer.clear();
                continuations = 0;
                continue;
            }
            return Ok(TurnOutcome {
                text: answer,
                usage,
                iterations: iteration,
            });
        }
        answer.clear();
        continuations = 0;

        let spent_by_tools = Mutex::new(Usage::default());
        let results = run_tool_calls(agent, &calls, &spent_by_tools).await;
        messages.push(Message {
            role: super::Role::User,
            content: results,
        });
        let spent = spent_by_tools
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        if spent != Usage::default() {
            usage += spent;
            agent.sink.emit(AgentEvent::Usage {
                call: spent,
                total: usage,
            });
        }
        if agent.cancel.is_cancelled() {
            return Err(LoopError::Cancelled);
        }
    }
    Err(LoopError::IterationCap {
        cap: agent.config.max_iterations,
    })
}

/// Puts what arrived during the turn into the history, as user content. A
/// user's prompt is shown (an event) where it reaches the model.
fn deliver(agent: &Agent<'_>, inbox: &Inbox, messages: &mut Vec<Message>) {
    let arrived = inbox
        .drain()
        .into_iter()
        .map(|arrival| {
            let text = match arrival {
                Arrival::Notice(text) => text,
                Arrival::User(prompt) => {
                    agent.sink.emit(AgentEvent::UserMessage {
                        text: prompt.clone(),
                    });
                    format!("<user-message>\n{prompt}\n</user-message>")
                }
            };
            // Background notices carry command output: scrubbed like results.
            ContentBlock::Text {
                text: Secrets::global().scrub(&text).into_owned(),
            }
        })
        .collect();
    push_user_blocks(messages, arrived);
}

/// One model call. Streams when configured; falls back to `create` when the
/// provider cannot stream or the stream fails before anything was shown.
/// Once text has been shown, a failure is reported, never silently retried:
/// the user would see the answer start twice.
async fn call_model(agent: &Agent<'_>, request: Request<'_>) -> Result<Response, ProviderError> {
    if !agent.config.stream {
        return agent.provider.create(request).await;
    }
    let fall_back = |error: ProviderError| async move {
        tracing::warn!(%error, "streaming failed before any output; calling again without streaming");
        agent.sink.emit(AgentEvent::StreamFallback {
            reason: error.to_string(),
        });
        agent.provider.create(request).await
    };
    let mut stream = match agent.provider.stream(request).await {
        Ok(stream) => stream,
        Err(error) if error.allows_fallback() => return fall_back(error).await,
        Err(error) => return Err(error),
    };
    let mut shown = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(StreamEvent::Done(response)) => return Ok(response),
            Ok(StreamEvent::TextDelta(text)) => {
                shown = true;
                agent.sink.emit(AgentEvent::TextDelta { text });
            }
            Ok(StreamEvent::ThinkingDelta(text)) => {
                shown = true;
                agent.sink.emit(AgentEvent::ThinkingDelta { text });
            }
            Err(error) if shown => return Err(ProviderError::Interrupted(Box::new(error))),
            Err(error) => return fall_back(error).await,
        }
    }
    let ended = ProviderError::Stream {
        provider: agent.provider.name().to_string(),
        message: "the stream ended without a final response".into(),
    };
    if shown {
        Err(ProviderError::Interrupted(Box::new(ended)))
    } else {
        fall_back(ended).await
    }
}

/// Runs one response's tool calls and returns one result per call, in the
/// calls' order. Consecutive read-only calls run at the same time; any other
/// call runs alone, after the ones before it and before the ones after it.
async fn run_tool_calls(
    agent: &Agent<'_>,
    calls: &[ToolCall<'_>],
    spent: &Mutex<Usage>,
) -> Vec<ContentBlock> {
    let read_only = |call: &ToolCall<'_>| {
        agent
            .tools
            .get(call.name)
            .filter(|_| call.input_error.is_none())
            .and_then(|tool| tool.action(call.input, agent.workspace.paths()).ok())
            .is_some_and(|action| action.kind == ActionKind::Read)
    };
    let mut results = Vec::with_capacity(calls.len());
    let mut rest = calls;
    while let Some(first) = rest.first() {
        let batch = if read_only(first) {
            rest.iter().take_while(|c| read_only(c)).count()
        } else {
            1
        };
        let (now, later) = rest.split_at(batch);
        for chunk in now.chunks(MAX_PARALLEL_TOOLS) {
            // A plain loop, not a closure: closures here trip the compiler's
            // higher-ranked lifetime check once sub-agents recurse into the loop.
            let mut running = Vec::with_capacity(chunk.len());
            for call in chunk {
                running.push(run_tool_call(agent, *call, spent));
            }
            results.extend(futures_util::future::join_all(running).await);
        }
        rest = later;
    }
    results
}

/// Runs one tool call and always returns its `tool_result`.
async fn run_tool_call(
    agent: &Agent<'_>,
    call: ToolCall<'_>,
    spent: &Mutex<Usage>,
) -> ContentBlock {
    if agent.cancel.is_cancelled() {
        return ContentBlock::tool_result(call.id, CANCELLED, true);
    }
    agent.sink.emit(AgentEvent::ToolCall {
        id: call.id.to_string(),
        name: call.name.to_string(),
        input: call.input.clone(),
    });
    let outcome = tokio::select! {
        biased;
        _ = agent.cancel.cancelled() => Err(ToolError::NotRun(CANCELLED.to_string())),
        outcome = execute(agent, call, spent) => outcome,
    };
    let (content, is_error) = match outcome {
        Ok(output) => (output, false),
        Err(error) => (error.to_result_text(), true),
    };
    // The one place a tool result is made: whatever the tool printed, the
    // agent's own keys leave here only as `[redacted NAME]` — for the
    // model, the events (chat file, `--json`), the session and a recording.
    let content = Secrets::global().scrub(&content).into_owned();
    agent.sink.emit(AgentEvent::ToolResult {
        id: call.id.to_string(),
        name: call.name.to_string(),
        content: content.clone(),
        is_error,
    });
    ContentBlock::tool_result(call.id, content, is_error)
}

/// The steps of one call, each able to end it with an error.
async fn execute(
    agent: &Agent<'_>,
    call: ToolCall<'_>,
    spent: &Mutex<Usage>,
) -> Result<String, ToolError> {
    let tool = agent
        .tools
        .get(call.name)
        .ok_or_else(|| ToolError::UnknownTool(call.name.to_string()))?;
    if let Some(error) = call.input_error {
        return Err(ToolError::InvalidInput {
            tool: call.name.to_string(),
            reason: error.to_string(),
        });
    }
    let action = tool.action(call.input, agent.workspace.paths())?;
    let permit = crate::tools::permit(tool, call.input, &action, agent, spent).await?;
    let cx = ToolContext {
        agent,
        spent,
        approved: permit.approved(),
    };
    // A panicking tool is a bug, but it must not take the conversation down.
    match AssertUnwindSafe(tool.call(call.input.clone(), &cx))
        .catch_unwind()
        .await
    {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(error)) => Err(error),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            tracing::error!(tool = call.name, what, "tool panicked");
            Err(ToolError::Crashed {
                tool: call.name.to_string(),
                what: what.to_string(),
            })
        }
    }
}
