//! `todo_write`: the model's plan for the turn, shown to the user. The list
//! lives in the conversation (each call carries the whole list), so there is
//! no state to keep here.

use async_trait::async_trait;

pub use crate::events::{TodoItem, TodoStatus};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, plain_action};
use crate::events::AgentEvent;
use crate::permission::{Action, ActionKind};
use crate::workspace::PathResolver;

pub struct TodoWrite;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The whole list, every time.
    pub todos: Vec<TodoItem>,
}

#[async_trait]
impl Tool for TodoWrite {
    type Input = Input;
    const NAME: &'static str = "todo_write";
    const DESCRIPTION: &'static str = "Write your plan for a multi-step task as a todo list the user sees: the whole list each time, \
        items pending, in_progress (one at a time) or completed. Returns the counts.";

    fn action(&self, input: &Input, _paths: &PathResolver) -> Result<Action, ToolError> {
        Ok(plain_action(
            Self::NAME,
            ActionKind::Internal,
            format!("{} items", input.todos.len()),
        ))
    }

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let count = |status| input.todos.iter().filter(|t| t.status == status).count();
        let summary = format!(
            "Todo list updated: {} pending, {} in progress, {} completed.",
            count(TodoStatus::Pending),
            count(TodoStatus::InProgress),
            count(TodoStatus::Completed)
        );
        cx.sink.emit(AgentEvent::Todos { todos: input.todos });
        Ok(summary)
    }
}
