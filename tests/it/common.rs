//! Shared pieces of the integration tests: a workspace in a temp dir, the
//! real providers pointed at the scripted model server, and a sink that
//! remembers what the loop showed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bareagent::agent::{CompactionSettings, LoopError, Message, TurnOutcome};
use bareagent::events::{AgentEvent, EventSink};
use bareagent::permission::{
    Approver, DenyAll, PermissionGate, PermissionMode, RuleLists, RuleSet,
};
use bareagent::provider::retry::RetryPolicy;
use bareagent::provider::{Anthropic, HttpSettings, OpenAi, Provider};
use bareagent::session::{Given, Layer, Layers, Session, Surface, TurnIo};
use bareagent::workspace::DiskWorkspace;
use tokio_util::sync::CancellationToken;

use crate::support::model_server::ModelServer;

pub const TEST_KEY: &str = "sk-test-secret-0123456789";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Anthropic,
    OpenAi,
}

/// Every combination a turn must work in.
pub const ALL: [(Api, bool); 4] = [
    (Api::Anthropic, true),
    (Api::Anthropic, false),
    (Api::OpenAi, true),
    (Api::OpenAi, false),
];

pub fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    dir
}

/// Fast retries and a short idle timeout, so fault tests run in seconds.
pub fn test_settings() -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(1),
        retry: RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(200),
        },
        on_retry: None,
    }
}

pub fn provider(api: Api, server: &ModelServer) -> Arc<dyn Provider> {
    match api {
        Api::Anthropic => Arc::new(
            Anthropic::new(
                &server.anthropic_base(),
                TEST_KEY.into(),
                "claude-test",
                test_settings(),
            )
            .expect("provider"),
        ),
        Api::OpenAi => Arc::new(
            OpenAi::new(
                &server.openai_base(),
                Some(TEST_KEY.into()),
                "gpt-test",
                test_settings(),
            )
            .expect("provider"),
        ),
    }
}

#[derive(Default)]
pub struct Recorded(Mutex<Vec<AgentEvent>>);

impl EventSink for Recorded {
    fn emit(&self, event: AgentEvent) {
        self.0.lock().expect("lock").push(event);
    }
}

impl Recorded {
    pub fn events(&self) -> Vec<AgentEvent> {
        self.0.lock().expect("lock").clone()
    }

    pub fn tool_results(&self) -> Vec<(String, bool)> {
        self.events()
            .into_iter()
            .filter_map(|event| match event {
                AgentEvent::ToolResult {
                    content, is_error, ..
                } => Some((content, is_error)),
                _ => None,
            })
            .collect()
    }

    pub fn streamed_text(&self) -> String {
        self.events()
            .into_iter()
            .filter_map(|event| match event {
                AgentEvent::TextDelta { text } => Some(text),
                _ => None,
            })
            .collect()
    }
}

/// One turn of the real loop against `provider`, in `root`.
pub struct Turn {
    pub result: Result<TurnOutcome, LoopError>,
    pub messages: Vec<Message>,
    pub sink: Recorded,
}

pub struct TurnOptions {
    pub stream: bool,
    pub cancel: CancellationToken,
    pub max_iterations: usize,
    pub mode: PermissionMode,
    pub approver: Box<dyn Approver>,
    pub inbox: Option<bareagent::agent::Inbox>,
    pub rules: RuleLists,
    /// Compact the history with these settings (else never).
    pub compaction: Option<bareagent::agent::CompactionSettings>,
}

impl Default for TurnOptions {
    fn default() -> Self {
        TurnOptions {
            stream: true,
            cancel: CancellationToken::new(),
            max_iterations: 200,
            mode: PermissionMode::Bypass,
            approver: Box::new(DenyAll("Denied by user".into())),
            inbox: None,
            rules: RuleLists::default(),
            compaction: None,
        }
    }
}

pub async fn run_turn(
    provider: &Arc<dyn Provider>,
    root: &Path,
    prompt: &str,
    options: TurnOptions,
) -> Turn {
    continue_turn(provider, root, vec![Message::user_text(prompt)], options).await
}

/// A turn on an existing history (which must end with the user's
/// message), run as every front end runs one: by the session core.
pub async fn continue_turn(
    provider: &Arc<dyn Provider>,
    root: &Path,
    mut messages: Vec<Message>,
    options: TurnOptions,
) -> Turn {
    let workspace = DiskWorkspace::new(root).expect("workspace");
    let nobody = DenyAll("nobody is asked outside a turn".into());
    let gate = PermissionGate::new(options.mode, Box::new(nobody))
        .with_rules(RuleSet::from_lists(&options.rules).expect("valid rules"));
    let layers = Layers {
        command_line: Layer {
            mode: Some(options.mode),
            max_iterations: Some(options.max_iterations),
            stream: Some(options.stream),
            ..Layer::default()
        },
        ..Layers::default()
    };
    let given = Given {
        provider: Some(provider.clone()),
        sandbox: Some(Arc::new(bareagent::sandbox::Sandbox::off())),
        // None: a window no history fills, so it never compacts.
        compaction: Some(options.compaction.unwrap_or(CompactionSettings {
            context_window: u64::MAX,
            compact_at: 1.0,
            keep_turns: 1,
        })),
        gate: Some(gate),
        inbox: options.inbox,
    };
    let session = Session::open_with(root.to_path_buf(), Surface::Terminal, layers, None, given)
        .expect("session");
    let prompt = messages.pop().expect("a prompt");
    session.set_history(messages);
    let sink = Recorded::default();
    let io = TurnIo {
        workspace: &workspace,
        approver: options.approver,
        sink: &sink,
        cancel: options.cancel,
        near: Vec::new(),
        code: None,
    };
    let end = session.run_turn(prompt, io).await;
    Turn {
        result: end.result,
        messages: session.history(),
        sink,
    }
}

/// The tool results in a request body, as (content, is_error), read from
/// the wire format of either API.
pub fn sent_tool_results(body: &serde_json::Value) -> Vec<(String, bool)> {
    let messages = body["messages"].as_array().expect("messages array");
    let mut results = Vec::new();
    for message in messages {
        if message["role"] == "tool" {
            let content = message["content"].as_str().unwrap_or_default().to_string();
            // Chat Completions has no error flag: the provider says it in the text.
            let is_error = content.starts_with("Error");
            results.push((content, is_error));
        }
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                results.push((
                    block["content"].as_str().unwrap_or_default().to_string(),
                    block["is_error"] == true,
                ));
            }
        }
    }
    results
}

/// The built binary in `dir`, with no provider settings from the environment
/// and not the developer's own config.
/// Plants `link` in the workspace `dir`, pointing outside it: at a
/// directory (`to_dir`) or at a file `victim` holding "precious\n".
/// Returns the outside folder (kept alive) and the victim's path.
pub fn plant_link(dir: &Path, link: &str, to_dir: bool) -> (tempfile::TempDir, std::path::PathBuf) {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let link_path = dir.join(link);
    std::fs::create_dir_all(link_path.parent().unwrap()).unwrap();
    let target = if to_dir {
        outside.path().to_path_buf()
    } else {
        victim.clone()
    };
    std::os::unix::fs::symlink(&target, &link_path).unwrap();
    (outside, victim)
}

/// The run exited 0; its stderr is the message when it did not.
pub fn assert_succeeded(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes the user's config.toml: the one [`bareagent`]`(dir)` reads.
pub fn user_config(dir: &Path, toml: &str) {
    let path = dir.join(".no-user-config/bareagent/config.toml");
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("the config's directory");
    std::fs::write(path, toml).expect("the user's config");
}

pub fn bareagent(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bareagent"));
    // Not the developer's own settings; a test that needs some sets its own.
    command
        .current_dir(dir)
        .stdin(Stdio::null())
        .env("XDG_CONFIG_HOME", dir.join(".no-user-config"))
        // The user's record of their sessions (`sessions/vouch.rs`).
        .env("XDG_STATE_HOME", dir.join(".no-user-state"));
    for name in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_CUSTOM_HEADERS",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_CUSTOM_HEADERS",
        "OPENAI_BASE_URL",
        "BAREAGENT_PROVIDER",
        "BAREAGENT_MODEL",
    ] {
        command.env_remove(name);
    }
    command
}

/// `bareagent run` against the scripted model server's Anthropic API, with
/// the test key: the arguments every end-to-end run starts with.
pub fn run_against_model<'c>(command: &'c mut Command, server: &ModelServer) -> &'c mut Command {
    command
        .args(["run", "--provider", "anthropic", "--base-url"])
        .arg(server.anthropic_base())
        .env("ANTHROPIC_API_KEY", TEST_KEY)
}
