//! `bareagent chat`'s prompt: line editing and history (`reedline`), on a
//! thread of its own since reading a line blocks, asked for one line at a
//! time.
//!
//! The terminal is in raw mode only while a line is being read. Between
//! two reads — a turn, its approvals — `turn_keys` has it out of canonical
//! mode with signals on, so a Ctrl-C is a SIGINT (which cancels the turn),
//! a lone Esc is read as a key, and the approver reads single keys. What
//! was typed during the turn starts the next line. Nothing here is started
//! unless `bareagent chat` runs.
//!
//! Multi-line input: a line ending in `\`, or one that leaves a ```
//! block open, goes on on the next line (as Alt-Enter and Shift-Enter
//! always do); the `\` before each such line break is dropped. A paste
//! (bracketed paste, which every current terminal does) is inserted whole,
//! never sent by its line breaks; one over 10 lines or 1,000 characters
//! shows as `[pasted 42 lines]` and is sent whole. Tab completes an
//! `@path` mention (`mentions.rs`).
//!
//! The history file is the user's, never the workspace's:
//! `$XDG_STATE_HOME/bareagent/chat_history` (else
//! `~/.local/state/bareagent/chat_history`), created 0600 in a 0700
//! directory, since prompts can quote anything.

use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use reedline::{
    ColumnarMenu, EditCommand, EditMode, Emacs, FileBackedHistory, KeyCode, KeyModifiers,
    MenuBuilder, Prompt, PromptEditMode, PromptHistorySearch, Reedline, ReedlineEvent,
    ReedlineMenu, ReedlineRawEvent, Signal, ValidationResult, Validator, default_emacs_keybindings,
};

use crate::sync::Locked;

/// Entries the history keeps.
const HISTORY_ENTRIES: usize = 1000;

/// What one read gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    /// What the user typed, continuation marks dropped.
    Line(String),
    /// Ctrl-C: the line was cleared.
    Interrupted,
    /// Ctrl-D on an empty line.
    End,
}

/// The prompt's thread, waiting to be asked for a line.
pub struct LineEditor {
    /// Asks for a line, starting with this text (typed during the turn).
    ask: std::sync::mpsc::Sender<String>,
    lines: tokio::sync::mpsc::UnboundedReceiver<io::Result<Read>>,
}

impl LineEditor {
    /// Starts the thread, with the history at `history` (`None`: kept in
    /// memory only); Tab completes `@` mentions of files under `root`.
    pub fn start(history: Option<PathBuf>, root: PathBuf) -> LineEditor {
        let (ask, asked) = std::sync::mpsc::channel::<String>();
        let (answer, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let pastes = Pastes::default();
            let mut editor = editor(history.as_deref(), &pastes, root);
            // Until the chat drops its end.
            while let Ok(typed) = asked.recv() {
                if !typed.is_empty() {
                    editor.run_edit_commands(&[EditCommand::InsertString(typed)]);
                }
                let read = editor.read_line(&ChatPrompt).map(|signal| match signal {
                    Signal::Success(buffer) => Read::Line(pastes.unfold(&joined(&buffer))),
                    Signal::CtrlD => Read::End,
                    // Ctrl-C, and any signal a later reedline adds: the
                    // line is dropped, the chat goes on.
                    _ => Read::Interrupted,
                });
                // A paste not sent (the line cleared) is not kept either.
                pastes.clear();
                if answer.send(read.map_err(io::Error::other)).is_err() {
                    break;
                }
            }
        });
        LineEditor { ask, lines }
    }

    /// The next thing the user types, after `typed` (what they typed
    /// during the turn, put back at the prompt).
    pub async fn read(&mut self, typed: String) -> io::Result<Read> {
        let gone = || io::Error::other("the prompt's thread ended");
        self.ask.send(typed).map_err(|_| gone())?;
        self.lines.recv().await.ok_or_else(gone)?
    }
}

/// The editor, with the history file if it can be had (else a note in the
/// log and a history in memory).
fn editor(history: Option<&Path>, pastes: &Pastes, root: PathBuf) -> Reedline {
    let mut keys = default_emacs_keybindings();
    keys.add_binding(
        KeyModifiers::NONE,
        KeyCode::Tab,
        ReedlineEvent::UntilFound(vec![
            ReedlineEvent::Menu(MENU.to_string()),
            ReedlineEvent::MenuNext,
        ]),
    );
    let menu = ColumnarMenu::default().with_name(MENU);
    let editor = Reedline::create()
        .with_validator(Box::new(GoesOn))
        .with_ansi_colors(std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()))
        .use_bracketed_paste(true)
        .with_edit_mode(Box::new(Folding {
            keys: Emacs::new(keys),
            pastes: pastes.clone(),
        }))
        .with_completer(Box::new(super::mentions::Mentions::new(root)))
        .with_quick_completions(true)
        .with_menu(ReedlineMenu::EngineCompleter(Box::new(menu)));
    let Some(path) = history else {
        return editor;
    };
    match private_file(path)
        .map_err(|e| e.to_string())
        .and_then(|()| {
            FileBackedHistory::with_file(HISTORY_ENTRIES, path.to_path_buf())
                .map_err(|e| e.to_string())
        }) {
        Ok(history) => editor.with_history(Box::new(history)),
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "cannot keep the chat history in a file; it lasts until the chat ends");
            editor
        }
    }
}

/// Where the history goes: under the user's state directory.
pub fn history_path() -> Option<PathBuf> {
    let non_empty = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let state = non_empty("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|home| PathBuf::from(home).join(".local/state")))?;
    Some(state.join("bareagent").join("chat_history"))
}

/// Makes `path` a file only its owner reads, in a directory only its
/// owner enters; a link at its name is refused, not followed.
fn private_file(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    // One made before (or by someone else's umask) is made private too.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
}

/// The completion menu's name (Tab opens it).
const MENU: &str = "mentions";

/// A paste longer than this many lines, or characters, is shown folded.
const FOLD_LINES: usize = 10;
const FOLD_CHARS: usize = 1000;

/// Pastes shown folded in the line, by their label: unfolded when the
/// line is sent.
#[derive(Clone, Default)]
struct Pastes(Arc<Mutex<Vec<(String, String)>>>);

impl Pastes {
    /// The label that stands for `text` in the line: `[pasted 42 lines]`
    /// (`#2` after it for a second one in the same line).
    fn fold(&self, text: String) -> String {
        let mut pastes = self.0.locked();
        let lines = text.lines().count();
        let label = match pastes.len() {
            0 => format!("[pasted {lines} lines]"),
            n => format!("[pasted {lines} lines #{}]", n + 1),
        };
        pastes.push((label.clone(), text));
        label
    }

    /// `line` with each label still in it replaced by its paste.
    fn unfold(&self, line: &str) -> String {
        let mut line = line.to_string();
        for (label, text) in self.0.locked().iter() {
            line = line.replacen(label, text, 1);
        }
        line
    }

    fn clear(&self) {
        self.0.locked().clear();
    }
}

/// Emacs keys, with a paste (bracketed: the terminal marks where it
/// starts and ends) inserted whole — its line breaks do not send it —
/// and folded when long.
struct Folding {
    keys: Emacs,
    pastes: Pastes,
}

impl EditMode for Folding {
    fn parse_event(&mut self, event: ReedlineRawEvent) -> ReedlineEvent {
        match crossterm::event::Event::from(event) {
            crossterm::event::Event::Paste(text) => {
                let text = text.replace("\r\n", "\n").replace('\r', "\n");
                let long = text.lines().count() > FOLD_LINES || text.chars().count() > FOLD_CHARS;
                let shown = if long { self.pastes.fold(text) } else { text };
                ReedlineEvent::Edit(vec![EditCommand::InsertString(shown)])
            }
            other => match ReedlineRawEvent::try_from(other) {
                Ok(event) => self.keys.parse_event(event),
                Err(()) => ReedlineEvent::None,
            },
        }
    }

    fn edit_mode(&self) -> PromptEditMode {
        self.keys.edit_mode()
    }
}

/// Input goes on after a line ending in `\`, and inside a ``` block.
struct GoesOn;

impl Validator for GoesOn {
    fn validate(&self, buffer: &str) -> ValidationResult {
        if buffer.ends_with('\\') || buffer.matches("```").count() % 2 == 1 {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Complete
        }
    }
}

/// The buffer as sent: each `\` that asked for the next line dropped.
fn joined(buffer: &str) -> String {
    buffer.replace("\\\r\n", "\n").replace("\\\n", "\n")
}

/// `› `, and `… ` on the lines that continue it.
struct ChatPrompt;

impl Prompt for ChatPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed("› ")
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("… ")
    }

    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        Cow::Owned(format!("(search: {}) ", search.term))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_goes_on_after_a_backslash_and_inside_a_fence() {
        let cases = [
            ("one line", false),
            ("ends with \\", true),
            ("a \\ in the middle", false),
            ("```", true),
            ("look:\n```rust\nfn main() {}", true),
            ("look:\n```rust\nfn main() {}\n```", false),
        ];
        for (buffer, goes_on) in cases {
            let incomplete = matches!(GoesOn.validate(buffer), ValidationResult::Incomplete);
            assert_eq!(incomplete, goes_on, "{buffer:?}");
        }
        assert_eq!(joined("first \\\nsecond"), "first \nsecond");
        assert_eq!(joined("a\\b"), "a\\b");
    }

    #[test]
    fn the_history_file_is_private_and_a_link_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/bareagent/chat_history");
        private_file(&path).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        // Made wider by hand: narrowed again.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        private_file(&path).unwrap();
        assert_eq!(mode(&path), 0o600);
        // A link planted at its name: refused, the target untouched.
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "x").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(private_file(&link).is_err());
        assert_eq!(mode(&target), 0o644);
    }
}
