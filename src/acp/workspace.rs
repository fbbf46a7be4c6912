//! The files of an ACP session: read through `fs/read_text_file` and
//! written through `fs/write_text_file` where the client offers them (so
//! the agent reads the editor's unsaved buffers and its edits land in the
//! editor), else on disk. Every path has been through the session's
//! [`PathResolver`] before it gets here (the `Workspace` contract): the
//! client is only ever asked about resolved paths inside the root.

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{ReadTextFileRequest, SessionId, WriteTextFileRequest};
use async_trait::async_trait;

use super::Peer;
use super::calls::Calls;
use crate::workspace::{
    ClientTerminal, DiskWorkspace, FileText, MAX_TEXT_BYTES, PathResolver, Workspace,
    WorkspaceError,
};

/// What the client said it can do with files and commands.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientFiles {
    pub read: bool,
    pub write: bool,
    pub terminal: bool,
}

pub struct ClientWorkspace {
    pub disk: DiskWorkspace,
    pub peer: Peer,
    pub session: SessionId,
    pub can: ClientFiles,
    pub terminal: Option<Arc<dyn ClientTerminal>>,
    pub calls: Arc<Calls>,
}

impl ClientWorkspace {
    fn client_error(&self, path: &Path, error: agent_client_protocol::Error) -> WorkspaceError {
        let shown = self.disk.paths().display(path);
        if !path.exists() {
            return WorkspaceError::NotFound(shown);
        }
        WorkspaceError::Io {
            path: shown,
            message: format!("the editor answered: {}", error.message),
        }
    }
}

#[async_trait]
impl Workspace for ClientWorkspace {
    fn paths(&self) -> &PathResolver {
        self.disk.paths()
    }

    fn client_terminal(&self) -> Option<Arc<dyn ClientTerminal>> {
        self.terminal.clone()
    }

    async fn read_text(&self, path: &Path) -> Result<FileText, WorkspaceError> {
        let (text, encoding) = if self.can.read {
            let request = ReadTextFileRequest::new(self.session.clone(), path);
            let text = self
                .peer
                .send_request(request)
                .block_task()
                .await
                .map_err(|error| self.client_error(path, error))?
                .content;
            // The same cap as a read from disk (the client's answer is
            // already here; what is over it goes no further).
            if text.len() as u64 > MAX_TEXT_BYTES {
                return Err(WorkspaceError::TooLarge {
                    path: self.disk.paths().display(path),
                    size: text.len() as u64,
                });
            }
            // A client reads a file that is not UTF-8 as best it can (most
            // lossily); the disk says what its bytes are.
            match text.contains('\u{FFFD}') {
                true => match self.disk.read_text(path).await {
                    Ok(file) if file.encoding.is_some() => (file.text, file.encoding),
                    _ => (text, None),
                },
                false => (text, None),
            }
        } else {
            let file = self.disk.read_text(path).await?;
            (file.text, file.encoding)
        };
        self.calls.read(path, &text);
        Ok(FileText {
            text,
            version: None,
            encoding,
        })
    }

    async fn write_text(
        &self,
        path: &Path,
        text: &str,
        read_version: Option<i32>,
    ) -> Result<Option<i32>, WorkspaceError> {
        if self.can.write && !self.not_utf8_on_disk(path, text).await? {
            // The client writes in place: never through another name.
            self.disk.paths().refuse_hard_links(path)?;
            let request = WriteTextFileRequest::new(self.session.clone(), path, text);
            self.peer
                .send_request(request)
                .block_task()
                .await
                .map_err(|error| WorkspaceError::Io {
                    path: self.disk.paths().display(path),
                    message: format!("the editor refused the write: {}", error.message),
                })?;
        } else {
            self.disk.write_text(path, text, read_version).await?;
        }
        self.calls.wrote(path, text);
        Ok(None)
    }
}

impl ClientWorkspace {
    /// Whether the file on disk is in another encoding than UTF-8 (or why
    /// `text` cannot be written in it). A client's write would make it
    /// UTF-8, so such a file is written on disk, in its own encoding.
    async fn not_utf8_on_disk(&self, path: &Path, text: &str) -> Result<bool, WorkspaceError> {
        let shown = self.disk.paths().display(path);
        let (paths, path, text) = (
            self.disk.paths().clone(),
            path.to_path_buf(),
            text.to_string(),
        );
        tokio::task::spawn_blocking(move || {
            paths
                .encode_as_on_disk(&path, &text)
                .map(|bytes| matches!(bytes, std::borrow::Cow::Owned(_)))
        })
        .await
        .map_err(|error| WorkspaceError::Io {
            path: shown,
            message: error.to_string(),
        })?
    }
}
