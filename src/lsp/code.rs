//! The `code` tool's answers from the editor: each language-server request
//! about a file goes to the client as `bareagent/codeIntelligence`
//! `{"method", "params"}`, which VS Code answers from its own providers and
//! Neovim from the servers attached to the buffer — so the answer reflects
//! the user's unsaved buffers, with the servers they already run. Sent only
//! to a client that announced `codeIntelligence` (see docs/protocol.md).

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tower_lsp_server::Client;

use super::state::State;
use crate::tools::code::{CodeError, Intelligence};
use crate::workspace::Workspace;

/// How long the editor gets to answer: its servers may be starting (the
/// first request after a file opens waits for the project to load).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Who answers, as the model reads it.
const EDITOR: &str = "the editor";

/// The request asking the client's language support (see docs/protocol.md).
pub enum CodeIntelligence {}

impl tower_lsp_server::ls_types::request::Request for CodeIntelligence {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = "bareagent/codeIntelligence";
}

/// The editor as the `code` tool's [`Intelligence`].
pub struct EditorIntelligence {
    client: Client,
}

impl EditorIntelligence {
    /// The editor's intelligence, where the client announced it answers.
    pub fn of(state: &State) -> Option<EditorIntelligence> {
        state.init().can_answer_code.then(|| EditorIntelligence {
            client: state.client.clone(),
        })
    }

    /// Sends one request and waits for the answer (a while at most).
    async fn ask(&self, method: &str, request: Value) -> Result<Value, CodeError> {
        tracing::debug!(method, "asking the editor");
        let asked = self.client.send_request::<CodeIntelligence>(request);
        match tokio::time::timeout(ANSWER_TIMEOUT, asked).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(CodeError::Editor(error.message.into_owned())),
            Err(_) => Err(CodeError::Timeout {
                server: EDITOR.into(),
                method: method.into(),
                seconds: ANSWER_TIMEOUT.as_secs(),
            }),
        }
    }
}

#[async_trait]
impl Intelligence for EditorIntelligence {
    fn answerer(&self, _path: &Path) -> String {
        EDITOR.into()
    }

    async fn request(
        &self,
        _workspace: &dyn Workspace,
        _path: &Path,
        method: &str,
        params: Value,
    ) -> Result<Value, CodeError> {
        self.ask(method, json!({ "method": method, "params": params }))
            .await
    }

    async fn workspace_symbols(
        &self,
        _workspace: &dyn Workspace,
        query: &str,
        near: Option<&Path>,
    ) -> Result<Value, CodeError> {
        let method = "workspace/symbol";
        let mut request = json!({ "method": method, "params": { "query": query } });
        // Which language is wanted: an editor with no server running yet
        // (Neovim) opens this file so one starts.
        if let Some(uri) = near.and_then(State::uri_of) {
            request["uri"] = json!(uri.as_str());
        }
        match self.ask(method, request).await? {
            Value::Null => Ok(json!([])),
            symbols => Ok(symbols),
        }
    }
}
