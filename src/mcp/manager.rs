//! All the MCP servers of one session: started in the background when the
//! session starts (or at its first turn, `start = "lazy"`), their tools
//! handed to each turn's registry, their state for status, and stopped —
//! process groups and all — when the session ends (dropped or [`stop`]ped).
//!
//! A server that cannot start is said once through the [`Notify`] the
//! front end gave, and its tools are left out; the agent keeps working.
//!
//! [`stop`]: McpServers::stop

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::config::{McpSettings, StartWhen, Transport};
use super::search::{McpCall, McpSearch};
use super::server::{Notice, Notify, Server, Status};
use super::tool::McpTool;
use crate::tools::AnyTool;

pub struct McpServers {
    servers: Vec<Arc<Server>>,
    start: StartWhen,
    max_tools: usize,
    description_limit: usize,
    max_result_bytes: usize,
}

/// One server as `bareagent mcp list` and `bareagent.status` show it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ServerReport {
    pub name: String,
    /// Who configured it.
    pub origin: super::config::Origin,
    /// `stdio` or `http`.
    pub transport: &'static str,
    pub status: Status,
    /// The names the model sees.
    pub tools: Vec<String>,
}

impl McpServers {
    /// The servers `settings` describe, none started yet; an entry that
    /// cannot be used (a bad name, neither command nor URL) is said now.
    pub fn new(settings: &McpSettings, root: &Path, notify: Notify) -> McpServers {
        let (specs, errors) = settings.specs();
        for error in errors {
            tracing::warn!(%error, "MCP server left out");
            notify(Notice {
                server: String::new(),
                state: "failed",
                message: error.to_string(),
            });
        }
        for problem in &settings.problems {
            notify(Notice {
                server: String::new(),
                state: "failed",
                message: problem.clone(),
            });
        }
        McpServers {
            servers: specs
                .into_iter()
                .map(|spec| Arc::new(Server::new(spec, root, notify.clone())))
                .collect(),
            start: settings.start.unwrap_or_default(),
            max_tools: settings.max_tools(),
            description_limit: settings.description_limit(),
            max_result_bytes: settings.max_result_bytes(),
        }
    }

    /// No servers: what a session without MCP settings has.
    pub fn none() -> McpServers {
        McpServers::new(&McpSettings::default(), Path::new("/"), Arc::new(|_| {}))
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Starts every server in the background, unless they start lazily.
    /// Needs a tokio runtime.
    pub fn start_in_background(&self) {
        if self.start == StartWhen::Lazy {
            return;
        }
        for server in &self.servers {
            let server = server.clone();
            tokio::spawn(async move {
                let _ = server.ensure_started().await;
            });
        }
    }

    /// The tools for a turn's registry. Waits for servers on their first
    /// start (each up to its start timeout); a server that failed is tried
    /// again in the background once its backoff has passed, and its tools
    /// come with a later turn. Past `max_tools` tools, `mcp_search` and
    /// `mcp_call` stand for them all.
    pub async fn tools(&self) -> Vec<Box<dyn AnyTool>> {
        self.wait_started().await;
        self.ready_tools()
    }

    /// The tools of the servers running now, without waiting for any (as
    /// [`tools`](Self::tools) gives them).
    pub fn ready_tools(&self) -> Vec<Box<dyn AnyTool>> {
        let tools = self.mcp_tools();
        if tools.len() <= self.max_tools {
            return tools
                .into_iter()
                .map(|tool| Box::new(tool) as Box<dyn AnyTool>)
                .collect();
        }
        let tools = Arc::new(tools);
        vec![
            Box::new(McpSearch {
                tools: tools.clone(),
            }),
            Box::new(McpCall { tools }),
        ]
    }

    /// The servers on their first start, started now if they were not
    /// (`start = "lazy"`), by name. Empty once every server has come up or
    /// failed.
    pub fn starting(&self) -> Vec<String> {
        self.first_starts()
            .into_iter()
            .map(|server| {
                let name = server.name().to_string();
                // A start already under way is waited for, not repeated.
                tokio::spawn(async move {
                    let _ = server.ensure_started().await;
                });
                name
            })
            .collect()
    }

    /// Waits for servers on their first start (each up to its start
    /// timeout).
    pub async fn wait_started(&self) {
        let first_starts = self.first_starts();
        futures_util::future::join_all(first_starts.iter().map(|s| s.ensure_started())).await;
    }

    /// The servers on their first start; a server that failed is tried
    /// again in the background once its backoff has passed.
    fn first_starts(&self) -> Vec<Arc<Server>> {
        let mut first_starts = Vec::new();
        for server in &self.servers {
            match server.status() {
                Status::NotStarted | Status::Starting => first_starts.push(server.clone()),
                Status::Failed { .. } => {
                    let server = server.clone();
                    tokio::spawn(async move {
                        let _ = server.ensure_started().await;
                    });
                }
                Status::Running { .. } | Status::Stopped => {}
            }
        }
        first_starts
    }

    /// Every running server's tools. Two tools that would reach the model
    /// under one name (`a.b` and `a_b` of one server) are both left out:
    /// a rule about one must never cover the other.
    fn mcp_tools(&self) -> Vec<McpTool> {
        let mut by_name: BTreeMap<String, Vec<McpTool>> = BTreeMap::new();
        let mut order = Vec::new();
        for server in &self.servers {
            for listed in server.tools() {
                let Some(tool) = McpTool::new(
                    server.clone(),
                    &listed,
                    self.description_limit,
                    self.max_result_bytes,
                ) else {
                    tracing::warn!(
                        server = server.name(),
                        tool = %listed.name,
                        "MCP tool left out: its name is empty or too long for the providers"
                    );
                    continue;
                };
                if !by_name.contains_key(tool.name()) {
                    order.push(tool.name().to_string());
                }
                by_name
                    .entry(tool.name().to_string())
                    .or_default()
                    .push(tool);
            }
        }
        let mut tools = Vec::new();
        for name in order {
            let mut same = by_name.remove(&name).unwrap_or_default();
            if same.len() == 1 {
                tools.extend(same.pop());
            } else {
                tracing::warn!(
                    name,
                    "MCP tools left out: two tools of one server share this name"
                );
            }
        }
        tools
    }

    /// Every configured server, its state and its tools' names.
    pub fn report(&self) -> Vec<ServerReport> {
        self.servers
            .iter()
            .map(|server| ServerReport {
                name: server.name().to_string(),
                origin: server.spec.origin,
                transport: match server.spec.transport {
                    Transport::Stdio { .. } => "stdio",
                    Transport::Http { .. } => "http",
                },
                status: server.status(),
                tools: server
                    .tools()
                    .iter()
                    .filter_map(|tool| super::tool::exposed_name(server.name(), &tool.name))
                    .collect(),
            })
            .collect()
    }

    /// The server named `name`.
    pub fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|server| server.name() == name)
    }

    /// Stops every server, waiting for starts under way.
    pub async fn stop(&self) {
        futures_util::future::join_all(self.servers.iter().map(|s| s.stop())).await;
    }
}

impl McpServers {
    /// [`stop`](Self::stop) without waiting: at shutdown, from a destructor.
    pub fn stop_now(&self) {
        for server in &self.servers {
            server.stop_now();
        }
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        self.stop_now();
    }
}
