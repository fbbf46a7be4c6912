//! The MCP client: tools of any Model Context Protocol server, configured
//! the way users already configure them (`[mcp.servers.NAME]`, a project's
//! `.mcp.json`, the editor's settings), on the official SDK (`rmcp`).
//!
//! - `config`: which servers, from where, and the trust that lets a
//!   project's servers start;
//! - `server`: one connection (start, tool list, crash, restart);
//! - `manager`: a session's servers, their tools for each turn, status;
//! - `tool`: a server's tool as one of ours (`mcp__SERVER__TOOL`), gated
//!   like any other;
//! - `search`: `mcp_search` / `mcp_call`, past the tool budget;
//! - `result`: a tool's result as the text of a `tool_result`.
//!
//! Architecture Invariant: nothing here knows a front end. Notices leave
//! through the [`Notify`] callback the front end gives; the loop sees MCP
//! tools only as `AnyTool`s in its registry.

pub mod config;
pub mod manager;
pub mod result;
pub mod search;
pub mod server;
pub mod tool;

pub use config::{McpSettings, Origin, ServerConfig};
pub use manager::{McpServers, ServerReport};
pub use server::{Notice, Notify, Status};
