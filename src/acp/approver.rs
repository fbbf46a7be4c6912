//! The user's yes or no, asked with `session/request_permission`: the call
//! the client already shows (its kind, pending), the diff of an edit first
//! (ACP `diff` content: old and new text; a client that shows only the
//! first item shows the diff), then what it does and why it asks, and four
//! answers — allow
//! once, allow always (the question's rule, saved as `bareagent run` and
//! the language server save it), reject once, reject always (refused
//! without asking for the rest of the session). Anything else — an error,
//! an unknown option, `cancelled` — is a no. An allowed call is then
//! `in_progress`. A cancelled turn drops the question; the SDK then tells
//! the client.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    ContentBlock, Diff, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId, SessionNotification, SessionUpdate, TextContent,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use async_trait::async_trait;

use super::Peer;
use super::calls::Calls;
use crate::permission::{ActionKind, Approval, Approver, DENIED_BY_USER, Question, Target};
use crate::sync::Locked;

const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const REJECT_ALWAYS: &str = "reject_always";

pub struct ClientApprover {
    pub peer: Peer,
    pub session: SessionId,
    pub calls: Arc<Calls>,
    /// Commands the user allows run in the client's terminal.
    pub terminal: bool,
    pub rejected: Arc<Mutex<HashSet<String>>>,
}

#[async_trait]
impl Approver for ClientApprover {
    async fn ask(&self, question: &Question<'_>) -> Approval {
        let refused = self.rejected.locked().contains(question.rule);
        if refused {
            return Approval::Reject(format!(
                "{DENIED_BY_USER}: they chose to reject `{}` for the rest of this session",
                question.rule
            ));
        }
        let action = question.action;
        let path = match &action.target {
            Target::Path(path) => Some(path.as_str()),
            _ => None,
        };
        let shown = self.calls.find(&action.tool, path);
        let call = shown
            .clone()
            .unwrap_or_else(|| format!("question-{}", crate::session_files::new_id()));
        let mut why = format!("{}\n\n{}", action.summary, question.reason);
        if action.kind == ActionKind::Execute && self.terminal {
            why.push_str(
                "\n\nIf allowed, it runs in your editor's terminal, outside bareagent's sandbox.",
            );
        }
        let mut content: Vec<ToolCallContent> = Vec::new();
        for file in question.edit.iter().flat_map(|edit| &edit.files) {
            let before = self
                .calls
                .text(file.path)
                .or_else(|| file.before.map(str::to_string));
            content.push(Diff::new(file.path, file.after).old_text(before).into());
        }
        content.push(ContentBlock::Text(TextContent::new(why)).into());
        let title = format!(
            "{}: {}",
            action.tool,
            crate::text::prefix(action.summary.lines().next().unwrap_or_default(), 80)
        );
        let fields = ToolCallUpdateFields::new()
            .title(title)
            .kind(super::sink::kind_of(&action.tool))
            .status(ToolCallStatus::Pending)
            .content(content);
        let options = vec![
            PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                ALLOW_ALWAYS,
                format!("Always allow `{}`", question.rule),
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
            PermissionOption::new(
                REJECT_ALWAYS,
                format!("Always reject `{}` (this session)", question.rule),
                PermissionOptionKind::RejectAlways,
            ),
        ];
        let request = RequestPermissionRequest::new(
            self.session.clone(),
            ToolCallUpdate::new(call, fields),
            options,
        );
        let answer = self.peer.send_request(request).block_task().await;
        let approval = self.approval(question, answer.map(|response| response.outcome));
        if let (Some(call), Approval::AllowOnce | Approval::AllowAlways) = (shown, &approval) {
            let fields = ToolCallUpdateFields::new().status(ToolCallStatus::InProgress);
            let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call, fields));
            let notification = SessionNotification::new(self.session.clone(), update);
            if let Err(error) = self.peer.send_notification(notification) {
                tracing::debug!(%error, "cannot send session/update");
            }
        }
        approval
    }
}

impl ClientApprover {
    /// The client's answer as the gate's.
    fn approval(
        &self,
        question: &Question<'_>,
        answer: Result<RequestPermissionOutcome, agent_client_protocol::Error>,
    ) -> Approval {
        match answer {
            Ok(RequestPermissionOutcome::Selected(selected)) => match &*selected.option_id.0 {
                ALLOW_ONCE => Approval::AllowOnce,
                ALLOW_ALWAYS => Approval::AllowAlways,
                REJECT_ONCE => Approval::Reject(DENIED_BY_USER.to_string()),
                REJECT_ALWAYS => {
                    self.rejected.locked().insert(question.rule.to_string());
                    Approval::Reject(format!(
                        "{DENIED_BY_USER}: they rejected it for the rest of this session"
                    ))
                }
                other => Approval::Reject(format!(
                    "Not allowed: the editor answered with an unknown option `{other}`"
                )),
            },
            Ok(_) => Approval::Reject("Not allowed: the question was cancelled".to_string()),
            Err(error) => Approval::Reject(format!(
                "Not allowed: the editor did not answer the question ({})",
                error.message
            )),
        }
    }
}
