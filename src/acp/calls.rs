//! What the client has been shown of the running turn, shared by the sink,
//! the approver, the terminal and the workspace: the tool calls still open
//! (so a question or a terminal names the call the client already shows),
//! the diffs each shows (an update's content replaces the last, so the
//! result repeats them), and the text each file had when last read or
//! written (the `oldText` of the diffs the client shows).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agent_client_protocol::v1::schema::{Terminal, ToolCallContent};
use serde_json::Value;

use crate::sync::Locked;

#[derive(Default)]
pub struct Calls {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    open: Vec<OpenCall>,
    /// By resolved path: the text the agent last read or wrote.
    texts: HashMap<PathBuf, String>,
    /// By resolved path: the last write not yet shown (text before, after).
    written: HashMap<PathBuf, (Option<String>, String)>,
    /// By call id: the client terminal a call's command runs in.
    terminals: HashMap<String, String>,
    /// By call id: the diffs shown on the call.
    diffs: HashMap<String, Vec<ToolCallContent>>,
}

struct OpenCall {
    id: String,
    tool: String,
    input: Value,
    /// Files the call changed that it does not name (an MCP tool's).
    touched: Vec<PathBuf>,
}

impl Calls {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.locked()
    }

    pub fn opened(&self, id: &str, tool: &str, input: &Value) {
        self.lock().open.push(OpenCall {
            id: id.to_string(),
            tool: tool.to_string(),
            input: input.clone(),
            touched: Vec::new(),
        });
    }

    /// The latest open call of `tool` (or of `mcp_call`, which calls it by
    /// name past the tool budget) changed `path` (resolved), unseen: the
    /// text last read or written is no longer the file's. Returns the call
    /// and every file it has changed so far, for its locations.
    pub fn touched(&self, tool: &str, path: &Path) -> Option<(String, Vec<PathBuf>)> {
        let mut inner = self.lock();
        inner.texts.remove(path);
        inner.written.remove(path);
        let call = inner
            .open
            .iter_mut()
            .rev()
            .find(|call| call.tool == tool || call.tool == crate::mcp::search::CALL_NAME)?;
        if !call.touched.iter().any(|seen| seen == path) {
            call.touched.push(path.to_path_buf());
        }
        Some((call.id.clone(), call.touched.clone()))
    }

    /// The call ended; returns what it showed that its result keeps: the
    /// terminal its command ran in, then its diffs.
    pub fn closed(&self, id: &str) -> Vec<ToolCallContent> {
        let mut inner = self.lock();
        inner.open.retain(|call| call.id != id);
        let terminal = inner.terminals.remove(id);
        let diffs = inner.diffs.remove(id).unwrap_or_default();
        terminal
            .map(|terminal| ToolCallContent::Terminal(Terminal::new(terminal)))
            .into_iter()
            .chain(diffs)
            .collect()
    }

    /// Call `id` shows `diff` too; returns every diff it shows.
    pub fn showed_diff(&self, id: &str, diff: ToolCallContent) -> Vec<ToolCallContent> {
        let mut inner = self.lock();
        let diffs = inner.diffs.entry(id.to_string()).or_default();
        diffs.push(diff);
        diffs.clone()
    }

    /// The open call of `tool` a question is about: the one naming `path`
    /// where the question has one, else the latest.
    pub fn find(&self, tool: &str, path: Option<&str>) -> Option<String> {
        let inner = self.lock();
        let mut calls = inner.open.iter().rev().filter(|call| call.tool == tool);
        let named = |call: &&OpenCall| {
            let given = call.input.get("path").and_then(Value::as_str);
            match (path, given) {
                (Some(path), Some(given)) => given == path || given.ends_with(&format!("/{path}")),
                _ => false,
            }
        };
        match path {
            Some(_) => calls.clone().find(named).or_else(|| calls.next()),
            None => calls.next(),
        }
        .map(|call| call.id.clone())
    }

    /// The open edit call (`edit_file`, `write_file`, `multi_edit`) of
    /// `path` (workspace-relative, as the change event names it).
    pub fn find_editing(&self, path: &str) -> Option<String> {
        let inner = self.lock();
        let edits = |call: &&OpenCall| {
            matches!(
                call.tool.as_str(),
                "edit_file" | "write_file" | "multi_edit"
            )
        };
        let mut calls = inner.open.iter().rev().filter(edits);
        calls
            .clone()
            .find(|call| {
                call.input
                    .get("path")
                    .and_then(Value::as_str)
                    .is_some_and(|given| given == path || given.ends_with(&format!("/{path}")))
            })
            .or_else(|| calls.next())
            .map(|call| call.id.clone())
    }

    /// The open `bash` call running `command`, now in `terminal`.
    pub fn running_in_terminal(&self, command: &str, terminal: &str) -> Option<String> {
        let mut inner = self.lock();
        let id = inner
            .open
            .iter()
            .rev()
            .find(|call| {
                call.tool == "bash"
                    && call.input.get("command").and_then(Value::as_str) == Some(command)
            })?
            .id
            .clone();
        inner.terminals.insert(id.clone(), terminal.to_string());
        Some(id)
    }

    pub fn read(&self, path: &Path, text: &str) {
        self.lock()
            .texts
            .insert(path.to_path_buf(), text.to_string());
    }

    /// The text `path` had when the agent last read or wrote it.
    pub fn text(&self, path: &Path) -> Option<String> {
        self.lock().texts.get(path).cloned()
    }

    pub fn wrote(&self, path: &Path, text: &str) {
        let mut inner = self.lock();
        let before = inner.texts.insert(path.to_path_buf(), text.to_string());
        inner
            .written
            .insert(path.to_path_buf(), (before, text.to_string()));
    }

    /// The last write to `path` (text before, after), once.
    pub fn take_written(&self, path: &Path) -> Option<(Option<String>, String)> {
        self.lock().written.remove(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file an MCP tool changed is located on the call that ran it —
    /// called by its name, or through `mcp_call` — and its text last seen
    /// is forgotten (a later diff must not show it as the old text).
    #[test]
    fn a_touched_file_is_located_on_its_call_and_its_text_forgotten() {
        let a = Path::new("/w/a.txt");
        let b = Path::new("/w/b.txt");
        /// (open calls as (id, tool), the tool said to have touched, the call located)
        type Case = (
            &'static [(&'static str, &'static str)],
            &'static str,
            Option<&'static str>,
        );
        let cases: [Case; 4] = [
            (
                &[("1", "mcp__git__git_checkout")],
                "mcp__git__git_checkout",
                Some("1"),
            ),
            (
                &[("1", "read_file"), ("2", "mcp_call")],
                "mcp__git__git_checkout",
                Some("2"),
            ),
            (&[("1", "bash")], "mcp__git__git_checkout", None),
            (&[], "mcp__git__git_checkout", None),
        ];
        for (open, tool, want) in cases {
            let calls = Calls::default();
            for (id, name) in open {
                calls.opened(id, name, &Value::Null);
            }
            calls.wrote(a, "mine\n");
            let first = calls.touched(tool, a);
            assert_eq!(first.as_ref().map(|(id, _)| id.as_str()), want, "{open:?}");
            assert_eq!(calls.text(a), None, "the text last seen is forgotten");
            assert_eq!(calls.take_written(a), None);
            if want.is_some() {
                let (_, located) = calls.touched(tool, b).expect("the same call");
                assert_eq!(located, vec![a.to_path_buf(), b.to_path_buf()]);
                let (_, again) = calls.touched(tool, a).expect("the same call");
                assert_eq!(again.len(), 2, "each file once");
            }
        }
    }
}
