//! A rewind in the editor: every file the turn changed put back in one
//! `workspace/applyEdit`, so the editor's undo takes it back whole and
//! nothing is half done. Each document edit carries the version the rewind
//! checked (it held exactly the agent's text then): a user who typed since
//! makes the editor refuse the whole edit rather than lose their typing.
//! An editor that cannot take versioned or delete operations gets the
//! files one by one, as the agent's own edits went.

use tower_lsp_server::ls_types::{
    DeleteFile, DocumentChangeOperation, DocumentChanges, OneOf,
    OptionalVersionedTextDocumentIdentifier, ResourceOp, TextDocumentEdit, WorkspaceEdit,
};

use super::editor::{EditorWorkspace, minimal_edits};
use super::state::State;
use crate::config::SaveEdits;
use crate::workspace::{Restore, Workspace, WorkspaceError, restore_one_by_one};

impl EditorWorkspace {
    pub(super) async fn restore_in_editor(
        &self,
        files: &[Restore],
    ) -> Vec<Result<(), WorkspaceError>> {
        let init = self.state.init();
        let deletes = files.iter().any(|f| f.text.is_none());
        if files.is_empty()
            || !init.can_apply_edit
            || !init.document_changes
            || (deletes && !init.can_delete_files)
        {
            return restore_one_by_one(self, files).await;
        }
        // The editor took all or nothing: each file fails with the reason.
        let all = |error: WorkspaceError| -> Vec<Result<(), WorkspaceError>> {
            let message = error.to_string();
            files
                .iter()
                .map(|file| {
                    Err(WorkspaceError::Io {
                        path: self.paths().display(&file.path),
                        message: message.clone(),
                    })
                })
                .collect()
        };
        let edit = match self.one_edit(files).await {
            Ok(edit) => edit,
            Err(error) => return all(error),
        };
        let first = &files[0].path;
        if let Err(error) = self.apply(first, edit).await {
            return all(error);
        }
        let mut results = Vec::with_capacity(files.len());
        for file in files {
            self.state
                .overlay
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&file.path);
            results.push(match (&file.text, file.version) {
                (Some(text), Some(version)) => {
                    self.confirm(&file.path, version, text).await.map(|_| ())
                }
                (Some(text), None) => {
                    self.settle_unopened(&file.path, text).await;
                    Ok(())
                }
                (None, _) => Ok(()),
            });
        }
        if self.save == SaveEdits::AfterEachEdit {
            let paths: Vec<_> = files.iter().map(|f| f.path.clone()).collect();
            self.save_for_commands(&paths).await;
        }
        results
    }

    /// The one edit putting every file back.
    async fn one_edit(&self, files: &[Restore]) -> Result<WorkspaceEdit, WorkspaceError> {
        let encoding = self.state.init().encoding;
        let mut operations = Vec::with_capacity(files.len());
        for file in files {
            let uri = State::uri_of(&file.path).ok_or_else(|| WorkspaceError::Io {
                path: self.paths().display(&file.path),
                message: "cannot make a file URI for it".into(),
            })?;
            let Some(text) = &file.text else {
                operations.push(DocumentChangeOperation::Op(ResourceOp::Delete(
                    DeleteFile {
                        uri,
                        options: None,
                        annotation_id: None,
                    },
                )));
                continue;
            };
            let now = self.read_text(&file.path).await?;
            let edits = minimal_edits(&ropey::Rope::from_str(&now.text), text, encoding);
            operations.push(DocumentChangeOperation::Edit(TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier {
                    uri,
                    version: file.version,
                },
                edits: edits.into_iter().map(OneOf::Left).collect(),
            }));
        }
        Ok(WorkspaceEdit {
            document_changes: Some(DocumentChanges::Operations(operations)),
            ..WorkspaceEdit::default()
        })
    }
}
