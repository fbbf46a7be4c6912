//! Tools: what the model can do. A tool is three things kept apart, as
//! codex-rs keeps them: what it *is* (name, description, input schema — all
//! derived from one input type, so the schema the model sees and the
//! validation we apply cannot drift), what it *does* for the permission gate
//! (an [`Action`]), and how it *runs*.

mod edit_file;
mod read_file;
mod write_file;

use std::collections::BTreeMap;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::permission::{Action, ActionKind};
use crate::provider::ToolSpec;
use crate::workspace::{Workspace, WorkspaceError};

pub use edit_file::EditFile;
pub use read_file::ReadFile;
pub use write_file::WriteFile;

/// What a running tool may use.
pub struct ToolContext<'a> {
    pub workspace: &'a dyn Workspace,
}

/// A tool's failure, as the model will read it (after `Error: `).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct ToolError(pub String);

impl From<WorkspaceError> for ToolError {
    fn from(error: WorkspaceError) -> Self {
        ToolError(error.to_string())
    }
}

/// A tool with a typed input. Implement this; the registry erases the type.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The input; its JSON schema is what the model sees.
    type Input: DeserializeOwned + JsonSchema + Send;
    const NAME: &'static str;
    /// When to use the tool and what it returns, for the model.
    const DESCRIPTION: &'static str;
    const KIND: ActionKind;

    /// One line for the user to judge the call by: the path, the command.
    fn summary(input: &Self::Input) -> String;

    async fn run(&self, input: Self::Input, cx: &ToolContext<'_>) -> Result<String, ToolError>;
}

/// The object-safe face of a [`Tool`], for the registry and the loop.
#[async_trait]
pub trait AnyTool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    /// Validates the input against the tool's type and says what the call would do.
    fn action(&self, input: &Value) -> Result<Action, String>;
    async fn call(&self, input: Value, cx: &ToolContext<'_>) -> Result<String, ToolError>;
}

fn parse<T: Tool>(input: &Value) -> Result<T::Input, String> {
    T::Input::deserialize(input).map_err(|error| format!("Invalid input for {}: {error}", T::NAME))
}

use serde::Deserialize as _;

#[async_trait]
impl<T: Tool> AnyTool for T {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: T::NAME.to_string(),
            description: T::DESCRIPTION.to_string(),
            input_schema: input_schema::<T::Input>(),
        }
    }

    fn action(&self, input: &Value) -> Result<Action, String> {
        let parsed = parse::<T>(input)?;
        Ok(Action {
            tool: T::NAME.to_string(),
            kind: T::KIND,
            summary: T::summary(&parsed),
        })
    }

    async fn call(&self, input: Value, cx: &ToolContext<'_>) -> Result<String, ToolError> {
        let parsed = parse::<T>(&input).map_err(ToolError)?;
        self.run(parsed, cx).await
    }
}

/// The JSON schema of an input type, without the keys models do not need.
fn input_schema<I: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(I)).unwrap_or_default();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema
}

/// The tools of a session, by name.
#[derive(Default)]
pub struct ToolRegistry {
    tools: BTreeMap<&'static str, Box<dyn AnyTool>>,
    specs: Vec<ToolSpec>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// The file tools.
    pub fn standard() -> Self {
        let mut registry = ToolRegistry::new();
        registry.register(ReadFile);
        registry.register(WriteFile);
        registry.register(EditFile);
        registry
    }

    pub fn register<T: Tool>(&mut self, tool: T) {
        self.specs.retain(|spec| spec.name != T::NAME);
        self.specs.push(tool.spec());
        self.tools.insert(T::NAME, Box::new(tool));
    }

    pub fn get(&self, name: &str) -> Option<&dyn AnyTool> {
        self.tools.get(name).map(|tool| tool.as_ref())
    }

    /// The definitions sent to the model, in registration order.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }
}

/// Cuts `text` to at most `max` chars at a char boundary; returns whether it cut.
pub(crate) fn truncate_chars(text: &mut String, max: usize) -> bool {
    match text.char_indices().nth(max) {
        Some((cut, _)) => {
            text.truncate(cut);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_objects_with_required_fields() {
        let registry = ToolRegistry::standard();
        let names: Vec<_> = registry.specs().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["read_file", "write_file", "edit_file"]);
        for spec in registry.specs() {
            assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
            assert!(spec.input_schema.get("$schema").is_none());
            let required = spec.input_schema["required"].as_array().unwrap();
            assert!(required.contains(&Value::from("path")), "{}", spec.name);
        }
    }

    #[test]
    fn invalid_input_says_what_is_wrong() {
        let registry = ToolRegistry::standard();
        let tool = registry.get("read_file").unwrap();
        let error = tool.action(&serde_json::json!({"pth": "x"})).unwrap_err();
        assert!(error.contains("Invalid input for read_file"), "{error}");
        assert!(error.contains("pth") || error.contains("path"), "{error}");
        let error = tool.action(&serde_json::json!({"path": 7})).unwrap_err();
        assert!(error.contains("invalid type"), "{error}");
    }
}
