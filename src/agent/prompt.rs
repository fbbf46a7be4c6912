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

    /// The fixed cost of every call: system prompt plus tool definitions,
    /// at the usual estimate of four characters a token.
    #[test]
    fn prompt_and_tools_fit_in_4000_tokens() {
        let prompt = system_prompt_in_editor(Path::new("/home/user/project"));
        let tools = serde_json::to_string(ToolRegistry::in_editor().specs()).unwrap();
        let tokens = (prompt.len() + tools.len()) / 4;
        eprintln!(
            "system prompt {} chars + tools {} chars = {tokens} tokens",
            prompt.len(),
            tools.len()
        );
        assert!(tokens <= 4000, "{tokens} tokens");
    }
}
