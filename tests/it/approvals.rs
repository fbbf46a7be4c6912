//! Approvals one at a time: one response with two sensitive reads (which the
//! loop runs at once) asks one question, waits for its answer, then asks the
//! next — on a real terminal (a pseudo-terminal) and with `--json`, where
//! every question has an id and only an answer naming it counts.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{TEST_KEY, sent_tool_results, workspace};
use crate::support::model_server::{ModelServer, Reply};

const WAIT: Duration = Duration::from_secs(20);

pub fn two_sensitive_reads() -> (tempfile::TempDir, ModelServer) {
    let dir = workspace(&[(".env", "KEY=one\n"), ("config/.env.local", "KEY=two\n")]);
    let server = ModelServer::start(vec![
        Reply::tools(vec![
            ("read_file", json!({"path": ".env"})),
            ("read_file", json!({"path": "config/.env.local"})),
        ])
        .into(),
        Reply::text("Read them.").into(),
    ]);
    (dir, server)
}

pub(crate) fn bareagent(dir: &Path, server: &ModelServer, extra: &[&str]) -> Command {
    let mut command = crate::common::bareagent(dir);
    command
        .args(["run", "--provider", "anthropic", "--base-url"])
        .arg(server.anthropic_base())
        .args(extra)
        .arg("read both env files")
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .env("NO_COLOR", "1");
    command
}

/// Everything read from one of the child's outputs, as it arrives.
#[derive(Clone, Default)]
pub(crate) struct Output(Arc<(Mutex<Vec<u8>>, Condvar)>);

impl Output {
    pub(crate) fn collect(reader: impl Read + Send + 'static) -> Output {
        Output::collect_answering(reader, None)
    }

    /// [`Output::collect`] from a terminal's master, which answers each
    /// cursor position query (`ESC [ 6 n`, which a line editor such as
    /// `bareagent chat`'s sends before each prompt) as a terminal would.
    fn collect_answering(
        reader: impl Read + Send + 'static,
        mut answers: Option<std::fs::File>,
    ) -> Output {
        const QUERY: &[u8] = b"\x1b[6n";
        let output = Output::default();
        let shared = output.clone();
        std::thread::spawn(move || {
            let mut reader = reader;
            let mut chunk = [0u8; 4096];
            let mut answered = 0;
            // A pseudo-terminal's master reads EIO once the child is gone.
            while let Ok(n @ 1..) = reader.read(&mut chunk) {
                let mut bytes = shared.0.0.lock().unwrap();
                bytes.extend_from_slice(&chunk[..n]);
                if let Some(answers) = answers.as_mut() {
                    let asked = bytes.windows(QUERY.len()).filter(|w| *w == QUERY).count();
                    for _ in answered..asked {
                        let _ = answers.write_all(b"\x1b[1;1R");
                    }
                    answered = asked;
                }
                drop(bytes);
                shared.0.1.notify_all();
            }
        });
        output
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.0.lock().unwrap()).into_owned()
    }

    /// Waits until `done` holds for the text so far; panics after [`WAIT`].
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        let mut bytes = self.0.0.lock().unwrap();
        loop {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if done(&text) {
                return text;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {what}; got:\n{text}"
            );
            bytes = self.0.1.wait_timeout(bytes, left).unwrap().0;
        }
    }
}

pub(crate) fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "bareagent did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `command` with stdin and stderr on a new pseudo-terminal (stdout
/// piped): the terminal's master end, the child, and what the terminal shows.
/// The terminal is the child's controlling terminal, so a `^C` written to
/// the master interrupts it as the user's key would.
pub(crate) fn on_a_terminal(command: Command) -> (std::fs::File, Child, Output) {
    on_a_terminal_sized(command, Stdio::piped(), 0)
}

/// [`on_a_terminal`] with stdout as given: `None` puts it on the terminal too.
pub(crate) fn on_a_terminal_with(
    command: Command,
    stdout: impl Into<Option<Stdio>>,
) -> (std::fs::File, Child, Output) {
    on_a_terminal_sized(command, stdout, 0)
}

/// [`on_a_terminal`] on a terminal `rows` lines high (0: a terminal that
/// does not say its size).
pub(crate) fn on_a_terminal_of(command: Command, rows: u16) -> (std::fs::File, Child, Output) {
    on_a_terminal_sized(command, Stdio::piped(), rows)
}

pub(crate) fn on_a_terminal_sized(
    mut command: Command,
    stdout: impl Into<Option<Stdio>>,
    rows: u16,
) -> (std::fs::File, Child, Output) {
    use std::os::unix::process::CommandExt;
    let (master, slave) = pty(rows);
    let stdout = stdout
        .into()
        .unwrap_or_else(|| Stdio::from(slave.try_clone().unwrap()));
    // SAFETY: setsid and ioctl are async-signal-safe; stdin is the slave.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .stdout(stdout)
        .spawn()
        .unwrap();
    // The parent's copies of the slave are gone with `Stdio`: the master
    // ends when the child does.
    let terminal = Output::collect_answering(master.try_clone().unwrap(), master.try_clone().ok());
    (master, child, terminal)
}

/// A pseudo-terminal: (master, slave).
fn pty(rows: u16) -> (std::fs::File, OwnedFd) {
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: rows,
        ws_col: if rows == 0 { 0 } else { 100 },
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two descriptors into the given integers and
    // reads the window size; the name and termios pointers may be null.
    let result = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(result, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
        )
    }
}

#[test]
fn on_a_terminal_the_second_question_comes_after_the_first_answer() {
    let (dir, server) = two_sensitive_reads();
    let (mut master, mut child, terminal) = on_a_terminal(bareagent(dir.path(), &server, &[]));
    let questions = |text: &str| text.matches("Allow read_file").count();

    // Both calls have started; only the first asked.
    let shown = terminal.wait_for("the first question and the second call", |t| {
        questions(t) >= 1 && t.contains("→ read_file config/.env.local")
    });
    assert_eq!(questions(&shown), 1, "{shown}");
    assert!(shown.contains("Allow read_file .env?"), "{shown}");
    master.write_all(b"y\n").unwrap();
    let shown = terminal.wait_for("the second question", |t| {
        t.contains("Allow read_file config/.env.local?")
    });
    assert_eq!(questions(&shown), 2, "{shown}");
    master.write_all(b"n\n").unwrap();
    assert!(wait_exit(&mut child).success(), "{}", terminal.text());

    // The terminal shows: question, its answer (said), next question.
    let shown = shown.replace("\r\n", "\n");
    let first = shown.find("Allow read_file .env?").expect(&shown);
    let second = shown
        .find("Allow read_file config/.env.local?")
        .expect(&shown);
    assert!(first < second, "{shown}");
    // The echo of the answer: after the prompt, or on a line of its own when
    // the second call's line came in between.
    // (A concurrent call's `→` line may land right after the open prompt,
    // so the echo can end that line rather than stand alone.)
    assert!(
        shown[first..second].lines().any(|l| l.ends_with("yes")),
        "the second question came before the first answer:\n{shown}"
    );
    // Each answer went to its own question.
    let sent = sent_tool_results(&server.requests()[1].body);
    assert!(!sent[0].1 && sent[0].0.contains("KEY=one"), "{sent:?}");
    assert!(sent[1].1 && sent[1].0.contains("Denied"), "{sent:?}");
}

#[test]
fn with_json_each_question_has_an_id_and_only_its_answer_counts() {
    let (dir, server) = two_sensitive_reads();
    let mut child = bareagent(dir.path(), &server, &["--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = Output::collect(child.stdout.take().unwrap());
    let stderr = Output::collect(child.stderr.take().unwrap());
    let events = |text: &str| -> Vec<Value> {
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let of_type = |text: &str, kind: &str| -> Vec<Value> {
        events(text)
            .into_iter()
            .filter(|e| e["type"] == kind)
            .collect()
    };

    let text = stdout.wait_for("the first approval request", |t| {
        !of_type(t, "approval_request").is_empty()
    });
    let first = of_type(&text, "approval_request")[0].clone();
    assert_eq!(first["summary"], ".env", "{first}");
    let id = first["id"].as_u64().expect("an id");

    // Answers that do not name this question are refused; it stays open.
    let wrong = [
        json!({"id": id + 1, "decision": "allow"}).to_string(),
        json!({"decision": "allow"}).to_string(),
        "y".to_string(),
    ];
    for (n, line) in wrong.iter().enumerate() {
        writeln!(stdin, "{line}").unwrap();
        let text = stdout.wait_for("a refusal", |t| {
            of_type(t, "approval_answer_refused").len() > n
        });
        let refused = &of_type(&text, "approval_answer_refused")[n];
        assert_eq!(refused["id"], id, "{refused}");
        assert!(
            refused["message"].as_str().unwrap().contains("still open"),
            "{refused}"
        );
    }
    stderr.wait_for("the refusal on stderr", |t| {
        t.contains("refused an approval answer")
    });
    let text = stdout.text();
    assert_eq!(
        of_type(&text, "approval_request").len(),
        1,
        "the second question came before the first answer:\n{text}"
    );
    assert!(
        of_type(&text, "tool_result").is_empty(),
        "a refused answer decided the question:\n{text}"
    );

    writeln!(stdin, "{}", json!({"id": id, "decision": "allow"})).unwrap();
    let text = stdout.wait_for("the second approval request", |t| {
        of_type(t, "approval_request").len() == 2
    });
    let second = of_type(&text, "approval_request")[1].clone();
    assert_eq!(second["summary"], "config/.env.local", "{second}");
    let second_id = second["id"].as_u64().expect("an id");
    assert_ne!(second_id, id);
    // The first question's answer does not answer the second.
    writeln!(stdin, "{}", json!({"id": id, "decision": "allow"})).unwrap();
    stdout.wait_for("a refusal of the stale answer", |t| {
        of_type(t, "approval_answer_refused")
            .iter()
            .any(|r| r["id"] == second_id)
    });
    writeln!(stdin, "{}", json!({"id": second_id, "decision": "reject"})).unwrap();
    assert!(wait_exit(&mut child).success(), "{}", stderr.text());

    let text = stdout.wait_for("the final event", |t| !of_type(t, "final").is_empty());
    let order: Vec<String> = events(&text)
        .iter()
        .filter_map(|e| e["type"].as_str().map(str::to_string))
        .filter(|t| t.starts_with("approval"))
        .collect();
    assert_eq!(
        order,
        [
            "approval_request",
            "approval_answer_refused",
            "approval_answer_refused",
            "approval_answer_refused",
            "approval_request",
            "approval_answer_refused",
        ]
    );
    let sent = sent_tool_results(&server.requests()[1].body);
    assert!(!sent[0].1 && sent[0].0.contains("KEY=one"), "{sent:?}");
    assert!(sent[1].1 && sent[1].0.contains("Denied"), "{sent:?}");
}

/// On a terminal, `bareagent run` in a directory whose own settings were
/// ignored asks whether to trust it; "y" records the trust and the settings
/// apply to this run at once; a second run does not ask again.
#[test]
fn on_a_terminal_the_first_run_asks_to_trust_the_project() {
    let dir = workspace(&[(
        ".bareagent/config.toml",
        "[permissions]\nallow = [\"bash(echo:*)\"]\n",
    )]);
    let config_home = tempfile::tempdir().unwrap();
    let script = || {
        ModelServer::start(vec![
            Reply::tool("bash", json!({"command": "echo trusted-run"})).into(),
            Reply::text("done").into(),
        ])
    };
    let server = script();
    let mut command = bareagent(dir.path(), &server, &[]);
    command.env("XDG_CONFIG_HOME", config_home.path());
    let (mut master, mut child, terminal) = on_a_terminal(command);
    terminal.wait_for("the trust question", |t| t.contains("[y/N]"));
    master.write_all(b"y\n").unwrap();
    assert!(wait_exit(&mut child).success(), "{}", terminal.text());
    let shown = terminal.text();
    assert!(shown.contains("trusted (recorded in"), "{shown}");
    assert!(
        !shown.contains("Allow bash"),
        "the allow rule applied at once: {shown}"
    );
    let sent = sent_tool_results(&server.requests()[1].body);
    assert_eq!(sent[0], ("trusted-run\n".to_string(), false), "{shown}");

    // Trusted now: no notice, no question.
    let server = script();
    let out = bareagent(dir.path(), &server, &[])
        .env("XDG_CONFIG_HOME", config_home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("[y/N]") && !stderr.contains("Ignored"),
        "{stderr}"
    );
}

/// `bareagent` alone on a terminal says what it is instead of waiting silently.
#[test]
fn the_language_server_on_a_terminal_says_what_it_is() {
    let dir = workspace(&[]);
    let (_master, mut child, terminal) = on_a_terminal(crate::common::bareagent(dir.path()));
    let shown = terminal.wait_for("the notice", |t| t.contains("bareagent run --help"));
    assert!(shown.contains("language server"), "{shown}");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A command written to fool the eye: a carriage return and an erase-line
/// sequence would draw `ls` over `rm -rf ~` on a raw terminal. The
/// question shows every character as it is.
#[test]
fn the_terminal_question_shows_a_command_that_tries_to_hide_itself() {
    let dir = workspace(&[("a.txt", "x\n")]);
    let hidden = "rm -rf ~/gone\r\u{1b}[2Kls";
    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({"command": hidden})).into(),
        Reply::text("Done.").into(),
    ]);
    let (mut master, mut child, terminal) = on_a_terminal(bareagent(dir.path(), &server, &[]));
    let shown = terminal.wait_for("the question", |t| t.contains("[N] no:"));
    // (The spinner before it clears its own line.)
    let question = shown.split("→ bash").nth(1).unwrap_or_default();
    assert!(
        !question.contains('\u{1b}'),
        "no escape reaches the terminal: {shown:?}"
    );
    assert!(
        shown.contains("rm -rf ~/gone\\u{d}\\u{1b}[2Kls"),
        "the whole command is shown: {shown:?}"
    );
    master.write_all(b"n\n").unwrap();
    wait_exit(&mut child);
}
