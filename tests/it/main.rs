#[path = "../support/mod.rs"]
mod support;

mod cli;
mod common;
mod concurrency;
mod dying;
mod faults;
mod lsp;
mod model_server_smoke;
mod neovim;
mod sandbox;
mod tools;
mod turns;
