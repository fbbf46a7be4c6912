//! Our own language-server client (`bareagent::language_servers`): faults
//! as data, trust, the real pyright, the diagnostics after an edit through
//! `bareagent run` and the language server, and no server outliving the
//! agent.
//!
//! Fake servers are tests/fixtures/lsp/fake_server.py (real LSP over stdio,
//! a behaviour chosen by argument); the real one is pyright from
//! `BAREAGENT_LSP_BIN` (.ci/run installs it), put first on the `PATH` of
//! the processes a test starts.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bareagent::language_servers::{CodeSettings, LanguageServers, ServerConfig};
use bareagent::sandbox::Sandbox;
use bareagent::tools::code::{CodeError, Intelligence};
use bareagent::workspace::DiskWorkspace;
use serde_json::{Value, json};

use crate::common::{TEST_KEY, bareagent, run_against_model, sent_tool_results, workspace};
use crate::support::lsp_client::LspClient;
use crate::support::model_server::{Hold, ModelServer, Reply};

const DEADLINE: Duration = Duration::from_secs(60);

fn fake() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/lsp/fake_server.py"
    )
    .to_string()
}

/// The fake server in `mode` for files with `extension`.
fn fake_server(mode: &str, extension: &str) -> ServerConfig {
    ServerConfig {
        command: "python3".into(),
        args: vec![fake(), mode.into()],
        extensions: vec![extension.into()],
        ..ServerConfig::default()
    }
}

/// The folder of the pinned language servers, or `None` when the test
/// must skip (it fails instead under `BAREAGENT_REQUIRE_LSP=1`).
fn lsp_bin() -> Option<PathBuf> {
    match std::env::var("BAREAGENT_LSP_BIN") {
        Ok(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ => {
            crate::support::peers::missing(
                crate::support::peers::Peer::LanguageServers,
                "BAREAGENT_LSP_BIN is not set",
            );
            None
        }
    }
}

/// `PATH` with the pinned servers first.
fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn at(path: &Path, line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": uri(path)}, "position": {"line": line, "character": character}})
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` still runs (a zombie has ended).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
        Err(_) => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_fault_is_a_clear_error_and_the_next_request_is_answered() {
    type Check = fn(&Result<Value, CodeError>) -> bool;
    // (the server's mode, the method asked, what the model must get)
    let rows: [(&str, &str, Check); 9] = [
        (
            "not-installed",
            "textDocument/hover",
            |r| matches!(r, Err(CodeError::NotInstalled { program, .. }) if program == "bareagent-no-such-server"),
        ),
        (
            "crash-at-start",
            "textDocument/hover",
            |r| matches!(r, Err(CodeError::Start { reason, .. }) if reason.contains("fake: cannot start")),
        ),
        (
            "crash-mid",
            "textDocument/hover",
            |r| matches!(r, Err(CodeError::Crashed { reason, .. }) if reason.contains("crashing mid-request")),
        ),
        (
            "hang",
            "textDocument/hover",
            |r| matches!(r, Err(CodeError::Timeout { method, .. }) if method == "textDocument/hover"),
        ),
        (
            "invalid-json",
            "textDocument/hover",
            |r| matches!(r, Err(CodeError::Garbage { reason, .. }) if reason.contains("invalid JSON")),
        ),
        (
            "not-jsonrpc",
            "textDocument/hover",
            |r| matches!(r, Err(CodeError::Garbage { reason, .. }) if reason.contains("neither a request")),
        ),
        (
            "error",
            "textDocument/definition",
            |r| matches!(r, Err(CodeError::Refused { message, .. }) if message == "fake failure"),
        ),
        (
            "no-hover",
            "textDocument/hover",
            |r| matches!(r, Err(CodeError::Unsupported { method, .. }) if method == "textDocument/hover"),
        ),
        // Passed on as the server sent it: the tool drops what is outside.
        (
            "outside",
            "textDocument/references",
            |r| matches!(r, Ok(Value::Array(found)) if found[0]["uri"] == "file:///etc/passwd"),
        ),
    ];
    let mut files = vec![("a.good".to_string(), "x = 1\n".to_string())];
    let mut settings = CodeSettings {
        request_timeout_secs: Some(1),
        first_request_timeout_secs: Some(3),
        ..CodeSettings::default()
    };
    settings
        .servers
        .insert("good".into(), fake_server("good", "good"));
    for (index, (mode, _, _)) in rows.iter().enumerate() {
        let extension = format!("f{index}");
        let mut server = fake_server(mode, &extension);
        if *mode == "not-installed" {
            server.command = "bareagent-no-such-server".into();
        }
        settings.servers.insert(mode.to_string(), server);
        files.push((format!("a.{extension}"), "x = 1\n".into()));
    }
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let dir = workspace(&files);
    let root = dir.path().canonicalize().unwrap();
    let disk = DiskWorkspace::new(&root).unwrap();
    let servers = LanguageServers::new(&settings, &root, Arc::new(Sandbox::off()));
    let good = root.join("a.good");
    for (index, (mode, method, check)) in rows.iter().enumerate() {
        let file = root.join(format!("a.f{index}"));
        let answer = servers.request(&disk, &file, method, at(&file, 0, 0)).await;
        assert!(check(&answer), "{mode}: {answer:?}");
        if let Err(error) = &answer {
            // Said so the model knows what failed and goes on.
            assert!(
                error.to_string().contains("language server"),
                "{mode}: {error}"
            );
        }
        let next = servers
            .request(&disk, &good, "textDocument/hover", at(&good, 0, 0))
            .await;
        assert_eq!(
            next.as_ref()
                .ok()
                .and_then(|v| v["contents"]["value"].as_str()),
            Some("fake hover: x = 1"),
            "after {mode}: {next:?}"
        );
    }
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashed_is_started_again_on_the_next_use() {
    let dir = workspace(&[("a.py", "x = 1\n")]);
    let root = dir.path().canonicalize().unwrap();
    let marker = root.join("started");
    let mut settings = CodeSettings::default();
    let mut server = fake_server("crash-mid", "py");
    server
        .args
        .extend(["--marker".into(), marker.display().to_string()]);
    settings.servers.insert("fake".into(), server);
    let servers = LanguageServers::new(&settings, &root, Arc::new(Sandbox::off()));
    let disk = DiskWorkspace::new(&root).unwrap();
    let file = root.join("a.py");
    for _ in 0..2 {
        let answer = servers
            .request(&disk, &file, "textDocument/hover", at(&file, 0, 0))
            .await;
        assert!(
            matches!(answer, Err(CodeError::Crashed { .. })),
            "{answer:?}"
        );
    }
    assert_eq!(
        starts(&marker),
        2,
        "a second process answered the second request"
    );
}

/// How many times the fake server with this marker started.
fn starts(marker: &Path) -> usize {
    std::fs::read_to_string(marker).map_or(0, |text| text.lines().count())
}

/// Callers that arrive while the server starts wait for that one start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_at_once_share_one_start() {
    let dir = workspace(&[("a.py", "x = 1\n"), ("b.py", "y = 2\n")]);
    let root = dir.path().canonicalize().unwrap();
    let marker = root.join("started");
    let mut settings = CodeSettings::default();
    let mut server = fake_server("good", "py");
    server
        .args
        .extend(["--marker".into(), marker.display().to_string()]);
    settings.servers.insert("fake".into(), server);
    let servers = LanguageServers::new(&settings, &root, Arc::new(Sandbox::off()));
    let disk = DiskWorkspace::new(&root).unwrap();
    let (a, b) = (root.join("a.py"), root.join("b.py"));
    let (first, second) = tokio::join!(
        servers.request(&disk, &a, "textDocument/hover", at(&a, 0, 0)),
        servers.request(&disk, &b, "textDocument/hover", at(&b, 0, 0)),
    );
    assert!(first.is_ok() && second.is_ok(), "{first:?} {second:?}");
    assert_eq!(starts(&marker), 1);
    servers.stop().await;
}

/// A server that keeps failing to start is tried again after a backoff,
/// then given up for the session — and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_starts_is_given_up_and_says_so() {
    let dir = workspace(&[("a.py", "x = 1\n")]);
    let root = dir.path().canonicalize().unwrap();
    let marker = root.join("started");
    let mut settings = CodeSettings::default();
    let mut server = fake_server("crash-at-start", "py");
    server
        .args
        .extend(["--marker".into(), marker.display().to_string()]);
    settings.servers.insert("fake".into(), server);
    let servers = LanguageServers::new(&settings, &root, Arc::new(Sandbox::off()));
    let disk = DiskWorkspace::new(&root).unwrap();
    let file = root.join("a.py");
    let deadline = Instant::now() + DEADLINE;
    let given_up = loop {
        assert!(Instant::now() < deadline, "never given up");
        let answer = servers
            .request(&disk, &file, "textDocument/hover", at(&file, 0, 0))
            .await;
        let Err(error @ CodeError::Start { .. }) = answer else {
            panic!("{answer:?}");
        };
        if error.to_string().contains("not tried again") {
            break error;
        }
        // Within the backoff the last error is said again, nothing started.
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        given_up.to_string().contains("3 times in a row"),
        "{given_up}"
    );
    assert_eq!(starts(&marker), 3);
    let again = servers
        .request(&disk, &file, "textDocument/hover", at(&file, 0, 0))
        .await;
    assert_eq!(again, Err(given_up));
    assert_eq!(starts(&marker), 3, "tried again after it was given up");
}

/// An untrusted project's server starts nothing, and the model is told
/// why; trusted, it starts and answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_server_starts_only_in_a_trusted_project() {
    for trusted in [false, true] {
        let dir = workspace(&[("a.py", "x = 1\n")]);
        let root = dir.path().canonicalize().unwrap();
        let marker = root.join("started");
        let mut project = CodeSettings::default();
        let mut server = fake_server("good", "py");
        server
            .args
            .extend(["--marker".into(), marker.display().to_string()]);
        project.servers.insert("fake".into(), server);
        let mut ignored = Vec::new();
        let settings = CodeSettings::default().with_project(project, trusted, &mut ignored);
        let servers = LanguageServers::from_sources(
            &settings,
            &bareagent::language_servers::Sources {
                helix_user: None,
                helix_project: root.join(".helix/languages.toml"),
                // No default pyright stands in for the project's.
                installed: Box::new(|_| false),
            },
            &root,
            Arc::new(Sandbox::off()),
        );
        let disk = DiskWorkspace::new(&root).unwrap();
        let file = root.join("a.py");
        let answer = servers
            .request(&disk, &file, "textDocument/hover", at(&file, 0, 0))
            .await;
        if trusted {
            assert!(answer.is_ok(), "{answer:?}");
            assert!(marker.exists());
        } else {
            let Err(error @ CodeError::NoServer { .. }) = answer else {
                panic!("untrusted: {answer:?}");
            };
            assert!(
                error.to_string().contains("`fake`")
                    && error.to_string().contains("bareagent trust"),
                "{error}"
            );
            assert_eq!(ignored, ["language server `fake` (not started)"]);
            servers.stop().await;
            assert!(!marker.exists(), "the untrusted project's server started");
        }
    }
}

/// The last tool result, as the model server received it next.
fn last_result(server: &ModelServer) -> String {
    let requests = server.requests();
    let last = requests.last().expect("a request after the edit");
    let results = sent_tool_results(&last.body);
    results.last().expect("the edit's result").0.clone()
}

/// `bareagent run` in a project whose `.bareagent/config.toml` names the
/// fake server: trusted, the edit starts it and its report follows the
/// edit; untrusted, nothing starts.
#[test]
fn through_run_a_project_server_reports_after_an_edit_only_when_trusted() {
    for trusted in [false, true] {
        let dir = workspace(&[("a.py", "x = 1\n")]);
        let root = dir.path().canonicalize().unwrap();
        let marker = root.join("started");
        std::fs::create_dir_all(root.join(".bareagent")).unwrap();
        std::fs::write(
            root.join(".bareagent/config.toml"),
            format!(
                "[code.servers.fake]\ncommand = \"python3\"\nargs = [{:?}, \"good\", \"--marker\", {:?}]\nextensions = [\"py\"]\n",
                fake(),
                marker.display().to_string()
            ),
        )
        .unwrap();
        if trusted {
            crate::common::user_config(
                &root,
                &format!(
                    "[projects.{:?}]\ntrusted = true\n",
                    root.display().to_string()
                ),
            );
        }
        let server = ModelServer::start(vec![
            Reply::tool(
                "write_file",
                json!({"path": "b.py", "content": "x = 1\ny = ERROR\n"}),
            )
            .into(),
            Reply::tool(
                "code",
                json!({"operation": "hover", "path": "a.py", "line": 1, "column": 1}),
            )
            .into(),
            Reply::text("Done.").into(),
        ]);
        let out = run_against_model(&mut bareagent(&root), &server)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .args(["--permission-mode", "bypass", "edit it"])
            .output()
            .unwrap();
        crate::common::assert_succeeded(&out);
        let requests = server.requests();
        let results = sent_tool_results(&requests.last().expect("a request").body);
        let (edit, hover) = (&results[0].0, &results[1].0);
        if trusted {
            assert!(
                edit.contains("reports in b.py")
                    && edit.contains("line 2:5 error (fake E1): fake error here"),
                "{edit}"
            );
            assert!(hover.contains("fake hover: x = 1"), "{hover}");
        } else {
            assert!(!edit.contains("fake error"), "{edit}");
            assert!(
                hover.contains("`fake`") && hover.contains("bareagent trust"),
                "{hover}"
            );
            assert!(!marker.exists(), "the untrusted project's server started");
        }
    }
}

/// No server outlives `bareagent run`: neither when it ends, nor when it
/// is killed (SIGKILL runs no code of ours: the reaper kills the group).
#[test]
fn no_server_outlives_run_however_it_ends() {
    for killed in [false, true] {
        let dir = workspace(&[("a.py", "x = 1\n")]);
        let root = dir.path().canonicalize().unwrap();
        let marker = root.join("started");
        // A server that ignores `exit` and the end of its input: only a
        // kill ends it.
        crate::common::user_config(
            &root,
            &format!(
                "[code.servers.fake]\ncommand = \"python3\"\nargs = [{:?}, \"good\", \"--linger\", \"--marker\", {:?}]\nextensions = [\"py\"]\n",
                fake(),
                marker.display().to_string()
            ),
        );
        let hold = Hold::new();
        let server = ModelServer::start(vec![
            Reply::tool("write_file", json!({"path": "b.py", "content": "x = 2\n"})).into(),
            Reply::text("Done.").held(&hold).into(),
        ]);
        let mut run = run_against_model(&mut bareagent(&root), &server)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .args(["--permission-mode", "bypass", "edit it"])
            .spawn()
            .unwrap();
        wait_for("the server to start", || {
            std::fs::read_to_string(&marker).is_ok_and(|pid| pid.ends_with('\n'))
        });
        let pid: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(alive(pid));
        if killed {
            run.kill().unwrap();
        } else {
            hold.release();
        }
        run.wait().unwrap();
        wait_for(
            &format!("server {pid} to be gone (killed: {killed})"),
            || !alive(pid),
        );
    }
}

/// The real pyright: `textDocument/definition` crosses files (an import).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_finds_a_definition_in_another_file() {
    let Some(bin) = lsp_bin() else { return };
    let dir = workspace(&[
        (
            "shapes.py",
            "def area(width: int, height: int) -> int:\n    return width * height\n",
        ),
        ("main.py", "from shapes import area\n\nprint(area(2, 3))\n"),
    ]);
    let root = dir.path().canonicalize().unwrap();
    let mut settings = CodeSettings::default();
    settings.servers.insert(
        "pyright".into(),
        ServerConfig {
            command: bin.join("pyright-langserver").display().to_string(),
            args: vec!["--stdio".into()],
            extensions: vec!["py".into()],
            ..ServerConfig::default()
        },
    );
    let servers = LanguageServers::new(&settings, &root, Arc::new(Sandbox::off()));
    let disk = DiskWorkspace::new(&root).unwrap();
    let main = root.join("main.py");
    // `area` in `print(area(2, 3))`.
    let answer = servers
        .request(&disk, &main, "textDocument/definition", at(&main, 2, 7))
        .await
        .expect("pyright answers");
    let first = &answer[0];
    let target = first["targetUri"]
        .as_str()
        .or(first["uri"].as_str())
        .unwrap_or_default();
    assert!(target.ends_with("/shapes.py"), "{answer}");
    let range = if first["targetSelectionRange"].is_object() {
        &first["targetSelectionRange"]
    } else {
        &first["range"]
    };
    assert_eq!(range["start"]["line"], 0, "{answer}");
    servers.stop().await;
}

const TYPED: &str = "def area(width: int, height: int) -> int:\n    return width * height\n";
const BROKEN: &str = "from shapes import area\n\nlabel: str = area(2, 3)\n";

/// A file edited into a type error is reported after the edit, through
/// `bareagent run` with the real pyright (found on PATH, in the sandbox).
#[test]
fn through_run_pyright_reports_a_type_error_after_the_edit() {
    let Some(bin) = lsp_bin() else { return };
    let dir = workspace(&[("shapes.py", TYPED)]);
    let root = dir.path().canonicalize().unwrap();
    // A cold pyright on a loaded machine may take longer than the default.
    crate::common::user_config(&root, "[code]\ndiagnostics_wait_ms = 60000\n");
    let server = ModelServer::start(vec![
        Reply::tool("write_file", json!({"path": "main.py", "content": BROKEN})).into(),
        Reply::text("Done.").into(),
    ]);
    let out = run_against_model(&mut bareagent(&root), &server)
        .env("PATH", path_with(&bin))
        .args(["--permission-mode", "bypass", "edit it"])
        .output()
        .unwrap();
    crate::common::assert_succeeded(&out);
    let result = last_result(&server);
    assert!(
        result.contains("reports in main.py")
            && result.contains("line 3:")
            && result.contains("\"str\""),
        "{result}"
    );
}

/// The same through the language server with a client that pushes no
/// diagnostics (as Helix): our own pyright reports after the edit.
#[test]
fn through_the_language_server_pyright_reports_where_the_editor_does_not() {
    let Some(bin) = lsp_bin() else { return };
    let dir = workspace(&[("shapes.py", TYPED)]);
    let root = dir.path().canonicalize().unwrap();
    // A cold pyright on a loaded machine may take longer than the default.
    crate::common::user_config(&root, "[code]\ndiagnostics_wait_ms = 60000\n");
    let server = ModelServer::start(vec![
        Reply::tool("write_file", json!({"path": "main.py", "content": BROKEN})).into(),
        Reply::text("Done.").into(),
    ]);
    let mut options = crate::lsp::options(&root, &server, "bypass");
    options.env.push(("PATH".into(), path_with(&bin)));
    options.env.push((
        "XDG_CONFIG_HOME".into(),
        root.join(".no-user-config").display().to_string(),
    ));
    let client: LspClient = crate::lsp::start(&root, options);
    crate::lsp::ask(&client, json!("edit it"));
    crate::lsp::turn_end(&client, 1);
    let result = last_result(&server);
    assert!(
        result.contains("reports in main.py") && result.contains("\"str\""),
        "{result}"
    );
    let _ = TEST_KEY;
}

/// A server in the command sandbox cannot signal the agent (Landlock's
/// signal scope): told our pid, a server that probes its parent (as those
/// built on vscode-languageserver do, every few seconds) would exit. It is
/// told none; the reaper ends it with us.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_server_is_not_given_a_parent_it_cannot_probe() {
    let dir = workspace(&[("a.py", "x = 1\n")]);
    let root = dir.path().canonicalize().unwrap();
    let mut settings = CodeSettings::default();
    let mut server = fake_server("good", "py");
    server.args.push("--probe-parent".into());
    settings.servers.insert("fake".into(), server);
    let sandbox = Sandbox::for_commands(&Default::default(), &root, Vec::new()).unwrap();
    let servers = LanguageServers::new(&settings, &root, Arc::new(sandbox));
    let disk = DiskWorkspace::new(&root).unwrap();
    let file = root.join("a.py");
    let answer = servers
        .request(&disk, &file, "textDocument/hover", at(&file, 0, 0))
        .await;
    assert!(answer.is_ok(), "{answer:?}");
    servers.stop().await;
}

/// The real pyright through the language server with a Helix-like client
/// (no `bareagent/codeIntelligence`): a variable's type changed only in an
/// unsaved buffer of another file is what the hover of its use shows —
/// our server is given the editor's buffers, not the disk.
#[test]
fn pyright_sees_the_editors_unsaved_buffers() {
    let Some(bin) = lsp_bin() else { return };
    let dir = workspace(&[
        ("settings.py", "timeout = 30\n"),
        (
            "main.py",
            "from settings import timeout\n\nwait = timeout\n",
        ),
    ]);
    let root = dir.path().canonicalize().unwrap();
    let server = ModelServer::start(vec![
        Reply::tool(
            "code",
            json!({"operation": "hover", "path": "main.py", "symbol": "wait"}),
        )
        .into(),
        Reply::text("Done.").into(),
    ]);
    let mut options = crate::lsp::options(&root, &server, "bypass");
    options.env.push(("PATH".into(), path_with(&bin)));
    let client: LspClient = crate::lsp::start(&root, options);
    client.open("settings.py", "timeout = \"30s\"\n");
    let turn = crate::lsp::ask(&client, json!("what type is wait?"))["turn"]
        .as_u64()
        .expect("a turn");
    crate::lsp::turn_end(&client, turn);
    let result = last_result(&server);
    assert!(result.contains("wait: Literal['30s']"), "{result}");
}
