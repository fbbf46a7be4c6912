//! The session's task, driven as a front end drives it: prompts queued
//! behind the running turn start the next turn once it ends, or join the
//! history when it was cancelled; a refused prompt is answered busy; a
//! cancel reaches the running turn and nothing when idle; a closed session
//! takes no prompt. Real turns of the real loop, against the scripted
//! model server.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bareagent::agent::{CompactionSettings, LoopError, Message};
use bareagent::permission::{DenyAll, PermissionGate, PermissionMode};
use bareagent::session::{
    Afterwards, Busy, Given, HandleError, Job, Layers, RunQueued, RunTurn, Session, SessionHandle,
    Started, Surface, Turn, TurnIo,
};
use bareagent::workspace::DiskWorkspace;
use tokio::sync::{mpsc, oneshot};

use crate::common::{Api, Recorded, provider, workspace};
use crate::lsp::user_texts;
use crate::support::model_server::{Hold, ModelServer, Reply};

const LONG: Duration = Duration::from_secs(20);

/// How a turn the handle ran ended, as its front end saw it.
#[derive(Debug)]
struct Ended {
    id: u64,
    prompt: String,
    cancelled: bool,
}

fn session(root: &Path, server: &ModelServer) -> Arc<Session> {
    let nobody = DenyAll("nobody is asked".into());
    let given = Given {
        provider: Some(provider(Api::Anthropic, server)),
        sandbox: Some(Arc::new(bareagent::sandbox::Sandbox::off())),
        compaction: Some(CompactionSettings {
            context_window: u64::MAX,
            compact_at: 1.0,
            keep_turns: 1,
        }),
        gate: Some(PermissionGate::new(
            PermissionMode::Bypass,
            Box::new(nobody),
        )),
        inbox: None,
    };
    let session = Session::open_with(
        root.to_path_buf(),
        Surface::Terminal,
        Layers::default(),
        None,
        given,
    )
    .expect("session");
    Arc::new(session)
}

/// Where a turn stops after its loop, while it is still the session's job.
struct Pause {
    reached: oneshot::Sender<()>,
    resume: oneshot::Receiver<()>,
}

/// The test's side of a [`Pause`].
struct Paused {
    reached: oneshot::Receiver<()>,
    resume: oneshot::Sender<()>,
}

fn pause() -> (Pause, Paused) {
    let (reached, reaching) = oneshot::channel();
    let (resuming, resume) = oneshot::channel();
    (
        Pause { reached, resume },
        Paused {
            reached: reaching,
            resume: resuming,
        },
    )
}

/// Runs the turn on the disk; after the loop, stops at `after_loop` (so
/// the test can act while the turn is still the session's job), then
/// says its end on `ends` once the session is free.
fn runner(
    root: PathBuf,
    ends: mpsc::UnboundedSender<Ended>,
    after_loop: Option<Pause>,
) -> impl FnOnce(Turn) -> Job<Afterwards> {
    move |turn| {
        Box::pin(async move {
            let workspace = DiskWorkspace::new(&root).expect("workspace");
            let sink = Recorded::default();
            let io = TurnIo {
                workspace: &workspace,
                approver: Box::new(DenyAll("nobody is asked".into())),
                sink: &sink,
                cancel: turn.cancel.clone(),
                near: Vec::new(),
                code: None,
            };
            let end = turn.session.run_turn(turn.prompt.clone(), io).await;
            if let Some(pause) = after_loop {
                let _ = pause.reached.send(());
                let _ = pause.resume.await;
            }
            let ended = Ended {
                id: turn.id,
                prompt: turn.prompt.text(),
                cancelled: matches!(end.result, Err(LoopError::Cancelled)),
            };
            Afterwards::new(async move {
                let _ = ends.send(ended);
            })
        })
    }
}

fn queued_runner(root: &Path, ends: &mpsc::UnboundedSender<Ended>) -> RunQueued {
    let (root, ends) = (root.to_path_buf(), ends.clone());
    Arc::new(move |turn| runner(root.clone(), ends.clone(), None)(turn))
}

fn boxed(run: impl FnOnce(Turn) -> Job<Afterwards> + Send + 'static) -> RunTurn {
    Box::new(run)
}

async fn next_end(ends: &mut mpsc::UnboundedReceiver<Ended>) -> Ended {
    tokio::time::timeout(LONG, ends.recv())
        .await
        .expect("a turn to end")
        .expect("the ends channel open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_queued_after_the_loop_starts_the_next_turn() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::text("first answer").into(),
        Reply::text("second answer").into(),
    ]);
    let handle = SessionHandle::spawn(session(dir.path(), &server));
    let (ends_tx, mut ends) = mpsc::unbounded_channel();
    let (after_loop, paused) = pause();

    let first = handle
        .prompt(
            Message::user_text("first"),
            Busy::Queue(queued_runner(dir.path(), &ends_tx)),
            boxed(runner(dir.path().into(), ends_tx.clone(), Some(after_loop))),
        )
        .await
        .expect("started");
    let Started::Turn(first) = first else {
        panic!("the idle session queued the prompt: {first:?}");
    };
    assert_eq!(handle.running(), Some(first));
    // The loop has ended; the turn is still the session's job, so this
    // prompt waits behind it.
    paused.reached.await.expect("the turn pauses");
    let queued = handle
        .prompt(
            Message::user_text("second"),
            Busy::Queue(queued_runner(dir.path(), &ends_tx)),
            boxed(runner(dir.path().into(), ends_tx.clone(), None)),
        )
        .await
        .expect("queued");
    assert_eq!(queued, Started::Queued(first));
    paused.resume.send(()).expect("the turn waits");

    let ended = next_end(&mut ends).await;
    assert_eq!((ended.id, ended.prompt.as_str()), (first, "first"));
    let next = next_end(&mut ends).await;
    assert_ne!(next.id, first, "the queued prompt has a turn of its own");
    assert_eq!(next.prompt, "second");
    assert!(!next.cancelled);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        user_texts(&requests[1].body),
        vec!["first".to_string(), "second".to_string()]
    );
    assert_eq!(handle.running(), None);
    assert_eq!(handle.cancel(None).await, None, "nothing runs to cancel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_queued_behind_a_cancelled_turn_join_the_history() {
    let dir = workspace(&[]);
    let hold = Hold::new();
    let server = ModelServer::start(vec![Reply::text("never heard").held(&hold).into()]);
    let session = session(dir.path(), &server);
    let handle = SessionHandle::spawn(session.clone());
    let (ends_tx, mut ends) = mpsc::unbounded_channel();

    let Ok(Started::Turn(first)) = handle
        .prompt(
            Message::user_text("first"),
            Busy::Queue(queued_runner(dir.path(), &ends_tx)),
            boxed(runner(dir.path().into(), ends_tx.clone(), None)),
        )
        .await
    else {
        panic!("the idle session did not start a turn");
    };
    while server.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let queued = handle
        .prompt(
            Message::user_text("while it runs"),
            Busy::Queue(queued_runner(dir.path(), &ends_tx)),
            boxed(runner(dir.path().into(), ends_tx.clone(), None)),
        )
        .await;
    assert_eq!(queued.expect("queued"), Started::Queued(first));
    assert_eq!(
        handle.cancel(Some(first + 1000)).await,
        None,
        "another turn"
    );
    assert_eq!(handle.cancel(None).await, Some(first));

    let ended = next_end(&mut ends).await;
    assert_eq!(ended.id, first);
    assert!(ended.cancelled, "{ended:?}");
    hold.release();
    let history = session.history();
    let last = history.last().expect("a history").text();
    assert!(
        last.contains("<user-message>\nwhile it runs\n</user-message>"),
        "the queued prompt joins the history: {history:?}"
    );
    assert_eq!(handle.running(), None);
    assert!(
        ends.try_recv().is_err(),
        "a cancelled turn's queue starts no turn"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_prompt_is_answered_busy_and_a_closed_session_takes_none() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Reply::text("one").into(), Reply::text("two").into()]);
    let handle = SessionHandle::spawn(session(dir.path(), &server));
    let (ends_tx, mut ends) = mpsc::unbounded_channel();
    let (after_loop, paused) = pause();
    let run = |after_loop| boxed(runner(dir.path().into(), ends_tx.clone(), after_loop));

    let first = handle.prompt(
        Message::user_text("first"),
        Busy::Refuse,
        run(Some(after_loop)),
    );
    // Sent at once: of two prompts sent together, the second is refused.
    let second = handle.prompt(Message::user_text("second"), Busy::Refuse, run(None));
    assert!(matches!(first.await, Ok(Started::Turn(_))));
    assert!(matches!(second.await, Err(HandleError::Busy)));
    paused.reached.await.expect("the turn pauses");
    paused.resume.send(()).expect("the turn waits");
    assert_eq!(next_end(&mut ends).await.prompt, "first");

    // The session is free once the turn has said its end.
    let third = handle.prompt(Message::user_text("third"), Busy::Refuse, run(None));
    assert!(matches!(third.await, Ok(Started::Turn(_))));
    assert_eq!(next_end(&mut ends).await.prompt, "third");
    assert_eq!(
        server.requests().len(),
        2,
        "the refused prompt asked nothing"
    );

    handle.close().await;
    let after = handle.prompt(Message::user_text("late"), Busy::Refuse, run(None));
    assert!(matches!(after.await, Err(HandleError::Closed)));
}
