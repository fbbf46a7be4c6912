//! MCP servers end to end: the built binary (`bareagent run`), the scripted
//! model server, and real MCP servers from the registries —
//! `@modelcontextprotocol/server-everything` (npm) over stdio and over
//! Streamable HTTP, `mcp-server-git` (PyPI) over stdio — found through
//! `BAREAGENT_MCP_EVERYTHING` and `BAREAGENT_MCP_GIT` (set by `.ci/run`).
//! Without them a test skips, saying so, unless `BAREAGENT_REQUIRE_MCP=1`.
//! The two broken servers (one exits mid-call, one never answers
//! `initialize`) are tiny scripts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{bareagent, run_against_model, sent_tool_results, user_config, workspace};
use crate::support::model_server::{Hold, ModelServer, Reply, Step};

/// The path in `var`, or `None` (after saying so) when the test must skip.
fn server_program(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(path) if !path.is_empty() => Some(path),
        _ => {
            crate::support::peers::missing(
                crate::support::peers::Peer::McpServers,
                &format!("{var} is not set"),
            );
            None
        }
    }
}

pub(crate) fn everything() -> Option<String> {
    server_program("BAREAGENT_MCP_EVERYTHING")
}

/// mcp-server-git (PyPI), or `None` when the test must skip.
pub(crate) fn git_server() -> Option<String> {
    server_program("BAREAGENT_MCP_GIT")
}

/// Runs `git args` in `dir` as a fixed author; panics when git fails.
pub(crate) fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp")
        .join(name)
}

/// A TOML string (a basic string: paths may hold anything).
fn quoted(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

fn everything_server(program: &str) -> String {
    format!(
        "[mcp.servers.everything]\ncommand = {}\nargs = [\"stdio\"]\n",
        quoted(program)
    )
}

fn run(dir: &Path, server: &ModelServer, extra: &[&str]) -> Output {
    run_against_model(&mut bareagent(dir), server)
        .args(["--idle-timeout", "5"])
        .args(extra)
        .arg("use the MCP tools")
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The tool results the agent sent with its `n`th model request.
fn results(server: &ModelServer, n: usize) -> Vec<(String, bool)> {
    let requests = server.requests();
    let request = requests
        .get(n)
        .unwrap_or_else(|| panic!("no request {n}; {} made", requests.len()));
    let all = sent_tool_results(&request.body);
    // Only the newest turn's results: those after the last assistant message.
    let fresh = request.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|last| sent_tool_results(&json!({ "messages": [last] })))
        .unwrap_or_default();
    if fresh.is_empty() { all } else { fresh }
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str().map(String::from))
        .collect()
}

fn script(steps: Vec<Reply>) -> ModelServer {
    ModelServer::start(steps.into_iter().map(Step::from).collect())
}

/// Whether the process `pid` is gone (a zombie counts: it runs nothing).
fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn wait_until(what: &str, deadline: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn everything_servers_echo_and_sum_over_stdio() {
    let Some(program) = everything() else { return };
    let dir = workspace(&[]);
    user_config(dir.path(), &everything_server(&program));
    let server = script(vec![
        Reply::tools(vec![
            (
                "mcp__everything__echo",
                json!({"message": "hello over stdio"}),
            ),
            ("mcp__everything__get-sum", json!({"a": 2, "b": 40})),
        ]),
        Reply::text("done"),
    ]);
    let out = run(dir.path(), &server, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The server starts beside the first request: its tools are in every
    // request after it, whenever it came up.
    let after = &server.requests()[1].body;
    let names = tool_names(after);
    assert!(
        names.contains(&"mcp__everything__echo".to_string()),
        "{names:?}"
    );
    let echo = after["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__everything__echo")
        .unwrap();
    assert_eq!(echo["description"], "Echoes back the input string");
    assert_eq!(
        echo["input_schema"]["properties"]["message"]["type"],
        "string"
    );
    assert_eq!(
        results(&server, 1),
        [
            ("Echo: hello over stdio".to_string(), false),
            ("The sum of 2 and 40 is 42.".to_string(), false)
        ]
    );
}

/// The everything server's Streamable HTTP transport on a loopback port,
/// killed (group and all) when dropped.
pub(crate) struct HttpServer {
    child: std::process::Child,
    pub(crate) port: u16,
}

impl HttpServer {
    pub(crate) fn start(program: &str) -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::os::unix::process::CommandExt::process_group(
            Command::new(program)
                .arg("streamableHttp")
                .env("PORT", port.to_string())
                .env(
                    "NODE_OPTIONS",
                    format!("--require {}", fixture("loopback.cjs").display()),
                )
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
            0,
        )
        .spawn()
        .unwrap();
        let server = HttpServer { child, port };
        wait_until("the HTTP server listens", Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        server
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        // SAFETY: only sends a signal.
        unsafe { libc::killpg(self.child.id() as i32, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

#[test]
fn everything_servers_echo_over_streamable_http() {
    let Some(program) = everything() else { return };
    let http = HttpServer::start(&program);
    let dir = workspace(&[]);
    user_config(
        dir.path(),
        &format!(
            "[mcp.servers.web]\nurl = \"http://127.0.0.1:{}/mcp\"\nheaders = {{ Authorization = \"Bearer ${{BAREAGENT_TEST_MCP_TOKEN}}\" }}\n",
            http.port
        ),
    );
    let server = script(vec![
        Reply::tools(vec![
            ("mcp__web__echo", json!({"message": "hello over HTTP"})),
            ("mcp__web__get-sum", json!({"a": 1, "b": 2})),
        ]),
        Reply::text("done"),
    ]);
    // Logging everything, the header's value still appears nowhere.
    let out = run_against_model(&mut bareagent(dir.path()), &server)
        .env("BAREAGENT_TEST_MCP_TOKEN", "tok-sekrit-4711")
        .env("BAREAGENT_LOG", "trace")
        .arg("use the MCP tools")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("MCP server started"), "logged");
    assert!(
        !stderr(&out).contains("tok-sekrit-4711"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        results(&server, 1),
        [
            ("Echo: hello over HTTP".to_string(), false),
            ("The sum of 1 and 2 is 3.".to_string(), false)
        ]
    );
}

#[test]
fn git_status_comes_from_mcp_server_git() {
    let Some(program) = git_server() else {
        return;
    };
    let dir = workspace(&[("tracked.txt", "one\n"), ("notes-untracked.txt", "two\n")]);
    let git = |args: &[&str]| git(dir.path(), args);
    git(&["init", "-q"]);
    git(&["add", "tracked.txt"]);
    git(&["commit", "-qm", "first"]);
    std::fs::write(dir.path().join("tracked.txt"), "changed\n").unwrap();
    user_config(
        dir.path(),
        &format!(
            "[mcp.servers.git]\ncommand = {}\nargs = [\"--repository\", \".\"]\n",
            quoted(&program)
        ),
    );
    let repo = dir.path().display().to_string();
    let server = script(vec![
        Reply::tool("mcp__git__git_status", json!({"repo_path": repo})),
        Reply::text("done"),
    ]);
    // git_status is marked read-only: it runs in plan mode.
    let out = run(dir.path(), &server, &["--permission-mode", "plan"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = results(&server, 1);
    let (status, is_error) = &sent[0];
    assert!(!is_error, "{status}");
    assert!(status.contains("modified:   tracked.txt"), "{status}");
    assert!(status.contains("notes-untracked.txt"), "{status}");
}

#[test]
fn a_server_that_exits_mid_call_is_an_error_and_restarts_on_next_use() {
    let dir = workspace(&[]);
    user_config(
        dir.path(),
        &format!(
            "[mcp.servers.exits]\ncommand = \"python3\"\nargs = [{}]\n",
            quoted(&fixture("exits_mid_call.py").display().to_string())
        ),
    );
    let server = script(vec![
        Reply::tool("mcp__exits__crash", json!({})),
        Reply::tool("mcp__exits__crash", json!({})),
        Reply::text("the server keeps crashing"),
    ]);
    let out = run(dir.path(), &server, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    for n in [1, 2] {
        let sent = results(&server, n);
        let (text, is_error) = &sent[0];
        assert!(is_error, "{text}");
        // Started again for the second call, which reached the server (and
        // crashed it) rather than finding it unavailable.
        assert!(
            text.contains("the MCP server `exits` ended during the call")
                && text.contains("exiting in the middle of a call"),
            "call {n}: {text}"
        );
    }
    assert_eq!(server.requests().len(), 3, "the turn went on to its end");
    let said = stderr(&out);
    assert_eq!(
        said.matches("bareagent: MCP server `exits`").count(),
        1,
        "said once: {said}"
    );
}

#[test]
fn a_server_that_never_answers_initialize_is_left_out_and_killed() {
    let dir = workspace(&[]);
    let pid_file = dir.path().join("stuck.pid");
    user_config(
        dir.path(),
        &format!(
            "[mcp.servers.stuck]\ncommand = \"sh\"\nargs = [\"-c\", {}]\nstart_timeout_secs = 1\n",
            quoted(&format!(
                "echo $$ > '{}'; exec sleep 600",
                pid_file.display()
            ))
        ),
    );
    let server = script(vec![
        Reply::tool("mcp__stuck__anything", json!({})),
        Reply::text("carried on"),
    ]);
    let out = run(dir.path(), &server, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("MCP server `stuck`")
            && said.contains("did not answer `initialize` and list its tools within 1 s"),
        "{said}"
    );
    assert!(
        !tool_names(&server.requests()[0].body)
            .iter()
            .any(|n| n.starts_with("mcp__stuck")),
        "its tools are left out"
    );
    let (text, is_error) = &results(&server, 1)[0];
    assert!(
        *is_error && text.contains("Unknown tool: mcp__stuck__anything"),
        "{text}"
    );
    let pid = read_pid(&pid_file);
    wait_until(
        "the stuck server is killed",
        Duration::from_secs(10),
        || is_gone(pid),
    );
}

#[test]
fn deny_rules_block_mcp_tools_and_other_tools_ask() {
    let Some(program) = everything() else { return };
    let dir = workspace(&[]);
    user_config(
        dir.path(),
        &format!(
            "{}[permissions]\ndeny = [\"mcp__everything__echo\"]\n",
            everything_server(&program)
        ),
    );
    let server = script(vec![
        Reply::tools(vec![
            ("mcp__everything__echo", json!({"message": "blocked"})),
            ("mcp__everything__get-sum", json!({"a": 1, "b": 1})),
            ("mcp__everything__toggle-simulated-logging", json!({})),
        ]),
        Reply::text("done"),
    ]);
    let out = run(dir.path(), &server, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = results(&server, 1);
    assert_eq!(
        sent[0],
        (
            "Denied by the permission rule `mcp__everything__echo`.".to_string(),
            true
        )
    );
    assert_eq!(sent[1], ("The sum of 1 and 1 is 2.".to_string(), false));
    // Not marked read-only: it asks, and with nobody at a terminal to answer, it does not run.
    let (text, is_error) = &sent[2];
    assert!(is_error, "{text}");
    assert!(text.contains("needs approval"), "it did not run: {text}");
}

#[test]
fn plan_mode_runs_read_only_mcp_tools_only() {
    let Some(program) = everything() else { return };
    let dir = workspace(&[]);
    user_config(dir.path(), &everything_server(&program));
    let server = script(vec![
        Reply::tools(vec![
            ("mcp__everything__echo", json!({"message": "planning"})),
            ("mcp__everything__toggle-simulated-logging", json!({})),
        ]),
        Reply::text("done"),
    ]);
    let out = run(dir.path(), &server, &["--permission-mode", "plan"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = results(&server, 1);
    assert_eq!(sent[0], ("Echo: planning".to_string(), false));
    assert_eq!(
        sent[1],
        (
            "Denied: plan mode is read-only, so `mcp__everything__toggle-simulated-logging` may not run. Describe the change you would make instead.".to_string(),
            true
        )
    );
}

#[test]
fn results_over_the_cap_are_cut_with_a_note() {
    let Some(program) = everything() else { return };
    let dir = workspace(&[]);
    user_config(
        dir.path(),
        &format!(
            "[mcp]\nmax_result_bytes = 100\n{}",
            everything_server(&program)
        ),
    );
    let server = script(vec![
        Reply::tool("mcp__everything__echo", json!({"message": "x".repeat(500)})),
        Reply::text("done"),
    ]);
    let out = run(dir.path(), &server, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = &results(&server, 1)[0];
    assert!(!is_error);
    let expected = format!(
        "Echo: {}\n[output cut: 100 of 506 bytes shown (the limit is `[mcp] max_result_bytes`)]",
        "x".repeat(94)
    );
    assert_eq!(text, &expected);
}

#[test]
fn past_the_tool_budget_the_model_searches_and_calls_through_the_gate() {
    let Some(program) = everything() else { return };
    let dir = workspace(&[]);
    user_config(
        dir.path(),
        &format!(
            "[mcp]\nmax_tools = 3\n{}[permissions]\ndeny = [\"mcp__everything__get-sum\"]\n",
            everything_server(&program)
        ),
    );
    let server = script(vec![
        Reply::tool("mcp_search", json!({"query": "echo"})),
        Reply::tools(vec![
            (
                "mcp_call",
                json!({"name": "mcp__everything__echo", "arguments": {"message": "found"}}),
            ),
            // The deny rule holds whichever way the tool is called.
            (
                "mcp_call",
                json!({"name": "mcp__everything__get-sum", "arguments": {"a": 1, "b": 2}}),
            ),
        ]),
        Reply::text("done"),
    ]);
    let out = run(dir.path(), &server, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let names = tool_names(&server.requests()[1].body);
    assert!(names.contains(&"mcp_search".to_string()), "{names:?}");
    assert!(names.contains(&"mcp_call".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
    let (found, _) = &results(&server, 1)[0];
    let found: Value = serde_json::from_str(found).expect("JSON");
    assert_eq!(found[0]["name"], "mcp__everything__echo");
    assert_eq!(
        found[0]["input_schema"]["properties"]["message"]["type"],
        "string"
    );
    let sent = results(&server, 2);
    assert_eq!(sent[0], ("Echo: found".to_string(), false));
    assert_eq!(
        sent[1],
        (
            "Denied by the permission rule `mcp__everything__get-sum`.".to_string(),
            true
        )
    );
}

#[test]
fn an_untrusted_projects_mcp_json_starts_nothing() {
    let dir = workspace(&[]);
    let marker = dir.path().join("spawned");
    let mcp_json = json!({"mcpServers": {"planted": {
        "command": "sh",
        "args": ["-c", format!("touch '{}'; exec sleep 600", marker.display())]
    }}});
    std::fs::write(dir.path().join(".mcp.json"), mcp_json.to_string()).unwrap();
    user_config(dir.path(), "[mcp]\nstart_timeout_secs = 1\n");
    let server = script(vec![Reply::text("nothing to use")]);
    let out = run(dir.path(), &server, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("MCP server `planted` of .mcp.json (not started)")
            && said.contains("bareagent trust"),
        "{said}"
    );
    assert!(!marker.exists(), "the planted server was started");
    // Trusted, the same file starts it: the marker would have shown a start.
    let root = dir.path().canonicalize().unwrap();
    user_config(
        dir.path(),
        &format!(
            "[mcp]\nstart_timeout_secs = 1\n[projects.{}]\ntrusted = true\n",
            quoted(&root.display().to_string())
        ),
    );
    let server = script(vec![Reply::text("now trusted")]);
    let out = run(dir.path(), &server, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(marker.exists(), "{}", stderr(&out));
}

#[test]
fn no_mcp_server_outlives_an_agent_killed_with_sigkill() {
    let Some(program) = everything() else { return };
    let dir = workspace(&[]);
    let pid_file = dir.path().join("server.pid");
    let child_file = dir.path().join("child.pid");
    // The server leaves a child of its own, which (unlike the server) does
    // not end when the agent's end of the pipe closes: only killing the
    // group ends it.
    user_config(
        dir.path(),
        &format!(
            "[mcp.servers.everything]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n",
            quoted(&format!(
                "sleep 600 </dev/null >/dev/null 2>&1 & echo $! > '{}'; echo $$ > '{}'; exec '{}' stdio",
                child_file.display(),
                pid_file.display(),
                program
            ))
        ),
    );
    let hold = Hold::new();
    let server = ModelServer::start(vec![Reply::text("never sent").held(&hold).into()]);
    let mut agent = run_against_model(&mut bareagent(dir.path()), &server)
        .arg("wait")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The model was asked, and the server (which starts beside the first
    // request) has started its child.
    wait_until("the model is asked", Duration::from_secs(30), || {
        !server.requests().is_empty()
    });
    wait_until("the server has started", Duration::from_secs(30), || {
        [&pid_file, &child_file]
            .iter()
            .all(|file| std::fs::read_to_string(file).is_ok_and(|pid| pid.ends_with('\n')))
    });
    let (pid, child) = (read_pid(&pid_file), read_pid(&child_file));
    assert!(
        !is_gone(pid) && !is_gone(child),
        "the server runs while the agent does"
    );
    agent.kill().unwrap();
    let _ = agent.wait();
    let gone = || is_gone(pid) && is_gone(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(25));
    }
    if !gone() {
        // Not left behind by the test either.
        // SAFETY: only sends a signal to the processes this test started.
        unsafe {
            libc::kill(child, libc::SIGKILL);
            libc::kill(pid, libc::SIGKILL);
        }
        panic!("the MCP server (or its child) outlived the agent");
    }
    hold.release();
}

/// In the editor: servers from the editor's settings, started at
/// `initialized` for the main session, their tools in a turn,
/// their state in `bareagent.status`, a failure told as a `bareagent/event`,
/// and the servers stopped (group and all) when the session is replaced.
#[test]
fn the_language_server_runs_a_sessions_servers_and_stops_them_with_it() {
    use crate::lsp::{LONG, ask, events_of, options, start, turn_end};
    let Some(program) = everything() else { return };
    let dir = workspace(&[]);
    let (pid_file, child_file) = (dir.path().join("server.pid"), dir.path().join("child.pid"));
    let server = script(vec![
        Reply::tool(
            "mcp__everything__echo",
            json!({"message": "from the editor"}),
        ),
        Reply::text("done"),
    ]);
    let mut options = options(dir.path(), &server, "default");
    options.env.push((
        "XDG_CONFIG_HOME".into(),
        dir.path().join(".no-user-config").display().to_string(),
    ));
    options.initialization_options["mcp"] = json!({"servers": {
        "everything": {"command": "sh", "args": ["-c", format!(
            "sleep 600 </dev/null >/dev/null 2>&1 & echo $! > '{}'; echo $$ > '{}'; exec '{}' stdio",
            child_file.display(), pid_file.display(), program
        )]},
        "broken": {"command": "/nonexistent/mcp-server"},
    }});
    let client = start(dir.path(), options);
    // Started with the server, before any turn (which then need not wait).
    wait_until("the main session's server to start", LONG, || {
        pid_file.exists()
    });
    let answer = ask(&client, json!("use the MCP tools"));
    let turn = answer["turn"].as_u64().expect("a turn");
    assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
    assert_eq!(
        results(&server, 1),
        [("Echo: from the editor".to_string(), false)]
    );
    let failed = events_of(&client, "mcp_server");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["server"], "broken");
    assert_eq!(failed[0]["state"], "failed");
    assert!(
        failed[0]["message"]
            .as_str()
            .unwrap()
            .contains("cannot start `/nonexistent/mcp-server`"),
        "{failed:?}"
    );
    let status = client.execute("bareagent.status", json!([])).unwrap();
    let mcp = &status["sessions"][0]["mcp"];
    let by_name = |name: &str| {
        mcp.as_array()
            .and_then(|servers| servers.iter().find(|s| s["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {status}"))
    };
    let everything = by_name("everything");
    assert_eq!(everything["status"]["state"], "running", "{everything}");
    assert_eq!(everything["origin"], "editor");
    assert!(
        everything["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__everything__get-sum")),
        "{everything}"
    );
    assert_eq!(by_name("broken")["status"]["state"], "failed");
    let (pid, child) = (read_pid(&pid_file), read_pid(&child_file));
    client.execute("bareagent.newSession", json!([])).unwrap();
    wait_until("the old session's server is stopped", LONG, || {
        is_gone(pid) && is_gone(child)
    });
    assert!(client.is_running(), "the language server goes on");
}

/// Cancelling a turn while an MCP tool runs: the server is sent
/// `notifications/cancelled` for the call, and the call's result (in the
/// next request's history) says it was cancelled.
#[test]
fn cancelling_a_turn_cancels_the_call_at_the_server() {
    use crate::lsp::{LONG, ask, options, start, turn_end};
    let Some(program) = everything() else { return };
    let dir = workspace(&[]);
    let log = dir.path().join("to-server.log");
    let server = script(vec![
        Reply::tool(
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 60, "steps": 2}),
        ),
        Reply::text("after the cancel"),
    ]);
    let mut options = options(dir.path(), &server, "default");
    options.env.push((
        "XDG_CONFIG_HOME".into(),
        dir.path().join(".no-user-config").display().to_string(),
    ));
    // What the agent sends the server, copied to a log on the way.
    options.initialization_options["mcp"] = json!({"servers": {"everything": {
        "command": "sh",
        "args": ["-c", format!("tee '{}' | '{}' stdio", log.display(), program)],
    }}});
    let client = start(dir.path(), options);
    let sent = || std::fs::read_to_string(&log).unwrap_or_default();
    let turn = ask(&client, json!("start the long operation"))["turn"]
        .as_u64()
        .expect("a turn");
    wait_until("the tool is called", LONG, || sent().contains("tools/call"));
    client.execute("bareagent.cancel", json!([])).unwrap();
    assert_eq!(turn_end(&client, turn)["message"], "cancelled");
    wait_until("the server is told", LONG, || {
        sent().contains("notifications/cancelled")
    });
    let next = ask(&client, json!("and now?"))["turn"]
        .as_u64()
        .expect("a turn");
    assert_eq!(turn_end(&client, next)["type"], "turn_finished");
    let (text, is_error) = sent_tool_results(&server.requests()[1].body)
        .into_iter()
        .next()
        .expect("the cancelled call's result");
    assert!(
        is_error && text.to_lowercase().contains("cancelled"),
        "{text}"
    );
}

#[test]
fn mcp_list_shows_each_server_its_state_and_its_tools() {
    let Some(program) = everything() else { return };
    let dir = workspace(&[]);
    user_config(
        dir.path(),
        &format!(
            "{}[mcp.servers.gone]\ncommand = \"/nonexistent/mcp-server\"\n",
            everything_server(&program)
        ),
    );
    std::fs::write(
        dir.path().join(".mcp.json"),
        r#"{"mcpServers": {"planted": {"command": "sh", "args": ["-c", "exit 1"]}}}"#,
    )
    .unwrap();
    let out = bareagent(dir.path())
        .args(["mcp", "list"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("everything (stdio, from the user's config): running, 13 tools\n  mcp__everything__echo\n"),
        "{listing}"
    );
    assert!(
        listing.contains(
            "gone (stdio, from the user's config): failed: cannot start `/nonexistent/mcp-server`"
        ),
        "{listing}"
    );
    assert!(!listing.contains("planted"), "{listing}");
    assert!(stderr(&out).contains("MCP server `planted` of .mcp.json (not started)"));
    let out = bareagent(dir.path())
        .args(["mcp", "list", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report[0]["name"], "everything");
    assert_eq!(
        report[0]["status"],
        json!({"state": "running", "tools": 13})
    );
    assert_eq!(report[1]["status"]["state"], "failed");
}

/// A server's new tools (`notifications/tools/list_changed`) reach the
/// model at the session's next turn.
#[test]
fn a_changed_tool_list_reaches_the_next_turn() {
    use crate::lsp::{LONG, ask, options, start, turn_end};
    let dir = workspace(&[]);
    let server = script(vec![
        Reply::tool("mcp__changes__grow", json!({})),
        Reply::text("grown"),
        Reply::tool("mcp__changes__grown", json!({})),
        Reply::text("done"),
    ]);
    let mut options = options(dir.path(), &server, "bypass");
    options.env.push((
        "XDG_CONFIG_HOME".into(),
        dir.path().join(".no-user-config").display().to_string(),
    ));
    options.initialization_options["mcp"] = json!({"servers": {"changes": {
        "command": "python3",
        "args": [fixture("changes_tools.py").display().to_string()],
    }}});
    let client = start(dir.path(), options);
    let first = ask(&client, json!("grow"))["turn"]
        .as_u64()
        .expect("a turn");
    assert_eq!(turn_end(&client, first)["type"], "turn_finished");
    let names = tool_names(&server.requests()[1].body);
    assert!(names.contains(&"mcp__changes__grow".into()), "{names:?}");
    assert!(!names.contains(&"mcp__changes__grown".into()), "{names:?}");
    assert_eq!(results(&server, 1), [("2 tools now".to_string(), false)]);
    client.wait_until(LONG, "the new list is in", |client| {
        let status = client.execute("bareagent.status", json!([])).unwrap();
        status["sessions"][0]["mcp"][0]["tools"]
            .as_array()
            .is_some_and(|tools| tools.len() == 2)
    });
    let second = ask(&client, json!("use it"))["turn"]
        .as_u64()
        .expect("a turn");
    assert_eq!(turn_end(&client, second)["type"], "turn_finished");
    assert!(tool_names(&server.requests()[2].body).contains(&"mcp__changes__grown".into()));
    assert_eq!(results(&server, 3), [("2 tools now".to_string(), false)]);
}

/// A stdio server gets its `env` (variables expanded) and not the agent's
/// provider keys.
#[test]
fn a_server_gets_its_env_expanded_and_not_the_agents_keys() {
    let Some(program) = everything() else { return };
    let dir = workspace(&[]);
    user_config(
        dir.path(),
        &format!(
            "{}env = {{ GREETING = \"hello ${{BAREAGENT_TEST_MCP_NAME}}\" }}\n",
            everything_server(&program)
        ),
    );
    let server = script(vec![
        Reply::tool("mcp__everything__get-env", json!({})),
        Reply::text("done"),
    ]);
    let out = run_against_model(&mut bareagent(dir.path()), &server)
        .env("BAREAGENT_TEST_MCP_NAME", "world")
        .env("OPENAI_API_KEY", "sk-other-provider-key-0123")
        .arg("show the environment")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = &results(&server, 1)[0];
    assert!(!is_error, "{text}");
    let env: Value = serde_json::from_str(text).expect("the server's environment as JSON");
    assert_eq!(env["GREETING"], "hello world");
    assert!(env.get("PATH").is_some(), "{env}");
    for key in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"] {
        assert!(env.get(key).is_none(), "{key} reached the server: {env}");
    }
}

/// What the server refuses is an error result the model reads; the turn goes on.
#[test]
fn a_servers_refusal_is_an_error_result() {
    let Some(program) = everything() else { return };
    let dir = workspace(&[]);
    user_config(dir.path(), &everything_server(&program));
    let server = script(vec![
        Reply::tool("mcp__everything__get-sum", json!({"a": "two", "b": 2})),
        Reply::text("done"),
    ]);
    let out = run(dir.path(), &server, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, is_error) = &results(&server, 1)[0];
    assert!(is_error, "{text}");
    // The server's words, as it said them (an `isError` result).
    assert!(
        text.starts_with("Error: ")
            && text.contains("Invalid arguments for tool get-sum")
            && text.contains("expected number, received string"),
        "{text}"
    );
}

/// The tiny PNG the everything server's `get-tiny-image` returns (its
/// first bytes: the rest is checked by length).
const TINY_PNG_START: &str = "iVBORw0KGgoAAAANSUhEUgAAABQAAAAU";

#[test]
fn an_image_from_an_mcp_tool_reaches_anthropic_as_an_image_and_openai_as_a_note() {
    let Some(program) = everything() else { return };
    for provider in ["anthropic", "openai"] {
        let dir = workspace(&[]);
        user_config(dir.path(), &everything_server(&program));
        let server = script(vec![
            Reply::tool("mcp__everything__get-tiny-image", json!({})),
            Reply::text("done"),
        ]);
        let mut command = bareagent(dir.path());
        let out = match provider {
            "anthropic" => run_against_model(&mut command, &server),
            _ => command
                .args(["run", "--provider", "openai", "--base-url"])
                .arg(server.openai_base())
                .env("OPENAI_API_KEY", crate::common::TEST_KEY),
        }
        .args(["--idle-timeout", "5", "show me the image"])
        .output()
        .unwrap();
        assert!(out.status.success(), "{provider}: {}", stderr(&out));
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{provider}");
        let messages = requests[1].body["messages"].as_array().unwrap().clone();
        let last = messages.last().unwrap();
        if provider == "anthropic" {
            let result = &last["content"][0];
            assert_eq!(result["type"], "tool_result", "{result}");
            let parts = result["content"].as_array().expect("an array of blocks");
            assert_eq!(
                parts[0]["text"],
                "Here's the image you requested:\n[image (image/png) attached]\nThe image above is the MCP logo.",
            );
            assert_eq!(parts[1]["type"], "image");
            assert_eq!(parts[1]["source"]["type"], "base64");
            assert_eq!(parts[1]["source"]["media_type"], "image/png");
            let data = parts[1]["source"]["data"].as_str().unwrap();
            assert!(data.starts_with(TINY_PNG_START), "{data:.40}");
            assert!(data.len() > 4000, "the whole image: {}", data.len());
            assert_eq!(parts.len(), 2);
        } else {
            let tool = messages
                .iter()
                .find(|m| m["role"] == "tool")
                .expect("a tool message");
            let text = tool["content"].as_str().expect("text only");
            assert!(
                text.ends_with("[1 image(s) the tool returned left out: this provider's tool results carry text only]"),
                "{text}"
            );
            assert!(!requests[1].body.to_string().contains(TINY_PNG_START));
        }
    }
}

/// The user's config in `dir` names one server, `held`, which answers
/// `initialize` only once its FIFO (returned) is written.
fn held_server(dir: &Path) -> PathBuf {
    let fifo = dir.join("start.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    user_config(
        dir,
        &format!(
            "[mcp.servers.held]\ncommand = \"python3\"\nargs = [{}, {}]\n",
            quoted(&fixture("held_start.py").display().to_string()),
            quoted(&fifo.display().to_string())
        ),
    );
    fifo
}

/// A server still starting when a turn begins does not hold up the first
/// request: that goes out without its tools and the user is told which
/// server is starting; its tools join from the next request, and a call
/// of one of them waits for it rather than failing. The server here
/// answers `initialize` only once the test writes to its FIFO, after the
/// first request has been seen.
#[test]
fn a_server_still_starting_joins_at_the_next_request() {
    let cases: Vec<(&str, Vec<Reply>, usize)> = vec![
        (
            "the model works on meanwhile",
            vec![
                Reply::tool("read_file", json!({"path": "a.txt"})),
                Reply::tool("mcp__held__ping", json!({})),
                Reply::text("done"),
            ],
            2,
        ),
        (
            "the model calls the tool at once",
            vec![
                Reply::tool("mcp__held__ping", json!({})),
                Reply::text("done"),
            ],
            1,
        ),
    ];
    for (case, replies, pong_at) in cases {
        let dir = workspace(&[("a.txt", "a\n")]);
        let fifo = held_server(dir.path());
        let count = replies.len();
        let server = script(replies);
        let agent = run_against_model(&mut bareagent(dir.path()), &server)
            .args(["--idle-timeout", "5", "use the MCP tools"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_until("the first request", Duration::from_secs(30), || {
            !server.requests().is_empty()
        });
        let first = tool_names(&server.requests()[0].body);
        assert!(first.contains(&"read_file".into()), "{case}: {first:?}");
        assert!(
            !first.contains(&"mcp__held__ping".into()),
            "{case}: {first:?}"
        );
        // The server may come up now (the open waits for it to be reading).
        use std::io::Write;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&fifo)
            .and_then(|mut fifo| fifo.write_all(b"go"))
            .unwrap();
        let out = agent.wait_with_output().unwrap();
        assert!(out.status.success(), "{case}: {}", stderr(&out));
        let requests = server.requests();
        assert_eq!(requests.len(), count, "{case}");
        for later in &requests[1..] {
            let names = tool_names(&later.body);
            assert!(
                names.contains(&"mcp__held__ping".into()),
                "{case}: {names:?}"
            );
        }
        assert_eq!(
            results(&server, pong_at),
            [("pong".to_string(), false)],
            "{case}"
        );
        assert!(
            stderr(&out).contains("MCP server still starting: held"),
            "{case}: {}",
            stderr(&out)
        );
    }
}

/// A turn cancelled while a call waits for its server's first start still
/// answers the call (`Cancelled by user`), so the history the session file
/// keeps has a `tool_result` for every `tool_use` and can be continued.
#[test]
fn a_call_cancelled_while_its_server_starts_is_answered() {
    let dir = workspace(&[]);
    held_server(dir.path());
    let server = script(vec![Reply::tool("mcp__held__ping", json!({}))]);
    let agent = run_against_model(&mut bareagent(dir.path()), &server)
        .args(["--idle-timeout", "5", "use the MCP tools"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the first request", Duration::from_secs(30), || {
        !server.requests().is_empty()
    });
    // The call waits for the held server: Ctrl-C now.
    let sessions = dir.path().join(".bareagent/sessions");
    wait_until("the call is recorded", Duration::from_secs(30), || {
        std::fs::read_dir(&sessions).is_ok_and(|entries| {
            entries.flatten().any(|entry| {
                std::fs::read_to_string(entry.path())
                    .is_ok_and(|text| text.contains("mcp__held__ping"))
            })
        })
    });
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(agent.id() as i32, libc::SIGINT) };
    let out = agent.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let recorded: String = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "jsonl"))
        .map(|entry| std::fs::read_to_string(entry.path()).unwrap())
        .collect();
    assert!(
        recorded.contains("tool_result") && recorded.contains(bareagent::agent::CANCELLED),
        "{recorded}"
    );
}
