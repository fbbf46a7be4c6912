//! The session core itself, driven as a front end drives it: several turns
//! of one `Session`, with its settings changed between them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bareagent::agent::Message;
use bareagent::permission::{Approval, Approver, PermissionMode, Question};
use bareagent::session::{Given, Layers, Session, Surface, TurnIo};
use bareagent::workspace::DiskWorkspace;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{Api, Recorded, provider, workspace};
use crate::support::model_server::{ModelServer, Reply};

/// Answers "allow for this session", counting the questions.
#[derive(Clone, Default)]
struct AllowForSession(Arc<AtomicUsize>);

#[async_trait]
impl Approver for AllowForSession {
    async fn ask(&self, _question: &Question<'_>) -> Approval {
        self.0.fetch_add(1, Ordering::SeqCst);
        Approval::AllowForSession
    }
}

/// "Allow for this session" holds for the session's later turns, and a
/// mode switch asks again (an answer given in one mode is not carried into
/// another), in every front end: the core decides it.
#[tokio::test]
async fn a_mode_switch_asks_again_what_was_allowed_for_the_session() {
    let dir = workspace(&[]);
    let command = || Reply::tool("bash", json!({"command": "echo hi"})).into();
    let server = ModelServer::start(vec![
        command(),
        Reply::text("one").into(),
        command(),
        Reply::text("two").into(),
        command(),
        Reply::text("three").into(),
    ]);
    let given = Given {
        provider: Some(provider(Api::Anthropic, &server)),
        sandbox: Some(Arc::new(bareagent::sandbox::Sandbox::off())),
        ..Given::default()
    };
    let session = Session::open_with(
        dir.path().to_path_buf(),
        Surface::Terminal,
        Layers::default(),
        None,
        given,
    )
    .expect("session");
    let workspace = DiskWorkspace::new(dir.path()).expect("workspace");
    let asked = AllowForSession::default();
    let turn = |prompt: &'static str| {
        let sink = Recorded::default();
        let approver = asked.clone();
        let session = &session;
        let workspace = &workspace;
        async move {
            let io = TurnIo {
                workspace,
                approver: Box::new(approver),
                sink: &sink,
                cancel: CancellationToken::new(),
                near: Vec::new(),
                code: None,
            };
            session
                .run_turn(Message::user_text(prompt), io)
                .await
                .result
                .expect("the turn ends")
        }
    };
    turn("first").await;
    assert_eq!(asked.0.load(Ordering::SeqCst), 1, "asked once");
    turn("second").await;
    assert_eq!(asked.0.load(Ordering::SeqCst), 1, "allowed for the session");
    session
        .reconfigure(|layers| layers.session.mode = Some(PermissionMode::AcceptEdits))
        .expect("a mode switch");
    turn("third").await;
    assert_eq!(asked.0.load(Ordering::SeqCst), 2, "asked again after /mode");
}
