//! `task`: a sub-agent with fresh messages, for work whose details the main
//! conversation does not need to carry. `explore` sub-agents are read-only
//! (and may run side by side); `general` ones have every tool but `task`, so
//! nesting stops at one level. Sub-agents share the session's permission
//! rules; an explore sub-agent never asks the user: what would ask is denied.

use std::sync::Mutex;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, ToolRegistry, plain_action};
use crate::agent::{Agent, LoopConfig, LoopError, Message, run_loop};
use crate::events::{AgentEvent, EventSink};
use crate::permission::{Action, ActionKind};
use crate::provider::Usage;
use crate::workspace::PathResolver;

pub struct Task;

/// Model calls an explore sub-agent may make: exploring should not take 200.
pub const EXPLORE_ITERATIONS: usize = 50;
/// Sub-agents of sub-agents are not allowed.
pub const MAX_DEPTH: usize = 1;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Read-only: read_file, glob, grep.
    Explore,
    /// Every tool but task.
    #[default]
    General,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// A few words on what the sub-agent is for.
    pub description: String,
    /// The whole task: the sub-agent sees nothing of this conversation.
    pub prompt: String,
    /// `explore` (read-only, fast) or `general` (default).
    #[serde(default)]
    pub kind: Option<Kind>,
}

#[async_trait]
impl Tool for Task {
    type Input = Input;
    const NAME: &'static str = "task";
    const DESCRIPTION: &'static str = "Hand a self-contained task to a sub-agent with a fresh context: `explore` to search and read \
        widely (read-only; several run in parallel), `general` for a multi-step change. The prompt must say everything \
        needed. Returns the sub-agent's final answer.";

    fn action(&self, input: &Input, _paths: &PathResolver) -> Result<Action, ToolError> {
        // Explore sub-agents only read; a general one's every call is gated
        // on its own, so starting it needs no question.
        let kind = match input.kind.unwrap_or_default() {
            Kind::Explore => ActionKind::Read,
            Kind::General => ActionKind::Internal,
        };
        Ok(plain_action(Self::NAME, kind, input.description.clone()))
    }

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let parent = cx.agent;
        if parent.depth >= MAX_DEPTH {
            return Err(ToolError::failed("sub-agents cannot start sub-agents"));
        }
        let kind = input.kind.unwrap_or_default();
        let (tools, gate, max_iterations) = match kind {
            Kind::Explore => (
                ToolRegistry::explore(),
                parent.gate.without_prompts(),
                EXPLORE_ITERATIONS,
            ),
            Kind::General => (
                ToolRegistry::general(),
                parent.gate.clone(),
                parent.config.max_iterations,
            ),
        };
        let config = LoopConfig {
            system: format!(
                "{}\nYou are a sub-agent working on one task for another agent, which sees only your final answer: \
                 make it complete and concise.{}",
                parent.config.system,
                if kind == Kind::Explore {
                    " You can only read and search, not change anything."
                } else {
                    ""
                }
            ),
            max_iterations,
            ..parent.config.clone()
        };
        let meter = UsageMeter {
            total: Mutex::default(),
            parent: parent.sink,
        };
        // What the sub-agent reads is its own knowledge, not the parent's.
        let reads = super::ReadLedger::default();
        let child = Agent {
            provider: parent.provider,
            tools: &tools,
            gate: &gate,
            workspace: parent.workspace,
            sink: &meter,
            compactor: parent.compactor,
            inbox: None,
            config: &config,
            cancel: parent.cancel.child_token(),
            background: parent.background,
            depth: parent.depth + 1,
            reads: &reads,
            sandbox: parent.sandbox,
        };
        let mut messages = vec![Message::user_text(input.prompt)];
        let outcome = run_loop(&child, &mut messages).await;
        let spent = meter.total();
        *cx.spent.lock().unwrap_or_else(|p| p.into_inner()) += spent;
        match outcome {
            Ok(outcome) if outcome.text.trim().is_empty() => {
                Ok("(the sub-agent finished without an answer)".into())
            }
            Ok(outcome) => Ok(outcome.text),
            Err(LoopError::IterationCap { cap }) => Err(ToolError::failed(format!(
                "the sub-agent reached its cap of {cap} model calls without finishing; give it a narrower task"
            ))),
            Err(error) => Err(ToolError::failed(format!("the sub-agent failed: {error}"))),
        }
    }
}

/// A sink that adds up what the sub-agent's model calls cost, and passes on
/// the changes it makes to files (the user sees every change, whoever made it).
struct UsageMeter<'a> {
    total: Mutex<Usage>,
    parent: &'a dyn EventSink,
}

impl UsageMeter<'_> {
    fn total(&self) -> Usage {
        *self.total.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl EventSink for UsageMeter<'_> {
    fn emit(&self, event: AgentEvent) {
        match event {
            AgentEvent::Usage { call, .. } => {
                *self.total.lock().unwrap_or_else(|p| p.into_inner()) += call;
            }
            AgentEvent::FileChanged { .. } => self.parent.emit(event),
            _ => {}
        }
    }
}
