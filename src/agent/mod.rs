//! The agent: the loop that drives the model, and how an agent is assembled.
//!
//! The loop knows nothing about LSP, terminals or HTTP: it sees a `Provider`,
//! a `ToolRegistry`, a `PermissionGate`, a `Workspace` and an `EventSink`.
//! Tools see only their narrow `ToolContext`; the agent reaches down to them,
//! never the other way round (sub-agents go through `tools::SubAgents`).

mod compact;
mod compacting;
mod context;
mod instructions;
mod r#loop;
mod parts;
mod permit;
mod prompt;
mod subagent;
mod usage;

pub use crate::history::{ContentBlock, Message, Role, check_history};
pub use crate::inbox::{Arrival, Inbox};
pub use compact::{
    CompactError, CompactRequest, CompactStep, Compacted, Compaction, CompactionSettings,
    Compactor, NoCompaction, STUB_PREFIX, SUMMARY_PROMPT, Trigger,
};
pub use context::{DEFAULT_CONTEXT_WINDOW, context_window, estimate_messages};
pub use instructions::{
    INSTRUCTION_FILES, InstructionFile, Instructions, load as load_instructions, paths_in,
    user_instructions_path,
};
pub use r#loop::{CANCELLED, LoopConfig, LoopError, TurnOutcome, run_loop};
pub use parts::MAX_DEPTH;
pub use parts::{Agent, AgentParts, JoiningTools};
pub use prompt::{CODE_TOOL_PROMPT, system_prompt, system_prompt_in_editor};
