//! A session's own task, and the handle to it: the one place where a turn
//! begins and ends. A front end sends typed operations — a prompt, a
//! cancel, a compaction, a new mode or model, a rewind, the close — and
//! never looks into shared state to find its session's running turn: the
//! task knows it. What a turn shows (a chat file, `$/progress`, ACP's
//! updates and its answer) stays with the front end, in the [`RunTurn`]
//! the handle calls for each turn it starts. A turn's work ends with what
//! it says once the session is free again (ACP's answer, the language
//! server's `turn_finished`): by then a prompt the user sends on hearing
//! it starts a turn of its own, not one queued behind the one that ended.
//!
//! One job runs at a time: a turn, or a rewind. A prompt that comes while
//! one runs is queued into the session's inbox (the language server: the
//! running turn reads it at its next step) or refused (ACP). When a turn
//! ends, the prompts it did not take start the next turn at once — unless
//! it was cancelled: then they join the history, for the next prompt.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{ChangeError, Current, Layers, Session, SessionChange, SessionError};
use crate::agent::{ContentBlock, Message, Role};
use crate::rewind::Rewound;
use crate::session_files::SessionFileError;
use crate::workspace::Workspace;

/// A job's work, run on a task of its own.
pub type Job<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What a job says of its end once the session is free again.
pub struct Afterwards(Job<()>);

impl Afterwards {
    pub fn new(say: impl Future<Output = ()> + Send + 'static) -> Afterwards {
        Afterwards(Box::pin(say))
    }
}

/// Runs one turn the handle started: the front end's IO around
/// [`Session::run_turn`], and what it shows of the turn's end.
pub type RunTurn = Box<dyn FnOnce(Turn) -> Job<Afterwards> + Send>;

/// Runs a turn the handle starts from queued prompts.
pub type RunQueued = Arc<dyn Fn(Turn) -> Job<Afterwards> + Send + Sync>;

/// A turn the handle started.
pub struct Turn {
    /// Unique in the process (approvals and progress are keyed by it).
    pub id: u64,
    pub session: Arc<Session>,
    pub prompt: Message,
    pub cancel: CancellationToken,
}

/// What to do with a prompt while a job runs.
#[derive(Clone)]
pub enum Busy {
    /// Into the inbox: the running turn reads it at its next step, or the
    /// next turn starts with it, run by this.
    Queue(RunQueued),
    /// Answered with [`HandleError::Busy`].
    Refuse,
}

/// What became of a prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Started {
    /// A turn of its own, with this id.
    Turn(u64),
    /// Queued behind the running job, with this id.
    Queued(u64),
}

/// What became of a request to compact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compacting {
    /// The running job (this id) is left alone; the next step of a turn
    /// compacts.
    NextStep(u64),
    /// Nothing runs: the caller compacts now (the session's turn lock
    /// keeps a turn from starting until it is done).
    Idle,
}

#[derive(Debug, thiserror::Error)]
pub enum HandleError {
    #[error(
        "a prompt is already running in this session: wait for its answer, or send session/cancel"
    )]
    Busy,
    #[error("a turn is running: cancel it before rewinding")]
    BusyRewinding,
    #[error("the session is closed")]
    Closed,
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Change(#[from] ChangeError),
    #[error(transparent)]
    Rewind(#[from] SessionFileError),
}

enum Op {
    Prompt {
        prompt: Message,
        busy: Busy,
        run: RunTurn,
        reply: oneshot::Sender<Result<Started, HandleError>>,
    },
    Cancel {
        /// Only this turn, if named.
        turn: Option<u64>,
        reply: oneshot::Sender<Option<u64>>,
    },
    Compact {
        reply: oneshot::Sender<Compacting>,
    },
    /// A new model, effort, thinking or mode: the session's own layer.
    Change {
        change: SessionChange,
        reply: oneshot::Sender<Result<Current, HandleError>>,
    },
    /// The front end's layers read again (the session's own stays).
    Layers {
        layers: Box<Layers>,
        reply: oneshot::Sender<Result<(), HandleError>>,
    },
    Rewind {
        undo: Job<JobEnd>,
        reply: oneshot::Sender<Result<u64, HandleError>>,
    },
    Close {
        reply: oneshot::Sender<()>,
    },
}

/// The handle to a session's task: cheap to clone.
#[derive(Clone)]
pub struct SessionHandle {
    ops: mpsc::UnboundedSender<Op>,
    session: Arc<Session>,
    running: watch::Receiver<Option<u64>>,
}

/// Ids for turns and rewinds, unique in the process.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

impl SessionHandle {
    /// The task owning `session`. It ends at [`SessionHandle::close`] or
    /// when every handle is dropped.
    pub fn spawn(session: Arc<Session>) -> SessionHandle {
        let (ops, receiver) = mpsc::unbounded_channel();
        let (running, watching) = watch::channel(None);
        let task = Task {
            session: session.clone(),
            queued: None,
            current: None,
            running,
        };
        tokio::spawn(task.serve(receiver));
        SessionHandle {
            ops,
            session,
            running: watching,
        }
    }

    /// The session, for queries (its history, totals, settings).
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The id of the running job (a turn or a rewind), if one runs.
    pub fn running(&self) -> Option<u64> {
        *self.running.borrow()
    }

    /// Sends an operation now (so operations are taken in the order they
    /// were asked for) and waits for its answer later.
    fn ask<T: Send + 'static>(
        &self,
        op: impl FnOnce(oneshot::Sender<T>) -> Op,
    ) -> impl Future<Output = Option<T>> + Send + 'static {
        let (reply, answer) = oneshot::channel();
        let sent = self.ops.send(op(reply)).is_ok();
        async move {
            if !sent {
                return None;
            }
            answer.await.ok()
        }
    }

    /// [`SessionHandle::ask`] for an operation that can fail.
    fn request<T: Send + 'static>(
        &self,
        op: impl FnOnce(oneshot::Sender<Result<T, HandleError>>) -> Op,
    ) -> impl Future<Output = Result<T, HandleError>> + Send + 'static {
        let answer = self.ask(op);
        async move { answer.await.unwrap_or(Err(HandleError::Closed)) }
    }

    /// Starts a turn on `prompt` run by `run`, or, while a job runs,
    /// queues or refuses it as `busy` says (then `run` is dropped).
    pub fn prompt(
        &self,
        prompt: Message,
        busy: Busy,
        run: RunTurn,
    ) -> impl Future<Output = Result<Started, HandleError>> + Send + 'static {
        self.request(move |reply| Op::Prompt {
            prompt,
            busy,
            run,
            reply,
        })
    }

    /// Cancels the running turn (only if it is `turn`, when named); its id,
    /// or `None` when none ran.
    pub fn cancel(&self, turn: Option<u64>) -> impl Future<Output = Option<u64>> + Send + 'static {
        let answer = self.ask(move |reply| Op::Cancel { turn, reply });
        async move { answer.await.flatten() }
    }

    /// The running turn compacts at its next step; or, when idle, the
    /// caller may compact now.
    pub fn compact(&self) -> impl Future<Output = Option<Compacting>> + Send + 'static {
        self.ask(move |reply| Op::Compact { reply })
    }

    /// Turns from now on use what `change` says (a running turn keeps
    /// its own): every front end's model, effort, thinking and mode
    /// changes. Answers what the next turn uses.
    pub fn change(
        &self,
        change: SessionChange,
    ) -> impl Future<Output = Result<Current, HandleError>> + Send + 'static {
        self.request(move |reply| Op::Change { change, reply })
    }

    /// Turns from now on use the front end's `layers` (its settings read
    /// again); what was chosen in the session stays.
    pub fn set_layers(
        &self,
        layers: Layers,
    ) -> impl Future<Output = Result<(), HandleError>> + Send + 'static {
        let layers = Box::new(layers);
        self.request(move |reply| Op::Layers { layers, reply })
    }

    /// Undoes the session's last turn, through `workspace` (the editor's
    /// buffers, or the disk), as the session's job unless one runs: its
    /// edits put back where each file still holds the agent's text (the
    /// deny rules alone decide: the user asked), and the turn dropped from
    /// the history and the session file. Prompts sent meanwhile queue
    /// behind it and start a turn on the history it leaves. Answers once
    /// the session is free again.
    pub async fn rewind_last_turn(
        &self,
        workspace: Arc<dyn Workspace>,
    ) -> Result<Rewound, HandleError> {
        let session = self.session.clone();
        let (answer, answered) = oneshot::channel();
        let undo: Job<JobEnd> = Box::pin(async move {
            let outcome = undo_last_turn(&session, workspace.as_ref()).await;
            let history = outcome.as_ref().ok().map(|r| r.messages.clone());
            JobEnd {
                history,
                afterwards: Afterwards::new(async move {
                    let _ = answer.send(outcome);
                }),
            }
        });
        self.request(move |reply| Op::Rewind { undo, reply })
            .await?;
        answered.await.unwrap_or(Err(HandleError::Closed))
    }

    /// Cancels the running turn, kills the background commands, stops the
    /// MCP servers; the task ends. Operations sent later are answered
    /// [`HandleError::Closed`].
    pub fn close(&self) -> impl Future<Output = ()> + Send + 'static {
        let answer = self.ask(move |reply| Op::Close { reply });
        async move {
            answer.await;
        }
    }
}

/// The last turn undone through `workspace`.
async fn undo_last_turn(
    session: &Session,
    workspace: &dyn Workspace,
) -> Result<Rewound, HandleError> {
    let gate = session.deny_rules_gate()?;
    let file = session.file().ok_or(SessionFileError::NothingToRewind)?;
    Ok(crate::rewind::rewind(workspace, &file, &gate).await?)
}

/// How a rewind ended.
pub struct JobEnd {
    /// The history to keep, or `None` to keep it as it is.
    pub history: Option<Vec<Message>>,
    pub afterwards: Afterwards,
}

/// What runs now.
struct Running {
    id: u64,
    cancel: CancellationToken,
    kind: Kind,
    task: JoinHandle<JobEnd>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Turn,
    Rewind,
}

/// What the task woke up for.
enum Next {
    Op(Option<Op>),
    Ended(Result<JobEnd, tokio::task::JoinError>),
}

struct Task {
    session: Arc<Session>,
    /// Runs the turn queued prompts start (the last queuer's).
    queued: Option<RunQueued>,
    current: Option<Running>,
    running: watch::Sender<Option<u64>>,
}

impl Task {
    async fn serve(mut self, mut ops: mpsc::UnboundedReceiver<Op>) {
        loop {
            let next = match &mut self.current {
                Some(current) => tokio::select! {
                    op = ops.recv() => Next::Op(op),
                    ended = &mut current.task => Next::Ended(ended),
                },
                None => Next::Op(ops.recv().await),
            };
            let op = match next {
                Next::Op(op) => op,
                Next::Ended(ended) => {
                    self.ended(ended);
                    continue;
                }
            };
            let Some(op) = op else {
                // Every handle is gone: nobody can use the session again.
                self.close().await;
                self.finish().await;
                return;
            };
            if let Op::Close { reply } = op {
                self.close().await;
                let _ = reply.send(());
                self.finish().await;
                // Later operations find the channel closed.
                return;
            }
            self.take(op);
        }
    }

    fn take(&mut self, op: Op) {
        match op {
            Op::Prompt {
                prompt,
                busy,
                run,
                reply,
            } => {
                let answer = match (&self.current, busy) {
                    (None, _) => Ok(Started::Turn(self.start(prompt, run))),
                    (Some(current), Busy::Queue(queued)) => {
                        self.session.inbox().push_user(prompt.text());
                        self.queued = Some(queued);
                        Ok(Started::Queued(current.id))
                    }
                    (Some(_), Busy::Refuse) => Err(HandleError::Busy),
                };
                let _ = reply.send(answer);
            }
            Op::Cancel { turn, reply } => {
                let cancelled = self
                    .current
                    .as_ref()
                    .filter(|current| turn.is_none_or(|id| id == current.id))
                    .map(|current| {
                        current.cancel.cancel();
                        current.id
                    });
                let _ = reply.send(cancelled);
            }
            Op::Compact { reply } => {
                // During a rewind too: its history is not to be raced.
                let answer = match &self.current {
                    Some(current) => {
                        self.session.compact_at_next_step();
                        Compacting::NextStep(current.id)
                    }
                    None => Compacting::Idle,
                };
                let _ = reply.send(answer);
            }
            Op::Change { change, reply } => {
                let changed = self.session.change(&change);
                let _ = reply.send(changed.map_err(HandleError::from));
            }
            Op::Layers { layers, reply } => {
                let changed = self.session.set_layers(*layers);
                let _ = reply.send(changed.map_err(HandleError::from));
            }
            Op::Rewind { undo, reply } => {
                let answer = match &self.current {
                    Some(_) => Err(HandleError::BusyRewinding),
                    None => {
                        let id = next_id();
                        self.begin(id, CancellationToken::new(), Kind::Rewind, undo);
                        Ok(id)
                    }
                };
                let _ = reply.send(answer);
            }
            Op::Close { .. } => {}
        }
    }

    /// Starts a turn on `prompt`; its id.
    fn start(&mut self, prompt: Message, run: impl FnOnce(Turn) -> Job<Afterwards>) -> u64 {
        let id = next_id();
        let cancel = CancellationToken::new();
        let turn = Turn {
            id,
            session: self.session.clone(),
            prompt,
            cancel: cancel.clone(),
        };
        let job = run(turn);
        self.begin(
            id,
            cancel,
            Kind::Turn,
            Box::pin(async move {
                JobEnd {
                    history: None,
                    afterwards: job.await,
                }
            }),
        );
        id
    }

    /// Runs `job` on a task of its own: a panic in it ends the job, never
    /// the session's task.
    fn begin(&mut self, id: u64, cancel: CancellationToken, kind: Kind, job: Job<JobEnd>) {
        self.current = Some(Running {
            id,
            cancel,
            kind,
            task: tokio::spawn(job),
        });
        self.running.send_replace(Some(id));
    }

    /// The running job has ended: the session is free (a rewind's history
    /// kept), the queued prompts go on, then the job says its end.
    fn ended(&mut self, ended: Result<JobEnd, tokio::task::JoinError>) {
        let Some(current) = self.current.take() else {
            return;
        };
        self.running.send_replace(None);
        let afterwards = match ended {
            Ok(ended) => {
                if let Some(history) = ended.history {
                    self.session.set_history(history);
                }
                Some(ended.afterwards)
            }
            Err(error) => {
                tracing::error!(%error, id = current.id, "a session's job failed");
                None
            }
        };
        self.start_queued(&current);
        if let Some(Afterwards(say)) = afterwards {
            tokio::spawn(say);
        }
    }

    /// The prompts queued while `ended` ran: a turn of their own, or, after
    /// a cancelled turn, the history's end.
    fn start_queued(&mut self, ended: &Running) {
        // Nobody queued here: what the inbox holds is not ours to take.
        let Some(run) = self.queued.clone() else {
            return;
        };
        let queued = self.session.inbox().take_user_messages();
        if queued.is_empty() {
            return;
        }
        if ended.kind == Kind::Turn && ended.cancel.is_cancelled() {
            let blocks = queued
                .iter()
                .map(|prompt| ContentBlock::Text {
                    text: format!("<user-message>\n{prompt}\n</user-message>"),
                })
                .collect();
            self.session.append(Message {
                role: Role::User,
                content: blocks,
            });
        } else {
            self.start(Message::user_text(queued.join("\n\n")), move |turn| {
                run(turn)
            });
        }
    }

    /// After the close: the cancelled job still says how it ended; no
    /// queued prompt starts a turn.
    async fn finish(&mut self) {
        if let Some(current) = self.current.take() {
            match current.task.await {
                Ok(JobEnd {
                    afterwards: Afterwards(say),
                    ..
                }) => say.await,
                Err(error) => tracing::error!(%error, id = current.id, "a session's job failed"),
            }
        }
    }

    async fn close(&mut self) {
        if let Some(current) = &self.current {
            current.cancel.cancel();
        }
        self.running.send_replace(None);
        self.session.close().await;
    }
}
