//! The Neovim plugin (editors/neovim/lua/bareagent, plugin/bareagent.lua) in
//! a real headless Neovim 0.11, against the built server and the scripted
//! model server: its commands, the chat split as the reply streams, the
//! review of an edit in diff mode and approvals answered by key, a cancel,
//! and the editor's diagnostics reaching the agent. Each scenario is a Lua
//! script under tests/neovim/plugin_*.lua that asserts on buffers and
//! windows and ends with `OK`; this side checks what reached the model.
//! Skipped without `nvim` unless BAREAGENT_REQUIRE_NVIM is set (see
//! tests/it/neovim.rs).

use std::path::Path;

use serde_json::json;

use crate::common::{sent_tool_results, workspace};
use crate::neovim::{nvim_in, nvim_or_skip};
use crate::support::model_server::{Fault, Hold, ModelServer, Reply};

const GREET: &str = "def greet(name):\n    return 'hi ' + nme\n";

/// What one script run showed.
pub(crate) struct PluginRun {
    pub(crate) stderr: String,
    pub(crate) ok: bool,
    /// Neovim's lsp.log (every message at debug level).
    lsp_log: String,
}

impl PluginRun {
    pub(crate) fn line(&self, prefix: &str) -> Option<&str> {
        self.stderr.lines().find_map(|l| l.strip_prefix(prefix))
    }

    fn chat(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter_map(|l| l.strip_prefix("CHAT "))
            .collect()
    }
}

/// Runs tests/neovim/`script` in a headless Neovim with the plugin on its
/// runtimepath, in workspace `root`, the model at `server`.
fn run_script(nvim: &Path, script: &str, root: &Path, server: &ModelServer) -> PluginRun {
    run_command(script_command(nvim, script, root, server), root)
}

/// The command [`run_script`] runs, for a test to add to its environment.
pub(crate) fn script_command(
    nvim: &Path,
    script: &str,
    root: &Path,
    server: &ModelServer,
) -> std::process::Command {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = nvim_in(nvim, root, server);
    command
        .args(["--clean", "-l"])
        .arg(manifest.join("tests/neovim").join(script))
        .env("PLUGIN", manifest.join("editors/neovim"))
        .env("BAREAGENT_BIN", env!("CARGO_BIN_EXE_bareagent"));
    command
}

/// Runs a [`script_command`] to its end.
pub(crate) fn run_command(mut command: std::process::Command, root: &Path) -> PluginRun {
    let out = command.output().expect("run nvim");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let lsp_log = std::fs::read_to_string(root.join(".state/nvim/lsp.log")).unwrap_or_default();
    PluginRun {
        ok: out.status.success() && stderr.lines().any(|l| l == "OK"),
        stderr,
        lsp_log,
    }
}

/// The commands, and the chat split while the reply streams: see
/// tests/neovim/plugin_chat.lua for what is checked in Neovim.
#[test]
fn plugin_commands_and_the_chat_split_as_it_streams() {
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[("greet.py", GREET), ("src/.keep", ""), (".git/.keep", "")]);
    let streamed =
        Reply::text("First part of the answer.\n\nThen, after a pause, the second part.")
            .with_thinking("Let me think about greetings.\nShort is best.", "sig");
    let server = ModelServer::start(vec![
        Fault::Stall {
            reply: streamed,
            after_text: true,
            secs: 3,
        }
        .into(),
        Reply::tools(vec![
            (
                "todo_write",
                json!({"todos": [
                    {"content": "read greet.py", "status": "completed"},
                    {"content": "answer", "status": "in_progress"},
                ]}),
            ),
            ("read_file", json!({"path": "greet.py"})),
            ("read_file", json!({"path": "missing.py"})),
        ])
        .into(),
        Reply::text("All read.").into(),
        Reply::text("Typed answer.").into(),
        Reply::text("Selection explained.").into(),
    ]);
    server.serve_models(&["claude-sonnet-4-5", "claude-listed-1"]);
    let run = run_script(&nvim, "plugin_chat.lua", dir.path(), &server);
    assert!(run.ok, "{}", run.stderr);
    // The model calls (`:BareAgent model` listed the models in between).
    let calls: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|request| !request.path.contains("/v1/models"))
        .collect();
    assert_eq!(
        crate::lsp::user_texts(&calls[0].body),
        ["say hello about @greet.py"]
    );
    let results = sent_tool_results(&calls[2].body);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[1].0.contains("nme"), "{results:?}");
    // The split shows the failed read with the model's error text.
    let failed = run.line("FAILED ").expect("the failed read's line");
    let error_first_line = results[2].0.lines().next().unwrap_or_default();
    assert!(results[2].1, "{results:?}");
    assert!(
        failed.ends_with(error_first_line),
        "{failed} / {error_first_line}"
    );
    let midway = run.line("MIDWAY ").expect("a midway look");
    assert!(
        midway.contains("First part") && !midway.contains("second part"),
        "{midway}"
    );
    assert!(run.chat().contains(&"_new session_"), "{:?}", run.chat());
    // After `new`, the model sees only the prompt typed in the chat.
    assert_eq!(
        crate::lsp::user_texts(&calls[3].body),
        ["typed in the chat"]
    );
    assert_eq!(
        crate::lsp::user_texts(&calls[4].body)
            .last()
            .map(String::as_str),
        Some(
            "explain this line\n\nLines 2-2 of @greet.py:\n```python\n    return 'hi ' + nme\n```"
        )
    );
}

/// `:BareAgent cancel` stops a turn waiting on the model (a held reply);
/// the chat shows it was cancelled, and the next prompt is answered.
#[test]
fn plugin_cancel_stops_a_waiting_turn() {
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[("greet.py", GREET), (".git/.keep", "")]);
    // Never released: only the cancel ends that call.
    let hold = Hold::new();
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "greet.py"})).into(),
        Reply::text("Thought for ages.").held(&hold).into(),
        Reply::text("Still here.").into(),
    ]);
    let run = run_script(&nvim, "plugin_cancel.lua", dir.path(), &server);
    assert!(run.ok, "{}", run.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "the held call, then the next turn's");
    assert_eq!(
        crate::lsp::user_texts(&requests[2].body)
            .last()
            .map(String::as_str),
        Some("are you there?")
    );
    assert!(
        !run.chat().contains(&"Thought for ages."),
        "{:?}",
        run.chat()
    );
}

/// An edit reviewed in diff mode and allowed by key there, one rejected,
/// one allowed for the session and a command allowed always by key in the
/// chat: see
/// tests/neovim/plugin_review.lua. The model learns of each answer.
#[test]
fn plugin_reviews_an_edit_in_diff_mode_and_answers_approvals_by_key() {
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[("greet.py", GREET), (".git/.keep", "")]);
    let edit = |old: &str, new: &str| {
        Reply::tool(
            "edit_file",
            json!({"path": "greet.py", "old_string": old, "new_string": new}),
        )
        .into()
    };
    let server = ModelServer::start(vec![
        edit("+ nme", "+ name"),
        edit("def greet", "def hello"),
        edit("'hi ' + name", "'Hello, ' + name"),
        Reply::tool("bash", json!({"command": "touch made.txt"})).into(),
        Reply::text("Fixed.").into(),
    ]);
    let run = run_script(&nvim, "plugin_review.lua", dir.path(), &server);
    assert!(run.ok, "{}", run.stderr);
    let results: Vec<_> = server.requests()[1..]
        .iter()
        .map(|r| {
            sent_tool_results(&r.body)
                .last()
                .cloned()
                .expect("a tool result")
        })
        .collect();
    assert!(!results[0].1, "allowed from the review: {results:?}");
    assert!(results[1].1, "rejected in the chat: {results:?}");
    assert!(!results[2].1, "allowed for the session: {results:?}");
    assert!(!results[3].1, "allowed always: {results:?}");
    assert!(dir.path().join("made.txt").exists());
    let saved = std::fs::read_to_string(dir.path().join(".config/bareagent/config.toml"))
        .expect("the rule was saved");
    assert!(saved.contains("bash(touch made.txt:*)"), "{saved}");
    // Nothing was saved: undo and save stay the user's.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("greet.py")).unwrap(),
        GREET
    );
}

/// The diagnostics Neovim has (set here by vim.diagnostic.set, as any
/// language server's are) reach the agent: the edit that broke greet.py
/// comes back with what the editor now reports, and the `diagnostics` tool
/// sees other.py's warning, which the agent never touched. Neovim's
/// lsp.log shows the rest: a cleared set is sent empty, the plugin's own
/// (approval) diagnostics are not sent back, and the plugin announces
/// what it answers. See tests/neovim/plugin_diagnostics.lua.
#[test]
fn plugin_sends_the_editors_diagnostics() {
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[
        ("greet.py", "def greet(name):\n    return 'hi ' + name\n"),
        ("other.py", "import os\n"),
        (".git/.keep", ""),
    ]);
    let server = ModelServer::start(vec![
        Reply::tool(
            "edit_file",
            json!({"path": "greet.py", "old_string": "+ name", "new_string": "+ nmae"}),
        )
        .into(),
        Reply::tool("diagnostics", json!({"paths": ["other.py"]})).into(),
        Reply::text("Renamed.").into(),
    ]);
    let run = run_script(&nvim, "plugin_diagnostics.lua", dir.path(), &server);
    assert!(run.ok, "{}", run.stderr);
    let requests = server.requests();
    let (edited, is_error) = sent_tool_results(&requests[1].body)
        .last()
        .cloned()
        .expect("the edit's result");
    assert!(!is_error, "{edited}");
    assert!(
        edited.contains("The editor now reports in greet.py:")
            && edited.contains("line 2:22 error (pyflakes): undefined name 'nmae'"),
        "{edited}"
    );
    let (reported, _) = sent_tool_results(&requests[2].body)
        .last()
        .cloned()
        .expect("the diagnostics tool's result");
    assert!(
        reported.contains("other.py") && reported.contains("'os' imported but unused"),
        "{reported}"
    );
    let sent: Vec<&str> = run
        .lsp_log
        .lines()
        .filter(|l| l.contains("\"rpc.send\"") && l.contains("bareagent/diagnostics"))
        .collect();
    let greet = format!("file://{}", dir.path().join("greet.py").display());
    let other = format!("file://{}", dir.path().join("other.py").display());
    assert!(
        sent.iter().any(|l| l.contains(&greet)
            && l.contains("undefined name 'nmae'")
            && l.contains("source = \"pyflakes\"")
            && l.contains("severity = 1")),
        "{sent:#?}"
    );
    assert!(
        sent.iter()
            .any(|l| l.contains(&other) && l.contains("'os' imported but unused")),
        "{sent:#?}"
    );
    assert!(
        sent.iter()
            .any(|l| l.contains(&other) && l.contains("diagnostics = {},")),
        "the cleared set: {sent:#?}"
    );
    // The plugin's own pending-approval diagnostics are not sent back.
    assert!(!sent.iter().any(|l| l.contains("chat.md")), "{sent:#?}");
    let init = run
        .lsp_log
        .lines()
        .find(|l| l.contains("\"rpc.send\"") && l.contains("method = \"initialize\""))
        .and_then(|l| l.split_once("initializationOptions = "))
        .map(|(_, options)| options)
        .expect("the initialize request in the log");
    for announced in [
        "diagnostics = true",
        "saveDocuments = true",
        "codeIntelligence = true",
    ] {
        assert!(init.contains(announced), "{announced} in {init}");
    }
}

/// The README's set-up without a plugin manager: the plugin linked into
/// the packpath, `setup` in init.lua, Neovim started as usual.
#[test]
fn plugin_works_from_the_packpath_as_the_readme_says() {
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[("greet.py", GREET), (".git/.keep", "")]);
    let root = dir.path();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let start = root.join(".data/nvim/site/pack/bareagent/start");
    // A copy, not the README's link: `:helptags` writes into doc/.
    copy_tree(&manifest.join("editors/neovim"), &start.join("bareagent"));
    let init = root.join(".config/nvim/init.lua");
    std::fs::create_dir_all(init.parent().unwrap()).unwrap();
    std::fs::write(
        &init,
        "require('bareagent').setup({\n  cmd = { os.getenv('BAREAGENT_BIN') },\n  \
         settings = { provider = 'anthropic', baseUrl = os.getenv('MODEL_URL') },\n})\n",
    )
    .unwrap();
    let server = ModelServer::start(vec![Reply::text("Hello from the packpath.").into()]);
    let script = manifest.join("tests/neovim/plugin_packpath.lua");
    let out = nvim_in(&nvim, root, &server)
        .arg("-c")
        .arg(format!("luafile {}", script.display()))
        .env("PLUGIN", manifest.join("editors/neovim"))
        .env("BAREAGENT_BIN", env!("CARGO_BIN_EXE_bareagent"))
        .output()
        .expect("run nvim");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.lines().any(|l| l == "OK"),
        "{stderr}"
    );
    assert_eq!(
        crate::lsp::user_texts(&server.requests()[0].body),
        ["hello"]
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// With no server to start, `:BareAgent` says how to install it or where
/// to point `cmd`, and nothing reaches the model.
#[test]
fn plugin_says_when_the_server_is_missing() {
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[("greet.py", GREET), (".git/.keep", "")]);
    let server = ModelServer::start(vec![]);
    let run = run_script(&nvim, "plugin_missing.lua", dir.path(), &server);
    assert!(run.ok, "{}", run.stderr);
    let message = run
        .stderr
        .lines()
        .find(|l| l.starts_with("NOTIFY bareagent: ") && l.contains("not on PATH"))
        .expect("the message");
    assert!(
        message.contains("`no-such-bareagent` is not on PATH")
            && message.contains("cargo install --path .")
            && message.contains("set `cmd` in setup()"),
        "{message}"
    );
    assert!(server.requests().is_empty());
}

/// The plugin answers `bareagent/saveDocuments`: the command sees both
/// edits, the agent's clean buffer is saved by Neovim (undo stays), the
/// user's unsaved work is never written. See tests/neovim/plugin_save.lua.
#[test]
fn plugin_saves_the_agents_edit_before_a_command_and_never_the_users_work() {
    use crate::coherence::{CALC, MINE_ON_DISK, edit_both_then_import};
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[
        ("calc.py", CALC),
        ("mine.py", MINE_ON_DISK),
        (".git/.keep", ""),
    ]);
    let server = ModelServer::start(edit_both_then_import());
    let run = run_script(&nvim, "plugin_save.lua", dir.path(), &server);
    let ran = server
        .requests()
        .get(3)
        .and_then(|r| sent_tool_results(&r.body).last().cloned());
    assert!(run.ok, "{}\nthe command gave: {ran:?}", run.stderr);
    crate::coherence::the_agents_edit_alone_was_saved(dir.path(), ran);
    // It was the plugin that saved: the server asked, the plugin answered.
    assert!(
        run.lsp_log.contains("bareagent/saveDocuments"),
        "no saveDocuments request in the lsp.log"
    );
}

/// An edit of a file's last line, applied by Neovim in two steps reported
/// in two didChange notifications (the second ~150 ms later, after
/// Neovim's debounce, when the first went out at once): the server must
/// take both as its own edit, or the next edit of the file is refused as
/// stale ("you saw version 6, it is now 7"). See tests/neovim/plugin_last_line.lua.
#[test]
fn plugin_a_last_line_edit_then_another_edit_of_the_file() {
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[("greet.py", GREET), (".git/.keep", "")]);
    let server = ModelServer::start(vec![
        // After a pause longer than Neovim's 150 ms debounce since its last
        // message, so it sends the first step of the edit at once.
        Reply::tool(
            "edit_file",
            json!({"path": "greet.py", "old_string": "+ nme", "new_string": "+ name"}),
        )
        .with_delay(500)
        .into(),
        Reply::tool(
            "edit_file",
            json!({"path": "greet.py", "old_string": "def greet", "new_string": "def hello"}),
        )
        // After the second step has come in too.
        .with_delay(500)
        .into(),
        Reply::text("Fixed.").into(),
    ]);
    let run = run_script(&nvim, "plugin_last_line.lua", dir.path(), &server);
    let second = server
        .requests()
        .get(2)
        .and_then(|r| sent_tool_results(&r.body).last().cloned());
    assert!(run.ok, "{}\nthe second edit gave: {second:?}", run.stderr);
}

/// The plugin's handlers, fed the fixtures every editor's tests share
/// (editors/protocol/events.json, valid by the server's schema: see
/// tests/it/editor_events.rs): what its state, its reviews, its
/// notifications and the chat split show after each, as a snapshot. A field the server renames or
/// drops must leave the fixtures; where the plugin reads it, this changes.
#[test]
fn plugin_shows_every_fixture_event() {
    let Some(nvim) = nvim_or_skip() else { return };
    let dir = workspace(&[(".git/.keep", "")]);
    // No turn runs: the script sends nothing to a server.
    let server = ModelServer::start(vec![]);
    let run = run_script(&nvim, "plugin_events.lua", dir.path(), &server);
    assert!(run.ok, "{}", run.stderr);
    let shown: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| {
            ["SEEN ", "REVIEW ", "NOTIFY ", "CHAT "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    insta::assert_snapshot!(shown.join("\n"));
}
