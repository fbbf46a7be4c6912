//! A rewind in the editor: every file the turn changed put back in one
//! `workspace/applyEdit`, so the editor's undo takes it back whole. Each
//! file's text is checked again just before the edit is made (it must
//! still be what the agent left), and an open document's edit carries the
//! version that check read: a user who types in between makes the editor
//! refuse the edit rather than lose the typing (VS Code refuses it whole;
//! Neovim skips the stale document, which the check after the edit sees).
//! An editor that cannot take versioned or delete operations gets the
//! files one by one, as the agent's own edits went.

use std::path::Path;

use tower_lsp_server::ls_types::{
    DeleteFile, DocumentChangeOperation, DocumentChanges, OneOf,
    OptionalVersionedTextDocumentIdentifier, ResourceOp, TextDocumentEdit, WorkspaceEdit,
};

use super::editor::{EditorWorkspace, minimal_edits};
use super::state::State;
use crate::config::SaveEdits;
use crate::sync::Locked;
use crate::workspace::{Restore, Workspace, WorkspaceError, restore_one_by_one};

impl EditorWorkspace {
    pub(super) async fn restore_in_editor(
        &self,
        files: &[Restore],
    ) -> Vec<Result<(), WorkspaceError>> {
        let init = self.state.init();
        let deletes = files.iter().any(|f| f.text.is_none());
        for file in files {
            // The save policy treats the rewind's writes as the agent's.
            self.note_agent_edit(&file.path).await;
        }
        let results = if !init.can_apply_edit
            || !init.document_changes
            || (deletes && !init.can_delete_files)
        {
            restore_one_by_one(self, files).await
        } else {
            self.restore_in_one_edit(files).await
        };
        for (file, result) in files.iter().zip(&results) {
            if result.is_ok() && file.text.is_none() {
                self.forget_overlay(&file.path);
            }
        }
        if self.save == SaveEdits::AfterEachEdit {
            let paths: Vec<_> = files.iter().map(|f| f.path.clone()).collect();
            self.save_for_commands(&paths).await;
        }
        results
    }

    async fn restore_in_one_edit(&self, files: &[Restore]) -> Vec<Result<(), WorkspaceError>> {
        let mut results: Vec<Result<(), WorkspaceError>> = Vec::with_capacity(files.len());
        let mut operations = Vec::with_capacity(files.len());
        // The version each document edit carries, by file.
        let mut versions = Vec::with_capacity(files.len());
        for file in files {
            let checked = self.operation(file).await;
            versions.push(checked.as_ref().ok().and_then(|(_, version)| *version));
            match checked {
                Ok((operation, _)) => {
                    operations.push(operation);
                    results.push(Ok(()));
                }
                Err(error) => results.push(Err(error)),
            }
        }
        if operations.is_empty() {
            return results;
        }
        let edit = WorkspaceEdit {
            document_changes: Some(DocumentChanges::Operations(operations)),
            ..WorkspaceEdit::default()
        };
        if let Err(error) = self.apply(&files[0].path, edit).await {
            // The editor took all or nothing: each file fails with the reason.
            let message = error.to_string();
            for (file, result) in files.iter().zip(results.iter_mut()) {
                if result.is_ok() {
                    *result = Err(self.refused(&file.path, message.clone()));
                }
            }
            return results;
        }
        for ((file, version), result) in files.iter().zip(versions).zip(results.iter_mut()) {
            if result.is_ok() {
                *result = self.landed(file, version).await;
            }
        }
        results
    }

    /// The operation putting one file back, and the version it carries;
    /// refused if the file no longer holds what the rewind checked.
    async fn operation(
        &self,
        file: &Restore,
    ) -> Result<(DocumentChangeOperation, Option<i32>), WorkspaceError> {
        let uri = State::uri_of(&file.path)
            .ok_or_else(|| self.refused(&file.path, "cannot make a file URI for it".into()))?;
        // The editor writes in place: never through a hard link, as for
        // every editor write (`EditorWorkspace::write_text`).
        if file.text.is_some() {
            self.paths().refuse_hard_links(&file.path)?;
        }
        let now = self.read_text(&file.path).await?;
        if now.text != file.expected {
            return Err(self.refused(&file.path, "changed since the agent edited it".into()));
        }
        let Some(text) = &file.text else {
            return Ok((
                DocumentChangeOperation::Op(ResourceOp::Delete(DeleteFile {
                    uri,
                    options: None,
                    annotation_id: None,
                })),
                None,
            ));
        };
        let encoding = self.state.init().encoding;
        let edits = minimal_edits(&ropey::Rope::from_str(&now.text), text, encoding);
        let operation = DocumentChangeOperation::Edit(TextDocumentEdit {
            text_document: OptionalVersionedTextDocumentIdentifier {
                uri,
                version: now.version,
            },
            edits: edits.into_iter().map(OneOf::Left).collect(),
        });
        Ok((operation, now.version))
    }

    /// Whether the editor shows the file put back: an editor may say it
    /// applied an edit it skipped.
    async fn landed(&self, file: &Restore, version: Option<i32>) -> Result<(), WorkspaceError> {
        match (&file.text, version) {
            (Some(text), Some(version)) => {
                self.confirm(&file.path, version, text).await?;
                let shown = self
                    .state
                    .lock_documents()
                    .get(&file.path)
                    .map(|d| d.text());
                match shown {
                    Some(shown) if shown != *text => Err(self.refused(
                        &file.path,
                        "the editor did not apply the rewind to it (it changed meanwhile)".into(),
                    )),
                    _ => Ok(()),
                }
            }
            (Some(text), None) => {
                self.forget_overlay(&file.path);
                self.settle_unopened(&file.path, text).await;
                Ok(())
            }
            (None, _) if file.path.exists() => {
                Err(self.refused(&file.path, "the editor did not delete it".into()))
            }
            (None, _) => Ok(()),
        }
    }

    fn forget_overlay(&self, path: &Path) {
        self.state.overlay.locked().remove(path);
    }

    fn refused(&self, path: &Path, message: String) -> WorkspaceError {
        WorkspaceError::Io {
            path: self.paths().display(path),
            message,
        }
    }
}
