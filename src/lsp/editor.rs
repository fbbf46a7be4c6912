//! The workspace as the editor has it: reads come from open buffers
//! (unsaved changes included) before the disk, and writes go through
//! `workspace/applyEdit`, carrying the version the agent read, so the user's
//! unsaved work is never overwritten and the change lands in the editor's
//! undo history. The editor's word is checked: `applied: true` counts only
//! once the document the client reports shows the new version (Neovim says
//! `true` even when it skipped a stale edit).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tower_lsp_server::ls_types::{
    CreateFile, DocumentChangeOperation, DocumentChanges, OneOf,
    OptionalVersionedTextDocumentIdentifier, Position, Range, ResourceOp, TextDocumentEdit,
    TextEdit, WorkspaceEdit,
};

use super::documents::{Encoding, position};
use super::state::State;
use crate::config::SaveEdits;
use crate::sync::Locked;
use crate::workspace::{
    Buffers, CommandViews, DiskWorkspace, FileText, PathResolver, Restore, Workspace,
    WorkspaceError,
};

/// How long the editor gets to apply an edit and report it.
const EDIT_TIMEOUT: Duration = Duration::from_secs(10);
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(3);
/// How long, after the first report of an edit, the rest of it may take to
/// be reported (Neovim's debounce is 150 ms by default).
const REST_OF_EDIT_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Clone)]
pub struct EditorWorkspace {
    pub(super) state: Arc<State>,
    pub(super) disk: DiskWorkspace,
    /// When the agent's edits are saved (see `saving.rs`).
    pub(super) save: SaveEdits,
}

impl EditorWorkspace {
    pub fn new(state: Arc<State>, save: SaveEdits) -> std::io::Result<Self> {
        let disk = DiskWorkspace::new(&state.init().root)?;
        Ok(EditorWorkspace { state, disk, save })
    }
}

fn failed(path: &Path, message: impl Into<String>) -> WorkspaceError {
    WorkspaceError::Io {
        path: path.display().to_string(),
        message: message.into(),
    }
}

#[async_trait]
impl Workspace for EditorWorkspace {
    fn paths(&self) -> &PathResolver {
        self.disk.paths()
    }

    fn diagnostics(&self) -> Option<Arc<crate::workspace::reported::EditorDiagnostics>> {
        let diagnostics = &self.state.diagnostics;
        diagnostics.any().then(|| diagnostics.clone())
    }

    fn buffers(&self) -> Buffers {
        let mut buffers: Buffers = self
            .state
            .lock_documents()
            .iter()
            .map(|(path, document)| (path.clone(), document.text()))
            .collect();
        // As in `read_text`: our own unsaved text first.
        let overlay = self.state.overlay.locked();
        buffers.extend(overlay.iter().map(|(p, t)| (p.clone(), t.clone())));
        buffers
    }

    async fn read_text(&self, path: &Path) -> Result<FileText, WorkspaceError> {
        // Our own unsaved text first: it is kept only while the editor has
        // not shown it back (see `settle_unopened`).
        if let Some(text) = self.state.overlay.locked().get(path) {
            return Ok(FileText {
                text: text.clone(),
                version: None,
                encoding: None,
            });
        }
        if let Some(document) = self.state.lock_documents().get(path) {
            return Ok(FileText {
                text: document.text(),
                version: Some(document.version),
                encoding: None,
            });
        }
        self.disk.read_text(path).await
    }

    async fn write_text(
        &self,
        path: &Path,
        text: &str,
        read_version: Option<i32>,
    ) -> Result<Option<i32>, WorkspaceError> {
        let shown = self.paths().display(path);
        let init = self.state.init();
        if !init.can_apply_edit {
            return self.disk.write_text(path, text, read_version).await;
        }
        // The editor saves in place: never through another name.
        self.paths().refuse_hard_links(path)?;
        self.note_agent_edit(path).await;
        let written = self
            .write_through_editor(path, &shown, text, read_version)
            .await?;
        if self.save == SaveEdits::AfterEachEdit {
            self.save_for_commands(&[path.to_path_buf()]).await;
        }
        Ok(written)
    }

    fn command_views(&self) -> Option<Arc<dyn CommandViews>> {
        Some(Arc::new(self.clone()))
    }

    async fn restore(&self, files: &[Restore]) -> Vec<Result<(), WorkspaceError>> {
        self.restore_in_editor(files).await
    }
}

impl EditorWorkspace {
    async fn write_through_editor(
        &self,
        path: &Path,
        shown: &str,
        text: &str,
        read_version: Option<i32>,
    ) -> Result<Option<i32>, WorkspaceError> {
        let init = self.state.init();
        let uri =
            State::uri_of(path).ok_or_else(|| failed(path, "cannot make a file URI for it"))?;
        let open = {
            let documents = self.state.lock_documents();
            documents.get(path).map(|d| (d.version, d.rope.clone()))
        };
        tracing::debug!(file = %shown, open = open.is_some(), ?read_version, "writing through the editor");
        if let Some((version, rope)) = open {
            if let Some(read) = read_version.filter(|&read| read != version) {
                return Err(failed(
                    path,
                    format!(
                        "changed in the editor since you read it (version {read}, now {version}); read it again, then edit"
                    ),
                ));
            }
            let edits = minimal_edits(&rope, text, init.encoding);
            if edits.is_empty() {
                return Ok(Some(version));
            }
            let edit = self.state.text_edit(uri, Some(version), edits);
            self.apply(path, edit).await?;
            return self.confirm(path, version, text).await;
        }
        // Not open in the editor.
        let exists = path.exists() || self.state.overlay.locked().contains_key(path);
        if !exists && !init.can_create_files {
            return self.disk.write_text(path, text, None).await;
        }
        let mut operations = Vec::new();
        let base = if exists {
            let file = self.read_text(path).await?;
            if file.encoding.is_some() {
                // Not UTF-8 on disk: the editor may decode it otherwise (as
                // UTF-8 with replacements), and edits placed on our text
                // would land elsewhere in its. Nobody has it open, so the
                // disk is written, in the file's own encoding.
                return self.disk.write_text(path, text, None).await;
            }
            file.text
        } else {
            if let Some(parent) = path.parent() {
                self.paths().create_dirs(parent)?;
            }
            // Never `ignoreIfExists`: a file that appeared meanwhile must not be clobbered.
            operations.push(DocumentChangeOperation::Op(ResourceOp::Create(
                CreateFile {
                    uri: uri.clone(),
                    options: None,
                    annotation_id: None,
                },
            )));
            String::new()
        };
        let edits = minimal_edits(&ropey::Rope::from_str(&base), text, init.encoding);
        if !init.document_changes {
            let edit = self.state.text_edit(uri, None, edits);
            self.apply(path, edit).await?;
            return Ok(self.settle_unopened(path, text).await);
        }
        operations.push(DocumentChangeOperation::Edit(TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier { uri, version: None },
            edits: edits.into_iter().map(OneOf::Left).collect(),
        }));
        let edit = WorkspaceEdit {
            document_changes: Some(DocumentChanges::Operations(operations)),
            ..WorkspaceEdit::default()
        };
        self.apply(path, edit).await?;
        tracing::debug!(file = %shown, "edited through the editor");
        Ok(self.settle_unopened(path, text).await)
    }

    /// After a versionless edit of a file the editor did not have open: the
    /// editor now holds the text, unsaved. Editors that report the document
    /// (`didOpen` with the disk's text, then `didChange`) get a moment to;
    /// otherwise our text stands in for the file until they do.
    pub(super) async fn settle_unopened(&self, path: &Path, text: &str) -> Option<i32> {
        let state = &self.state;
        let shown = state
            .wait_for_document(path, Duration::from_secs(1), |d| {
                d.is_some_and(|d| d.text() == text)
            })
            .await;
        if !shown {
            state
                .overlay
                .locked()
                .insert(path.to_path_buf(), text.to_string());
        }
        state.lock_documents().get(path).map(|d| d.version)
    }

    pub(super) async fn apply(
        &self,
        path: &Path,
        edit: WorkspaceEdit,
    ) -> Result<(), WorkspaceError> {
        match tokio::time::timeout(EDIT_TIMEOUT, self.state.client.apply_edit(edit)).await {
            Err(_) => Err(failed(
                path,
                "the editor did not answer the edit in time; read the file again",
            )),
            Ok(Err(error)) => Err(failed(
                path,
                format!(
                    "the editor refused the edit ({}); read the file again",
                    error.message
                ),
            )),
            Ok(Ok(response)) if !response.applied => Err(failed(
                path,
                format!(
                    "the editor did not apply the edit ({}); the file may have changed: read it again, then edit",
                    response
                        .failure_reason
                        .unwrap_or_else(|| "no reason given".into())
                ),
            )),
            Ok(Ok(_)) => Ok(()),
        }
    }

    /// Waits for the editor to report a newer version. It should show our
    /// text; if the user typed at the same moment it may show more, which is
    /// theirs to keep.
    pub(super) async fn confirm(
        &self,
        path: &Path,
        version: i32,
        expected: &str,
    ) -> Result<Option<i32>, WorkspaceError> {
        let state = &self.state;
        let newer = |d: Option<&super::documents::Document>| d.is_none_or(|d| d.version > version);
        if !state.wait_for_document(path, CONFIRM_TIMEOUT, newer).await {
            return Err(failed(
                path,
                "the editor said it applied the edit but the document did not change (it may have been stale); read the file again",
            ));
        }
        // Neovim applies an edit that ends past the last line in two steps
        // (the text, then the removal of the extra empty line) and may report
        // them in two didChange, the second after its debounce: the version
        // that counts is the one showing our text, or the next edit is
        // refused as stale.
        let ours = |d: Option<&super::documents::Document>| d.is_none_or(|d| d.text() == expected);
        if !state
            .wait_for_document(path, REST_OF_EDIT_TIMEOUT, ours)
            .await
        {
            tracing::info!(path = %path.display(), "the document changed by more than our edit (the user is typing)");
        }
        Ok(state.lock_documents().get(path).map(|d| d.version))
    }
}

/// The smallest set of line-range replacements turning `old` into `new`,
/// each against the original text (LSP applies them together): a one-line
/// change is a one-line edit, so cursors, folds and undo stay where they were.
pub fn minimal_edits(old: &ropey::Rope, new: &str, encoding: Encoding) -> Vec<TextEdit> {
    let old_text = old.to_string();
    let diff = similar::TextDiff::from_lines(old_text.as_str(), new);
    let old_lines: Vec<&str> = diff.old_slices().to_vec();
    let new_lines: Vec<&str> = diff.new_slices().to_vec();
    // Char offset where each old line starts.
    let mut starts = Vec::with_capacity(old_lines.len() + 1);
    let mut offset = 0;
    for line in &old_lines {
        starts.push(offset);
        offset += line.chars().count();
    }
    starts.push(offset);
    let to_position = |char_idx: usize| {
        let p = position(old, char_idx, encoding);
        Position::new(p.line, p.character)
    };
    let mut edits = Vec::new();
    for op in diff.ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        if tag == similar::DiffTag::Equal {
            continue;
        }
        edits.push(TextEdit {
            range: Range::new(
                to_position(starts[old_range.start]),
                to_position(starts[old_range.end]),
            ),
            new_text: new_lines[new_range].concat(),
        });
    }
    edits
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies edits (all against the original) the way an editor does.
    fn apply(old: &str, edits: &[TextEdit], encoding: Encoding) -> String {
        let mut rope = ropey::Rope::from_str(old);
        let original = rope.clone();
        let mut sorted = edits.to_vec();
        sorted.sort_by_key(|e| (e.range.start.line, e.range.start.character));
        for edit in sorted.iter().rev() {
            let at = |p: Position| {
                super::super::documents::char_index(
                    &original,
                    super::super::documents::Pos {
                        line: p.line,
                        character: p.character,
                    },
                    encoding,
                )
            };
            let (s, e) = (at(edit.range.start), at(edit.range.end));
            rope.remove(s..e);
            rope.insert(s, &edit.new_text);
        }
        rope.to_string()
    }

    #[test]
    fn minimal_edits_reproduce_the_new_text() {
        let cases = [
            ("a\nb\nc\n", "a\nB\nc\n"),
            ("a\nb\nc", "a\nb\nc\nd"),
            ("", "new file\n"),
            ("x😀\r\ny\r\n", "x😀\r\nz\r\ny\r\n"),
            ("one\ntwo\nthree\n", ""),
            ("中文\n", "中文\nmore 中文"),
        ];
        for (old, new) in cases {
            for encoding in [Encoding::Utf8, Encoding::Utf16] {
                let edits = minimal_edits(&ropey::Rope::from_str(old), new, encoding);
                assert_eq!(
                    apply(old, &edits, encoding),
                    new,
                    "{old:?} → {new:?} ({encoding:?})"
                );
            }
        }
        let one_line = minimal_edits(
            &ropey::Rope::from_str("a\nb\nc\n"),
            "a\nB\nc\n",
            Encoding::Utf16,
        );
        assert_eq!(one_line.len(), 1);
        assert_eq!(
            one_line[0].range,
            Range::new(Position::new(1, 0), Position::new(2, 0))
        );
    }
}
