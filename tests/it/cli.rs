//! `bareagent run` end to end: the built binary, a real workspace directory,
//! real HTTP to the scripted model server.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::common::{TEST_KEY, bareagent, run_against_model, workspace};
use crate::support::model_server::{Fault, ModelServer, Reply, Step};

const DEMO_PROMPT: &str = "Fix the bug in greet.py";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn demo_script() -> Vec<Step> {
    vec![
        Reply::tool("read_file", json!({"path": "greet.py"})).with_text_first("I'll read greet.py first.").into(),
        Reply::tool(
            "edit_file",
            json!({"path": "greet.py", "old_string": "return \"Hello, \" + nme + \"!\"", "new_string": "return f\"Hello, {name}!\""}),
        )
        .with_text_first("`greet` uses `nme`, a typo for its parameter `name`. Fixing it.")
        .into(),
        Reply::text("Fixed: `greet` referred to an undefined `nme`; it now formats `name` with an f-string, so `python3 greet.py` prints `Hello, world!`.").into(),
    ]
}

fn demo_dir() -> tempfile::TempDir {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/greet.py");
    workspace(&[("greet.py", &std::fs::read_to_string(source).unwrap())])
}

const FIXED: &str = "return f\"Hello, {name}!\"";

fn run_against(server: &ModelServer, dir: &Path, extra: &[&str]) -> Output {
    run_in(bareagent(dir), server, extra)
}

fn run_in(mut command: Command, server: &ModelServer, extra: &[&str]) -> Output {
    crate::common::run_against_model(&mut command, server)
        .args(["--idle-timeout", "2"])
        .args(extra)
        .arg(DEMO_PROMPT)
        .output()
        .unwrap()
}

#[test]
fn run_streams_text_to_stdout_and_tool_activity_to_stderr() {
    let dir = demo_dir();
    let server = ModelServer::start(demo_script());
    let out = run_against(&server, dir.path(), &["--permission-mode", "accept-edits"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.starts_with("I'll read greet.py first.\n"),
        "{stdout}"
    );
    assert!(
        stdout.trim_end().ends_with("prints `Hello, world!`."),
        "{stdout}"
    );
    assert!(
        !stdout.contains("read_file"),
        "tool activity stays off stdout: {stdout}"
    );
    assert!(stderr.contains("→ read_file greet.py"), "{stderr}");
    assert!(stderr.contains("✓ Edited greet.py"), "{stderr}");
    assert!(
        std::fs::read_to_string(dir.path().join("greet.py"))
            .unwrap()
            .contains(FIXED)
    );
}

#[test]
fn json_mode_prints_one_event_per_line() {
    let dir = demo_dir();
    let server = ModelServer::start(demo_script());
    let out = run_against(
        &server,
        dir.path(),
        &["--json", "--permission-mode", "bypass", "--no-stream"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "session",
            "usage",
            "tool_call",
            "tool_result",
            "usage",
            "tool_call",
            "file_changed",
            "tool_result",
            "usage",
            "final"
        ]
    );
    assert_eq!(events[2]["name"], "read_file");
    assert_eq!(events[6]["path"], "greet.py");
    assert_eq!(events[6]["asked"], false);
    assert_eq!(events[7]["is_error"], false);
    assert!(events[9]["text"].as_str().unwrap().starts_with("Fixed:"));
    assert_eq!(events[9]["usage"]["output_tokens"], 15);
    assert!(server.requests().iter().all(|r| !r.is_stream()));
}

#[test]
fn without_a_terminal_the_default_mode_denies_edits() {
    let dir = demo_dir();
    let mut script = demo_script();
    script.truncate(2);
    script.push(Reply::text("I was not allowed to edit.").into());
    let server = ModelServer::start(script);
    let out = run_against(&server, dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("✗ Denied: `edit_file` needs approval"),
        "{stderr}"
    );
    assert!(
        !std::fs::read_to_string(dir.path().join("greet.py"))
            .unwrap()
            .contains(FIXED)
    );
    let sent = &server.requests()[2].body["messages"][4]["content"][0];
    assert_eq!(sent["is_error"], true);
}

#[test]
fn json_mode_asks_for_approval_on_stdout_and_reads_the_answer_on_stdin() {
    let dir = demo_dir();
    let server = ModelServer::start(demo_script());
    let out = with_stdin(
        bareagent(dir.path()).args([
            "run",
            "--json",
            "--provider",
            "openai",
            "--base-url",
            &server.openai_base(),
            DEMO_PROMPT,
        ]),
        "{\"id\": 1, \"decision\": \"allow\"}\n",
    );
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    let request: Value = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "approval_request")
        .expect("an approval request");
    assert_eq!(request["id"], 1);
    assert_eq!(request["tool"], "edit_file");
    assert_eq!(request["summary"], "greet.py (+1 -1)");
    assert!(
        std::fs::read_to_string(dir.path().join("greet.py"))
            .unwrap()
            .contains(FIXED)
    );
    assert!(
        server.requests()[0].header("authorization").is_none(),
        "no key, no header"
    );
}

#[test]
fn a_recording_replays_offline_and_holds_no_secret() {
    let recording = tempfile::NamedTempFile::new().unwrap();
    let record_path = recording.path().to_str().unwrap();
    let first = demo_dir();
    let server = ModelServer::start(demo_script());
    let out = run_against(
        &server,
        first.path(),
        &["--permission-mode", "accept-edits", "--record", record_path],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    drop(server);
    let recorded = std::fs::read_to_string(recording.path()).unwrap();
    assert_eq!(recorded.lines().count(), 3);
    assert!(!recorded.contains(TEST_KEY));

    let second = demo_dir();
    let out = bareagent(second.path())
        .args([
            "run",
            "--replay",
            record_path,
            "--permission-mode",
            "accept-edits",
            DEMO_PROMPT,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(second.path().join("greet.py")).unwrap(),
        std::fs::read_to_string(first.path().join("greet.py")).unwrap()
    );
}

#[test]
fn the_offline_demo_fixes_the_example() {
    let dir = demo_dir();
    let recording = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo.jsonl");
    let out = bareagent(dir.path())
        .args(["run", "--replay"])
        .arg(&recording)
        .args(["--permission-mode", "accept-edits", DEMO_PROMPT])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        std::fs::read_to_string(dir.path().join("greet.py"))
            .unwrap()
            .contains(FIXED)
    );
    assert!(text(&out.stdout).contains("Hello, world!"));

    // The README's script, with the binary under test.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/run-demo.sh");
    // With a provider exported, as a user of the agent has: `--replay` wins.
    let out = Command::new(script)
        .env("BAREAGENT", env!("CARGO_BIN_EXE_bareagent"))
        .env("BAREAGENT_PROVIDER", "openai")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!("+    {FIXED}")),
        "{}",
        text(&out.stdout)
    );
}

/// Regenerates `examples/demo.jsonl` from the demo script, through the real
/// recorder: `cargo test --test it -- --ignored regenerate_the_demo_recording`.
#[test]
#[ignore]
fn regenerate_the_demo_recording() {
    let dir = demo_dir();
    let server = ModelServer::start(demo_script());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo.jsonl");
    let out = run_against(
        &server,
        dir.path(),
        &[
            "--permission-mode",
            "accept-edits",
            "--record",
            path.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn a_failed_turn_exits_non_zero_with_a_one_line_reason() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Fault::ServerError.into(), Fault::ServerError.into()]);
    let out = run_against(&server, dir.path(), &["--max-attempts", "2"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with("bareagent: anthropic: HTTP 500: "),
        "{stderr}"
    );
    assert!(!stderr.contains(TEST_KEY));
}

#[test]
fn the_iteration_cap_is_a_failed_turn() {
    let dir = workspace(&[("a.txt", "x")]);
    let server = ModelServer::start(vec![
        Reply::tool("read_file", json!({"path": "a.txt"})).into(),
        Reply::tool("read_file", json!({"path": "a.txt"})).into(),
    ]);
    let out = run_against(&server, dir.path(), &["--max-iterations", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cap of 2 iterations"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn configuration_errors_are_clear() {
    let dir = workspace(&[]);
    let cases: [(&[&str], &str); 3] = [
        (&["run", "hello"], "no model provider configured"),
        (
            &["run", "--provider", "anthropic", "hello"],
            "ANTHROPIC_API_KEY is not set",
        ),
        (
            &["run", "--replay", "no-such-file.jsonl", "hello"],
            "cannot read no-such-file.jsonl",
        ),
    ];
    for (args, expected) in cases {
        let out = bareagent(dir.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(expected),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn provider_and_model_come_from_the_environment() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Reply::text("hi").into()]);
    let out = bareagent(dir.path())
        .args(["run", "hello"])
        .env("BAREAGENT_PROVIDER", "openai")
        .env("BAREAGENT_MODEL", "llama3.2")
        .env("OPENAI_BASE_URL", server.openai_base())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "hi");
    assert_eq!(server.requests()[0].body["model"], "llama3.2");
}

#[test]
fn version_and_the_language_server_on_a_closed_stdin() {
    let dir = workspace(&[]);
    let out = bareagent(dir.path()).arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout).trim(),
        format!("bareagent {}", env!("CARGO_PKG_VERSION"))
    );
    // The language server ends when the editor closes its stdin, writing nothing.
    for args in [&[][..], &["lsp"][..]] {
        let out = bareagent(dir.path()).args(args).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "stdout belongs to the protocol");
    }
}

#[test]
fn config_rules_allow_deny_and_dangerous_commands_ask_anyway() {
    let dir = workspace(&[(
        ".bareagent/config.toml",
        "[permissions]\nallow = [\"bash(echo:*)\", \"bash(git:*)\"]\ndeny = [\"bash(rm:*)\"]\n",
    )]);
    let server = ModelServer::start(vec![
        Reply::tools(vec![
            ("bash", json!({"command": "echo allowed-by-rule"})),
            ("bash", json!({"command": "rm -f nothing"})),
            ("bash", json!({"command": "git push --force origin main"})),
            ("bash", json!({"command": "echo ok && touch made-it"})),
        ])
        .into(),
        Reply::text("done").into(),
    ]);
    // The project's allow rules hold once the user trusts the project.
    let config_home = tempfile::tempdir().unwrap();
    let mut trust = bareagent(dir.path());
    trust
        .env("XDG_CONFIG_HOME", config_home.path())
        .arg("trust");
    assert!(trust.output().unwrap().status.success());
    let mut command = bareagent(dir.path());
    command.env("XDG_CONFIG_HOME", config_home.path());
    let out = run_in(command, &server, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent = crate::common::sent_tool_results(&server.requests()[1].body);
    assert_eq!(sent[0], ("allowed-by-rule\n".to_string(), false));
    assert_eq!(sent[1].0, "Denied by the permission rule `bash(rm:*)`.");
    assert!(
        sent[2].1 && sent[2].0.contains("dangerous: force-pushes"),
        "{:?}",
        sent[2]
    );
    assert!(
        sent[3].1 && sent[3].0.contains("needs approval"),
        "touch is not covered by echo's rule: {:?}",
        sent[3]
    );
    assert!(!dir.path().join("made-it").exists());
}

#[test]
fn provider_keys_never_reach_commands() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({"command": "env"})).into(),
        Reply::text("done").into(),
    ]);
    let out = run_against_model(&mut bareagent(dir.path()), &server)
        .args(["--permission-mode", "bypass", "show env"])
        .env("OPENAI_API_KEY", "sk-openai-secret")
        .env("SOME_SERVICE_API_KEY", "sk-other-secret")
        .env("HARMLESS_SETTING", "visible")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let env = &crate::common::sent_tool_results(&server.requests()[1].body)[0].0;
    assert!(env.contains("HARMLESS_SETTING=visible"), "{env}");
    assert!(env.contains("PATH="), "{env}");
    for secret in [TEST_KEY, "sk-openai-secret", "sk-other-secret"] {
        assert!(!env.contains(secret), "{secret} leaked: {env}");
    }
}

#[test]
fn ctrl_c_cancels_the_turn_and_kills_the_running_command() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({"command": "echo $$ > leader.pid; sleep 60"})).into(),
        Reply::text("unreachable").into(),
    ]);
    let child = run_against_model(&mut bareagent(dir.path()), &server)
        .args(["--permission-mode", "bypass", "sleep"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = dir.path().join("leader.pid");
    let started = std::time::Instant::now();
    // The whole pid is in the file (it exists as soon as the shell opens it).
    let written = || std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n'));
    while !written() && started.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: sending SIGINT to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cancelled"),
        "{}",
        text(&out.stderr)
    );
    let leader = crate::tools::read_pid(dir.path(), "leader.pid");
    // The kernel reaps the killed group soon after; wait for that, bounded.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while crate::tools::alive(leader) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !crate::tools::alive(leader),
        "the command outlived the cancel"
    );
    assert_eq!(server.requests().len(), 1, "no model call after the cancel");
}

/// A cloned repository's own config asks for bypass and a broad allow: both
/// are ignored, and the user told, until the user runs `bareagent trust`.
#[test]
fn an_untrusted_project_cannot_grant_itself_power() {
    let dir = workspace(&[(
        ".bareagent/config.toml",
        "[permissions]\nmode = \"bypass\"\nallow = [\"bash\"]\n",
    )]);
    let config_home = tempfile::tempdir().unwrap();
    let script = || {
        vec![
            Reply::tool("bash", json!({"command": "echo pwned > pwned.txt"})).into(),
            Reply::text("done").into(),
        ]
    };
    let run = |server: &ModelServer| {
        let mut command = bareagent(dir.path());
        command
            .env("XDG_CONFIG_HOME", config_home.path())
            .args(["run", "--provider", "anthropic", "--base-url"])
            .arg(server.anthropic_base())
            .arg("write the file")
            .env("ANTHROPIC_API_KEY", TEST_KEY)
            .output()
            .unwrap()
    };

    let server = ModelServer::start(script());
    let out = run(&server);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("Ignored settings")
            && stderr.contains("mode = \"bypass\"")
            && stderr.contains("allow \"bash\"")
            && stderr.contains("bareagent trust"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("pwned.txt").exists(),
        "the command ran: {stderr}"
    );
    let sent = crate::common::sent_tool_results(&server.requests()[1].body);
    assert!(sent[0].1, "{sent:?}");

    let trust = bareagent(dir.path())
        .env("XDG_CONFIG_HOME", config_home.path())
        .arg("trust")
        .output()
        .unwrap();
    assert!(trust.status.success(), "{}", text(&trust.stderr));
    assert!(
        text(&trust.stdout).contains("Trusted"),
        "{}",
        text(&trust.stdout)
    );

    let server = ModelServer::start(script());
    let out = run(&server);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("Ignored settings"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("pwned.txt")).unwrap_or_default(),
        "pwned\n",
        "{stderr}"
    );
}

/// A prompt where a command belongs gets the command that asks it; with
/// `--json` and stdin at its end, a question is "no answer", not the user's no.
#[test]
fn a_bare_prompt_and_a_closed_stdin_are_explained() {
    let dir = workspace(&[]);
    let out = bareagent(dir.path()).arg("fix it").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("bareagent run \"fix it\""),
        "{}",
        text(&out.stderr)
    );

    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({"command": "echo hi"})).into(),
        Reply::text("done").into(),
    ]);
    let out = run_against(&server, dir.path(), &["--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent = crate::common::sent_tool_results(&server.requests()[1].body);
    assert_eq!(
        sent[0],
        ("Denied: no answer (stdin closed)".to_string(), true)
    );
}

/// `bareagent run` against the scripted server's Chat Completions API, as
/// a compatible server (Ollama, vLLM, DeepSeek) is reached.
fn run_openai_compatible(server: &ModelServer, dir: &Path, extra: &[&str]) -> Output {
    bareagent(dir)
        .args(["run", "--provider", "openai", "--base-url"])
        .arg(server.openai_base())
        .args(["--model", "deepseek-chat", "--idle-timeout", "2"])
        .args(extra)
        .arg(DEMO_PROMPT)
        .env("OPENAI_API_KEY", TEST_KEY)
        .output()
        .unwrap()
}

/// A compatible server's reasoning: shown as one line on stderr once it
/// ends (never on stdout, where the answer goes), its tokens in the usage
/// line, and sent back with the tool calls it led to; `--quiet` shows none
/// of it.
#[test]
fn thinking_is_one_line_on_stderr_and_goes_back_with_its_tool_calls() {
    let thought = "greet.py has the bug.\nRead it first.\nThen fix it.";
    let script = || {
        vec![
            Reply::tool("read_file", json!({"path": "greet.py"}))
                .with_reasoning(thought, 40)
                .into(),
            Reply::text("It was `nme`.").into(),
        ]
    };
    let dir = demo_dir();
    let server = ModelServer::start(script());
    let out = run_openai_compatible(&server, dir.path(), &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim_end(), "It was `nme`.");
    assert!(
        stderr.contains("  (thought for 3 lines)\n→ read_file greet.py"),
        "{stderr}"
    );
    assert!(!stderr.contains("Read it first."), "{stderr}");
    assert!(stderr.contains(" out (40 reasoning) · "), "{stderr}");
    let second = &server.requests()[1].body;
    let assistant = &second["messages"][2];
    assert_eq!(assistant["role"], "assistant", "{second}");
    assert_eq!(assistant["reasoning_content"], thought, "{second}");
    assert!(assistant["tool_calls"].is_array(), "{second}");
    // No effort was set: none is sent (a strict server refuses what it does not know).
    assert!(second.get("reasoning_effort").is_none(), "{second}");

    let server = ModelServer::start(script());
    let quiet = run_openai_compatible(&server, demo_dir().path(), &["--quiet"]);
    let stderr = text(&quiet.stderr);
    assert!(quiet.status.success(), "{stderr}");
    assert!(!stderr.contains("thought for"), "{stderr}");
}

/// `bareagent run` on `stdin` with `args` (after the model server's flags).
fn run_with_stdin(dir: &Path, server: &ModelServer, args: &[&str], stdin: &str) -> Output {
    with_stdin(
        run_against_model(&mut bareagent(dir), server).args(args),
        stdin,
    )
}

/// Runs `command` with `stdin` as its input, to its end.
fn with_stdin(command: &mut Command, stdin: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// The text of the last user message of a request.
fn last_prompt(body: &Value) -> String {
    let messages = body["messages"].as_array().expect("messages");
    let last = messages.last().expect("a message");
    match &last["content"] {
        Value::String(text) => text.clone(),
        blocks => blocks[0]["text"].as_str().unwrap_or_default().to_string(),
    }
}

/// A prompt piped in, or `-`, is read from stdin; an empty one (argument
/// or stdin) is refused before any request; `--json` names the session
/// first, and that id resumes it.
#[test]
fn a_prompt_comes_from_stdin_and_the_json_names_the_session_first() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::text("Explained.").into(),
        Reply::text("Again.").into(),
    ]);
    let out = run_with_stdin(dir.path(), &server, &["--json"], "explain\nthis\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(last_prompt(&server.requests()[0].body), "explain\nthis");
    let first: Value = serde_json::from_str(text(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "session", "{}", text(&out.stdout));
    let id = first["id"].as_str().expect("an id").to_string();
    assert!(
        dir.path()
            .join(format!(".bareagent/sessions/{id}.jsonl"))
            .is_file()
    );

    let out = run_with_stdin(dir.path(), &server, &["--resume", &id, "-"], "go on");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let body = &server.requests()[1].body;
    assert_eq!(last_prompt(body), "go on");
    assert_eq!(body["messages"].as_array().unwrap().len(), 3, "{body}");

    let cases: [(&[&str], &str, &str); 4] = [
        (&[""], "", "the prompt is empty"),
        (&["  "], "", "the prompt is empty"),
        (&[], "", "the prompt read from stdin is empty"),
        (&["-"], " \n\n", "the prompt read from stdin is empty"),
    ];
    for (args, stdin, says) in cases {
        let out = run_with_stdin(dir.path(), &server, args, stdin);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    assert_eq!(server.requests().len(), 2, "an empty prompt asks nothing");
}

/// Counts of 0 and an empty model name are refused at start, naming the flag.
#[test]
fn zero_counts_and_an_empty_model_are_refused_at_start() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![]);
    let cases: [(&[&str], &str); 3] = [
        (&["--max-iterations", "0"], "--max-iterations"),
        (&["--max-attempts", "0"], "--max-attempts"),
        (&["--model", ""], "--model"),
    ];
    for (flags, names) in cases {
        let out = run_against(&server, dir.path(), flags);
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(names), "{flags:?}: {stderr}");
    }
    assert!(server.requests().is_empty());
}

/// Without a terminal a denial tells the model what the user could do:
/// accept-edits only for an edit the mode alone asked for.
#[test]
fn a_denial_suggests_accept_edits_only_where_it_would_allow() {
    let cases = [
        ("default", "edit_file", true),
        ("default", "bash", false),
        ("accept-edits", "bash", false),
        ("accept-edits", "write_file", false),
    ];
    for (mode, tool, suggests) in cases {
        let dir = workspace(&[("a.txt", "one\n")]);
        let input = match tool {
            "edit_file" => json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
            "bash" => json!({"command": "touch b.txt"}),
            // A file that gives the agent power: accept-edits asks too.
            _ => json!({"path": ".bareagent/config.toml", "content": "[permissions]\n"}),
        };
        let server = ModelServer::start(vec![
            Reply::tool(tool, input).into(),
            Reply::text("ok").into(),
        ]);
        let out = run_against(&server, dir.path(), &["--permission-mode", mode]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let sent = crate::common::sent_tool_results(&server.requests()[1].body);
        let (result, is_error) = &sent[0];
        assert!(is_error, "{mode} {tool}: {result}");
        assert!(
            result.contains("no terminal to ask on"),
            "{mode} {tool}: {result}"
        );
        assert_eq!(
            result.contains("accept-edits"),
            suggests,
            "{mode} {tool}: {result}"
        );
    }
}
