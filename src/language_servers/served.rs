//! The workspace as a front end whose editor sends no diagnostics gives it
//! (the disk for `run`/`chat`, ACP's client, Helix's buffers), with our own
//! servers told of every edit and a rewind: after an edit, what they report
//! is waited for and told to the model as an editor's report would be
//! (`PreparedCall::run`).

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use super::LanguageServers;
use crate::workspace::reported::EditorDiagnostics;
use crate::workspace::{
    Buffers, ClientTerminal, CommandViews, FileText, PathResolver, Restore, Workspace,
    WorkspaceError,
};

pub struct ServedWorkspace<'w> {
    inner: &'w dyn Workspace,
    servers: Arc<LanguageServers>,
}

impl<'w> ServedWorkspace<'w> {
    /// What the editor reports of its own (the diagnostics Helix's code
    /// actions carry) stays readable for the files our servers do not
    /// report on.
    pub fn new(inner: &'w dyn Workspace, servers: Arc<LanguageServers>) -> ServedWorkspace<'w> {
        if let Some(editor) = inner.diagnostics() {
            servers.diagnostics().fall_back_to(editor);
        }
        ServedWorkspace { inner, servers }
    }
}

#[async_trait]
impl Workspace for ServedWorkspace<'_> {
    fn paths(&self) -> &PathResolver {
        self.inner.paths()
    }

    fn buffers(&self) -> Buffers {
        self.inner.buffers()
    }

    fn command_views(&self) -> Option<Arc<dyn CommandViews>> {
        self.inner.command_views()
    }

    fn client_terminal(&self) -> Option<Arc<dyn ClientTerminal>> {
        self.inner.client_terminal()
    }

    /// Our servers' reports, and the editor's where ours have none.
    fn diagnostics(&self) -> Option<Arc<EditorDiagnostics>> {
        Some(self.servers.diagnostics())
    }

    async fn read_text(&self, path: &Path) -> Result<FileText, WorkspaceError> {
        self.inner.read_text(path).await
    }

    async fn write_text(
        &self,
        path: &Path,
        text: &str,
        read_version: Option<i32>,
    ) -> Result<Option<i32>, WorkspaceError> {
        let version = self.inner.write_text(path, text, read_version).await?;
        self.servers.changed(path, Some(text));
        Ok(version)
    }

    async fn restore(&self, files: &[Restore]) -> Vec<Result<(), WorkspaceError>> {
        let results = self.inner.restore(files).await;
        for (file, result) in files.iter().zip(&results) {
            if result.is_ok() {
                self.servers.changed(&file.path, file.text.as_deref());
            }
        }
        results
    }
}
