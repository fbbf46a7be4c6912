//! The system prompt: who the agent is, where it works, how to use its tools.
//! Kept short: every token here is paid on every call.

use std::path::Path;

pub fn system_prompt(root: &Path) -> String {
    format!(
        "You are bareagent, a coding agent working in the user's project at {root}.\n\
         Use the tools to read, search and change files; paths are relative to the project root.\n\
         Read a file before you edit it. Make the smallest change that does what was asked, \
         keep the code's existing style, and do not touch unrelated code.\n\
         A tool error is information: read it, fix the call, or try another way.\n\
         When the work is done, answer briefly: what you changed and anything the user should check.",
        root = root.display()
    )
}

/// Where the `code` tool is offered: when it beats a text search.
pub const CODE_TOOL_PROMPT: &str = "\nFor a symbol (where it is defined, its uses, its callers, renaming it) use the code tool: \
     it asks the type checker. Use grep for text, config and comments.";

/// In an editor, where edits land in buffers the user may not have saved.
pub fn system_prompt_in_editor(root: &Path) -> String {
    format!(
        "{}\n\
         Your edits land in the user's editor buffers, where read_file, grep and glob see them. \
         Before each command they are saved or shown to it, and a note at the end of a command's result names any file it saw differently.",
        system_prompt(root)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolRegistry;
    use crate::tools::code::{CodeError, Intelligence};

    /// Answers nothing: only the tool's definition is measured.
    struct Nobody;

    #[async_trait::async_trait]
    impl Intelligence for Nobody {
        fn answerer(&self, _: &Path) -> String {
            String::new()
        }
        async fn request(
            &self,
            _: &dyn crate::workspace::Workspace,
            _: &Path,
            _: &str,
            _: serde_json::Value,
        ) -> Result<serde_json::Value, CodeError> {
            Err(CodeError::Editor(String::new()))
        }
        async fn workspace_symbols(
            &self,
            _: &dyn crate::workspace::Workspace,
            _: &str,
            _: Option<&Path>,
        ) -> Result<serde_json::Value, CodeError> {
            Err(CodeError::Editor(String::new()))
        }
    }

    /// The fixed cost of every call: system prompt plus tool definitions,
    /// at the usual estimate of four characters a token.
    #[test]
    fn prompt_and_tools_fit_in_4000_tokens() {
        let prompt = system_prompt_in_editor(Path::new("/home/user/project"));
        let mut registry = ToolRegistry::in_editor();
        registry.register(crate::tools::code::Code::new(std::sync::Arc::new(Nobody)));
        let tools = serde_json::to_string(registry.specs()).unwrap();
        let prompt = prompt + CODE_TOOL_PROMPT;
        let tokens = (prompt.len() + tools.len()) / 4;
        eprintln!(
            "system prompt {} chars + tools {} chars = {tokens} tokens",
            prompt.len(),
            tools.len()
        );
        assert!(tokens <= 4000, "{tokens} tokens");
    }
}
