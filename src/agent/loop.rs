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

use futures_util::{FutureExt, StreamExt};

use super::compact::Trigger;
use super::compacting::compact_now;
use super::context::{ContextMeter, estimate_fixed};
use super::parts::Agent;
use super::permit::permit;
use super::usage::UsageTally;
use crate::events::AgentEvent;
use crate::history::{ContentBlock, Message, ToolCall, make_tool_use_ids_unique};
use crate::inbox::{Arrival, Inbox};
use crate::provider::{ProviderError, Request, Response, StreamEvent, Usage};
use crate::secrets::Secrets;
use crate::session_files::Entry;
use std::sync::OnceLock;

use crate::tools::{PreparedCall, ToolError, ToolOutput};

pub use super::parts::LoopConfig;

#[derive(Clone, Debug, PartialEq)]
pub struct TurnOutcome {
    /// The last assistant message's text.
    pub text: String,
    pub usage: Usage,
    pub iterations: usize,
    /// The model declined to answer (Anthropic's `stop_reason: "refusal"`);
    /// `text` is what it wrote before it stopped, if anything.
    pub refused: bool,
}

/// Why a turn ended without a final answer. In every case the history is
/// valid and can be continued: a tool call never fails the loop (its error
/// is a `tool_result`), so these are the only ways a turn fails.
#[warn(missing_docs)]
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// `max_iterations` model calls, and the model still called tools.
    #[error(
        "the turn reached its cap of {} without a final answer; the history is intact, so a new message can let the agent go on",
        crate::text::count(*.cap, "iteration")
    )]
    IterationCap {
        /// The cap that was reached.
        cap: usize,
    },
    /// The user cancelled; unanswered tool calls got [`CANCELLED`].
    #[error("the turn was cancelled; the history is intact")]
    Cancelled,
    /// The answer was cut at the output limit after every continuation.
    #[error(
        "the model's answer was cut at the output limit ({max_tokens} tokens) {times} times in a row; the history is intact: ask it to go on, or to answer in smaller pieces"
    )]
    Truncated {
        /// The output limit each call had.
        max_tokens: u32,
        /// How many answers in a row were cut.
        times: usize,
    },
    /// The model answered with nothing (no text, no tool call).
    #[error(
        "the model returned an empty answer{}; the history is intact, so a new message can let the agent go on",
        if *.cut { " (it reached its output limit before writing any text)" } else { "" }
    )]
    EmptyAnswer {
        /// It stopped at the output limit before writing anything.
        cut: bool,
    },
    /// The provider refused the request as too long even after compaction.
    #[error(
        "the conversation does not fit the model's context window, even after compacting it ({0}); the history is intact: start a new session to go on"
    )]
    ContextFull(ProviderError),
    /// The model call failed after the provider's retries.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The session could not be made ready for the turn (its gate or its
    /// sandbox, from the settings): no model was asked.
    #[error("the session cannot run a turn: {0}")]
    Setup(String),
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
    // Every event of the turn passes the tally, so a sub-agent's usage,
    // which arrives as events through the tools' sink, is counted with ours.
    let usage = UsageTally::new(agent.sink, agent.config);
    let agent = &agent.reporting_to(&usage);
    // The pieces of an answer cut at the output limit, joined as they come.
    let mut answer = String::new();
    let mut continuations = 0;
    let mut meter = ContextMeter::new(estimate_fixed(&agent.config.system, agent.tools.specs()));
    // Tools that join after the first call (MCP servers still starting),
    // and the registry with them once they have.
    let mut joining = agent.joining;
    let joined = OnceLock::new();
    for iteration in 1..=agent.config.max_iterations {
        if iteration > 1 {
            join_tools(agent, &mut joining, &joined).await?;
        }
        let with_joined;
        let agent = match joined.get() {
            Some(tools) => {
                with_joined = agent.using_tools(tools);
                &with_joined
            }
            None => agent,
        };
        if let Some(inbox) = agent.inbox {
            deliver(agent, inbox, messages);
        }
        compact_now(agent, messages, &mut meter, Trigger::Step).await;

        let response = tokio::select! {
            biased;
            _ = agent.cancel.cancelled() => return Err(LoopError::Cancelled),
            response = call_model(agent, request(agent, messages)) => response,
        };
        // Refused as too long: compact and try once more; refused again
        // (or nothing left to compact), the turn ends saying so.
        let response = match response {
            Err(error @ ProviderError::ContextTooLong { .. }) => {
                tracing::warn!(%error, "the provider refused the request as too long; compacting");
                if !compact_now(agent, messages, &mut meter, Trigger::TooLong).await {
                    return Err(LoopError::ContextFull(error));
                }
                tokio::select! {
                    biased;
                    _ = agent.cancel.cancelled() => return Err(LoopError::Cancelled),
                    response = call_model(agent, request(agent, messages)) => match response {
                        Err(error @ ProviderError::ContextTooLong { .. }) => {
                            return Err(LoopError::ContextFull(error));
                        }
                        response => response?,
                    },
                }
            }
            response => response?,
        };
        usage.add(response.usage, true);
        agent.session_log.record(Entry::Usage {
            usage: response.usage,
            cost_usd: agent.config.price.map(|price| price.cost(&response.usage)),
        });
        let call_usage = response.usage;

        let cut = response.stop_reason.as_deref() == Some("max_tokens");
        let refused = response.stop_reason.as_deref() == Some("refusal");
        let mut assistant = response.into_message();
        if refused {
            // A refused answer ends the turn: its text is kept (what the
            // model wrote before it stopped), a tool call it began is not
            // run, and nothing is appended when no text is left, so the
            // history stays valid (it ends with the user's message).
            assistant
                .content
                .retain(|block| matches!(block, ContentBlock::Text { text } if !text.is_empty()));
            tracing::info!("the model refused to answer");
            answer.push_str(&assistant.text());
            if !assistant.content.is_empty() {
                append(agent, messages, assistant);
            }
            return Ok(TurnOutcome {
                text: answer,
                usage: usage.total(),
                iterations: iteration,
                refused: true,
            });
        }
        make_tool_use_ids_unique(messages, &mut assistant);
        let asks_for_tools = assistant.tool_calls().next().is_some();
        if !asks_for_tools && assistant.text().trim().is_empty() {
            // Left out: an empty (or blank) assistant message would make the
            // history unsendable; without it, it still ends with the user's
            // message or the tool results, as it did before this call.
            return Err(LoopError::EmptyAnswer { cut });
        }
        append(agent, messages, assistant.clone());
        meter.observe(call_usage, messages.len());
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
                append(agent, messages, Message::user_text(CONTINUE));
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
                usage: usage.total(),
                iterations: iteration,
                refused: false,
            });
        }
        answer.clear();
        continuations = 0;

        // A call of a tool still on its way waits for it, not the next turn.
        let with_joined;
        let agent = match calls
            .iter()
            .any(|call| agent.tools.get(call.name).is_none())
        {
            true if joining.is_some() => {
                // Cancelled while waiting: the calls are answered below
                // (every one gets CANCELLED), so the history stays valid.
                let _ = join_tools(agent, &mut joining, &joined).await;
                match joined.get() {
                    Some(tools) => {
                        with_joined = agent.using_tools(tools);
                        &with_joined
                    }
                    None => agent,
                }
            }
            _ => agent,
        };
        let results = run_tool_calls(agent, &calls).await;
        let results = Message {
            role: super::Role::User,
            content: results,
        };
        append(agent, messages, results);
        if agent.cancel.is_cancelled() {
            return Err(LoopError::Cancelled);
        }
    }
    Err(LoopError::IterationCap {
        cap: agent.config.max_iterations,
    })
}

/// Waits for the tools still on their way, once: afterwards `joined`
/// holds the registry with them, unless none came.
async fn join_tools(
    agent: &Agent<'_>,
    joining: &mut Option<&dyn super::JoiningTools>,
    joined: &OnceLock<crate::tools::ToolRegistry>,
) -> Result<(), LoopError> {
    let Some(late) = joining.take() else {
        return Ok(());
    };
    let tools = tokio::select! {
        biased;
        _ = agent.cancel.cancelled() => return Err(LoopError::Cancelled),
        tools = late.join() => tools,
    };
    if let Some(tools) = tools {
        let _ = joined.set(tools);
    }
    Ok(())
}

/// The model call for the history as it stands.
fn request<'a>(agent: &'a Agent<'_>, messages: &'a [Message]) -> Request<'a> {
    Request {
        system: &agent.config.system,
        messages,
        tools: agent.tools.specs(),
        max_tokens: agent.config.max_tokens,
        reasoning: agent.config.reasoning,
    }
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
    let arrived = Message {
        role: super::Role::User,
        content: arrived,
    };
    append(agent, messages, arrived);
}

/// The one way the loop adds to the history: the transcript (the session
/// file) is told each message as it joins.
fn append(agent: &Agent<'_>, messages: &mut Vec<Message>, message: Message) {
    crate::session_files::append(messages, message, agent.transcript);
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
        // The sink says it (StreamFallback): a warning would say it twice.
        tracing::info!(%error, "streaming failed before any output; calling again without streaming");
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
///
/// Each call is parsed and its paths resolved once, just before its batch
/// runs — after the calls before it have run, since what they did (a link
/// made, a directory moved) can change what a path means. A read-only batch
/// changes nothing, so the call that ends it is prepared with it.
async fn run_tool_calls(agent: &Agent<'_>, calls: &[ToolCall<'_>]) -> Vec<ContentBlock> {
    let mut results = Vec::with_capacity(calls.len());
    // Lazy: a call is prepared when it is pulled, never earlier.
    let mut calls = calls.iter().map(|call| (*call, prepare(agent, call)));
    let mut pending = None;
    while let Some(first) = pending.take().or_else(|| calls.next()) {
        let mut batch = vec![first];
        if batch[0].1.as_ref().is_ok_and(PreparedCall::is_read_only) {
            for call in calls.by_ref() {
                if call.1.as_ref().is_ok_and(PreparedCall::is_read_only) {
                    batch.push(call);
                } else {
                    pending = Some(call);
                    break;
                }
            }
        }
        while !batch.is_empty() {
            let rest = batch.split_off(batch.len().min(MAX_PARALLEL_TOOLS));
            // A plain loop, not a closure: closures here trip the compiler's
            // higher-ranked lifetime check once sub-agents recurse into the loop.
            let mut running = Vec::with_capacity(batch.len());
            for (call, prepared) in batch {
                running.push(run_tool_call(agent, call, prepared));
            }
            results.extend(futures_util::future::join_all(running).await);
            batch = rest;
        }
    }
    results
}

/// Finds the tool and parses the input: the one parse of this call.
fn prepare<'t>(agent: &Agent<'t>, call: &ToolCall<'_>) -> Result<PreparedCall<'t>, ToolError> {
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
    tool.prepare(call.input, agent.workspace.paths())
}

/// Runs one tool call and always returns its `tool_result`.
async fn run_tool_call(
    agent: &Agent<'_>,
    call: ToolCall<'_>,
    prepared: Result<PreparedCall<'_>, ToolError>,
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
        outcome = execute(agent, call.name, prepared) => outcome,
    };
    let (content, is_error, images) = match outcome {
        Ok(output) => (output.text, false, output.images),
        Err(error) => (error.to_result_text(), true, Vec::new()),
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
    ContentBlock::ToolResult {
        tool_use_id: call.id.to_string(),
        content,
        is_error,
        images,
    }
}

/// The steps of one call, each able to end it with an error.
async fn execute(
    agent: &Agent<'_>,
    name: &str,
    prepared: Result<PreparedCall<'_>, ToolError>,
) -> Result<ToolOutput, ToolError> {
    let call = prepared?;
    let permit = permit(agent, &call).await?;
    let cx = agent.tool_context(permit.approved());
    // A panicking tool is a bug, but it must not take the conversation down.
    match AssertUnwindSafe(call.run(&cx)).catch_unwind().await {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(error)) => Err(error),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            tracing::error!(tool = name, what, "tool panicked");
            Err(ToolError::Crashed {
                tool: name.to_string(),
                what: what.to_string(),
            })
        }
    }
}
