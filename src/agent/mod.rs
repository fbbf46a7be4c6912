//! The agent: the message history and the loop that drives the model.
//!
//! The loop knows nothing about LSP, terminals or HTTP: it sees a `Provider`,
//! a `ToolRegistry`, a `PermissionGate`, a `Workspace` and an `EventSink`.

mod inbox;
mod r#loop;
pub mod message;
mod prompt;

pub use inbox::{Arrival, Inbox};
pub use r#loop::{
    Agent, CANCELLED, Compactor, LoopConfig, LoopError, NoCompaction, TurnOutcome, run_loop,
};
pub use message::{ContentBlock, Message, Role};
pub use prompt::{system_prompt, system_prompt_in_editor};
