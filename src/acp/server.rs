//! The requests a client sends and their answers: `initialize` (version
//! and capabilities), `authenticate` (nothing to do: keys come from the
//! environment), `session/new` and `session/load` (the client's `cwd` is
//! the workspace root), `session/list` (the workspace's stored sessions),
//! `session/prompt` (a turn, in a task of its own so
//! the connection keeps serving `session/cancel` and the answers to our own
//! requests), `session/cancel` and `session/set_mode` (our permission
//! modes). Malformed frames are answered by the SDK; unknown methods get
//! "method not found"; the agent keeps serving either way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification, ContentBlock,
    EmbeddedResourceResource, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, PromptResponse, SessionCapabilities, SessionId, SessionListCapabilities,
    SessionMode, SessionModeState, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::{Agent, Error, ErrorCode};

use super::calls::Calls;
use super::config_options;
use super::replay::replay;
use super::session::{AcpSession, root_of};
use super::sink::ClientSink;
use super::workspace::ClientFiles;
use super::{AcpArgs, Peer};
use crate::history::{self, Image, Message, Role};
use crate::mcp::{Origin, ServerConfig};
use crate::permission::PermissionMode;
use crate::session::{Afterwards, Busy, RunTurn};
use crate::sync::Locked;

struct Server {
    args: AcpArgs,
    can: Mutex<ClientFiles>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
}

/// Serves ACP on stdin/stdout until the client closes stdin. `false`: the
/// connection failed.
pub async fn serve(args: AcpArgs) -> bool {
    let server = Arc::new(Server {
        args,
        can: Mutex::default(),
        sessions: Mutex::default(),
    });
    let (s1, s2, s3, s4, s5, s6, s7, s8) = (
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
    );
    let served = Agent
        .v1()
        .name("bareagent")
        .on_receive_request(
            async move |request: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        _peer: Peer| { responder.respond(s1.initialize(request)) },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: AuthenticateRequest,
                        responder: Responder<AuthenticateResponse>,
                        _peer: Peer| { responder.respond(AuthenticateResponse::new()) },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        _peer: Peer| {
                responder.respond_with_result(s2.new_session(request).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        peer: Peer| {
                responder.respond_with_result(s3.load_session(request, &peer).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest,
                        responder: Responder<ListSessionsResponse>,
                        _peer: Peer| {
                // Reads the session files: off the connection's task.
                let listed = tokio::task::spawn_blocking(move || super::list::list(&request))
                    .await
                    .unwrap_or_else(|error| {
                        Err(Error::new(ErrorCode::INTERNAL_ERROR, error.to_string()))
                    });
                match listed {
                    Ok(response) => responder.respond(response),
                    Err(error) => responder.respond_with_error(error),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        peer: Peer| { s4.prompt(request, responder, peer) },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest,
                        responder: Responder<SetSessionModeResponse>,
                        _peer: Peer| {
                responder.respond_with_result(s5.set_mode(request).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest,
                        responder: Responder<SetSessionConfigOptionResponse>,
                        _peer: Peer| {
                responder.respond_with_result(s8.set_config_option(request).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _peer: Peer| {
                if let Some(session) = s6.session(&notification.session_id) {
                    session.handle.cancel(None).await;
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(super::transport::stdio())
        .await;
    // Background commands end with the agent.
    let sessions: Vec<Arc<AcpSession>> = s7.sessions.locked().values().cloned().collect();
    for session in sessions {
        session.core.background().kill_all();
        session.handle.close().await;
    }
    match served {
        Ok(()) => true,
        Err(error) => {
            tracing::error!(%error, "the ACP connection failed");
            false
        }
    }
}

/// An answer's error with our message: what happened and what to do.
/// Runs `work` (it reads and writes files) on the runtime's blocking
/// threads, so the connection's other requests are answered meanwhile.
async fn off_the_connection<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| Err(Error::internal_error().data(error.to_string())))
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}

fn session_not_found(id: &SessionId) -> Error {
    agent_client_protocol::v1::schema::Error::session_not_found(id.clone()).into()
}

/// Our permission modes as ACP session modes (ids as the settings spell them).
const MODES: [(PermissionMode, &str, &str, &str); 4] = [
    (
        PermissionMode::Default,
        "default",
        "Ask",
        "Reads are allowed; edits and commands ask.",
    ),
    (
        PermissionMode::AcceptEdits,
        "accept-edits",
        "Accept edits",
        "Reads and edits are allowed; commands ask.",
    ),
    (
        PermissionMode::Plan,
        "plan",
        "Plan (read-only)",
        "Read-only: edits and commands are refused.",
    ),
    (
        PermissionMode::Bypass,
        "bypass",
        "Bypass",
        "Nothing asks; deny rules still hold, and commands stay in bareagent's sandbox.",
    ),
];

fn modes(current: PermissionMode) -> SessionModeState {
    let id = MODES
        .iter()
        .find(|(mode, ..)| *mode == current)
        .map_or("default", |(_, id, ..)| id);
    let available = MODES
        .iter()
        .map(|(_, id, name, description)| {
            SessionMode::new(*id, *name).description(description.to_string())
        })
        .collect();
    SessionModeState::new(id, available)
}

/// A prompt's blocks as the user message the model reads: text as
/// written, a resource link as its URI, an embedded resource with its
/// text, an image as an image (refused, with the prompt, if
/// [`Image::refusal`] says it may not be sent). Texts next to each other
/// join into one block; an image keeps its place between them.
fn prompt_message(blocks: Vec<ContentBlock>) -> Result<Message, Error> {
    let mut content = Vec::new();
    let mut parts = Vec::new();
    let flush = |parts: &mut Vec<String>, content: &mut Vec<history::ContentBlock>| {
        if !parts.is_empty() {
            content.push(history::ContentBlock::Text {
                text: parts.join("\n"),
            });
            parts.clear();
        }
    };
    for block in blocks {
        match block {
            ContentBlock::Image(image) => {
                let image = Image {
                    media_type: image.mime_type,
                    data: image.data,
                };
                if let Some(why) = image.refusal() {
                    return Err(invalid(why));
                }
                flush(&mut parts, &mut content);
                content.push(history::ContentBlock::Image(image));
            }
            ContentBlock::Text(text) => parts.push(text.text),
            ContentBlock::ResourceLink(link) => parts.push(format!("@{}", link.uri)),
            ContentBlock::Resource(resource) => match resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => parts.push(format!(
                    "<resource uri=\"{}\">\n{}\n</resource>",
                    contents.uri, contents.text
                )),
                _ => return Err(invalid("binary embedded resources are not supported")),
            },
            _ => {
                return Err(invalid(
                    "only text, images, resource links and text resources are supported in prompts",
                ));
            }
        }
    }
    flush(&mut parts, &mut content);
    Ok(Message {
        role: Role::User,
        content,
    })
}

/// The MCP servers a client passes, as our settings' entries: the
/// editor's own configuration, so the user's (like the language server's
/// `mcp` setting). What cannot be taken (SSE, which the MCP client does
/// not speak) is said as a notice.
fn client_servers(servers: &[McpServer]) -> (Vec<(String, ServerConfig)>, Option<String>) {
    let mut taken = Vec::new();
    let mut left = Vec::new();
    for server in servers {
        match server {
            McpServer::Stdio(s) => taken.push((
                s.name.clone(),
                ServerConfig {
                    command: Some(s.command.display().to_string()),
                    args: s.args.clone(),
                    env: s
                        .env
                        .iter()
                        .map(|v| (v.name.clone(), v.value.clone()))
                        .collect(),
                    origin: Origin::Editor,
                    ..ServerConfig::default()
                },
            )),
            McpServer::Http(s) => taken.push((
                s.name.clone(),
                ServerConfig {
                    url: Some(s.url.clone()),
                    headers: s
                        .headers
                        .iter()
                        .map(|h| (h.name.clone(), h.value.clone()))
                        .collect(),
                    origin: Origin::Editor,
                    ..ServerConfig::default()
                },
            )),
            McpServer::Sse(s) => left.push(format!("{} (SSE)", s.name)),
            _ => left.push("(a kind of server this bareagent does not know)".to_string()),
        }
    }
    let notice = (!left.is_empty()).then(|| {
        format!(
            "MCP servers not started: {} (bareagent speaks stdio and Streamable HTTP)",
            left.join(", ")
        )
    });
    (taken, notice)
}

impl Server {
    fn session(&self, id: &SessionId) -> Option<Arc<AcpSession>> {
        self.sessions.locked().get(&*id.0).cloned()
    }

    fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        let caps = &request.client_capabilities;
        *self.can.locked() = ClientFiles {
            read: caps.fs.read_text_file,
            write: caps.fs.write_text_file,
            terminal: caps.terminal,
        };
        let version = request.protocol_version.min(ProtocolVersion::V1);
        // MCP over Streamable HTTP is started as stdio is (not SSE).
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .session_capabilities(SessionCapabilities::new().list(SessionListCapabilities::new()))
            .mcp_capabilities(McpCapabilities::new().http(true))
            .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(true));
        InitializeResponse::new(version)
            .agent_capabilities(capabilities)
            .agent_info(Implementation::new("bareagent", env!("CARGO_PKG_VERSION")))
    }

    /// Opens a session: its settings read and its file made (with the
    /// user's key, which may be made and synced) off the connection's task.
    async fn new_session(&self, request: NewSessionRequest) -> Result<NewSessionResponse, Error> {
        let layer = self.args.layer();
        let session = off_the_connection(move || {
            let root = root_of(&request.cwd).map_err(invalid)?;
            let (servers, notice) = client_servers(&request.mcp_servers);
            let session = AcpSession::open(&root, None, servers, layer).map_err(invalid)?;
            if let Some(notice) = notice {
                session.tell(notice);
            }
            Ok(session)
        })
        .await?;
        let response = NewSessionResponse::new(session.id.clone())
            .modes(modes(session.mode()))
            .config_options(config_options::options(&session.core.current()));
        self.sessions
            .locked()
            .insert(session.id.clone(), Arc::new(session));
        Ok(response)
    }

    /// Loads a session: the file read and its chain checked, its settings
    /// read, off the connection's task.
    async fn load_session(
        &self,
        request: LoadSessionRequest,
        peer: &Peer,
    ) -> Result<LoadSessionResponse, Error> {
        let cwd = request.cwd.clone();
        let root = off_the_connection(move || root_of(&cwd).map_err(invalid)).await?;
        // Already open here (the client shows it again): replayed from
        // what this agent holds; its file stays ours.
        if let Some(session) = self.session(&request.session_id) {
            if session.paths.root() != root.canonicalize().unwrap_or_default() {
                return Err(invalid(format!(
                    "session {} belongs to the workspace {}, not {}",
                    session.id,
                    session.paths.root().display(),
                    root.display()
                )));
            }
            self.replay_to(&session, peer);
            return Ok(LoadSessionResponse::new()
                .modes(modes(session.mode()))
                .config_options(config_options::options(&session.core.current())));
        }
        let layer = self.args.layer();
        let session = off_the_connection(move || {
            let paths = crate::workspace::PathResolver::new(&root)
                .map_err(|e| invalid(format!("cannot open the workspace: {e}")))?;
            let (loaded, file) = crate::session_files::load(&paths, &request.session_id.0)
                .map_err(|error| Error::new(ErrorCode::INVALID_PARAMS, error.to_string()))?;
            let (servers, notice) = client_servers(&request.mcp_servers);
            let session = AcpSession::open(&root, Some((file, loaded.messages)), servers, layer)
                .map_err(invalid)?;
            if let Some(notice) = notice {
                session.tell(notice);
            }
            Ok(session)
        })
        .await?;
        self.replay_to(&session, peer);
        let response = LoadSessionResponse::new()
            .modes(modes(session.mode()))
            .config_options(config_options::options(&session.core.current()));
        self.sessions
            .locked()
            .insert(session.id.clone(), Arc::new(session));
        Ok(response)
    }

    /// Sends the session's history as `session/update` notifications.
    fn replay_to(&self, session: &AcpSession, peer: &Peer) {
        let sink = ClientSink {
            peer: peer.clone(),
            session: SessionId::new(session.id.as_str()),
            root: session.paths.root().to_path_buf(),
            calls: Arc::new(Calls::default()),
        };
        replay(&sink, session.paths.root(), &session.core.history());
    }

    async fn set_mode(
        &self,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Error> {
        let session = self
            .session(&request.session_id)
            .ok_or_else(|| session_not_found(&request.session_id))?;
        let mode = MODES
            .iter()
            .find(|(_, id, ..)| *id == &*request.mode_id.0)
            .map(|(mode, ..)| *mode)
            .ok_or_else(|| {
                invalid(format!(
                    "unknown mode `{}`: one of default, accept-edits, plan, bypass",
                    request.mode_id.0
                ))
            })?;
        session.set_mode(mode).await.map_err(invalid)?;
        Ok(SetSessionModeResponse::new())
    }

    /// `session/set_config_option`: the effort or thinking from the next
    /// prompt on; the answer carries every option as it now stands.
    async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let session = self
            .session(&request.session_id)
            .ok_or_else(|| session_not_found(&request.session_id))?;
        let change =
            config_options::change(&request.config_id.0, &request.value).map_err(invalid)?;
        let now = session
            .handle
            .change(change)
            .await
            .map_err(|error| invalid(error.to_string()))?;
        Ok(SetSessionConfigOptionResponse::new(
            config_options::options(&now),
        ))
    }

    /// Starts the turn in a task of its own and returns: the task answers.
    fn prompt(
        self: &Arc<Self>,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
        peer: Peer,
    ) -> Result<(), Error> {
        let Some(session) = self.session(&request.session_id) else {
            return responder.respond_with_error(session_not_found(&request.session_id));
        };
        let message = match prompt_message(request.prompt) {
            Ok(message) => message,
            Err(error) => return responder.respond_with_error(error),
        };
        // The turn answers once the session is free again, so a prompt
        // sent on its answer is not refused as busy.
        let (answer, answered) = tokio::sync::oneshot::channel();
        let (turn_session, can) = (session.clone(), *self.can.locked());
        let run: RunTurn = Box::new(move |turn| {
            Box::pin(async move {
                let prompt = super::turn::Prompt {
                    session: turn_session,
                    peer,
                    can,
                    message: turn.prompt,
                    cancel: turn.cancel,
                };
                let stop = super::turn::run(prompt).await;
                Afterwards::new(async move {
                    let _ = answer.send(stop);
                })
            })
        });
        // Sent now: of two prompts sent together, the second is refused.
        let started = session.handle.prompt(message, Busy::Refuse, run);
        tokio::spawn(async move {
            let answered = match started.await {
                Err(error) => responder.respond_with_error(invalid(error.to_string())),
                Ok(_) => match answered.await {
                    Ok(Ok(stop)) => responder.respond(PromptResponse::new(stop)),
                    Ok(Err(message)) => {
                        responder.respond_with_error(Error::new(ErrorCode::INTERNAL_ERROR, message))
                    }
                    // The turn's task ended without an answer: it panicked.
                    Err(_) => responder.respond_with_error(Error::new(
                        ErrorCode::INTERNAL_ERROR,
                        "the turn crashed (a bug in bareagent)",
                    )),
                },
            };
            if let Err(error) = answered {
                tracing::debug!(%error, "cannot answer session/prompt");
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every permission mode is a session mode, with the id the settings
    /// files spell it with (so `mode = "…"` and `session/set_mode` agree).
    #[test]
    fn every_permission_mode_is_a_session_mode_named_as_in_the_settings() {
        use PermissionMode::*;
        // Exhaustive: a new mode does not compile here until it has an ACP mode.
        match Default {
            Default | AcceptEdits | Plan | Bypass => {}
        }
        for mode in [Default, AcceptEdits, Plan, Bypass] {
            let spelled = serde_json::to_value(mode).expect("mode");
            let state = modes(mode);
            assert_eq!(
                Some(&*state.current_mode_id.0),
                spelled.as_str(),
                "{mode:?}"
            );
        }
        assert_eq!(modes(Default).available_modes.len(), MODES.len());
    }

    #[test]
    fn prompts_keep_text_links_and_text_resources_and_refuse_the_rest() {
        use agent_client_protocol::v1::schema::{
            EmbeddedResource, ImageContent, ResourceLink, TextContent, TextResourceContents,
        };
        let blocks = vec![
            ContentBlock::Text(TextContent::new("look at")),
            ContentBlock::ResourceLink(ResourceLink::new("a.rs", "file:///w/a.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/b.rs",
                )),
            )),
        ];
        let message = prompt_message(blocks).expect("text");
        assert_eq!(
            message,
            Message::user_text(
                "look at\n@file:///w/a.rs\n<resource uri=\"file:///w/b.rs\">\nfn main() {}\n</resource>"
            )
        );
        let image =
            |data: &str, media_type: &str| ContentBlock::Image(ImageContent::new(data, media_type));
        let message = prompt_message(vec![
            ContentBlock::Text(TextContent::new("what is")),
            image("iVBORw0KGgo=", "image/png"),
            ContentBlock::Text(TextContent::new("and")),
            ContentBlock::Text(TextContent::new("this")),
            image("R0lGOD", "image/gif"),
        ])
        .expect("images");
        let png = Image {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        };
        let gif = Image {
            media_type: "image/gif".into(),
            data: "R0lGOD".into(),
        };
        assert_eq!(
            message.content,
            [
                history::ContentBlock::Text {
                    text: "what is".into()
                },
                history::ContentBlock::Image(png),
                history::ContentBlock::Text {
                    text: "and\nthis".into()
                },
                history::ContentBlock::Image(gif),
            ]
        );
        // Fails closed: an image no provider takes refuses the prompt.
        for refused in [
            image("PHN2Zz4=", "image/svg+xml"),
            image("not base64!", "image/png"),
            image("", "image/png"),
        ] {
            assert!(prompt_message(vec![refused]).is_err());
        }
        let audio = ContentBlock::Audio(agent_client_protocol::v1::schema::AudioContent::new(
            "AAAA",
            "audio/wav",
        ));
        assert!(prompt_message(vec![audio]).is_err());
    }
}
