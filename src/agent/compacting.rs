//! Where the loop compacts: before each model call, and once more when the
//! provider refused a request as too long. It measures the context, asks
//! the agent's [`Compactor`](super::compact::Compactor), and says what
//! happened — an event, and for a failure a log line too, after which the
//! turn goes on with the history as it was.

use super::compact::{CompactStep, Trigger};
use super::context::ContextMeter;
use super::parts::Agent;
use crate::events::AgentEvent;
use crate::history::Message;
use crate::session_files::Entry;

/// The loop's compaction point. Returns whether the history changed.
pub(super) async fn compact_now(
    agent: &Agent<'_>,
    messages: &mut Vec<Message>,
    meter: &mut ContextMeter,
    trigger: Trigger,
) -> bool {
    let step = CompactStep {
        tokens: meter.tokens(messages),
        fixed_tokens: meter.fixed(),
        trigger,
        provider: agent.provider,
        system: &agent.config.system,
        tools: agent.tools.specs(),
        max_tokens: agent.config.max_tokens,
        reasoning: agent.config.reasoning,
        sink: agent.sink,
        main: agent.depth == 0,
    };
    let outcome = tokio::select! {
        biased;
        // A cancelled summary leaves the history as it was.
        _ = agent.cancel.cancelled() => return false,
        outcome = agent.compactor.compact(&step, messages) => outcome,
    };
    match outcome {
        Ok(Some(done)) => {
            tracing::info!(
                before = done.before_tokens,
                after = done.after_tokens,
                how = ?done.how,
                "compacted the history"
            );
            meter.forget();
            // The session file takes the new history whole: a resume
            // starts from it, not from what it replaced.
            if done.usage != crate::history::Usage::default() {
                agent.session_log.record(Entry::Usage {
                    usage: done.usage,
                    cost_usd: agent.config.price.map(|price| price.cost(&done.usage)),
                });
            }
            agent.transcript.record(Entry::Compaction {
                before_tokens: done.before_tokens,
                after_tokens: done.after_tokens,
                messages,
            });
            agent.sink.emit(AgentEvent::Compacted {
                before_tokens: done.before_tokens,
                after_tokens: done.after_tokens,
                how: done.how,
            });
            true
        }
        Ok(None) => false,
        Err(error) => {
            tracing::warn!(%error, "compaction failed; the history is kept as it was");
            agent.sink.emit(AgentEvent::CompactionFailed {
                reason: error.to_string(),
            });
            false
        }
    }
}
