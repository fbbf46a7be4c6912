#[path = "../support/mod.rs"]
mod support;

mod approvals;
mod attacks;
mod cli;
mod coherence;
mod common;
mod concurrency;
mod diffs;
mod dying;
mod escapes;
mod faults;
mod first_use;
mod lsp;
mod lsp_frames;
mod model_server_smoke;
mod neovim;
mod provider_setup;
mod read_ledger;
mod sandbox;
mod secrets;
mod shell_differential;
mod terminal;
mod tool_ids;
mod tools;
mod turns;
