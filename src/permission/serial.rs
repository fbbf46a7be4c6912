//! One question at a time. The loop runs a response's read-only calls at
//! once, and each may ask (two sensitive reads); without this, a terminal
//! prints both questions before either answer, and an answer cannot be told
//! apart. The gate wraps every approver it is given in [`OneAtATime`], so
//! every front end (terminal, `--json`, the language server) asks in order.
//!
//! The order is the order of the calls: the loop starts the calls in order,
//! each reaches `ask` without waiting on anything first, and tokio's mutex
//! hands out its lock first come, first served.
//!
//! What this does not do: order questions of different gates (the language
//! server's sessions each have their own; it shows their dialogs one at a
//! time itself, while all of them stay pending as code actions).

use async_trait::async_trait;

use super::{Approval, Approver, Question};

/// An approver that lets one question through at a time, in call order.
pub struct OneAtATime {
    inner: Box<dyn Approver>,
    /// Held for the whole of one question, answer included.
    asking: tokio::sync::Mutex<()>,
}

impl OneAtATime {
    pub fn new(inner: Box<dyn Approver>) -> Self {
        OneAtATime {
            inner,
            asking: tokio::sync::Mutex::new(()),
        }
    }
}

#[async_trait]
impl Approver for OneAtATime {
    async fn ask(&self, question: &Question<'_>) -> Approval {
        let _asking = self.asking.lock().await;
        self.inner.ask(question).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::permission::{Action, ActionKind, Target};

    /// Records when each question starts and ends, and answers after the
    /// other questions had every chance to start.
    struct Slow(Arc<Mutex<Vec<String>>>);

    #[async_trait]
    impl Approver for Slow {
        async fn ask(&self, question: &Question<'_>) -> Approval {
            let name = &question.action.summary;
            self.0.lock().unwrap().push(format!("ask {name}"));
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            self.0.lock().unwrap().push(format!("answer {name}"));
            Approval::AllowOnce
        }
    }

    #[tokio::test]
    async fn questions_asked_together_are_asked_one_by_one_in_call_order() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let approver = OneAtATime::new(Box::new(Slow(log.clone())));
        let actions: Vec<Action> = ["a", "b", "c"]
            .map(|name| Action {
                tool: "read_file".into(),
                kind: ActionKind::Read,
                summary: name.into(),
                target: Target::Path(name.into()),
            })
            .into();
        let questions: Vec<Question<'_>> = actions
            .iter()
            .map(|action| Question {
                action,
                reason: "test",
                rule: "read_file",
                edit: None,
            })
            .collect();
        futures_util::future::join_all(questions.iter().map(|q| approver.ask(q))).await;
        assert_eq!(
            *log.lock().unwrap(),
            [
                "ask a", "answer a", "ask b", "answer b", "ask c", "answer c"
            ]
        );
    }
}
