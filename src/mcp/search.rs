//! When the MCP servers offer more tools than `[mcp] max_tools`, the model
//! gets two small tools instead of every schema, so the first request stays
//! small whatever the user installed: `mcp_search` finds tools by words of
//! their name and description and returns their schemas; `mcp_call` calls
//! one by name. A call through `mcp_call` is gated as the tool itself (its
//! action is the tool's own, named `mcp__SERVER__TOOL`), so a rule about a
//! tool holds whichever way the model calls it.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::tool::McpTool;
use crate::history::ToolSpec;
use crate::permission::{Action, ActionKind};
use crate::tools::{AnyTool, PreparedCall, Tool, ToolContext, ToolError, plain_action};
use crate::workspace::PathResolver;

/// The most tools one search returns.
const MAX_FOUND: usize = 20;
const DEFAULT_FOUND: usize = 5;

pub struct McpSearch {
    pub tools: Arc<Vec<McpTool>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
    /// Words to look for in the tools' names and descriptions (e.g. "git status").
    pub query: String,
    /// How many tools to return (default 5, at most 20).
    pub limit: Option<usize>,
}

#[async_trait::async_trait]
impl Tool for McpSearch {
    type Input = SearchInput;
    const NAME: &'static str = "mcp_search";
    const DESCRIPTION: &'static str = "Finds tools of the user's MCP servers by words of their name and description, and returns each one's name, description and input schema. Call one with mcp_call. Search first: these tools are not listed otherwise.";

    fn action(&self, input: &SearchInput, _paths: &PathResolver) -> Result<Action, ToolError> {
        Ok(plain_action(
            Self::NAME,
            ActionKind::Internal,
            format!("search MCP tools for `{}`", input.query),
        ))
    }

    async fn run(
        &self,
        input: SearchInput,
        _cx: &ToolContext<'_, '_>,
    ) -> Result<String, ToolError> {
        let limit = input.limit.unwrap_or(DEFAULT_FOUND).clamp(1, MAX_FOUND);
        let found = search(&self.tools, &input.query, limit);
        if found.is_empty() {
            return Ok(format!(
                "No MCP tool matches `{}`. The {} tools are named {}.",
                input.query,
                self.tools.len(),
                self.tools
                    .iter()
                    .map(McpTool::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let listed: Vec<Value> = found
            .iter()
            .map(|tool| {
                let spec = tool.spec();
                json!({
                    "name": spec.name,
                    "description": spec.description,
                    "input_schema": spec.input_schema,
                })
            })
            .collect();
        Ok(serde_json::to_string_pretty(&listed).unwrap_or_default())
    }
}

/// The tools whose name or description has the most of the query's words
/// (case-insensitive), best first; ties keep the listing's order.
pub fn search<'t>(tools: &'t [McpTool], query: &str, limit: usize) -> Vec<&'t McpTool> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut scored: Vec<(usize, usize, &McpTool)> = tools
        .iter()
        .enumerate()
        .filter_map(|(at, tool)| {
            let spec = tool.spec();
            let name = spec.name.to_lowercase();
            let description = spec.description.to_lowercase();
            // A word in the name counts twice: names say what a tool is.
            let score: usize = words
                .iter()
                .map(|w| 2 * usize::from(name.contains(w)) + usize::from(description.contains(w)))
                .sum();
            (score > 0).then_some((score, at, tool))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(limit).map(|(_, _, t)| t).collect()
}

/// Calls an MCP tool found with `mcp_search`, by its full name.
pub struct McpCall {
    pub tools: Arc<Vec<McpTool>>,
}

pub const CALL_NAME: &str = "mcp_call";

impl AnyTool for McpCall {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: CALL_NAME.to_string(),
            description: "Calls a tool of the user's MCP servers that mcp_search found: `name` is its full name (mcp__SERVER__TOOL), `arguments` an object that fits its input schema.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's full name, as mcp_search returned it"},
                    "arguments": {"type": "object", "description": "The tool's input"}
                },
                "required": ["name"],
                "additionalProperties": false
            }),
        }
    }

    /// The named tool's own call: its action (name, kind) is what the gate
    /// judges, as if the model had called it directly.
    fn prepare(&self, input: &Value, paths: &PathResolver) -> Result<PreparedCall<'_>, ToolError> {
        let invalid = |reason: String| ToolError::InvalidInput {
            tool: CALL_NAME.to_string(),
            reason,
        };
        let object = input
            .as_object()
            .ok_or_else(|| invalid("the input must be an object".into()))?;
        if let Some(key) = object.keys().find(|k| *k != "name" && *k != "arguments") {
            return Err(invalid(format!(
                "unknown field `{key}`, expected `name` or `arguments`"
            )));
        }
        let name = object
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("missing field `name`".into()))?;
        let tool = self
            .tools
            .iter()
            .find(|tool| tool.name() == name)
            .ok_or_else(|| {
                invalid(format!(
                    "no MCP tool is named `{name}`; find it with mcp_search"
                ))
            })?;
        tool.prepare(object.get("arguments").unwrap_or(&Value::Null), paths)
    }
}
