//! What an agent is made of, and the one way to assemble it: every front end
//! (`bareagent run`, the language server), the sub-agents and the tests build
//! an [`Agent`] with [`Agent::new`] and the `with_*` methods, so a new part
//! is added here once, with its default, rather than at every call site.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::compact::{Compactor, NoCompaction};
use crate::events::EventSink;
use crate::inbox::Inbox;
use crate::permission::PermissionGate;
use crate::provider::Provider;
use crate::sandbox::Sandbox;
use crate::session_files::{NoTranscript, Transcript};
use crate::tools::{Approved, BackgroundTasks, ReadLedger, SubAgents, ToolContext, ToolRegistry};
use crate::workspace::Workspace;

/// Sub-agents of sub-agents are not allowed.
pub const MAX_DEPTH: usize = 1;

/// Everything a turn uses, borrowed: the loop owns nothing but its locals
/// (and its share of the read ledger, which outlives a turn in an editor).
/// Build it with [`Agent::new`].
pub struct Agent<'a> {
    pub(super) provider: &'a dyn Provider,
    pub(super) tools: &'a ToolRegistry,
    pub(super) gate: &'a PermissionGate,
    pub(super) workspace: &'a dyn Workspace,
    pub(super) sink: &'a dyn EventSink,
    pub(super) compactor: &'a dyn Compactor,
    /// Told every message the loop appends (a session file, or nothing).
    pub(super) transcript: &'a dyn Transcript,
    /// Told what counts for the user's session whoever did it — each
    /// change a tool makes to a file, each model call's usage: the
    /// transcript, or for a sub-agent its parent's (a rewind undoes its
    /// edits too, and the session's cost includes its calls).
    pub(super) session_log: &'a dyn Transcript,
    pub(super) inbox: Option<&'a Inbox>,
    pub(super) config: &'a LoopConfig,
    /// Cancels the model call and every running tool; the turn then ends
    /// with `LoopError::Cancelled` and a valid history.
    pub(super) cancel: CancellationToken,
    /// Commands started with `run_in_background`, if this agent may start any.
    pub(super) background: Option<&'a BackgroundTasks>,
    /// 0 for the user's agent, 1 for its sub-agents.
    pub(super) depth: usize,
    /// Which version of each file the model has seen.
    pub(super) reads: Arc<ReadLedger>,
    /// What confines the commands this agent runs.
    pub(super) sandbox: &'a Sandbox,
    /// Tools still on their way when the turn began (MCP servers starting).
    pub(super) joining: Option<&'a dyn JoiningTools>,
}

/// Tools that join a turn after its first model call: those of the MCP
/// servers still starting when it began, so that the first request need
/// not wait for them.
#[async_trait::async_trait]
pub trait JoiningTools: Send + Sync {
    /// Waits for them (each server up to its start timeout), then gives
    /// the whole registry for the turn's later calls; `None`: nothing
    /// joined, the turn's tools stay.
    async fn join(&self) -> Option<ToolRegistry>;
}

/// The parts an agent cannot do without; there is no sensible default for
/// any of them (a sandbox in particular is always chosen, never implied).
pub struct AgentParts<'a> {
    pub provider: &'a dyn Provider,
    pub tools: &'a ToolRegistry,
    pub gate: &'a PermissionGate,
    pub workspace: &'a dyn Workspace,
    pub sandbox: &'a Sandbox,
    pub sink: &'a dyn EventSink,
    pub config: &'a LoopConfig,
}

impl<'a> Agent<'a> {
    /// A user's agent from its required parts. Until told otherwise it has
    /// no inbox, no background commands, no compaction, a read ledger of its
    /// own and a cancellation token nobody else holds.
    pub fn new(parts: AgentParts<'a>) -> Self {
        let AgentParts {
            provider,
            tools,
            gate,
            workspace,
            sandbox,
            sink,
            config,
        } = parts;
        Agent {
            provider,
            tools,
            gate,
            workspace,
            sink,
            compactor: &NoCompaction,
            transcript: &NoTranscript,
            session_log: &NoTranscript,
            inbox: None,
            config,
            cancel: CancellationToken::new(),
            background: None,
            depth: 0,
            reads: Arc::default(),
            sandbox,
            joining: None,
        }
    }

    /// Tools that join after the first model call (see [`JoiningTools`]).
    pub fn with_joining(mut self, joining: Option<&'a dyn JoiningTools>) -> Self {
        self.joining = joining;
        self
    }

    /// Where messages that arrive during a turn wait for the model.
    pub fn with_inbox(mut self, inbox: impl Into<Option<&'a Inbox>>) -> Self {
        self.inbox = inbox.into();
        self
    }

    /// Lets the agent start commands in the background.
    pub fn with_background(mut self, background: impl Into<Option<&'a BackgroundTasks>>) -> Self {
        self.background = background.into();
        self
    }

    /// What the model has seen, shared with whoever keeps it between turns.
    pub fn with_reads(mut self, reads: Arc<ReadLedger>) -> Self {
        self.reads = reads;
        self
    }

    /// The token that cancels this agent's turn.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    pub fn with_compactor(mut self, compactor: &'a dyn Compactor) -> Self {
        self.compactor = compactor;
        self
    }

    /// Where the conversation is kept as it goes (`bareagent run` and the
    /// language server: the session file).
    pub fn with_transcript(mut self, transcript: &'a dyn Transcript) -> Self {
        self.transcript = transcript;
        self.session_log = transcript;
        self
    }

    /// Where a sub-agent's edits and usage are recorded: its parent's log.
    pub(super) fn logging_to(mut self, session_log: &'a dyn Transcript) -> Self {
        self.session_log = session_log;
        self
    }

    /// A sub-agent of an agent at `depth - 1`.
    pub(super) fn at_depth(mut self, depth: usize) -> Self {
        self.depth = depth;
        self
    }

    /// The same agent showing its events to `sink` (the loop's usage tally).
    pub(super) fn reporting_to<'s>(&'s self, sink: &'s dyn EventSink) -> Agent<'s> {
        Agent {
            sink,
            cancel: self.cancel.clone(),
            reads: self.reads.clone(),
            ..*self
        }
    }

    /// The same agent with `tools` (those that joined the turn).
    pub(super) fn using_tools<'s>(&'s self, tools: &'s ToolRegistry) -> Agent<'s> {
        Agent {
            tools,
            cancel: self.cancel.clone(),
            reads: self.reads.clone(),
            joining: None,
            ..*self
        }
    }

    /// What a tool may use of this agent: never the provider or the loop;
    /// sub-agents only through [`SubAgents`], and only below [`MAX_DEPTH`].
    pub(super) fn tool_context<'c>(&'c self, approved: Approved<'c>) -> ToolContext<'c, 'c> {
        ToolContext {
            workspace: self.workspace,
            gate: self.gate,
            sandbox: self.sandbox,
            cancel: &self.cancel,
            background: self.background,
            reads: &self.reads,
            sink: self.sink,
            sub_agents: (self.depth < MAX_DEPTH).then_some(self as &dyn SubAgents),
            approved,
            edits: self.session_log,
        }
    }
}

#[derive(Clone, Debug)]
pub struct LoopConfig {
    pub system: String,
    /// Model calls per turn before the turn ends with an error.
    pub max_iterations: usize,
    /// The output limit of one call: the model's, from the model table.
    pub max_tokens: u32,
    /// How hard the model is asked to think.
    pub reasoning: crate::provider::Reasoning,
    /// Stream responses (falling back to a plain call where streaming fails).
    pub stream: bool,
    /// The model's price, for the cost the usage events report; `None`:
    /// the cost is unknown.
    pub price: Option<crate::provider::Price>,
    /// The model's context window, for the usage events' percentage.
    pub context_window: Option<u64>,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            system: String::new(),
            max_iterations: 200,
            max_tokens: crate::provider::models::DEFAULT_MAX_OUTPUT,
            reasoning: crate::provider::Reasoning::default(),
            stream: true,
            price: None,
            context_window: None,
        }
    }
}
