//! One `session/prompt`: the agent assembled for the session from its
//! settings and the client's capabilities (as `bareagent run` assembles
//! it for a terminal), the loop run, and the loop's end as ACP's stop
//! reason. The history goes back to the session whatever the end; the
//! session file is synced.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{SessionId, StopReason};

use super::Peer;
use super::approver::ClientApprover;
use super::calls::Calls;
use super::session::AcpSession;
use super::sink::ClientSink;
use super::terminal::ClientTerminals;
use super::workspace::{ClientFiles, ClientWorkspace};
use crate::agent::{LoopError, Message};
use crate::session::TurnIo;
use crate::workspace::{ClientTerminal, DiskWorkspace};

/// Everything a prompt needs from the server.
pub struct Prompt {
    pub session: Arc<AcpSession>,
    pub peer: Peer,
    pub can: ClientFiles,
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
        message,
        cancel,
    } = prompt;
    let root = session.paths.root().to_path_buf();
    let id = SessionId::new(session.id.as_str());
    let calls = Arc::new(Calls::default());
    let sink = ClientSink {
        peer: peer.clone(),
        session: id.clone(),
        root: root.clone(),
        calls: calls.clone(),
    };
    // The MCP servers' news first: the turn waits for those still starting.
    if let Some(mcp) = session.core.mcp() {
        mcp.wait_started().await;
    }
    for notice in session.take_notices() {
        session.core.tell(notice);
    }
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
    let io = TurnIo {
        workspace: &workspace,
        approver: Box::new(approver),
        sink: &sink,
        cancel,
        near: Vec::new(),
        code: None,
    };
    let end = session.core.run_turn(message, io).await;
    match end.result {
        Ok(outcome) if outcome.refused => Ok(StopReason::Refusal),
        Ok(_) => Ok(StopReason::EndTurn),
        Err(LoopError::Cancelled) => Ok(StopReason::Cancelled),
        Err(LoopError::IterationCap { .. }) => Ok(StopReason::MaxTurnRequests),
        Err(LoopError::Truncated { .. }) => Ok(StopReason::MaxTokens),
        Err(error) => Err(error.to_string()),
    }
}
