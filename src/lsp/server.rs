//! The `LanguageServer` implementation: every handler answers promptly.
//! Document notifications change state synchronously, before any `.await`,
//! so they keep their order; commands start turns as tasks and return.

use std::sync::Arc;

use serde_json::{Value, json};
use tower_lsp_server::LanguageServer;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;

use super::approvals::{self, id_argument};
use super::chat;
use super::documents::{Change, Document, Encoding, Pos, path_of};
use super::state::{EditorSettings, Init, MAIN_SESSION, State};
use super::turn::{self, Ask};
use crate::permission::{Approval, DENIED_BY_USER};
use crate::sync::Locked;
use crate::workspace::PathResolver;

pub const COMMANDS: [&str; 16] = [
    "bareagent.ask",
    "bareagent.cancel",
    "bareagent.approve",
    "bareagent.approveSession",
    "bareagent.approveAlways",
    "bareagent.reject",
    "bareagent.newSession",
    "bareagent.resume",
    "bareagent.status",
    "bareagent.openChat",
    "bareagent.trustWorkspace",
    "bareagent.setModel",
    "bareagent.setEffort",
    "bareagent.showDiff",
    "bareagent.compact",
    "bareagent.rewind",
];

pub struct Backend {
    pub state: Arc<State>,
}

/// `NAME: true` (`saveDocuments`, `diagnostics`, `codeIntelligence`) in `initializationOptions`
/// (or its `bareagent` part) or in `capabilities.experimental`.
fn announces(params: &InitializeParams, name: &str) -> bool {
    let options = params.initialization_options.as_ref();
    [
        options,
        options.and_then(|o| o.get("bareagent")),
        params.capabilities.experimental.as_ref(),
    ]
    .into_iter()
    .flatten()
    .any(|place| place.get(name) == Some(&Value::Bool(true)))
}

fn pos(p: Position) -> Pos {
    Pos {
        line: p.line,
        character: p.character,
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_params(message.into())
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let capabilities = &params.capabilities;
        let offered = capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.clone())
            .unwrap_or_default();
        let encoding = if offered.contains(&PositionEncodingKind::UTF8) {
            Encoding::Utf8
        } else {
            Encoding::Utf16
        };
        #[allow(deprecated)]
        let root = params
            .workspace_folders
            .as_ref()
            .and_then(|folders| folders.first())
            .and_then(|folder| folder.uri.to_file_path().map(|p| p.into_owned()))
            .or_else(|| {
                params
                    .root_uri
                    .as_ref()
                    .and_then(|uri| uri.to_file_path().map(|p| p.into_owned()))
            })
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| std::path::PathBuf::from("/"));
        let paths = PathResolver::new(&root)
            .map_err(|e| invalid(format!("the workspace root {}: {e}", root.display())))?;
        let workspace = capabilities.workspace.as_ref();
        let edit_caps = workspace.and_then(|w| w.workspace_edit.as_ref());
        let window = capabilities.window.as_ref();
        let init = Init {
            root: paths.root().to_path_buf(),
            paths,
            encoding,
            can_ask: window.and_then(|w| w.show_message.as_ref()).is_some(),
            can_progress: window.and_then(|w| w.work_done_progress).unwrap_or(false),
            can_apply_edit: workspace.and_then(|w| w.apply_edit).unwrap_or(false),
            // Neovim handles documentChanges but advertises only resource
            // operations, which exist only inside documentChanges.
            document_changes: edit_caps.and_then(|e| e.document_changes).unwrap_or(false)
                || edit_caps
                    .and_then(|e| e.resource_operations.as_ref())
                    .is_some_and(|ops| !ops.is_empty()),
            can_create_files: edit_caps
                .and_then(|e| e.resource_operations.as_ref())
                .is_some_and(|ops| ops.contains(&ResourceOperationKind::Create)),
            can_delete_files: edit_caps
                .and_then(|e| e.resource_operations.as_ref())
                .is_some_and(|ops| ops.contains(&ResourceOperationKind::Delete)),
            // Helix has handled showDocument since 24.03 but advertises it
            // only from its master branch (2026): 25.07 opens it all the same.
            can_show_document: window
                .and_then(|w| w.show_document.as_ref())
                .is_some_and(|s| s.support)
                || params
                    .client_info
                    .as_ref()
                    .is_some_and(|c| c.name == "helix"),
            can_configure: workspace.and_then(|w| w.configuration).unwrap_or(false),
            can_save_documents: announces(&params, "saveDocuments"),
            can_answer_code: announces(&params, "codeIntelligence"),
            options: params.initialization_options.clone().unwrap_or(Value::Null),
        };
        *self.state.editor_settings.locked() = EditorSettings::from_value(&init.options);
        if announces(&params, "diagnostics") {
            self.state.diagnostics.set_pushed();
        }
        let _ = self.state.init.set(init);
        super::resume::at_start(&self.state);
        if let Some(pid) = params.process_id {
            super::parent::watch(pid, self.state.parent_gone.clone());
        }
        Ok(InitializeResult {
            server_info: Some(ServerInfo {
                name: "bareagent".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            capabilities: ServerCapabilities {
                position_encoding: Some(match encoding {
                    Encoding::Utf8 => PositionEncodingKind::UTF8,
                    Encoding::Utf16 => PositionEncodingKind::UTF16,
                }),
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                        ..TextDocumentSyncOptions::default()
                    },
                )),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: COMMANDS.iter().map(|c| c.to_string()).collect(),
                    ..ExecuteCommandOptions::default()
                }),
                code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
                ..ServerCapabilities::default()
            },
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _params: InitializedParams) {
        self.refresh_configuration().await;
        self.state.configured.send_replace(true);
        super::mcp::at_start(&self.state).await;
    }

    async fn shutdown(&self) -> Result<()> {
        self.state
            .shutdown_requested
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.state.stop_everything();
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let document = params.text_document;
        if let Some(path) = path_of(&document.uri) {
            let opened = Document::new(document.uri.to_string(), &document.text, document.version);
            self.state.lock_documents().open(path.clone(), opened);
            self.state.forget_overlay(&path);
        }
        self.state.documents_changed.notify_waiters();
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let encoding = self.state.init().encoding;
        let mut documents = self.state.lock_documents();
        match documents.by_uri_mut(params.text_document.uri.as_str()) {
            Some(document) => {
                for change in &params.content_changes {
                    let range = change.range.map(|r| (pos(r.start), pos(r.end)));
                    document.apply(
                        &Change {
                            range,
                            text: &change.text,
                        },
                        encoding,
                    );
                }
                document.version = params.text_document.version;
            }
            None => {
                tracing::warn!(uri = %params.text_document.uri.as_str(), "didChange for a document that is not open")
            }
        }
        let path = documents
            .path_for(params.text_document.uri.as_str())
            .cloned();
        drop(documents);
        if let Some(path) = path {
            // The editor's word on the file now replaces any text we stood in with.
            self.state.forget_overlay(&path);
        }
        self.state.documents_changed.notify_waiters();
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        if let Some(path) = path_of(&params.text_document.uri) {
            self.state.lock_documents().close(&path);
            self.state.forget_overlay(&path);
            // Whatever the buffer held, the disk is the file's text now.
            self.state.forget_agent_edit(&path);
        }
        self.state.documents_changed.notify_waiters();
    }

    /// The buffer now matches the disk: the agent's edits in it are saved.
    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        tracing::debug!(uri = params.text_document.uri.as_str(), "saved");
        if let Some(path) = path_of(&params.text_document.uri) {
            self.state.forget_agent_edit(&path);
        }
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        if !params.settings.is_null() {
            self.set_editor_settings(EditorSettings::from_value(&params.settings));
        } else {
            self.refresh_configuration().await;
        }
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        let arguments = params.arguments;
        let answer = match params.command.as_str() {
            "bareagent.ask" => self.ask(&arguments).await?,
            "bareagent.cancel" => {
                let session = arguments
                    .first()
                    .and_then(|a| a.get("session"))
                    .and_then(Value::as_str);
                match turn::cancel(&self.state, session, None).await {
                    Some(id) => json!({"cancelled": id}),
                    None => json!({"cancelled": null, "message": "no turn is running"}),
                }
            }
            "bareagent.approve" => self.answer(&arguments, Approval::AllowOnce)?,
            "bareagent.approveSession" => self.answer(&arguments, Approval::AllowForSession)?,
            "bareagent.approveAlways" => self.answer(&arguments, Approval::AllowAlways)?,
            "bareagent.reject" => {
                self.answer(&arguments, Approval::Reject(DENIED_BY_USER.into()))?
            }
            "bareagent.newSession" => {
                let name = arguments
                    .first()
                    .and_then(|a| a.get("session"))
                    .and_then(Value::as_str)
                    .unwrap_or(MAIN_SESSION);
                turn::clear_session(&self.state, name).await;
                json!({"session": name, "cleared": true})
            }
            "bareagent.resume" => {
                super::resume::command(&self.state, arguments.first().unwrap_or(&Value::Null))
                    .await
                    .map_err(invalid)?
            }
            "bareagent.status" => status(&self.state).await,
            "bareagent.openChat" => self.open_chat().await?,
            "bareagent.trustWorkspace" => self.trust_workspace(&arguments).await?,
            "bareagent.setModel" => {
                super::model::set_model(&self.state, arguments.first().unwrap_or(&Value::Null))
                    .await
                    .map_err(invalid)?
            }
            "bareagent.setEffort" => {
                super::effort::set_effort(&self.state, arguments.first().unwrap_or(&Value::Null))
                    .await
                    .map_err(invalid)?
            }
            "bareagent.showDiff" => self.show_diff(&arguments).await?,
            "bareagent.compact" => super::compact::compact(&self.state, &arguments).await,
            "bareagent.rewind" => super::rewind::rewind(&self.state).await.map_err(invalid)?,
            other => {
                return Err(invalid(format!(
                    "unknown command `{other}`; the commands are {}",
                    COMMANDS.join(", ")
                )));
            }
        };
        Ok(Some(answer))
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        super::diagnostics_from_lsp::from_code_action(&self.state, &params);
        let mut actions = Vec::new();
        let command = |title: String, name: &str, arguments: Vec<Value>, kind: CodeActionKind| {
            CodeActionOrCommand::CodeAction(CodeAction {
                title: title.clone(),
                kind: Some(kind),
                command: Some(Command {
                    title,
                    command: name.to_string(),
                    arguments: Some(arguments),
                }),
                ..CodeAction::default()
            })
        };
        // Pending approvals, in every document: a Helix user approves with `space a` wherever they are.
        for view in self.state.approvals.list() {
            let arguments = vec![json!({"id": view.id})];
            let what = format!("{} {}", view.tool, view.summary);
            actions.push(command(
                format!("Allow: {what}"),
                "bareagent.approve",
                arguments.clone(),
                CodeActionKind::QUICKFIX,
            ));
            actions.push(command(
                format!("Allow always: {}", view.rule),
                "bareagent.approveAlways",
                arguments.clone(),
                CodeActionKind::QUICKFIX,
            ));
            if view.diff.is_some() {
                actions.push(command(
                    format!("Show diff: {what}"),
                    "bareagent.showDiff",
                    arguments.clone(),
                    CodeActionKind::EMPTY,
                ));
            }
            actions.push(command(
                format!("Reject: {what}"),
                "bareagent.reject",
                arguments,
                CodeActionKind::QUICKFIX,
            ));
        }
        let uri = &params.text_document.uri;
        let path = path_of(uri);
        let is_chat = path.as_deref() == Some(self.state.chat_path().as_path());
        if is_chat {
            if chat::current_text(&self.state)
                .as_deref()
                .and_then(chat::pending_prompt)
                .is_some()
            {
                actions.push(command(
                    "Send to agent".into(),
                    "bareagent.ask",
                    vec![],
                    CodeActionKind::EMPTY,
                ));
            }
        } else if let Some(path) = &path {
            for diagnostic in &params.context.diagnostics {
                if diagnostic.source.as_deref() == Some(super::diagnostics_from_lsp::OURS) {
                    continue;
                }
                let shown = self.state.init().paths.display(path);
                let prompt = format!(
                    "Fix this problem in {shown} at line {}: {}",
                    diagnostic.range.start.line + 1,
                    diagnostic.message
                );
                let title = format!(
                    "Fix with agent: {}",
                    diagnostic.message.lines().next().unwrap_or_default()
                );
                actions.push(command(
                    title,
                    "bareagent.ask",
                    vec![json!({"prompt": prompt})],
                    CodeActionKind::QUICKFIX,
                ));
            }
            if params.range.start != params.range.end {
                let arguments =
                    vec![json!({"selection": {"uri": uri.as_str(), "range": params.range}})];
                actions.push(command(
                    "Ask agent about selection".into(),
                    "bareagent.ask",
                    arguments,
                    CodeActionKind::EMPTY,
                ));
            }
        }
        Ok(Some(actions))
    }
}

impl Backend {
    fn set_editor_settings(&self, settings: EditorSettings) {
        *self.state.editor_settings.locked() = settings;
        // Each session's next turn brings it up to the new settings.
    }

    /// Asks the editor for the `bareagent` section, where it can.
    async fn refresh_configuration(&self) {
        if !self.state.init().can_configure {
            return;
        }
        let item = ConfigurationItem {
            scope_uri: None,
            section: Some("bareagent".into()),
        };
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            self.state.client.configuration(vec![item]),
        )
        .await;
        if let Ok(Ok(values)) = answer
            && let Some(value) = values.first().filter(|v| !v.is_null())
        {
            let mut merged = self.state.init().options.clone();
            merge(&mut merged, value);
            self.set_editor_settings(EditorSettings::from_value(&merged));
        }
    }

    async fn ask(&self, arguments: &[Value]) -> Result<Value> {
        let argument = arguments.first().cloned().unwrap_or(Value::Null);
        let session = argument
            .get("session")
            .and_then(Value::as_str)
            .unwrap_or(MAIN_SESSION)
            .to_string();
        if let Some(selection) = argument.get("selection") {
            return self.prepare_selection(selection);
        }
        let given = argument
            .as_str()
            .or_else(|| argument.get("prompt").and_then(Value::as_str));
        let (prompt, prompt_in_chat) = match given.map(str::trim).filter(|p| !p.is_empty()) {
            Some(prompt) => (prompt.to_string(), false),
            None => match chat::current_text(&self.state)
                .as_deref()
                .and_then(chat::pending_prompt)
            {
                Some(prompt) => (prompt, true),
                None => {
                    return Err(invalid(
                        "nothing to ask: pass a prompt, or write one under the last `## You` in .bareagent/chat.md",
                    ));
                }
            },
        };
        Ok(turn::start(
            &self.state,
            Ask {
                session,
                prompt,
                prompt_in_chat,
            },
        )
        .await)
    }

    /// "Ask agent about selection": quotes the selection in the chat under a
    /// new `## You`, where the user writes the question, then sends it.
    fn prepare_selection(&self, selection: &Value) -> Result<Value> {
        let uri: Uri = selection
            .get("uri")
            .and_then(Value::as_str)
            .and_then(|u| u.parse().ok())
            .ok_or_else(|| invalid("selection.uri is missing"))?;
        let range: Range =
            serde_json::from_value(selection.get("range").cloned().unwrap_or(Value::Null))
                .map_err(|e| invalid(format!("selection.range: {e}")))?;
        let path = path_of(&uri).ok_or_else(|| invalid("selection.uri is not a file"))?;
        let encoding = self.state.init().encoding;
        let quoted = {
            let documents = self.state.lock_documents();
            let document = documents
                .get(&path)
                .ok_or_else(|| invalid("the selected document is not open"))?;
            let start = super::documents::char_index(&document.rope, pos(range.start), encoding);
            let end = super::documents::char_index(&document.rope, pos(range.end), encoding);
            document.rope.slice(start..end.max(start)).to_string()
        };
        let shown = self.state.init().paths.display(&path);
        let language = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let text = format!(
            "About `{shown}`, lines {}–{}:\n\n```{language}\n{}\n```\n\n",
            range.start.line + 1,
            range.end.line + 1,
            quoted.trim_end()
        );
        let state = self.state.clone();
        tokio::spawn(async move {
            let chat_path = state.chat_path();
            if let Err(error) = chat::ensure_exists(&state.init().paths, &chat_path) {
                tracing::warn!(%error, "cannot create the chat file");
            }
            let current = chat::current_text(&state).unwrap_or_default();
            let blank = chat::blank_line_after(&current);
            let heading = if chat::ends_with_empty_prompt(&current) {
                blank.to_string()
            } else {
                format!("{blank}{}\n\n", chat::YOU)
            };
            chat::append(&state, &format!("{heading}{text}")).await;
            // The cursor goes where the question is to be typed: the end.
            show_chat(&state, Some(chat_end(&state))).await;
        });
        Ok(
            json!({"prepared": true, "message": "the selection is quoted in .bareagent/chat.md: write your question below it and send it"}),
        )
    }

    /// Opens a pending edit's whole diff; the approval stays pending.
    async fn show_diff(&self, arguments: &[Value]) -> Result<Value> {
        let id = id_argument(arguments);
        let view = self.state.approvals.get(id).ok_or_else(|| {
            invalid(match id {
                Some(id) => format!("no pending approval with id {id}"),
                None => "no approval is pending".to_string(),
            })
        })?;
        let shown = approvals::show_diff(&self.state, &view)
            .await
            .map_err(invalid)?;
        Ok(json!({
            "id": view.id, "uri": shown.uri.map(|u| u.to_string()), "path": shown.shown_path, "shown": shown.opened,
        }))
    }

    fn answer(&self, arguments: &[Value], approval: Approval) -> Result<Value> {
        let id = id_argument(arguments);
        match self.state.approvals.resolve(id, approval) {
            Some(view) => {
                Ok(json!({"resolved": view.id, "tool": view.tool, "summary": view.summary}))
            }
            None => Err(invalid(match id {
                Some(id) => format!("no pending approval with id {id}"),
                None => "no approval is pending".to_string(),
            })),
        }
    }

    /// Records that the user trusts this workspace's own settings, after a
    /// confirmation: a dialog where the editor has one, else the argument
    /// `{"confirm": true}` given by the user's own command.
    async fn trust_workspace(&self, arguments: &[Value]) -> Result<Value> {
        let root = self.state.init().root.clone();
        let confirmed_by_argument = arguments
            .first()
            .and_then(|a| a.get("confirm"))
            .and_then(Value::as_bool)
            == Some(true);
        let confirmed = confirmed_by_argument
            || {
                let question = format!(
                    "Trust {}? Its .bareagent/config.toml may then allow commands and widen the permission mode.",
                    root.display()
                );
                let actions = vec![
                    MessageActionItem {
                        title: "Trust".into(),
                        properties: Default::default(),
                    },
                    MessageActionItem {
                        title: "Cancel".into(),
                        properties: Default::default(),
                    },
                ];
                let answer = tokio::time::timeout(
                    std::time::Duration::from_secs(300),
                    self.state.client.show_message_request(
                        MessageType::WARNING,
                        question,
                        Some(actions),
                    ),
                )
                .await;
                matches!(answer, Ok(Ok(Some(item))) if item.title == "Trust")
            };
        if !confirmed {
            return Ok(json!({
                "trusted": false,
                "message": "not confirmed; run bareagent.trustWorkspace with {\"confirm\": true} where the editor shows no dialog"
            }));
        }
        let root_for_write = root.clone();
        let written =
            tokio::task::spawn_blocking(move || crate::config::trust_project(&root_for_write))
                .await
                .map_err(|e| invalid(e.to_string()))?
                .map_err(|e| invalid(e.to_string()))?;
        Ok(json!({
            "trusted": true,
            "root": root.display().to_string(),
            "config": written.display().to_string(),
            "message": "trusted; the project's settings apply from the next session (bareagent.newSession)"
        }))
    }

    async fn open_chat(&self) -> Result<Value> {
        let path = self.state.chat_path();
        chat::ensure_exists(&self.state.init().paths, &path)
            .map_err(|e| invalid(format!("cannot create {}: {e}", path.display())))?;
        let shown = show_chat(&self.state, None).await;
        let uri = State::uri_of(&path).map(|u| u.to_string());
        Ok(json!({"uri": uri, "shown": shown}))
    }
}

/// The end of the chat, in the editor's buffer or else on disk.
fn chat_end(state: &State) -> Position {
    let encoding = state.init().encoding;
    // `current_text` reads the open document, else the disk.
    let text = chat::current_text(state).unwrap_or_default();
    let end = super::Document::new(String::new(), &text, 0).end(encoding);
    Position::new(end.line, end.character)
}

/// Opens the chat in the editor, where `window/showDocument` exists, with
/// the cursor at `at` if given.
async fn show_chat(state: &State, at: Option<Position>) -> bool {
    let Some(uri) = State::uri_of(&state.chat_path()) else {
        return false;
    };
    state.show_document(uri, at).await
}

/// Adds `overlay`'s keys to `base`, recursively.
fn merge(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (key, value) in overlay {
                merge(base.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (base, overlay) => *base = overlay.clone(),
    }
}

/// Exposed for the command that cancels progress (`window/workDoneProgress/cancel`).
pub async fn cancel_progress(state: Arc<State>, params: WorkDoneProgressCancelParams) {
    let token = match params.token {
        NumberOrString::String(token) => token,
        NumberOrString::Number(number) => number.to_string(),
    };
    if turn::cancel(&state, None, Some(&token)).await.is_none() {
        tracing::info!(token, "progress cancel for no running turn");
    }
}

/// `bareagent.status`: sessions, pending approvals, sandbox and model.
pub async fn status(state: &Arc<State>) -> Value {
    let sessions: Vec<Value> = state
        .lock_sessions()
        .iter()
        .map(|(name, session)| {
            let core = &session.core;
            let (usage, spend) = core.totals();
            json!({
                "name": name, "running": session.handle.running(),
                "messages": core.history().len(), "usage": usage,
                "spend": spend, "instructions": core.instructions(),
                "sessionId": core.file().map(|f| f.id().to_string()),
                "mcp": core.mcp().map(|m| m.report()),
                "languageServers": core.code_servers().map(|c| c.report()),
            })
        })
        .collect();
    let approvals: Vec<Value> = state
        .approvals
        .list()
        .iter()
        .map(|v| json!({"id": v.id, "turn": v.turn, "tool": v.tool, "summary": v.summary}))
        .collect();
    // What the next turn uses, from the settings read now (off the
    // runtime's thread) by the one resolver.
    let (model, reasoning, sandbox) = match super::model::current(state).await {
        Ok((current, settings)) => (
            super::model::model_entry(&current),
            super::effort::reasoning_entry(&current),
            settings.sandbox_status().to_string(),
        ),
        Err(error) => (
            json!({"error": error}),
            json!({"error": error}),
            format!("unknown: {error}"),
        ),
    };
    json!({
        "sessions": sessions, "pendingApprovals": approvals, "sandbox": sandbox, "model": model,
        "reasoning": reasoning,
    })
}
