//! Commands in the client's terminal: `terminal/create` (`bash -c LINE` in
//! the workspace root), shown in the call's panel entry, then
//! `terminal/wait_for_exit`, `terminal/output` and `terminal/release`; a
//! timeout or a cancelled turn kills it first (`terminal/kill`).
//!
//! The client's terminal is not our sandbox: `bash` hands a command here
//! only after the gate asked the user about it and they allowed it (see
//! `crate::workspace::ClientTerminal`), and the question says so.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, KillTerminalRequest, ReleaseTerminalRequest, SessionId,
    SessionNotification, SessionUpdate, Terminal, TerminalOutputRequest, ToolCallContent,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, WaitForTerminalExitRequest,
};
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::Peer;
use super::calls::Calls;
use crate::workspace::{ClientTerminal, TerminalRun};

/// Output the client keeps per command (it keeps the end).
const OUTPUT_LIMIT: u64 = 1_000_000;
/// How long the kill and release of a terminal may take.
const CLEANUP: Duration = Duration::from_secs(5);

pub struct ClientTerminals {
    pub peer: Peer,
    pub session: SessionId,
    pub calls: Arc<Calls>,
}

#[async_trait]
impl ClientTerminal for ClientTerminals {
    async fn run(
        &self,
        command: &str,
        cwd: &Path,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<TerminalRun, String> {
        // The terminal's life runs in a task of its own, so a cancelled
        // turn (the loop drops this future at once) still kills and
        // releases it, even one whose creation was under way.
        let stop = cancel.child_token();
        let _stop_when_dropped = stop.clone().drop_guard();
        let run = Lifecycle {
            peer: self.peer.clone(),
            session: self.session.clone(),
            calls: self.calls.clone(),
            command: command.to_string(),
            cwd: cwd.to_path_buf(),
            timeout,
            stop,
        };
        tokio::spawn(run.run())
            .await
            .map_err(|error| format!("the terminal task failed: {error}"))?
    }
}

/// One command in one client terminal, from creation to release.
struct Lifecycle {
    peer: Peer,
    session: SessionId,
    calls: Arc<Calls>,
    command: String,
    cwd: std::path::PathBuf,
    timeout: Duration,
    /// The turn was cancelled, or the tool's future dropped.
    stop: CancellationToken,
}

impl Lifecycle {
    async fn run(self) -> Result<TerminalRun, String> {
        let request = CreateTerminalRequest::new(self.session.clone(), "bash")
            .args(vec!["-c".to_string(), self.command.clone()])
            .cwd(self.cwd.clone())
            .output_byte_limit(OUTPUT_LIMIT);
        let created = self
            .peer
            .send_request(request)
            .block_task()
            .await
            .map_err(|error| error.message)?;
        let terminal = created.terminal_id;
        if let Some(call) = self.calls.running_in_terminal(&self.command, &terminal.0) {
            let fields = ToolCallUpdateFields::new()
                .status(ToolCallStatus::InProgress)
                .content(vec![ToolCallContent::Terminal(Terminal::new(
                    terminal.clone(),
                ))]);
            let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call, fields));
            let _ = self
                .peer
                .send_notification(SessionNotification::new(self.session.clone(), update));
        }
        let wait = WaitForTerminalExitRequest::new(self.session.clone(), terminal.clone());
        let waited = self.peer.send_request(wait).block_task();
        let killed = tokio::select! {
            biased;
            _ = self.stop.cancelled() => Some("cancelled; the command was killed".to_string()),
            result = waited => match result {
                Ok(_) => None,
                Err(error) => Some(format!("the editor's terminal failed: {}", error.message)),
            },
            _ = tokio::time::sleep(self.timeout) => Some(format!(
                "timed out after {} s; the command was killed", self.timeout.as_secs()
            )),
        };
        if killed.is_some() {
            let kill = KillTerminalRequest::new(self.session.clone(), terminal.clone());
            let _ = tokio::time::timeout(CLEANUP, self.peer.send_request(kill).block_task()).await;
        }
        let output = TerminalOutputRequest::new(self.session.clone(), terminal.clone());
        let output =
            tokio::time::timeout(CLEANUP, self.peer.send_request(output).block_task()).await;
        let release = ReleaseTerminalRequest::new(self.session.clone(), terminal);
        if let Ok(Err(error)) =
            tokio::time::timeout(CLEANUP, self.peer.send_request(release).block_task()).await
        {
            tracing::debug!(%error, "terminal/release failed");
        }
        let output = output
            .map_err(|_| "the editor did not send the terminal's output".to_string())?
            .map_err(|error| error.message)?;
        let (exit_code, signal) = match output.exit_status {
            Some(status) => (status.exit_code, status.signal),
            None => (None, None),
        };
        Ok(TerminalRun {
            output: output.output,
            truncated: output.truncated,
            exit_code,
            signal,
            killed,
        })
    }
}
