//! One `session/prompt`: the agent assembled for the session from its
//! settings and the client's capabilities (as `bareagent run` assembles
//! it for a terminal), the loop run, and the loop's end as ACP's stop
//! reason. The history goes back to the session whatever the end; the
//! session file is synced.

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::{SessionId, SessionUpdate, StopReason};

use super::AcpArgs;
use super::Peer;
use super::approver::ClientApprover;
use super::calls::Calls;
use super::session::Session;
use super::sink::{ClientSink, text_chunk};
use super::terminal::ClientTerminals;
use super::workspace::{ClientFiles, ClientWorkspace};
use crate::agent::{
    Agent, AgentParts, Compaction, CompactionSettings, LoopConfig, LoopError, Message,
    load_instructions, paths_in, run_loop, system_prompt, user_instructions_path,
};
use crate::events::EventSink;
use crate::provider::openai::session_cache_key;
use crate::provider::{FromEnvironment, HttpSettings, ProviderChoice, context_window};
use crate::sandbox::Sandbox;
use crate::sessions::{Entry, Transcript};
use crate::tools::ToolRegistry;
use crate::workspace::{ClientTerminal, DiskWorkspace, Workspace};

/// Everything a prompt needs from the server.
pub struct Prompt {
    pub session: Arc<Session>,
    pub peer: Peer,
    pub can: ClientFiles,
    pub args: AcpArgs,
    /// The prompt as a user message (text, and images).
    pub message: Message,
    pub cancel: tokio_util::sync::CancellationToken,
}

/// Runs the prompt; `Err` is a failure the client is answered with (no
/// provider configured, the model failing after its retries).
pub async fn run(prompt: Prompt) -> Result<StopReason, String> {
    let Prompt {
        session,
        peer,
        can,
        args,
        message,
        cancel,
    } = prompt;
    let root = session.paths.root().to_path_buf();
    let settings = &session.settings;
    let id = SessionId::new(session.id.as_str());
    let calls = Arc::new(Calls::default());
    let sink = ClientSink {
        peer: peer.clone(),
        session: id.clone(),
        root: root.clone(),
        calls: calls.clone(),
    };
    // First the MCP servers still on their first start: what failed is
    // among the notices said now.
    let mut tools = ToolRegistry::standard();
    session.mcp.add_to(&mut tools).await;
    for notice in session.take_notices() {
        sink.send(SessionUpdate::AgentMessageChunk(text_chunk(format!(
            "_{notice}_\n\n"
        ))));
    }
    // BAREAGENT_PROVIDER / BAREAGENT_MODEL over the settings, as for `run`.
    let named = FromEnvironment::read().map_err(|e| e.to_string())?;
    let choice = ProviderChoice {
        kind: named.kind.or(settings.provider),
        model: named.model.or_else(|| settings.model.clone()),
        base_url: args.base_url.clone(),
        replay: None,
        record: None,
        http: HttpSettings {
            idle_timeout: Duration::from_secs(args.idle_timeout.max(1)),
            ..HttpSettings::default()
        },
        cache_key: Some(session_cache_key(&root, session.started)),
        send_cache_key: settings.prompt_cache_key,
    };
    let provider = choice.build().map_err(|e| e.to_string())?;
    let model = choice.resolved_model().ok().flatten();
    let compaction = Compaction::new(CompactionSettings::for_model(
        model.as_deref().unwrap_or_default(),
        settings.context.window,
        settings.context.compact_at,
    ));
    let terminal: Option<Arc<dyn ClientTerminal>> = can.terminal.then(|| {
        Arc::new(ClientTerminals {
            peer: peer.clone(),
            session: id.clone(),
            calls: calls.clone(),
        }) as Arc<dyn ClientTerminal>
    });
    let workspace = ClientWorkspace {
        disk: DiskWorkspace::new(&root).map_err(|e| format!("cannot open the workspace: {e}"))?,
        peer: peer.clone(),
        session: id.clone(),
        can,
        terminal,
        calls: calls.clone(),
    };
    let approver = ClientApprover {
        peer: peer.clone(),
        session: id.clone(),
        calls: calls.clone(),
        terminal: can.terminal,
        rejected: session.rejected.clone(),
    };
    let gate = session.gate().with_approver(Box::new(approver));
    let paths = workspace.paths().clone();
    let reader = gate.clone();
    let near = paths_in(&message.text());
    let instructions = tokio::task::spawn_blocking(move || {
        load_instructions(&paths, &reader, user_instructions_path().as_deref(), &near)
    })
    .await
    .unwrap_or_default();
    let config = LoopConfig {
        system: system_prompt(&root) + &instructions.prompt,
        max_iterations: args.max_iterations,
        price: model.as_deref().and_then(|m| settings.price(m)),
        context_window: model.as_deref().and_then(context_window),
        ..LoopConfig::default()
    };
    let sandbox = Sandbox::for_commands(&settings.sandbox, &root, gate.denied_read_prefixes())
        .map_err(|e| format!("cannot set up the sandbox: {e}"))?;
    let agent = Agent::new(AgentParts {
        provider: provider.as_ref(),
        tools: &tools,
        gate: &gate,
        workspace: &workspace,
        sandbox: &sandbox,
        sink: &sink as &dyn EventSink,
        config: &config,
    })
    .with_inbox(&session.inbox)
    .with_background(&*session.background)
    .with_reads(session.reads.clone())
    .with_compactor(&compaction)
    .with_cancel(cancel)
    .with_transcript(session.file.as_ref());
    let mut messages =
        std::mem::take(&mut *session.messages.lock().unwrap_or_else(|p| p.into_inner()));
    crate::sessions::append(&mut messages, message, session.file.as_ref());
    let outcome = run_loop(&agent, &mut messages).await;
    *session.messages.lock().unwrap_or_else(|p| p.into_inner()) = messages;
    let file = session.file.clone();
    // The sync waits for the disk: off the runtime's thread.
    if let Err(error) = tokio::task::spawn_blocking(move || file.record(Entry::TurnEnd)).await {
        tracing::warn!(%error, "cannot sync the session file");
    }
    match outcome {
        Ok(outcome) if outcome.refused => Ok(StopReason::Refusal),
        Ok(_) => Ok(StopReason::EndTurn),
        Err(LoopError::Cancelled) => Ok(StopReason::Cancelled),
        Err(LoopError::IterationCap { .. }) => Ok(StopReason::MaxTurnRequests),
        Err(LoopError::Truncated { .. }) => Ok(StopReason::MaxTokens),
        Err(error) => Err(error.to_string()),
    }
}
