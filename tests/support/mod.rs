//! Shared test infrastructure, included by each test binary with
//! `#[path = "../support/mod.rs"] mod support;`.

pub mod event_schema;
pub mod lsp_client;
pub mod model_server;
pub mod peers;
pub mod tls_front;
