//! Commands run against the agent's edits, though those sit in the
//! editor's buffers, unsaved. Before a command, each file the agent edited
//! whose buffer the disk does not hold is saved by the editor where the
//! client offers `bareagent/saveDocuments` (the buffer becomes clean, its
//! undo history stays), unless the buffer held the user's own unsaved work
//! before the agent's first edit: that is theirs to save. What is still not
//! on disk is shown to the command through a view of its own (see
//! `workspace/view.rs`), so the disk is never written behind an editor. The
//! tool result says what the command did not see.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::editor::EditorWorkspace;
use super::state::State;
use crate::config::SaveEdits;
use crate::sync::Locked;
use crate::workspace::{CommandView, CommandViews, Workspace};

/// How long the editor gets to save.
const SAVE_TIMEOUT: Duration = Duration::from_secs(10);

/// The request asking the client to save documents (see docs/protocol.md).
pub enum SaveDocuments {}

impl tower_lsp_server::ls_types::request::Request for SaveDocuments {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "bareagent/saveDocuments";
}

impl EditorWorkspace {
    /// Before the agent's first edit of a file: was its buffer already
    /// different from the disk (the user's unsaved work)?
    pub(super) async fn note_agent_edit(&self, path: &Path) {
        let known = self.state.agent_edits.locked().contains_key(path);
        if known {
            return;
        }
        let buffer = self.buffers().remove(path);
        let users_work = match buffer {
            Some(text) => self.on_disk(path).await.as_deref() != Some(text.as_str()),
            None => false,
        };
        self.state
            .agent_edits
            .locked()
            .entry(path.to_path_buf())
            .or_insert(users_work);
    }

    /// The file's text on disk, if it is there and text.
    async fn on_disk(&self, path: &Path) -> Option<String> {
        self.disk.read_text(path).await.ok().map(|file| file.text)
    }

    /// Asks the editor to save those of `paths` it may: the agent's edits,
    /// in buffers that held nothing of the user's unsaved work.
    pub(super) async fn save_for_commands(&self, paths: &[PathBuf]) {
        if !self.state.init().can_save_documents {
            return;
        }
        let uris: Vec<String> = {
            let edits = self.state.agent_edits.locked();
            let documents = self.state.lock_documents();
            paths
                .iter()
                .filter(|path| edits.get(*path) == Some(&false))
                .filter_map(|path| documents.get(path).map(|d| d.uri.clone()))
                .collect()
        };
        request_save(&self.state, uris).await;
    }
}

/// Asks the editor to save `uris`, and waits for its answer (a while at most).
async fn request_save(state: &State, uris: Vec<String>) {
    if uris.is_empty() {
        return;
    }
    tracing::info!(files = uris.len(), "asking the editor to save");
    let asked = state
        .client
        .send_request::<SaveDocuments>(json!({ "uris": uris }));
    match tokio::time::timeout(SAVE_TIMEOUT, asked).await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => tracing::info!(%error, "the editor did not save"),
        Err(_) => tracing::info!("the editor did not answer saveDocuments in time"),
    }
}

/// Keeps the chat file's disk copy in step with its buffer, and the buffer
/// clean, where the client can save (else the buffer holds the reply until
/// the user saves it).
pub(super) async fn save_chat(state: &State) {
    if !state.init().can_save_documents {
        return;
    }
    let uri = state
        .lock_documents()
        .get(&state.chat_path())
        .map(|d| d.uri.clone());
    if let Some(uri) = uri {
        request_save(state, vec![uri]).await;
    }
}

/// Names for a note: `a.py, b.py`.
fn names(state: &State, paths: &[PathBuf]) -> String {
    let resolver = &state.init().paths;
    paths
        .iter()
        .map(|p| resolver.display(p))
        .collect::<Vec<_>>()
        .join(", ")
}

#[async_trait]
impl CommandViews for EditorWorkspace {
    async fn prepare(&self) -> CommandView {
        let chat = self.state.chat_path();
        let edited = self.state.agent_edits.locked().clone();
        let (mut agents, mut users) = (Vec::new(), Vec::new());
        for (path, text) in self.buffers() {
            if path == chat || self.on_disk(&path).await.as_deref() == Some(text.as_str()) {
                continue;
            }
            if edited.contains_key(&path) {
                agents.push(path);
            } else {
                users.push(path);
            }
        }
        agents.sort();
        users.sort();
        let mut notes = Vec::new();
        let mut view = CommandView::default();
        if !agents.is_empty() && self.save == SaveEdits::Never {
            notes.push(format!(
                "Note: the agent's edits to {} are not on disk (edits.save = \"never\"): the command saw the saved version.",
                names(&self.state, &agents)
            ));
        } else if !agents.is_empty() {
            self.save_for_commands(&agents).await;
            let buffers = self.buffers();
            let (mut files, mut missing) = (Vec::new(), Vec::new());
            for path in agents {
                let Some(text) = buffers.get(&path) else {
                    continue;
                };
                if self.on_disk(&path).await.as_deref() == Some(text.as_str()) {
                    continue;
                }
                if self.paths().open_file(&path).is_err() {
                    missing.push(path);
                    continue;
                }
                let version = self.state.lock_documents().get(&path).map(|d| d.version);
                files.push((path, text.clone(), version));
            }
            if !missing.is_empty() {
                notes.push(format!(
                    "Note: {} exist only in the editor, not on disk, so the command did not see them; ask the user to save them.",
                    names(&self.state, &missing)
                ));
            }
            let shown: Vec<PathBuf> = files.iter().map(|(p, _, _)| p.clone()).collect();
            match CommandView::mounting(self.paths(), files) {
                Ok(mounted) => view = mounted,
                Err(why) => notes.push(format!(
                    "Note: the command saw the saved version of {}, not the agent's edits ({why}); ask the user to save them.",
                    names(&self.state, &shown)
                )),
            }
        }
        if !users.is_empty() {
            notes.push(format!(
                "Note: commands see the saved version of: {} (the user has unsaved changes in the editor).",
                names(&self.state, &users)
            ));
        }
        view.notes = notes;
        view
    }

    async fn finish(&self, view: CommandView) -> Vec<String> {
        let mut notes = Vec::new();
        for mount in &view.mounts {
            let shown = self.paths().display(&mount.path);
            let now = match mount.current_text() {
                Ok(now) if now == mount.text => continue,
                Ok(now) => now,
                Err(error) => {
                    notes.push(format!(
                        "Note: the command left {shown} unreadable ({error}); its buffer is unchanged."
                    ));
                    continue;
                }
            };
            notes.push(match self.write_text(&mount.path, &now, mount.version).await {
                Ok(_) => format!(
                    "Note: the command changed {shown}; the change is in its buffer in the editor (read it again before editing)."
                ),
                Err(error) => format!(
                    "Note: the command changed {shown}, but the change could not be put in its buffer: {error}"
                ),
            });
        }
        notes
    }
}
