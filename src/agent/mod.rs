//! The agent: the message history and the loop that drives the model.
//!
//! The loop knows nothing about LSP, terminals or HTTP: it sees a `Provider`,
//! a `ToolRegistry`, a `PermissionGate`, a `Workspace` and an `EventSink`.

mod r#loop;
mod prompt;

pub use crate::history::{ContentBlock, Message, Role, check_history};
pub use crate::inbox::{Arrival, Inbox};
pub use r#loop::{
    Agent, CANCELLED, Compactor, LoopConfig, LoopError, NoCompaction, TurnOutcome, run_loop,
};
pub use prompt::{system_prompt, system_prompt_in_editor};
