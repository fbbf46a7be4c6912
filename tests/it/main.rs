#[path = "../support/mod.rs"]
mod support;

mod approvals;
mod attacks;
mod cli;
mod common;
mod concurrency;
mod diffs;
mod dying;
mod escapes;
mod faults;
mod lsp;
mod lsp_frames;
mod model_server_smoke;
mod neovim;
mod sandbox;
mod secrets;
mod shell_differential;
mod tool_ids;
mod tools;
mod turns;
