//! bareagent: a coding agent that runs inside any editor as a language server.
//!
//! The heart is [`agent::run_loop`]: call the model, run the tools it asks for,
//! feed the results back, repeat. Everything else sits around that loop and
//! reaches it through four small seams: [`provider::Provider`] (the model),
//! [`workspace::Workspace`] (files), [`permission::Approver`] (the user's yes or
//! no) and [`events::EventSink`] (what the user sees).

// Outside tests nothing panics on a value that came from outside: a
// `Result` or `Option` is handled, or `unwrap_or`-ed with a reason. Each
// `unsafe` block says why it is sound in a `// SAFETY:` comment.
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::undocumented_unsafe_blocks
)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod acp;
pub mod agent;
pub mod cli;
pub mod config;
pub mod config_files;
pub mod diff;
pub mod events;
#[doc(hidden)]
pub mod fuzzing;
pub mod history;
pub mod inbox;
pub mod language_servers;
pub mod lsp;
pub mod mcp;
pub mod permission;
pub mod position;
pub mod provider;
pub mod rewind;
pub mod sandbox;
pub mod secret_files;
pub mod secrets;
pub mod session;
pub mod session_files;
pub mod sync;
pub mod text;
pub mod tool_line;
pub mod tools;
pub mod workspace;
