//! `task`: a sub-agent with fresh messages, for work whose details the main
//! conversation does not need to carry. `explore` sub-agents are read-only
//! (and may run side by side); `general` ones have every tool but `task`, so
//! nesting stops at one level. Sub-agents share the session's permission
//! rules; an explore sub-agent never asks the user: what would ask is denied.
//!
//! This file decides what a sub-agent gets (its tools, its instructions, its
//! cap); running one is the agent's job, reached through [`SubAgents`], so
//! the tools never depend on the loop.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, ToolRegistry, plain_action};
use crate::events::EventSink;
use crate::permission::{Action, ActionKind};
use crate::workspace::PathResolver;

/// The tool, with who answers `code` for its sub-agents (the parent's
/// answerer; an explore sub-agent may only ask, not rename).
#[derive(Default)]
pub struct Task {
    code: Option<std::sync::Arc<dyn super::code::Intelligence>>,
}

impl Task {
    pub fn with_code(code: std::sync::Arc<dyn super::code::Intelligence>) -> Self {
        Task { code: Some(code) }
    }
}

/// Model calls an explore sub-agent may make: exploring should not take 200.
pub const EXPLORE_ITERATIONS: usize = 50;

/// What a sub-agent is given. It starts with fresh messages and a read
/// ledger of its own; it shares the parent's workspace, provider, sandbox,
/// background commands and permission rules.
pub struct SubTask {
    /// The whole task, as the sub-agent's first message.
    pub prompt: String,
    pub tools: ToolRegistry,
    /// Added to the parent's system prompt.
    pub instructions: String,
    /// Model calls it may make; `None`: as many as its parent.
    pub max_iterations: Option<usize>,
    /// Whether its calls may ask the user; if not, what would ask is denied.
    pub may_ask: bool,
}

/// How a sub-agent failed, as the parent model reads it.
#[derive(Debug, thiserror::Error)]
pub enum SubAgentError {
    #[error(
        "the sub-agent reached its cap of {cap} model calls without finishing; give it a narrower task"
    )]
    IterationCap { cap: usize },
    #[error("the sub-agent failed: {0}")]
    Failed(String),
}

/// Runs sub-agents: implemented by the agent, handed to tools in their
/// context. Only what the `task` tool needs, so a tool cannot reach the
/// provider or the loop any other way.
#[async_trait]
pub trait SubAgents: Send + Sync {
    /// Runs `task` to its end and returns its final answer. The sub-agent's
    /// events go to `sink`: its usage, so the parent counts it, and its file
    /// changes, so the user sees every change, whoever made it.
    async fn run_sub_agent(
        &self,
        task: SubTask,
        sink: &dyn EventSink,
    ) -> Result<String, SubAgentError>;
}

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
        let sub_agents = cx
            .sub_agents
            .ok_or_else(|| ToolError::failed("sub-agents cannot start sub-agents"))?;
        let kind = input.kind.unwrap_or_default();
        let explore = kind == Kind::Explore;
        let mut tools = if explore {
            ToolRegistry::explore()
        } else {
            ToolRegistry::general()
        };
        if let Some(code) = &self.code {
            tools.register(if explore {
                super::code::Code::read_only(code.clone())
            } else {
                super::code::Code::new(code.clone())
            });
        }
        let task = SubTask {
            prompt: input.prompt,
            tools,
            instructions: format!(
                "You are a sub-agent working on one task for another agent, which sees only your final answer: \
                 make it complete and concise.{}",
                if explore {
                    " You can only read and search, not change anything."
                } else {
                    ""
                }
            ),
            max_iterations: explore.then_some(EXPLORE_ITERATIONS),
            may_ask: !explore,
        };
        match sub_agents.run_sub_agent(task, cx.sink).await {
            Ok(text) if text.trim().is_empty() => {
                Ok("(the sub-agent finished without an answer)".into())
            }
            Ok(text) => Ok(text),
            Err(error) => Err(ToolError::failed(error.to_string())),
        }
    }
}
