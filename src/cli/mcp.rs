//! `bareagent mcp list`: the MCP servers this directory's settings
//! configure, started as a session would start them, with their state and
//! their tools; then stopped.

use std::sync::Arc;

use anyhow::Context;

use crate::config::Config;
use crate::mcp::{McpServers, Status};

pub async fn list(json: bool) -> anyhow::Result<()> {
    let root = std::env::current_dir().context("cannot read the current directory")?;
    let settings = Config::load(&root).map_err(anyhow::Error::msg)?;
    if let Some(notice) = settings.ignored_notice(&root) {
        eprintln!("bareagent: {notice}");
    }
    // Failures are in the listing itself: no second copy on stderr.
    let servers = McpServers::new(&settings.mcp, &root, Arc::new(|_| {}));
    let tools = servers.tools().await;
    let report = servers.report();
    servers.stop().await;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    if report.is_empty() {
        println!("No MCP servers are configured (see `[mcp.servers.NAME]` in the README).");
        return Ok(());
    }
    for server in &report {
        let state = match &server.status {
            Status::Running { tools } => format!("running, {}", crate::text::count(*tools, "tool")),
            Status::Failed { error, .. } => format!("failed: {error}"),
            Status::NotStarted => "not started".into(),
            Status::Starting => "starting".into(),
            Status::Stopped => "stopped".into(),
        };
        println!(
            "{} ({}, from {}): {state}",
            server.name,
            server.transport,
            server.origin.describe()
        );
        for tool in &server.tools {
            println!("  {tool}");
        }
    }
    if tools
        .iter()
        .any(|tool| tool.spec().name == crate::mcp::search::CALL_NAME)
    {
        println!(
            "(more tools than `[mcp] max_tools`: the model finds them with mcp_search and calls them with mcp_call)"
        );
    }
    Ok(())
}
