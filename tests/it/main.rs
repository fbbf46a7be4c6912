#[path = "../support/mod.rs"]
mod support;

mod cli;
mod common;
mod concurrency;
mod escapes;
mod faults;
mod lsp;
mod model_server_smoke;
mod neovim;
mod secrets;
mod tool_ids;
mod tools;
mod turns;
