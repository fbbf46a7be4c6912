//! The chat file, `.bareagent/chat.md`: the conversation as markdown, and
//! the place a user without a plugin writes prompts (under the last
//! `## You`). The reply is appended at the real end of the document —
//! through `workspace/applyEdit` when the editor has it open, so the user's
//! own edits elsewhere survive, else on disk — a few times a second.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tower_lsp_server::ls_types::{
    DocumentChanges, OneOf, OptionalVersionedTextDocumentIdentifier, Position, Range,
    TextDocumentEdit, TextEdit, WorkspaceEdit,
};

use super::state::State;
use crate::workspace::{PathResolver, WorkspaceError};
use std::io::Read;

pub const YOU: &str = "## You";
pub const AGENT: &str = "## Agent";
/// How long appended text is gathered before it is written.
const COALESCE: Duration = Duration::from_millis(250);
/// How long the chat must be quiet before it is saved (where the client can).
const SAVE_WHEN_QUIET: Duration = Duration::from_millis(600);

pub const NEW_CHAT: &str = "# bareagent\n\nWrite your request under the last `## You` heading, then run the code action \
\"Send to agent\" (or the command `bareagent.ask`). The reply appears below it.\n\n## You\n\n";

/// The prompt under the last `## You` heading, if the user wrote one that
/// has not been answered yet.
pub fn pending_prompt(text: &str) -> Option<String> {
    let start = last_heading(text, YOU)?;
    let after = &text[start + YOU.len()..];
    if after.lines().any(|line| line.trim_end() == AGENT) {
        return None;
    }
    let prompt = after.trim();
    (!prompt.is_empty()).then(|| prompt.to_string())
}

fn last_heading(text: &str, heading: &str) -> Option<usize> {
    let mut found = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == heading {
            found = Some(offset);
        }
        offset += line.len();
    }
    found
}

/// The chat's current text: the editor's buffer, else the file.
pub fn current_text(state: &State) -> Option<String> {
    let path = state.chat_path();
    if let Some(document) = state.lock_documents().get(&path) {
        return Some(document.text());
    }
    read_on_disk(&state.init().paths, &path).ok()
}

/// The chat file on disk, read through the resolver (never through a link).
fn read_on_disk(paths: &PathResolver, path: &Path) -> Result<String, WorkspaceError> {
    let mut text = String::new();
    paths
        .open_file(path)?
        .read_to_string(&mut text)
        .map_err(|e| WorkspaceError::Io {
            path: paths.display(path),
            message: e.to_string(),
        })?;
    Ok(text)
}

/// Creates the chat file if it does not exist. Through the resolver, as
/// every write: a `.bareagent` planted as a link (a cloned repository can
/// hold one) fails the write instead of leading it out of the workspace.
pub fn ensure_exists(paths: &PathResolver, path: &Path) -> Result<(), WorkspaceError> {
    match paths.open_file(path) {
        Ok(_) => Ok(()),
        Err(WorkspaceError::NotFound(_)) => {
            paths.create_own_dir("")?;
            paths.write_atomically(path, NEW_CHAT.as_bytes())
        }
        Err(error) => Err(error),
    }
}

/// Appends to the chat in the background, coalescing pieces.
pub struct ChatWriter {
    sender: Option<mpsc::UnboundedSender<String>>,
    task: Option<JoinHandle<()>>,
}

impl ChatWriter {
    pub fn start(state: Arc<State>) -> ChatWriter {
        let (sender, mut receiver) = mpsc::unbounded_channel::<String>();
        let task = tokio::spawn(async move {
            // Appended since the chat was last saved.
            let mut unsaved = false;
            loop {
                let next = if unsaved {
                    match tokio::time::timeout(SAVE_WHEN_QUIET, receiver.recv()).await {
                        Ok(next) => next,
                        Err(_) => {
                            super::saving::save_chat(&state).await;
                            unsaved = false;
                            continue;
                        }
                    }
                } else {
                    receiver.recv().await
                };
                let Some(first) = next else { break };
                let mut text = first;
                let deadline = tokio::time::sleep(COALESCE);
                tokio::pin!(deadline);
                loop {
                    tokio::select! {
                        () = &mut deadline => break,
                        more = receiver.recv() => match more {
                            Some(more) => text.push_str(&more),
                            None => break,
                        },
                    }
                }
                append(&state, &text).await;
                unsaved = true;
            }
            if unsaved {
                super::saving::save_chat(&state).await;
            }
        });
        ChatWriter {
            sender: Some(sender),
            task: Some(task),
        }
    }

    pub fn write(&self, text: impl Into<String>) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(text.into());
        }
    }

    /// Another way in, for the task that forwards events.
    pub fn handle(&self) -> ChatHandle {
        ChatHandle(self.sender.clone())
    }

    /// Writes what is left and waits until it is written.
    pub async fn finish(&mut self) {
        self.sender.take();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

#[derive(Clone)]
pub struct ChatHandle(Option<mpsc::UnboundedSender<String>>);

impl ChatHandle {
    pub fn write(&self, text: impl Into<String>) {
        if let Some(sender) = &self.0 {
            let _ = sender.send(text.into());
        }
    }
}

/// Appends `text` at the end of the chat as it is now.
pub async fn append(state: &State, text: &str) {
    let path = state.chat_path();
    for _attempt in 0..5 {
        let open = {
            let documents = state.lock_documents();
            documents
                .get(&path)
                .map(|d| (d.uri.clone(), d.version, d.end(state.init().encoding)))
        };
        let Some((uri, version, end)) = open.filter(|_| state.init().can_apply_edit) else {
            return append_on_disk(&state.init().paths, &path, text).await;
        };
        let Ok(uri) = uri.parse() else {
            return append_on_disk(&state.init().paths, &path, text).await;
        };
        let at = Position::new(end.line, end.character);
        let edit = WorkspaceEdit {
            document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier {
                    uri,
                    version: Some(version),
                },
                edits: vec![OneOf::Left(TextEdit {
                    range: Range::new(at, at),
                    new_text: text.to_string(),
                })],
            }])),
            ..WorkspaceEdit::default()
        };
        let applied =
            tokio::time::timeout(Duration::from_secs(10), state.client.apply_edit(edit)).await;
        if matches!(applied, Ok(Ok(ref response)) if response.applied)
            && wait_for_version_after(state, &path, version).await
        {
            return;
        }
        // The user typed in between (a newer version): try again at the new end.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tracing::warn!(
        "could not append to the chat in the editor; the text is in the bareagent/event stream"
    );
}

/// Waits (briefly) for the editor to report a version newer than `version`.
async fn wait_for_version_after(state: &State, path: &Path, version: i32) -> bool {
    state
        .wait_for_document(path, Duration::from_secs(2), |d| {
            d.is_none_or(|d| d.version > version)
        })
        .await
}

/// Appends on disk, rewriting the (small) file atomically through the
/// resolver, off the runtime's workers.
async fn append_on_disk(paths: &PathResolver, path: &Path, text: &str) {
    let (paths, path, text) = (paths.clone(), path.to_path_buf(), text.to_string());
    let result = tokio::task::spawn_blocking(move || {
        ensure_exists(&paths, &path)
            .and_then(|()| read_on_disk(&paths, &path))
            .and_then(|old| paths.write_atomically(&path, format!("{old}{text}").as_bytes()))
    })
    .await;
    match result {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "cannot append to the chat file"),
        Err(error) => tracing::warn!(%error, "cannot append to the chat file"),
    }
}

/// Where the reply stands, so each piece joins the one before it with the
/// break markdown needs: a paragraph after a list item runs into the item
/// unless a blank line parts them, and a heading or footer wants one too.
/// Starts after `## Agent` and its blank line.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Line ends at the end of what was written, up to two.
    newlines: usize,
    in_list: bool,
    /// Inside the folded section of the model's thinking.
    in_thinking: bool,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            newlines: 2,
            in_list: false,
            in_thinking: false,
        }
    }
}

/// Opens the folded section the model's thinking streams into: folded in
/// every markdown view (GitHub's, VS Code's preview), and in Neovim's chat.
pub const THINKING_OPEN: &str = "<details><summary>Thinking</summary>";
pub const THINKING_CLOSE: &str = "</details>";

impl Layout {
    /// A piece of the model's thinking, as it streams: in a folded
    /// section, opened by the first piece and closed by whatever follows.
    pub fn thinking(&mut self, text: &str) -> String {
        if text.is_empty() {
            return String::new();
        }
        let mut out = String::new();
        if !self.in_thinking {
            out.push_str(&self.blank_line());
            out.push_str(THINKING_OPEN);
            out.push_str("\n\n");
            self.in_thinking = true;
            self.in_list = false;
            self.newlines = 2;
        }
        // A thought that closes the section itself would unfold the rest.
        let text = text.replace(THINKING_CLOSE, "&lt;/details>");
        out.push_str(&text);
        self.note(&text);
        out
    }

    /// Ends the thinking's section, if one is open.
    fn end_thinking(&mut self) -> String {
        if !std::mem::take(&mut self.in_thinking) {
            return String::new();
        }
        let mut out = self.blank_line();
        out.push_str(THINKING_CLOSE);
        out.push_str("\n\n");
        self.newlines = 2;
        out
    }

    /// A piece of the model's text, as it streams.
    pub fn text(&mut self, text: &str) -> String {
        if text.is_empty() {
            return String::new();
        }
        let mut out = self.end_thinking();
        out += &if self.in_list {
            self.blank_line()
        } else {
            String::new()
        };
        self.in_list = false;
        out.push_str(text);
        self.note(text);
        out
    }

    /// One line of a list (a tool call, or its error under it).
    pub fn list_item(&mut self, line: &str) -> String {
        let mut out = self.end_thinking();
        out += &if self.in_list {
            String::new()
        } else {
            self.blank_line()
        };
        self.in_list = true;
        out.push_str(line);
        out.push('\n');
        self.newlines = 1;
        out
    }

    /// A block of its own (a heading, a footer line), with a blank line
    /// before and after it.
    pub fn section(&mut self, block: &str) -> String {
        let mut out = self.end_thinking();
        out.push_str(&self.blank_line());
        out.push_str(block.trim_end_matches('\n'));
        out.push_str("\n\n");
        self.in_list = false;
        self.newlines = 2;
        out
    }

    /// What makes the text so far end with a blank line.
    fn blank_line(&self) -> String {
        "\n".repeat(2 - self.newlines.min(2))
    }

    fn note(&mut self, text: &str) {
        let trailing = text.len() - text.trim_end_matches('\n').len();
        self.newlines = if trailing == text.len() {
            (self.newlines + trailing).min(2)
        } else {
            trailing.min(2)
        };
    }
}

/// A prompt the user sent during a turn, where it reached the model.
pub fn prompt_section(prompt: &str) -> String {
    format!("{YOU}\n\n{}\n\n{AGENT}", prompt.trim())
}

/// `1 model call`, `2 model calls`.
pub fn count(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// What makes `chat` end with a blank line (nothing for an empty chat).
pub fn blank_line_after(chat: &str) -> &'static str {
    if chat.is_empty() || chat.ends_with("\n\n") {
        ""
    } else if chat.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    }
}

/// The chat ends with a `## You` heading nobody wrote under yet.
pub fn ends_with_empty_prompt(chat: &str) -> bool {
    last_heading(chat, YOU).is_some_and(|at| chat[at + YOU.len()..].trim().is_empty())
}

/// What to append when a turn starts, given the chat's text.
pub fn turn_header(chat: &str, prompt: &str, prompt_from_chat: bool) -> String {
    let newline = blank_line_after(chat);
    if prompt_from_chat {
        return format!("{newline}{AGENT}\n\n");
    }
    if ends_with_empty_prompt(chat) {
        format!("{newline}{prompt}\n\n{AGENT}\n\n")
    } else {
        format!("{newline}{YOU}\n\n{prompt}\n\n{AGENT}\n\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_unanswered_prompt() {
        assert_eq!(pending_prompt(NEW_CHAT), None);
        let chat = format!("{NEW_CHAT}Fix the tests\nplease\n");
        assert_eq!(
            pending_prompt(&chat).as_deref(),
            Some("Fix the tests\nplease")
        );
        let answered = format!("{chat}\n## Agent\n\nDone.\n");
        assert_eq!(pending_prompt(&answered), None);
        let next = format!("{answered}\n## You\n\nNow the docs\n");
        assert_eq!(pending_prompt(&next).as_deref(), Some("Now the docs"));
    }

    #[test]
    fn text_after_a_list_is_its_own_paragraph() {
        let mut layout = Layout::default();
        let mut chat = String::from("## Agent\n\n");
        chat += &layout.text("Reading");
        chat += &layout.text(" it.");
        chat += &layout.list_item("- `read_file` a.py");
        chat += &layout.list_item("  - ✗ no such file");
        chat += &layout.list_item("- `glob` *.py");
        chat += &layout.text("Found it.\n");
        chat += &layout.list_item("- `edit_file` b.py");
        chat += &layout.text("Done.");
        chat += &layout.section("_2 model calls_");
        chat += &layout.section(YOU);
        assert_eq!(
            chat,
            "## Agent\n\nReading it.\n\n- `read_file` a.py\n  - ✗ no such file\n- `glob` *.py\n\nFound it.\n\n- `edit_file` b.py\n\nDone.\n\n_2 model calls_\n\n## You\n\n"
        );
        let mut first = Layout::default();
        assert_eq!(
            first.list_item("- x"),
            "- x\n",
            "no blank line to add at the start"
        );
    }

    #[test]
    fn thinking_is_folded_and_closed_by_whatever_follows_it() {
        let mut layout = Layout::default();
        let mut chat = String::from("## Agent\n\n");
        chat += &layout.thinking("Look at");
        chat += &layout.thinking(" a.py </details> first.");
        chat += &layout.list_item("- `read_file` a.py");
        chat += &layout.thinking("Now fix it.\n");
        chat += &layout.section("_2 model calls_");
        assert_eq!(
            chat,
            "## Agent\n\n<details><summary>Thinking</summary>\n\nLook at a.py &lt;/details> first.\n\n</details>\n\n- `read_file` a.py\n\n<details><summary>Thinking</summary>\n\nNow fix it.\n\n</details>\n\n_2 model calls_\n\n"
        );
    }

    #[test]
    fn counts_are_plural_only_when_they_should_be() {
        assert_eq!(count(1, "model call"), "1 model call");
        assert_eq!(count(0, "model call"), "0 model calls");
        assert_eq!(count(2, "model call"), "2 model calls");
    }

    #[test]
    fn headers_fit_the_chat() {
        assert_eq!(turn_header("## You\n\nhi\n", "hi", true), "\n## Agent\n\n");
        assert_eq!(turn_header(NEW_CHAT, "do x", false), "do x\n\n## Agent\n\n");
        assert_eq!(
            turn_header("## Agent\n\ndone", "do y", false),
            "\n\n## You\n\ndo y\n\n## Agent\n\n"
        );
    }
}
