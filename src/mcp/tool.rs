//! An MCP server's tool as one of our tools: `mcp__SERVER__TOOL`, with the
//! server's JSON schema and its description cut to a budget. Every call
//! goes through the permission gate like any other: a tool the server
//! marks `readOnlyHint: true` is a read (it runs next to other reads and is
//! allowed in plan mode); any other one runs a program's code with effects
//! we cannot see, so it is an `Execute` and asks unless a rule allows it.
//!
//! The hint is the server's word, not a guarantee: it is trusted as far as
//! the server itself is (the user chose to run it).

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::result;
use super::server::{CallError, Server};
use crate::events::AgentEvent;
use crate::history::ToolSpec;
use crate::permission::ActionKind;
use crate::tools::{
    AnyTool, Change, Invocation, PreparedCall, ToolContext, ToolError, ToolOutput, plain_action,
};
use crate::workspace::{Look, PathResolver};

/// The longest tool name the providers accept (OpenAI's limit; Anthropic's
/// is the same or longer).
pub const MAX_NAME: usize = 64;

pub struct McpTool {
    server: Arc<Server>,
    /// The name the server knows it by.
    remote: String,
    spec: ToolSpec,
    read_only: bool,
    max_result_bytes: usize,
}

/// The name the model calls a server's tool by: `mcp__SERVER__TOOL`, each
/// character outside `[A-Za-z0-9_-]` (what the providers accept) replaced
/// by `_`. `None` when it would be longer than the providers accept. The
/// server's name is valid (`config::valid_server_name`), so the first `__`
/// after `mcp__` always ends it.
pub fn exposed_name(server: &str, tool: &str) -> Option<String> {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("mcp__{server}__{tool}");
    (!tool.is_empty() && name.len() <= MAX_NAME).then_some(name)
}

/// `text` cut to at most `limit` bytes on a character boundary, marked.
pub fn cut_description(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut end = limit.saturating_sub(3);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

impl McpTool {
    /// `None` for a tool whose name cannot be given to the model.
    pub fn new(
        server: Arc<Server>,
        tool: &rmcp::model::Tool,
        description_limit: usize,
        max_result_bytes: usize,
    ) -> Option<McpTool> {
        let name = exposed_name(server.name(), &tool.name)?;
        let mut schema = Value::Object((*tool.input_schema).clone());
        // The providers require an object schema at the top.
        if let Some(object) = schema.as_object_mut() {
            object
                .entry("type")
                .or_insert_with(|| Value::String("object".into()));
            object.remove("$schema");
        }
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or("");
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        Some(McpTool {
            remote: tool.name.to_string(),
            spec: ToolSpec {
                name,
                description: cut_description(description, description_limit),
                input_schema: schema,
            },
            server,
            read_only,
            max_result_bytes,
        })
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }
}

impl AnyTool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn prepare(&self, input: &Value, _paths: &PathResolver) -> Result<PreparedCall<'_>, ToolError> {
        let arguments = match input {
            Value::Object(arguments) => arguments.clone(),
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::InvalidInput {
                    tool: self.spec.name.clone(),
                    reason: format!("the input must be an object, not `{other}`"),
                });
            }
        };
        let kind = if self.read_only {
            ActionKind::Read
        } else {
            ActionKind::Execute
        };
        let shown = Value::Object(arguments.clone()).to_string();
        let summary = format!(
            "MCP tool `{}` of the server `{}` with {}",
            self.remote,
            self.server.name(),
            cut_description(&shown, 400)
        );
        Ok(PreparedCall::new(
            plain_action(&self.spec.name, kind, summary),
            Box::new(Call {
                tool: self,
                arguments,
            }),
        ))
    }
}

struct Call<'t> {
    tool: &'t McpTool,
    arguments: Map<String, Value>,
}

#[async_trait]
impl Invocation for Call<'_> {
    async fn change(&self, _cx: &ToolContext<'_, '_>) -> Option<Result<Change, ToolError>> {
        None
    }

    /// Dropping this future (the turn was cancelled: the loop answers the
    /// call as cancelled) makes the SDK send `notifications/cancelled`.
    ///
    /// A call that may change things is looked around: the files it
    /// created, modified or deleted in the workspace are told as
    /// `FileTouched`, so the turn counts them (a failed call's too: it may
    /// have done part of its work). A read-only one is trusted not to.
    async fn run(self: Box<Self>, cx: &ToolContext<'_, '_>) -> Result<ToolOutput, ToolError> {
        let Call { tool, arguments } = *self;
        let root = cx.workspace.paths().root().to_path_buf();
        let before = match tool.read_only {
            true => None,
            false => look(&root).await,
        };
        let answer = tool.server.call(&tool.remote, arguments).await;
        if let Some(before) = before
            && let Some(after) = look(&root).await
        {
            for (path, how) in before.changes_to(&after) {
                cx.sink.emit(AgentEvent::FileTouched {
                    path: path.display().to_string(),
                    tool: tool.spec.name.clone(),
                    how,
                });
            }
        }
        let answer = answer.map_err(|error: CallError| ToolError::failed(error.to_string()))?;
        let json = serde_json::to_value(&answer).unwrap_or_default();
        let (output, is_error) = result::to_output(&json, tool.max_result_bytes);
        if is_error {
            Err(ToolError::failed(output.text))
        } else {
            Ok(output)
        }
    }
}

/// The workspace's files now, looked at on a blocking thread.
async fn look(root: &Path) -> Option<Look> {
    let root = root.to_path_buf();
    match tokio::task::spawn_blocking(move || Look::take(&root)).await {
        Ok(look) => Some(look),
        Err(error) => {
            tracing::warn!(%error, "cannot look at the workspace around an MCP call");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_providers_and_split_one_way() {
        // (server, tool, exposed)
        let cases = [
            ("git", "git_status", Some("mcp__git__git_status")),
            ("everything", "get-sum", Some("mcp__everything__get-sum")),
            ("a", "b.c/d", Some("mcp__a__b_c_d")),
            ("a", "stätus", Some("mcp__a__st_tus")),
            ("a", "", None),
            ("a", &"x".repeat(60), None),
        ];
        for (server, tool, want) in cases {
            assert_eq!(exposed_name(server, tool).as_deref(), want, "{tool}");
        }
    }

    #[test]
    fn descriptions_are_cut_to_the_budget() {
        assert_eq!(cut_description("short", 10), "short");
        assert_eq!(cut_description("abcdefghij", 8), "abcde...");
        assert_eq!(cut_description("ééééé", 6), "é...");
    }
}
