#[path = "../support/mod.rs"]
mod support;

mod cli;
mod common;
mod faults;
mod model_server_smoke;
mod turns;
