//! The agent loop, after the seed article: compact, call the model, return
//! if it asked for no tools, else run the tools and append their results —
//! and again, up to an iteration cap.
//!
//! Two rules hold whatever happens inside a turn:
//! - a tool call never fails the loop: an unknown tool, bad input, a denial,
//!   an error or even a panic in the handler becomes a `tool_result` with
//!   `is_error`, and the model decides what to do next;
//! - every `tool_use` gets exactly one `tool_result`, all of one response's
//!   results in one user message, so the history is always valid to send.
//!
//! The `messages` list is the only state. Callers may add to it between
//! turns, or through the [`Inbox`] during one; the loop holds nothing else.

use std::panic::AssertUnwindSafe;

use futures_util::{FutureExt, StreamExt};

use super::Inbox;
use super::message::{ContentBlock, Message, ToolCall, push_user_blocks};
use crate::events::{AgentEvent, EventSink};
use crate::permission::{Decision, PermissionGate};
use crate::provider::{Provider, ProviderError, Request, Response, StreamEvent, Usage};
use crate::tools::{ToolContext, ToolRegistry};
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
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// Runs one turn: the model and its tools until the model answers without
/// asking for a tool. `messages` must end with the user's message (or tool
/// results); on return, success or error, it is a valid history.
pub async fn run_loop(
    agent: &Agent<'_>,
    messages: &mut Vec<Message>,
) -> Result<TurnOutcome, LoopError> {
    let mut usage = Usage::default();
    for iteration in 1..=agent.config.max_iterations {
        if let Some(inbox) = agent.inbox {
            let arrived = inbox
                .drain()
                .into_iter()
                .map(|text| ContentBlock::Text { text })
                .collect();
            push_user_blocks(messages, arrived);
        }
        agent.compactor.compact(messages);

        let request = Request {
            system: &agent.config.system,
            messages,
            tools: agent.tools.specs(),
            max_tokens: agent.config.max_tokens,
        };
        let response = call_model(agent, request).await?;
        usage += response.usage;
        agent.sink.emit(AgentEvent::Usage {
            call: response.usage,
            total: usage,
        });

        let assistant = response.into_message();
        if assistant.content.is_empty() {
            // An empty assistant message would make the history unsendable.
            return Ok(TurnOutcome {
                text: String::new(),
                usage,
                iterations: iteration,
            });
        }
        messages.push(assistant.clone());
        let calls: Vec<ToolCall<'_>> = assistant.tool_calls().collect();
        if calls.is_empty() {
            return Ok(TurnOutcome {
                text: assistant.text(),
                usage,
                iterations: iteration,
            });
        }

        let mut results = Vec::with_capacity(calls.len());
        for call in calls {
            results.push(run_tool_call(agent, call).await);
        }
        messages.push(Message {
            role: super::Role::User,
            content: results,
        });
    }
    Err(LoopError::IterationCap {
        cap: agent.config.max_iterations,
    })
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

/// Runs one tool call and always returns its `tool_result`.
async fn run_tool_call(agent: &Agent<'_>, call: ToolCall<'_>) -> ContentBlock {
    agent.sink.emit(AgentEvent::ToolCall {
        id: call.id.to_string(),
        name: call.name.to_string(),
        input: call.input.clone(),
    });
    let (content, is_error) = match execute(agent, call).await {
        Ok(output) => (output, false),
        Err(message) => (message, true),
    };
    agent.sink.emit(AgentEvent::ToolResult {
        id: call.id.to_string(),
        name: call.name.to_string(),
        content: content.clone(),
        is_error,
    });
    ContentBlock::tool_result(call.id, content, is_error)
}

/// The steps of one call, each able to end it with an error text.
async fn execute(agent: &Agent<'_>, call: ToolCall<'_>) -> Result<String, String> {
    let tool = agent
        .tools
        .get(call.name)
        .ok_or_else(|| format!("Unknown tool: {}", call.name))?;
    if let Some(error) = call.input_error {
        return Err(format!("Invalid input for {}: {error}", call.name));
    }
    let action = tool.action(call.input)?;
    if let Decision::Deny(reason) = agent.gate.check(&action).await {
        return Err(reason);
    }
    let cx = ToolContext {
        workspace: agent.workspace,
    };
    // A panicking tool is a bug, but it must not take the conversation down.
    match AssertUnwindSafe(tool.call(call.input.clone(), &cx))
        .catch_unwind()
        .await
    {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(error)) => Err(format!("Error: {error}")),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            tracing::error!(tool = call.name, what, "tool panicked");
            Err(format!("Error: the {} tool crashed: {what}", call.name))
        }
    }
}
