//! Who may run a tool call: the permission mode, then the user.
//!
//! A tool says *what* a call does (an [`Action`]); this module decides
//! *whether* it may, asking the user through an [`Approver`] when the mode
//! says to ask. How the question is shown (a terminal prompt, an editor
//! dialog, a code action) is the approver's business, not the gate's.

use std::collections::HashSet;
use std::sync::Mutex;

use async_trait::async_trait;

/// What a tool call would do, for deciding and for showing the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionKind {
    /// Reads inside the workspace.
    Read,
    /// Changes files inside the workspace.
    Edit,
    /// Runs a program.
    Execute,
}

#[derive(Clone, Debug)]
pub struct Action {
    pub tool: String,
    pub kind: ActionKind,
    /// One line the user can judge: the path, or the command.
    pub summary: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Reads are allowed; edits and commands ask.
    #[default]
    Default,
    /// Reads and edits are allowed; commands ask.
    AcceptEdits,
    /// Read-only: everything else is denied.
    Plan,
    /// Nothing asks (still confined to the workspace).
    Bypass,
}

/// The user's answer to one question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    AllowOnce,
    /// Allow this tool for the rest of the session.
    AllowForSession,
    /// No, with the reason the model should read.
    Reject(String),
}

#[async_trait]
pub trait Approver: Send + Sync {
    async fn ask(&self, action: &Action) -> Approval;
}

/// An approver that says no: for contexts where nobody can be asked.
pub struct DenyAll(pub String);

#[async_trait]
impl Approver for DenyAll {
    async fn ask(&self, _action: &Action) -> Approval {
        Approval::Reject(self.0.clone())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// The text becomes the tool call's error result.
    Deny(String),
}

pub const DENIED_BY_USER: &str = "Denied by user";

pub struct PermissionGate {
    mode: PermissionMode,
    approver: Box<dyn Approver>,
    allowed_for_session: Mutex<HashSet<String>>,
}

impl PermissionGate {
    pub fn new(mode: PermissionMode, approver: Box<dyn Approver>) -> Self {
        PermissionGate {
            mode,
            approver,
            allowed_for_session: Mutex::new(HashSet::new()),
        }
    }

    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    pub async fn check(&self, action: &Action) -> Decision {
        let needs_asking = match (self.mode, action.kind) {
            (PermissionMode::Bypass, _) | (_, ActionKind::Read) => false,
            (PermissionMode::Plan, _) => {
                return Decision::Deny(format!(
                    "Denied: plan mode is read-only, so `{}` may not run. Describe the change you would make instead.",
                    action.tool
                ));
            }
            (PermissionMode::AcceptEdits, ActionKind::Edit) => false,
            _ => true,
        };
        if !needs_asking || self.session_allows(&action.tool) {
            return Decision::Allow;
        }
        match self.approver.ask(action).await {
            Approval::AllowOnce => Decision::Allow,
            Approval::AllowForSession => {
                self.lock().insert(action.tool.clone());
                Decision::Allow
            }
            Approval::Reject(reason) => Decision::Deny(reason),
        }
    }

    fn session_allows(&self, tool: &str) -> bool {
        self.lock().contains(tool)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.allowed_for_session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Scripted(Approval, Arc<AtomicUsize>);

    #[async_trait]
    impl Approver for Scripted {
        async fn ask(&self, _action: &Action) -> Approval {
            self.1.fetch_add(1, Ordering::SeqCst);
            self.0.clone()
        }
    }

    fn action(kind: ActionKind) -> Action {
        Action {
            tool: "edit_file".into(),
            kind,
            summary: "a.txt".into(),
        }
    }

    #[tokio::test]
    async fn modes_decide_who_asks() {
        use ActionKind::*;
        use PermissionMode::*;
        let cases = [
            (Default, Read, false, true),
            (Default, Edit, true, false),
            (Default, Execute, true, false),
            (AcceptEdits, Edit, false, true),
            (AcceptEdits, Execute, true, false),
            (Plan, Read, false, true),
            (Plan, Edit, false, false),
            (Bypass, Execute, false, true),
        ];
        for (mode, kind, asks, allowed) in cases {
            let count = Arc::new(AtomicUsize::new(0));
            let gate = PermissionGate::new(
                mode,
                Box::new(Scripted(
                    Approval::Reject(DENIED_BY_USER.into()),
                    count.clone(),
                )),
            );
            let decision = gate.check(&action(kind)).await;
            assert_eq!(count.load(Ordering::SeqCst) == 1, asks, "{mode:?} {kind:?}");
            assert_eq!(decision == Decision::Allow, allowed, "{mode:?} {kind:?}");
        }
    }

    #[tokio::test]
    async fn allow_for_session_stops_asking() {
        let count = Arc::new(AtomicUsize::new(0));
        let gate = PermissionGate::new(
            PermissionMode::Default,
            Box::new(Scripted(Approval::AllowForSession, count.clone())),
        );
        assert_eq!(gate.check(&action(ActionKind::Edit)).await, Decision::Allow);
        assert_eq!(gate.check(&action(ActionKind::Edit)).await, Decision::Allow);
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }
}
