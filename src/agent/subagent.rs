//! Running a sub-agent for the `task` tool: the agent implements the tools'
//! [`SubAgents`] trait, so `tools` decides what a sub-agent gets without
//! knowing the loop. A sub-agent is assembled like any agent, from its
//! parent's parts; it has fresh messages and a read ledger of its own.

use async_trait::async_trait;

use super::r#loop::{LoopConfig, LoopError, run_loop};
use super::parts::{Agent, AgentParts};
use crate::events::{AgentEvent, EventSink};
use crate::history::Message;
use crate::tools::{SubAgentError, SubAgents, SubTask};

#[async_trait]
impl SubAgents for Agent<'_> {
    async fn run_sub_agent(
        &self,
        task: SubTask,
        sink: &dyn EventSink,
    ) -> Result<String, SubAgentError> {
        let gate = if task.may_ask {
            self.gate.clone()
        } else {
            self.gate.without_prompts()
        };
        let config = LoopConfig {
            system: format!("{}\n{}", self.config.system, task.instructions),
            max_iterations: task.max_iterations.unwrap_or(self.config.max_iterations),
            ..self.config.clone()
        };
        let to_parent = ToParent(sink);
        let child = Agent::new(AgentParts {
            provider: self.provider,
            tools: &task.tools,
            gate: &gate,
            workspace: self.workspace,
            sandbox: self.sandbox,
            sink: &to_parent,
            config: &config,
        })
        .with_compactor(self.compactor)
        .with_background(self.background)
        .with_cancel(self.cancel.child_token())
        .logging_to(self.session_log)
        .at_depth(self.depth + 1);
        let mut messages = vec![Message::user_text(task.prompt)];
        match run_loop(&child, &mut messages).await {
            Ok(outcome) => Ok(outcome.text),
            Err(LoopError::IterationCap { cap }) => Err(SubAgentError::IterationCap { cap }),
            Err(error) => Err(SubAgentError::Failed(error.to_string())),
        }
    }
}

/// What of a sub-agent's events reaches its parent: its usage (the parent
/// counts it) and the changes it makes to files (the user sees every
/// change, whoever made it). Its text and tool calls are its own.
struct ToParent<'a>(&'a dyn EventSink);

impl EventSink for ToParent<'_> {
    fn emit(&self, event: AgentEvent) {
        if matches!(
            event,
            AgentEvent::Usage { .. }
                | AgentEvent::FileChanged { .. }
                | AgentEvent::FileTouched { .. }
        ) {
            self.0.emit(event);
        }
    }
}
