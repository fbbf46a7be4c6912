//! What the language server knows, shared by its handlers and its turns.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Deserialize;
use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{
    Diagnostic, DiagnosticSeverity, DocumentChanges, NumberOrString, OneOf,
    OptionalVersionedTextDocumentIdentifier, Position, Range, TextDocumentEdit, TextEdit, Uri,
    WorkspaceEdit,
};

use super::documents::{Documents, Encoding};
use super::editor_event::EditorEvent;
use super::pending::{Approvals, describe};
use super::session::EditorSession;
use crate::config::Config;
use crate::permission::{PermissionMode, RuleLists};
use crate::provider::ProviderKind;
use crate::sync::Locked;
use crate::workspace::PathResolver;

/// What `initialize` told us, fixed for the server's life.
#[derive(Debug)]
pub struct Init {
    pub root: PathBuf,
    pub paths: PathResolver,
    pub encoding: Encoding,
    /// `window/showMessageRequest` is available.
    pub can_ask: bool,
    pub can_progress: bool,
    pub can_apply_edit: bool,
    /// Edits can carry document versions (`documentChanges`); else `changes`.
    pub document_changes: bool,
    pub can_create_files: bool,
    pub can_delete_files: bool,
    pub can_show_document: bool,
    pub can_configure: bool,
    /// The client answers `bareagent/saveDocuments` (it said so in its
    /// `initializationOptions` or `experimental` capabilities).
    pub can_save_documents: bool,
    /// The client answers `bareagent/codeIntelligence` from its own
    /// language support (see `code.rs`).
    pub can_answer_code: bool,
    /// `initializationOptions`, kept to merge with later configuration.
    pub options: Value,
}

/// Settings an editor may pass (initializationOptions, workspace/configuration).
/// Keys are never accepted here: they come from the environment.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EditorSettings {
    pub provider: Option<ProviderKind>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub permission_mode: Option<PermissionMode>,
    pub permissions: RuleLists,
    pub max_iterations: Option<usize>,
    /// Answer from a recording (the offline demo, and tests).
    pub replay: Option<PathBuf>,
    pub idle_timeout_secs: Option<u64>,
    pub edits: crate::config::Edits,
    /// How long an edit waits for the editor's fresh diagnostics; 0: never.
    pub diagnostics_settle_ms: Option<u64>,
    /// Which conversation the main session starts with (read from
    /// `initializationOptions`, at start).
    pub resume: Option<ResumeSetting>,
    /// MCP servers and limits, as `[mcp]` (`{"servers": {"git": {"command":
    /// …}}, "max_tools": 40}`): the user's own, so they start in any
    /// workspace.
    pub mcp: crate::mcp::McpSettings,
    /// The model's context window in tokens (over `[context] window`).
    pub context_window: Option<u64>,
    /// Compact past this share of the window (over `[context] compact_at`).
    pub compact_at: Option<f64>,
    /// How much the model spends on an answer (over config.toml's `effort`).
    pub effort: Option<crate::provider::Effort>,
    /// `auto` or `off` (over config.toml's `thinking`).
    pub thinking: Option<crate::provider::Thinking>,
    /// OpenAI's API, `responses` or `chat` (over config.toml's `wire`).
    pub wire: Option<crate::provider::OpenAiWire>,
    /// A permission setting that could not be read: turns refuse to start
    /// until it is fixed (see `from_value`).
    #[serde(skip)]
    pub unreadable_permissions: Option<String>,
}

/// The `resume` setting: which conversation the main session starts with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResumeSetting {
    /// The workspace's last session (the default).
    #[default]
    Last,
    /// Always a new conversation.
    Never,
}

/// The settings that decide what the agent may do: one that cannot be read
/// stops turns, rather than be dropped (dropping `deny` rules widens).
const PERMISSION_SETTINGS: [&str; 2] = ["permissionMode", "permissions"];

impl EditorSettings {
    /// Each setting on its own: a bad value is logged and the others still
    /// apply — except a permission setting, which is never guessed at: the
    /// settings then refuse turns, saying which value is wrong.
    pub fn from_value(value: &Value) -> EditorSettings {
        let value = value.get("bareagent").unwrap_or(value);
        if value.is_null() {
            return EditorSettings::default();
        }
        for secret in ["apiKey", "anthropicApiKey", "openaiApiKey"] {
            if value.get(secret).is_some() {
                tracing::warn!(
                    setting = secret,
                    "keys are read from the environment only; this setting is ignored"
                );
            }
        }
        if let Ok(settings) = serde_json::from_value(value.clone()) {
            return settings;
        }
        let Some(fields) = value.as_object() else {
            tracing::warn!("ignoring bareagent settings that are not an object");
            return EditorSettings::default();
        };
        // Keep every field that reads on its own.
        let mut kept = serde_json::Map::new();
        let mut unreadable = Vec::new();
        for (key, field) in fields {
            let alone = Value::Object([(key.clone(), field.clone())].into_iter().collect());
            match serde_json::from_value::<EditorSettings>(alone) {
                Ok(_) => {
                    kept.insert(key.clone(), field.clone());
                }
                Err(error) => {
                    tracing::warn!(setting = %key, %error, "ignoring a malformed bareagent setting");
                    if PERMISSION_SETTINGS.contains(&key.as_str()) {
                        unreadable.push(format!("`{key}`: {error}"));
                    }
                }
            }
        }
        let mut settings: EditorSettings =
            serde_json::from_value(Value::Object(kept)).unwrap_or_default();
        if !unreadable.is_empty() {
            settings.unreadable_permissions = Some(format!(
                "the editor's bareagent settings cannot be read ({}); no turn runs until they are fixed",
                unreadable.join("; ")
            ));
        }
        settings
    }

    /// The settings this layer chooses (its rules and servers are added
    /// to the files' by [`EditorSettings::over`]). A relative replay is
    /// the workspace's.
    pub fn layer(&self, root: &Path) -> crate::session::Layer {
        crate::session::Layer {
            provider: self.provider,
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            replay: self.replay.as_ref().map(|path| root.join(path)),
            mode: self.permission_mode,
            max_iterations: self.max_iterations,
            idle_timeout: self.idle_timeout_secs.map(std::time::Duration::from_secs),
            context_window: self.context_window,
            compact_at: self.compact_at,
            effort: self.effort,
            thinking: self.thinking,
            wire: self.wire,
            ..crate::session::Layer::default()
        }
    }

    /// The files' settings with what the editor adds to them: its rules,
    /// its MCP servers and how edits are saved. What it chooses (provider,
    /// model, mode, context, reasoning) is its own layer, [`Self::layer`],
    /// never merged in here: one layer, one place in the resolver.
    pub fn over(&self, files: &Config) -> Config {
        let mut merged = files.clone();
        merged.edits.save = self.edits.save.or(files.edits.save);
        merged.mcp = files
            .mcp
            .clone()
            .overlaid(self.mcp.clone().from(crate::mcp::Origin::Editor));
        merged
            .permissions
            .rules
            .allow
            .extend(self.permissions.allow.iter().cloned());
        merged
            .permissions
            .rules
            .ask
            .extend(self.permissions.ask.iter().cloned());
        merged
            .permissions
            .rules
            .deny
            .extend(self.permissions.deny.iter().cloned());
        merged
    }
}

pub struct State {
    pub client: Client,
    pub documents: Mutex<Documents>,
    /// Woken after every didOpen/didChange/didClose: edits wait on it to see
    /// the editor confirm what it applied.
    pub documents_changed: tokio::sync::Notify,
    /// Text we wrote through a versionless edit to a file the editor has not
    /// reported open: it is the file's content until the editor reports it.
    pub overlay: Mutex<HashMap<PathBuf, String>>,
    /// Files the agent edited whose buffers may not be on disk, each with
    /// whether its buffer held the user's own unsaved work before the
    /// agent's first edit (such a file is never saved for them). Cleared
    /// when the editor saves or closes the file.
    pub agent_edits: Mutex<HashMap<PathBuf, bool>>,
    pub init: OnceLock<Init>,
    pub editor_settings: Mutex<EditorSettings>,
    pub sessions: Mutex<HashMap<String, EditorSession>>,
    pub approvals: Approvals,
    /// True once the editor's configuration was asked for (or cannot be):
    /// turns wait for it, so the first one uses the editor's settings.
    pub configured: tokio::sync::watch::Sender<bool>,
    /// Set once the user was told which untrusted project settings were ignored.
    pub trust_notice_shown: std::sync::atomic::AtomicBool,
    /// Set by `shutdown`: an `exit` after it ends the process with 0, an
    /// `exit` without it with 1, as the specification asks.
    pub shutdown_requested: std::sync::atomic::AtomicBool,
    /// Told when the editor's process (`initialize`'s `processId`, or
    /// `--clientProcessId`) has ended: the server stops.
    pub parent_gone: Arc<tokio::sync::Notify>,
    /// What the editor's own language servers report.
    pub diagnostics: Arc<crate::workspace::reported::EditorDiagnostics>,
    /// The session layer `bareagent.setModel` and `setEffort` left the
    /// main session with, for the sessions made after (see `model.rs`).
    pub chosen: Mutex<crate::session::Layer>,
}

/// The main session: the one the chat file shows.
pub const MAIN_SESSION: &str = "main";

impl State {
    pub fn new(client: Client) -> Self {
        State {
            client,
            documents: Mutex::default(),
            documents_changed: tokio::sync::Notify::new(),
            overlay: Mutex::default(),
            agent_edits: Mutex::default(),
            init: OnceLock::new(),
            editor_settings: Mutex::default(),
            sessions: Mutex::default(),
            approvals: Approvals::default(),
            configured: tokio::sync::watch::Sender::new(false),

            trust_notice_shown: std::sync::atomic::AtomicBool::new(false),
            shutdown_requested: std::sync::atomic::AtomicBool::new(false),
            parent_gone: Arc::default(),
            diagnostics: Arc::default(),
            chosen: Default::default(),
        }
    }

    /// `initialize` ran (the protocol guarantees it before anything else);
    /// before it, a fallback rooted at the current directory.
    pub fn init(&self) -> &Init {
        self.init.get_or_init(|| {
            let root = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
            Init::fallback(root)
        })
    }

    pub fn lock_documents(&self) -> std::sync::MutexGuard<'_, Documents> {
        self.documents.locked()
    }

    pub fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, EditorSession>> {
        self.sessions.locked()
    }

    /// Waits (a few seconds at most) for the editor's configuration.
    pub async fn wait_configured(&self) {
        let mut configured = self.configured.subscribe();
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            configured.wait_for(|done| *done),
        )
        .await;
    }

    /// Waits until the open document at `path` (or its absence) satisfies
    /// `condition`, re-checking after each didOpen/didChange/didClose.
    /// Returns false if `timeout` passed first.
    pub async fn wait_for_document(
        &self,
        path: &Path,
        timeout: std::time::Duration,
        condition: impl Fn(Option<&super::documents::Document>) -> bool,
    ) -> bool {
        let wait = async {
            loop {
                // Registered before the check, so a change in between is not missed.
                let notified = self.documents_changed.notified();
                if condition(self.lock_documents().get(path)) {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(timeout, wait).await.is_ok()
    }

    /// The editor reports the file now: its word replaces what we wrote.
    pub fn forget_overlay(&self, path: &Path) {
        self.overlay.locked().remove(path);
    }

    /// The file's buffer and disk agree again (saved, or closed).
    pub fn forget_agent_edit(&self, path: &Path) {
        self.agent_edits.locked().remove(path);
    }

    /// The settings in force: files, then the editor's.
    pub fn settings(&self) -> Result<Config, String> {
        let files = Config::load(&self.init().root).map_err(|e| e.to_string())?;
        let editor = self.editor_settings();
        match &editor.unreadable_permissions {
            Some(problem) => Err(problem.clone()),
            None => Ok(editor.over(&files)),
        }
    }

    /// [`State::settings`], read off the runtime's workers (it reads files).
    pub async fn load_settings(self: &std::sync::Arc<Self>) -> Result<Config, String> {
        let state = self.clone();
        tokio::task::spawn_blocking(move || state.settings())
            .await
            .map_err(|error| format!("cannot read the settings: {error}"))?
    }

    /// Every layer of a session's settings as they are now: what
    /// `bareagent.setModel` chose, the editor's, the environment's and the
    /// files' (with the editor's rules and servers added).
    pub async fn layers(self: &std::sync::Arc<Self>) -> Result<crate::session::Layers, String> {
        let files = self.load_settings().await?;
        self.layers_over(files)
    }

    fn layers_over(&self, files: Config) -> Result<crate::session::Layers, String> {
        Ok(crate::session::Layers {
            session: self.chosen(),
            command_line: crate::session::Layer::default(),
            editor: self.editor_settings().layer(&self.init().root),
            environment: crate::session::Layer::from_environment().map_err(|e| e.to_string())?,
            files,
        })
    }

    /// A new session in the editor's root, from what its commands chose.
    pub fn new_session(&self) -> EditorSession {
        EditorSession::new(&self.init().root, self.chosen())
    }

    /// The handle of the session `name`, made if there is none yet.
    pub fn handle_of(&self, name: &str) -> crate::session::SessionHandle {
        self.lock_sessions()
            .entry(name.to_string())
            .or_insert_with(|| self.new_session())
            .handle
            .clone()
    }

    /// The session layer a new session starts from: what the editor's
    /// commands chose.
    pub fn chosen(&self) -> crate::session::Layer {
        self.chosen.locked().clone()
    }

    pub fn editor_settings(&self) -> EditorSettings {
        self.editor_settings.locked().clone()
    }

    /// Cancels every turn and kills every background command.
    pub fn stop_everything(&self) {
        let sessions = self.lock_sessions();
        for session in sessions.values() {
            // Sent now; the session's task cancels its turn.
            drop(session.handle.cancel(None));
            session.core.background().kill_all();
            if let Some(mcp) = session.core.mcp() {
                mcp.stop_now();
            }
            if let Some(servers) = session.core.code_servers() {
                servers.stop_now();
            }
        }
    }

    pub fn chat_path(&self) -> PathBuf {
        self.init().root.join(".bareagent").join("chat.md")
    }

    pub fn uri_of(path: &Path) -> Option<Uri> {
        Uri::from_file_path(path)
    }

    /// An edit of one document, versioned where the client allows it.
    pub fn text_edit(&self, uri: Uri, version: Option<i32>, edits: Vec<TextEdit>) -> WorkspaceEdit {
        if self.init().document_changes {
            WorkspaceEdit {
                document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
                    text_document: OptionalVersionedTextDocumentIdentifier { uri, version },
                    edits: edits.into_iter().map(OneOf::Left).collect(),
                }])),
                ..WorkspaceEdit::default()
            }
        } else {
            WorkspaceEdit {
                changes: Some([(uri, edits)].into_iter().collect()),
                ..WorkspaceEdit::default()
            }
        }
    }

    /// A `bareagent/event` notification (see docs/protocol.md).
    pub async fn event(&self, event: EditorEvent) {
        match serde_json::to_value(&event) {
            Ok(params) => {
                self.client
                    .send_notification::<BareagentEvent>(params)
                    .await
            }
            Err(error) => tracing::warn!(%error, "an event cannot be serialized; it is not sent"),
        }
    }

    /// Shows every pending approval as a diagnostic on the chat file.
    pub async fn publish_approvals(&self) {
        let Some(uri) = Self::uri_of(&self.chat_path()) else {
            return;
        };
        let diagnostics = self
            .approvals
            .list()
            .iter()
            .map(|view| Diagnostic {
                range: Range::new(Position::new(0, 0), Position::new(0, 0)),
                severity: Some(DiagnosticSeverity::WARNING),
                code: Some(NumberOrString::Number(view.id as i32)),
                source: Some("bareagent".into()),
                message: format!(
                    "Approval needed: {} Use the code actions (Allow / Allow always / Reject), or bareagent.approve / bareagent.reject.",
                    describe(view)
                ),
                ..Diagnostic::default()
            })
            .collect();
        self.client
            .publish_diagnostics(uri, diagnostics, None)
            .await;
    }

    /// Opens `uri` in the editor, the cursor at `at` if given, where
    /// `window/showDocument` exists. Whether the editor says it did.
    pub async fn show_document(&self, uri: Uri, at: Option<Position>) -> bool {
        if !self.init().can_show_document {
            return false;
        }
        let params = tower_lsp_server::ls_types::ShowDocumentParams {
            uri,
            external: Some(false),
            take_focus: Some(true),
            selection: at.map(|at| Range::new(at, at)),
        };
        matches!(
            tokio::time::timeout(
                std::time::Duration::from_secs(5),
                self.client.show_document(params)
            )
            .await,
            Ok(Ok(true))
        )
    }

    /// A one-line status in the editor.
    pub async fn show(
        &self,
        kind: tower_lsp_server::ls_types::MessageType,
        text: impl Into<String>,
    ) {
        self.client.show_message(kind, text.into()).await;
    }
}

impl Init {
    #[allow(
        clippy::expect_used,
        reason = "a process that cannot open `/` has no file system to serve: it stops, saying so"
    )]
    pub fn fallback(root: PathBuf) -> Init {
        let paths = PathResolver::new(&root).unwrap_or_else(|_| {
            PathResolver::new(Path::new("/")).expect("the file system root exists")
        });
        Init {
            root: paths.root().to_path_buf(),
            paths,
            encoding: Encoding::Utf16,
            can_ask: false,
            can_progress: false,
            can_apply_edit: false,
            document_changes: false,
            can_create_files: false,
            can_delete_files: false,
            can_show_document: false,
            can_configure: false,
            can_save_documents: false,
            can_answer_code: false,
            options: Value::Null,
        }
    }
}

/// The custom notification carrying agent events to rich clients; its
/// params are an [`EditorEvent`].
pub enum BareagentEvent {}

impl tower_lsp_server::ls_types::notification::Notification for BareagentEvent {
    type Params = Value;
    const METHOD: &'static str = "bareagent/event";
}
