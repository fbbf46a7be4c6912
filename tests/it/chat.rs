//! `bareagent chat` on a real terminal: the built binary on a
//! pseudo-terminal that is its controlling terminal (so `^C` is the user's
//! Ctrl-C), real HTTP to the scripted model server. What the model is sent
//! is read from the server's requests; what the user sees, from the
//! terminal.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use serde_json::{Value, json};

use crate::approvals::{Output, on_a_terminal_sized, wait_exit};
use crate::common::{TEST_KEY, sent_tool_results, workspace};
use crate::support::model_server::{Hold, ModelServer, Reply, Step};

/// A chat on its own terminal; its process group is killed when the test
/// ends, passed or not.
struct Chat {
    master: std::fs::File,
    child: Child,
    terminal: Output,
    /// Where in the terminal's text the next `expect` starts looking.
    seen: usize,
    /// The user's state directory (the prompt history's), outside the workspace.
    state: Option<tempfile::TempDir>,
}

impl Drop for Chat {
    fn drop(&mut self) {
        if let Ok(group) = i32::try_from(self.child.id()) {
            // SAFETY: kill with a negative pid signals that process group.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
    }
}

impl Chat {
    fn start(dir: &Path, server: &ModelServer, extra: &[&str]) -> Chat {
        Chat::start_with(dir, server, extra, tempfile::tempdir().unwrap())
    }

    /// [`Chat::start`] with `state` as the user's state directory.
    fn start_with(
        dir: &Path,
        server: &ModelServer,
        extra: &[&str],
        state: tempfile::TempDir,
    ) -> Chat {
        let mut command = chat_command(dir, &state);
        command
            .args(["--provider", "anthropic", "--base-url"])
            .arg(server.anthropic_base())
            .args(["--model", "claude-sonnet-4-5"])
            .args(extra)
            .env("ANTHROPIC_API_KEY", TEST_KEY);
        Chat::launch(command, state)
    }

    /// `command` on its own terminal, once the prompt is there.
    fn launch(command: Command, state: tempfile::TempDir) -> Chat {
        // stdout on the terminal too: the line editor draws there.
        let (master, child, terminal) = on_a_terminal_sized(command, None, 24);
        let mut chat = Chat {
            master,
            child,
            terminal,
            seen: 0,
            state: Some(state),
        };
        chat.expect("/help for the commands");
        chat.expect("› ");
        chat
    }

    /// Waits for `text` after what was expected last, and moves past it.
    fn expect(&mut self, text: &str) -> String {
        let from = self.seen;
        let shown = self.terminal.wait_for(&format!("{text:?}"), |t| {
            t.get(from..).is_some_and(|t| t.contains(text))
        });
        let at = from + shown[from..].find(text).unwrap_or_default();
        self.seen = at + text.len();
        shown[from..self.seen].to_string()
    }

    /// Types `line` and Enter, once the prompt is there.
    fn send(&mut self, line: &str) {
        self.master.write_all(line.as_bytes()).unwrap();
        self.master.write_all(b"\r").unwrap();
    }

    /// Sends a prompt and waits for the turn's end and the next prompt.
    fn turn(&mut self, prompt: &str) -> String {
        self.send(prompt);
        let shown = self.expect(" model call");
        self.expect("› ");
        shown
    }

    /// A command, and what it printed up to the next prompt.
    fn command(&mut self, line: &str, shows: &str) -> String {
        self.send(line);
        let shown = self.expect(shows);
        shown + &self.expect("› ")
    }

    /// [`Chat::quit`], once sure no Esc was echoed (as `^[`).
    fn quit_having_echoed_no_esc(self) {
        let screen = self.terminal.text();
        assert!(!screen.contains("^["), "{screen}");
        self.quit();
    }

    fn key(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
    }

    /// Ctrl-D on an empty line: the chat ends, successfully. Returns the
    /// user's state directory.
    fn quit(mut self) -> tempfile::TempDir {
        self.key(b"\x04");
        let status = wait_exit(&mut self.child);
        assert!(status.success(), "{status:?}\n{}", self.terminal.text());
        self.state.take().expect("the state directory")
    }
}

/// `bareagent chat` in `dir`, with `state` as the user's state directory,
/// no colour, and a plain terminal.
fn chat_command(dir: &Path, state: &tempfile::TempDir) -> Command {
    let mut command: Command = crate::common::bareagent(dir);
    command
        .arg("chat")
        .env("XDG_STATE_HOME", state.path())
        .env("NO_COLOR", "1")
        .env("TERM", "xterm");
    command
}

/// One Anthropic call's usage: 1,000 in, 500 out, 2,000 cache write,
/// 10,000 cache read. At claude-sonnet-4-5's price ($3 / $15 / $3.75 /
/// $0.30 per million) it costs 0.003 + 0.0075 + 0.0075 + 0.003 = $0.021;
/// at claude-haiku-4-5's ($1 / $5 / $1.25 / $0.10), $0.007.
fn costing(reply: Reply) -> Step {
    Reply {
        input_tokens: 1_000,
        output_tokens: 500,
        cache_creation_input_tokens: 2_000,
        cache_read_input_tokens: 10_000,
        ..reply
    }
    .into()
}

/// The text of each message of a request, by role, as sent.
fn conversation(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|message| {
            let text = match &message["content"] {
                Value::String(text) => text.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("|"),
                _ => String::new(),
            };
            (message["role"].as_str().unwrap_or("").to_string(), text)
        })
        .collect()
}

fn pair(role: &str, text: &str) -> (String, String) {
    (role.to_string(), text.to_string())
}

fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(".bareagent/sessions"))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn turn_ends(file: &Path) -> usize {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|line| line.contains(r#""type":"turn_end""#))
        .count()
}

/// Two turns, the second on the first's history (a prompt typed on two
/// lines); `/cost` adds up what the server reported, at the price of the
/// model each call was made with (`/model` switches it); `/help`; an
/// unknown command is an error and the chat goes on; Ctrl-D ends it.
#[test]
fn two_turns_share_a_history_and_cost_adds_up_across_models() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        costing(Reply::text("First answer.")),
        costing(Reply::text("Second answer.")),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    let shown = chat.turn("first question");
    assert!(shown.contains("First answer."), "{shown}");

    let help = chat.command("/help", "Ctrl-D on an empty line");
    for command in ["/cost", "/rewind", "/resume [ID]", "/mode [MODE]"] {
        assert!(help.contains(command), "{help}");
    }
    let unknown = chat.command("/foo", "unknown command /foo");
    assert!(
        !unknown.contains("model calls"),
        "sent to the model: {unknown}"
    );
    chat.command(
        "/model",
        "model claude-sonnet-4-5 · $3 / $15 per million tokens in / out · context window 200k",
    );
    chat.command(
        "/model claude-haiku-4-5",
        "from the next turn on, model claude-haiku-4-5 · $1 / $5",
    );

    // A line ending in `\` goes on on the next one.
    chat.key(b"second \\\r");
    let shown = chat.turn("question");
    assert!(shown.contains("Second answer."), "{shown}");

    // 0.021 (sonnet) + 0.007 (haiku); the context is the last call's
    // 13,500 tokens of haiku's 200k window.
    let cost = chat.command("/cost", "% of 200k");
    let want = format!(
        "2,000 in · 4,000 cache write · 20,000 cache read · 1,000 out · $0.0280 · context {:.1}% of 200k",
        6.75
    );
    assert!(cost.contains(&want), "{cost}");
    chat.quit();

    // `/model` listed the models (a GET the server has no route for).
    let requests: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|request| request.path.ends_with("/v1/messages"))
        .collect();
    assert_eq!(
        requests.len(),
        2,
        "nothing but the two turns reached the model"
    );
    assert_eq!(requests[0].body["model"], "claude-sonnet-4-5");
    assert_eq!(requests[1].body["model"], "claude-haiku-4-5");
    assert_eq!(
        conversation(&requests[1].body),
        vec![
            pair("user", "first question"),
            pair("assistant", "First answer."),
            pair("user", "second \nquestion"),
        ]
    );
    // One session file for the chat, a turn end after each turn.
    let files = session_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(turn_ends(&files[0]), 2);
    let id = files[0].file_stem().unwrap().to_string_lossy().into_owned();
    assert!(cost.contains(&format!("session {id}: ")), "{cost}");
}

/// `/model` lists what the API lists for the key (asked once, with the
/// key and the API version), the model in use marked; a name off the list
/// still works, its cost unknown. A refused listing falls back to the
/// built-in suggestions with a note.
#[test]
fn model_lists_what_the_key_can_use_and_falls_back_to_the_built_in_list() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![]);
    server.serve_models(&["claude-opus-4-5", "claude-sonnet-4-5", "claude-next-1"]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    let listed = chat.command("/model", "claude-next-1");
    assert!(listed.contains("the models your key can use"), "{listed}");
    assert!(listed.contains("* claude-sonnet-4-5"), "{listed}");
    assert!(listed.contains("  claude-opus-4-5"), "{listed}");
    assert!(
        !listed.contains("claude-haiku-4-5"),
        "the built-in list: {listed}"
    );
    chat.command("/model", "claude-next-1");
    chat.command(
        "/model claude-next-1",
        "from the next turn on, model claude-next-1 · no price known",
    );
    chat.quit();
    let asked = server.requests();
    assert_eq!(asked.len(), 1, "listed once: {asked:?}");
    assert!(asked[0].path.starts_with("/v1/models"), "{}", asked[0].path);
    assert_eq!(asked[0].header("x-api-key"), Some(TEST_KEY));
    assert!(asked[0].header("anthropic-version").is_some());

    let server = ModelServer::start(vec![]);
    server.refuse_models();
    let mut chat = Chat::start(dir.path(), &server, &[]);
    let listed = chat.command("/model", "any name the provider serves works)");
    assert!(
        listed.contains("could not list the models (anthropic: "),
        "{listed}"
    );
    assert!(listed.contains("401"), "{listed}");
    assert!(listed.contains("  claude-haiku-4-5"), "{listed}");
    assert!(!listed.contains(TEST_KEY), "{listed}");
    chat.quit();
}

/// The prompts typed are kept for the next chat in the user's state
/// directory, readable by nobody else, never in the workspace: Up brings
/// the last one back.
#[test]
fn the_history_is_the_users_and_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::text("Hello.").into(),
        Reply::text("Again.").into(),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    chat.turn("remember this prompt");
    let state = chat.quit();
    let mut chat = Chat::start_with(dir.path(), &server, &[], state);
    chat.key(b"\x1b[A");
    chat.expect("remember this prompt");
    let shown = chat.turn("");
    assert!(shown.contains("Again."), "{shown}");
    let state = chat.quit();
    assert_eq!(
        conversation(&server.requests()[1].body),
        vec![pair("user", "remember this prompt")],
        "a new session, its prompt from the history"
    );
    let history = state.path().join("bareagent/chat_history");
    let kept = std::fs::read_to_string(&history).unwrap();
    assert!(kept.contains("remember this prompt"), "{kept}");
    let mode = std::fs::metadata(&history).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let in_workspace = walk(dir.path());
    assert!(
        in_workspace.iter().all(|p| !p.ends_with("chat_history")),
        "{in_workspace:?}"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

/// Ctrl-C while a command runs cancels the turn (the command is killed),
/// the prompt comes back, and the next turn goes on from a valid history;
/// Ctrl-C twice quits with 130.
#[test]
fn ctrl_c_cancels_the_turn_and_the_next_one_goes_on_and_twice_quits() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({"command": "sleep 30"})).into(),
        Reply::text("Going on.").into(),
        Reply::tool("bash", json!({"command": "sleep 31"})).into(),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &["--permission-mode", "bypass"]);
    chat.send("wait a while");
    chat.expect("→ bash sleep 30");
    chat.key(b"\x03");
    chat.expect("cancelling (Ctrl-C again to quit now)");
    chat.expect("cancelled; the history is kept");
    chat.expect("› ");
    let shown = chat.turn("never mind");
    assert!(shown.contains("Going on."), "{shown}");
    // A Ctrl-C at the prompt, long after, only clears the line.
    chat.key(b"not sent");
    chat.expect("not sent");
    chat.key(b"\x03");
    chat.expect("› ");
    assert_eq!(server.requests().len(), 2);

    chat.send("wait again");
    chat.expect("→ bash sleep 31");
    chat.key(b"\x03");
    chat.expect("cancelling (Ctrl-C again to quit now)");
    chat.key(b"\x03");
    let status = wait_exit(&mut chat.child);
    assert_eq!(status.code(), Some(130), "{}", chat.terminal.text());

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let sent = sent_tool_results(&requests[1].body);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(
        sent[0].1 && sent[0].0.contains("Cancelled by user"),
        "{sent:?}"
    );
    let last = conversation(&requests[1].body);
    assert_eq!(last.last(), Some(&pair("user", "never mind")), "{last:?}");
}

/// An approval asks inline, with the diff, and is answered on the same
/// terminal; one left open by Ctrl-C takes nothing the user types next.
#[test]
fn approvals_are_answered_inline_and_a_cancelled_one_reads_nothing_after() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::tool(
            "write_file",
            json!({"path": "new.txt", "content": "hello\n"}),
        )
        .into(),
        Reply::text("Written.").into(),
        Reply::tool(
            "write_file",
            json!({"path": "other.txt", "content": "no\n"}),
        )
        .into(),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    chat.send("write new.txt");
    let asked = chat.expect("[N] no: ");
    assert!(asked.contains("Allow write_file new.txt"), "{asked}");
    assert!(asked.contains("+hello"), "the diff: {asked}");
    chat.send("y");
    chat.expect("Written.");
    chat.expect("› ");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.txt")).unwrap(),
        "hello\n"
    );

    chat.send("write other.txt");
    chat.expect("Allow write_file other.txt");
    chat.expect("[N] no: ");
    chat.key(b"\x03");
    chat.expect("cancelled; the history is kept");
    chat.expect("› ");
    // Read by the prompt, not by the question Ctrl-C left.
    chat.command("/cost", "session ");
    chat.quit();
    assert!(!dir.path().join("other.txt").exists());
}

/// `/clear` starts a new session file with an empty history; `/resume`
/// goes back to the latest other session and says what it loaded;
/// `/sessions` lists both.
#[test]
fn clear_starts_a_new_session_and_resume_goes_back() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::text("One.").into(),
        Reply::text("Two.").into(),
        Reply::text("Three.").into(),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    chat.turn("first");
    let first = session_files(dir.path());
    assert_eq!(first.len(), 1);
    let first_id = first[0].file_stem().unwrap().to_string_lossy().into_owned();
    chat.command(
        "/clear",
        &format!("the previous one is saved (/resume {first_id} to go back)"),
    );
    chat.turn("second");
    assert_eq!(session_files(dir.path()).len(), 2);

    let listed = chat.command("/sessions", &first_id);
    assert!(listed.contains("second"), "{listed}");
    let loaded = chat.command("/resume", "agent: One.");
    assert!(loaded.contains("you: first"), "{loaded}");
    assert!(
        loaded.contains(&format!("resuming session {first_id} (2 messages")),
        "{loaded}"
    );
    chat.turn("third");
    let state = chat.quit();

    let requests = server.requests();
    assert_eq!(
        conversation(&requests[1].body),
        vec![pair("user", "second")]
    );
    assert_eq!(
        conversation(&requests[2].body),
        vec![
            pair("user", "first"),
            pair("assistant", "One."),
            pair("user", "third"),
        ]
    );
    assert_eq!(turn_ends(&first[0]), 2, "the resumed session is written to");

    // A new chat goes on with the session used last (as `run --continue`
    // picks it): the resumed one, not the newer one `/clear` started.
    let server = ModelServer::start(vec![Reply::text("Four.").into()]);
    let mut chat = Chat::start_with(dir.path(), &server, &["--continue"], state);
    let shown = chat.terminal.text();
    assert!(shown.contains("resuming session"), "{shown}");
    chat.turn("fourth");
    chat.quit();
    assert_eq!(
        conversation(&server.requests()[0].body),
        vec![
            pair("user", "first"),
            pair("assistant", "One."),
            pair("user", "third"),
            pair("assistant", "Three."),
            pair("user", "fourth"),
        ]
    );
}

/// Each turn reads the instructions of the directories its prompt names:
/// a later turn about another directory gets that directory's.
#[test]
fn each_turn_reads_the_instructions_its_prompt_is_about() {
    let dir = workspace(&[
        ("AGENTS.md", "ROOT RULE\n"),
        ("web/AGENTS.md", "WEB RULE\n"),
        ("web/app.js", "x\n"),
    ]);
    let server = ModelServer::start(vec![Reply::text("A.").into(), Reply::text("B.").into()]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    chat.turn("hello");
    chat.turn("look at web/app.js");
    chat.quit();
    let requests = server.requests();
    let system = |n: usize| requests[n].body["system"].to_string();
    assert!(
        system(0).contains("ROOT RULE") && !system(0).contains("WEB RULE"),
        "{}",
        system(0)
    );
    assert!(
        system(1).contains("ROOT RULE") && system(1).contains("WEB RULE"),
        "{}",
        system(1)
    );
}

/// `/mode plan` rebuilds the gate: an edit the default mode would ask
/// about is refused without a question; `/mode` says the mode, and an
/// unknown one changes nothing.
#[test]
fn mode_switches_the_gate_for_the_next_turn() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::tool("write_file", json!({"path": "new.txt", "content": "x\n"})).into(),
        Reply::text("Refused, then.").into(),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    chat.command(
        "/mode",
        "permission mode default (the modes: default, accept-edits, plan, bypass)",
    );
    chat.command("/mode careful", "unknown permission mode \"careful\"");
    chat.command("/mode plan", "permission mode plan from now on");
    let shown = chat.turn("write new.txt");
    assert!(!shown.contains("Allow write_file"), "{shown}");
    chat.quit();
    assert!(!dir.path().join("new.txt").exists());
    let sent = sent_tool_results(&server.requests()[1].body);
    assert!(sent[0].1, "{sent:?}");
}

/// `/compact` summarises the older turns with one model call, says the
/// sizes before and after, and the next turn is sent the summary; a
/// failing summary keeps the history.
#[test]
fn compact_now_summarises_and_a_failure_keeps_the_history() {
    let dir = workspace(&[]);
    let mut script: Vec<Step> = (1..=4)
        .map(|n| Reply::text(&format!("Answer {n}.")).into())
        .collect();
    script.push(crate::support::model_server::Fault::ServerError.into());
    script.push(Reply::text("THE SUMMARY").into());
    script.push(Reply::text("After.").into());
    let server = ModelServer::start(script);
    let mut chat = Chat::start(dir.path(), &server, &["--max-attempts", "1"]);
    chat.command("/compact", "Nothing to compact yet.");
    for n in 1..=4 {
        chat.turn(&format!("question {n}"));
    }
    chat.command("/compact", "the history is kept as it was");
    let done = chat.command("/compact", "older messages summarised");
    assert!(done.contains("Context compacted: about "), "{done}");
    chat.turn("question 5");
    chat.quit();

    let requests = server.requests();
    let last = conversation(&requests.last().unwrap().body);
    assert!(last[0].1.contains("THE SUMMARY"), "{last:?}");
    assert_eq!(last.last(), Some(&pair("user", "question 5")));
    assert!(
        !last.iter().any(|(_, text)| text == "question 1"),
        "{last:?}"
    );
}

/// What was typed while the turn ran, before a question was shown, does
/// not answer it: only an answer typed after it does.
#[test]
fn typing_ahead_answers_no_question() {
    let dir = workspace(&[]);
    let hold = Hold::new();
    let server = ModelServer::start(vec![
        Reply::tool("write_file", json!({"path": "new.txt", "content": "x\n"}))
            .held(&hold)
            .into(),
        Reply::text("Not written.").into(),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    chat.send("write new.txt");
    chat.expect("waiting for the model");
    // Typed ahead: read during the turn, dropped when the question shows.
    chat.send("y");
    hold.release();
    chat.expect("Allow write_file new.txt");
    chat.expect("[N] no: ");
    chat.send("n");
    chat.expect("Not written.");
    chat.expect("› ");
    chat.quit();
    assert!(!dir.path().join("new.txt").exists());
    let sent = sent_tool_results(&server.requests()[1].body);
    assert!(sent[0].1 && sent[0].0.contains("Denied"), "{sent:?}");
}

/// A turn whose answer was not streamed (the stream failed before any
/// text, and the whole answer came from a plain call) still shows it,
/// after a turn that streamed: nothing of one turn's display carries over.
#[test]
fn an_answer_that_did_not_stream_is_shown_after_one_that_did() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::text("Streamed.").into(),
        crate::support::model_server::Fault::MalformedSse {
            reply: Reply::text("Never shown."),
            after_text: false,
        }
        .into(),
        Reply::text("Whole answer.").into(),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    chat.turn("one");
    let shown = chat.turn("two");
    assert!(shown.contains("asked again without streaming"), "{shown}");
    assert!(shown.contains("Whole answer."), "{shown}");
    chat.quit();
}

/// Without a terminal there is nobody to prompt: the chat says so and
/// points at `bareagent run`, before any model call.
#[test]
fn without_a_terminal_the_chat_refuses_and_names_run() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![]);
    let out = crate::common::bareagent(dir.path())
        .args(["chat", "--provider", "anthropic", "--base-url"])
        .arg(server.anthropic_base())
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("needs a terminal") && stderr.contains("bareagent run"),
        "{stderr}"
    );
    assert!(server.requests().is_empty());
}

/// A session file planted in the workspace (one that came with a
/// repository) cannot drive the terminal through its first prompt in
/// `/sessions`, and `/resume` refuses it: the chat stays in its session.
#[test]
fn planted_session_text_shows_and_never_drives_the_terminal() {
    use std::os::unix::fs::PermissionsExt;
    let id = "20261201T120000000-evil";
    let attack = "hi\u{1b}]0;owned\u{7}\u{1b}[2J\rgone";
    let header = json!({"type": "header", "version": 1, "id": id, "created": "2026-12-01T12:00:00Z", "workspace": "/x", "first_prompt": attack});
    let message = json!({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": attack}]}});
    let dir = workspace(&[(
        &format!(".bareagent/sessions/{id}.jsonl"),
        &format!("{header}\n{message}\n"),
    )]);
    let file = dir.path().join(format!(".bareagent/sessions/{id}.jsonl"));
    // As private as bareagent would make it: still not the user's own.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = ModelServer::start(vec![]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    let listed = chat.command("/sessions", "gone");
    assert!(
        !listed.contains("\u{1b}]0;") && !listed.contains("\u{1b}[2J") && !listed.contains('\u{7}'),
        "{listed:?}"
    );
    assert!(listed.contains("\\u{1b}"), "shown escaped: {listed:?}");
    let refused = chat.command(&format!("/resume {id}"), "still in session");
    assert!(
        refused.contains("not written by bareagent for you"),
        "{refused}"
    );
    chat.quit();
}

/// The question reader (shared with `bareagent run`) waits for a line in
/// polls only on a terminal: off one, answers a program sends all at once
/// are each read (none left unseen in stdin's buffer).
#[test]
fn json_answers_sent_at_once_are_all_read() {
    use std::process::Stdio;
    let (dir, server) = crate::approvals::two_sensitive_reads();
    let mut child = crate::approvals::bareagent(dir.path(), &server, &["--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = Output::collect(child.stdout.take().unwrap());
    stdout.wait_for("the first question", |t| t.contains("approval_request"));
    // A refused line, then the answers to both questions (ids 1 and 2), in one write.
    let answers = format!(
        "y\n{}\n{}\n",
        json!({"id": 1, "decision": "allow"}),
        json!({"id": 2, "decision": "reject"})
    );
    // Kept open: the run must not need the end of input to see them.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(answers.as_bytes()).unwrap();
    assert!(wait_exit(&mut child).success(), "{}", stdout.text());
    drop(stdin);
    let sent = sent_tool_results(&server.requests()[1].body);
    assert!(!sent[0].1 && sent[1].1, "{sent:?}");
}

/// A resumed session's `/cost` starts from what its file recorded.
#[test]
fn a_resumed_session_costs_what_it_recorded() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![costing(Reply::text("Priced."))]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    chat.turn("spend a little");
    let state = chat.quit();
    let mut chat = Chat::start_with(dir.path(), &server, &["--continue"], state);
    let cost = chat.command("/cost", "session ");
    // One call at claude-sonnet-4-5's price; no call yet in this chat.
    assert!(
        cost.contains("1,000 in · 2,000 cache write · 10,000 cache read · 500 out · $0.0210"),
        "{cost}"
    );
    chat.quit();
}

/// `/rewind` undoes the last turn: its edit put back, the turn gone from
/// what the next turn sends; with nothing left, it says so and the chat
/// goes on.
#[test]
fn rewind_undoes_the_last_turn_and_the_model_forgets_it() {
    let dir = workspace(&[("a.txt", "one\n")]);
    let server = ModelServer::start(vec![
        Reply::tool(
            "edit_file",
            json!({"path": "a.txt", "old_string": "one", "new_string": "ONE"}),
        )
        .into(),
        Reply::text("Edited.").into(),
        Reply::text("Fresh start.").into(),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &["--permission-mode", "bypass"]);
    chat.turn("shout a.txt");
    let read = || std::fs::read_to_string(dir.path().join("a.txt")).unwrap();
    assert_eq!(read(), "ONE\n");
    chat.command("/rewind", "rewound the last turn: restored a.txt");
    assert_eq!(read(), "one\n");
    chat.command("/rewind", "nothing to rewind");
    let shown = chat.turn("hello");
    assert!(shown.contains("Fresh start."), "{shown}");
    chat.quit();
    let requests = server.requests();
    assert_eq!(
        conversation(&requests.last().unwrap().body),
        vec![pair("user", "hello")],
        "the rewound turn is not sent"
    );
}

/// `/rewind` after `/compact`: each of the compacted turns is still
/// rewound exactly — its edit put back and the turn gone from what is sent
/// next, history and disk agreeing — from the history the compaction
/// replaced, and the user is told that compaction is undone too.
#[test]
fn rewind_after_compact_rewinds_each_turn_exactly() {
    let dir = workspace(&[("a.txt", "v0\n")]);
    let mut script: Vec<Step> = Vec::new();
    for n in 1..=4 {
        let (old, new) = (format!("v{}", n - 1), format!("v{n}"));
        script.push(
            Reply::tool(
                "edit_file",
                json!({"path": "a.txt", "old_string": old, "new_string": new}),
            )
            .into(),
        );
        script.push(Reply::text(&format!("Answer {n}.")).into());
    }
    script.push(Reply::text("THE SUMMARY").into());
    script.push(Reply::text("After.").into());
    let server = ModelServer::start(script);
    let mut chat = Chat::start(dir.path(), &server, &["--permission-mode", "bypass"]);
    for n in 1..=4 {
        chat.turn(&format!("question {n}"));
    }
    chat.command("/compact", "older messages summarised");
    let read = || std::fs::read_to_string(dir.path().join("a.txt")).unwrap();
    let first = chat.command("/rewind", "rewound the last turn: restored a.txt");
    assert!(
        first.contains("the compaction since is undone too"),
        "{first}"
    );
    assert!(!first.contains("compacted during it"), "{first}");
    assert_eq!(read(), "v3\n");
    chat.command("/rewind", "rewound the last turn: restored a.txt");
    assert_eq!(read(), "v2\n");
    chat.turn("question 5");
    chat.quit();
    let requests = server.requests();
    let sent: Vec<String> = conversation(&requests.last().unwrap().body)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .filter(|text| text.starts_with("question") || text.contains("SUMMARY"))
        .collect();
    assert_eq!(
        sent,
        ["question 1", "question 2", "question 5"],
        "the rewound turns are not sent, nor a summary of them"
    );
}

/// `/effort` and `/thinking` show and set how hard the model thinks, from
/// the next turn on, over `--effort`; a level that is none is an error that
/// changes nothing.
#[test]
fn effort_and_thinking_are_set_from_the_chat() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::text("First answer.").into(),
        Reply::text("Second answer.").into(),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &["--effort", "low"]);
    // A model that takes effort (provider::models).
    chat.command("/model claude-opus-4-6", "from the next turn on, model");
    chat.command("/effort", "effort low · thinking auto");
    chat.turn("first question");
    chat.command("/effort huge", "`huge` is not an effort");
    chat.command(
        "/effort high",
        "from the next turn on, effort high · thinking auto",
    );
    chat.command(
        "/thinking off",
        "from the next turn on, effort high · thinking off",
    );
    chat.turn("second question");
    chat.quit();

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let (first, second) = (&requests[0].body, &requests[1].body);
    assert_eq!(first["output_config"]["effort"], "low", "{first}");
    assert_eq!(second["output_config"]["effort"], "high", "{second}");
    assert_ne!(
        first["thinking"], second["thinking"],
        "thinking off: {second}"
    );
}

/// A resumed chat shows what was said — by `/resume` and by `--continue` —
/// and never the agent's own markup: a rewound session whose file was
/// changed since ends in a `<system-reminder>` for the model, which is not
/// the user's prompt.
#[test]
fn resuming_shows_the_last_exchanges_without_markup() {
    let dir = workspace(&[("a.txt", "one\n")]);
    let server = ModelServer::start(vec![
        Reply::text("One.").into(),
        Reply::tool(
            "edit_file",
            json!({"path": "a.txt", "old_string": "one", "new_string": "ONE"}),
        )
        .into(),
        Reply::text("Edited.").into(),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &["--permission-mode", "bypass"]);
    chat.turn("first");
    chat.turn("shout a.txt");
    // Changed since: the rewind leaves it, and tells the model so in a note.
    std::fs::write(dir.path().join("a.txt"), "by hand\n").unwrap();
    chat.command("/rewind", "left as they are: a.txt");
    chat.command("/clear", "New session");
    let loaded = chat.command("/resume", "agent: One.");
    assert!(loaded.contains("you: first"), "{loaded}");
    assert!(
        !loaded.contains("system-reminder") && !loaded.contains("shout"),
        "{loaded}"
    );
    let state = chat.quit();

    let server = ModelServer::start(Vec::new());
    let chat = Chat::start_with(dir.path(), &server, &["--continue"], state);
    let shown = chat.terminal.text();
    let recap = &shown[shown.find("resuming session").expect("resumed")..];
    assert!(
        recap.contains("you: first") && recap.contains("agent: One."),
        "{shown}"
    );
    assert!(!recap.contains("system-reminder"), "{shown}");
    chat.quit();
}

/// `/model gpt-5.5` on Anthropic switches to OpenAI where its key (or a
/// server of one's own) is in the environment, and back with a Claude
/// name, the history going along; without one it is refused with the
/// reason. An OpenAI name never reaches `/v1/messages`.
#[test]
fn model_switches_the_provider_its_name_belongs_to() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::text("From Claude.").into(),
        Reply::text("From GPT.").into(),
        Reply::text("From Claude again.").into(),
    ]);
    // No OpenAI in the environment: refused, still Claude.
    let state = tempfile::tempdir().unwrap();
    let mut command = chat_command(dir.path(), &state);
    command
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .env("ANTHROPIC_BASE_URL", server.anthropic_base())
        .args(["--model", "claude-sonnet-4-5"]);
    let mut chat = Chat::launch(command, state);
    let refused = chat.command("/model gpt-5.5", "OPENAI_API_KEY is not set");
    assert!(
        refused.contains("gpt-5.5 is a model of the openai API"),
        "{refused}"
    );
    chat.turn("first");
    chat.quit();
    let sent = server.requests();
    assert_eq!(sent[0].path, "/v1/messages");
    assert_eq!(sent[0].body["model"], "claude-sonnet-4-5");

    // With OpenAI's base URL: switched, and back.
    let state = tempfile::tempdir().unwrap();
    let mut command = chat_command(dir.path(), &state);
    command
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .env("ANTHROPIC_BASE_URL", server.anthropic_base())
        .env("OPENAI_API_KEY", TEST_KEY)
        .env("OPENAI_BASE_URL", server.openai_base())
        .args(["--model", "claude-sonnet-4-5"]);
    let mut chat = Chat::launch(command, state);
    chat.command("/model gpt-5.5", "provider openai");
    chat.turn("second");
    chat.command("/model claude-haiku-4-5", "provider anthropic");
    chat.turn("third");
    chat.quit();
    let sent = server.requests();
    assert_eq!(sent.len(), 3);
    assert!(
        sent[1].path.ends_with("/chat/completions"),
        "{}",
        sent[1].path
    );
    assert_eq!(sent[1].body["model"], "gpt-5.5");
    assert_eq!(sent[2].path, "/v1/messages");
    assert_eq!(sent[2].body["model"], "claude-haiku-4-5");
    let history = conversation(&sent[2].body);
    assert_eq!(
        history,
        [
            pair("user", "second"),
            pair("assistant", "From GPT."),
            pair("user", "third")
        ]
    );
}

/// Esc during a turn cancels it as Ctrl-C does: the running command is
/// killed, the history stays valid and the next turn goes on from it;
/// nothing is echoed; what was typed during the turn is at the next
/// prompt, to send with Enter.
#[test]
fn esc_cancels_the_turn_and_what_was_typed_meanwhile_is_the_next_prompt() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({"command": "sleep 30"})).into(),
        Reply::text("Going on.").into(),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &["--permission-mode", "bypass"]);
    chat.send("wait a while");
    chat.expect("→ bash sleep 30");
    chat.key(b"never mind");
    chat.key(b"\x1b");
    chat.expect("cancelling (Esc)");
    chat.expect("cancelled; the history is kept");
    chat.expect("› never mind");
    chat.key(b"\r");
    chat.expect("Going on.");
    chat.expect("› ");
    chat.quit_having_echoed_no_esc();
    let requests = server.requests();
    let sent = sent_tool_results(&requests[1].body);
    assert!(
        sent[0].1 && sent[0].0.contains("Cancelled by user"),
        "{sent:?}"
    );
    let last = conversation(&requests[1].body);
    assert_eq!(last.last(), Some(&pair("user", "never mind")), "{last:?}");
}

/// A chat whose commands' pager is `pager` (a shell command line).
fn chat_with_pager(dir: &Path, server: &ModelServer, pager: &str) -> Chat {
    let state = tempfile::tempdir().unwrap();
    let mut command = chat_command(dir, &state);
    command
        .env("PAGER", pager)
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .env("ANTHROPIC_BASE_URL", server.anthropic_base())
        .args(["--model", "claude-sonnet-4-5"]);
    Chat::launch(command, state)
}

/// An approval is one key: `v` shows the whole diff in the pager and asks
/// again, `t` is no with a line that reaches the model with the refusal,
/// `y` is yes; Esc at a question cancels the turn, echoing nothing.
#[test]
fn approvals_are_single_keys_with_the_pager_and_a_reason_for_no() {
    let long: String = (1..=60).map(|n| format!("line {n}\n")).collect();
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply::tool("write_file", json!({"path": "long.txt", "content": long})).into(),
        Reply::tool("bash", json!({"command": "rm -rf build"})).into(),
        Reply::text("Understood.").into(),
        Reply::tool("write_file", json!({"path": "other.txt", "content": "x\n"})).into(),
    ]);
    let paged = dir.path().join("paged.txt");
    let pager = format!("cat > '{}'", paged.display());
    let mut chat = chat_with_pager(dir.path(), &server, &pager);
    chat.send("write long.txt");
    chat.expect("[v] the whole diff");
    chat.expect("[N] no: ");
    chat.key(b"v");
    // Asked again once the pager ends, with the whole diff paged.
    chat.expect("[N] no: ");
    let whole = std::fs::read_to_string(&paged).unwrap();
    assert!(
        whole.contains("+line 1\n") && whole.contains("+line 60\n"),
        "{whole}"
    );
    chat.key(b"y");
    chat.expect("yes");
    chat.expect("Allow bash rm -rf build");
    chat.expect("[N] no: ");
    chat.key(b"t");
    chat.expect("tell the agent why");
    chat.key(b"use cargo cleam");
    chat.key(b"\x7fn\r");
    chat.expect("Understood.");
    chat.expect("› ");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("long.txt")).unwrap(),
        long
    );
    let sent = sent_tool_results(&server.requests()[2].body);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(sent[1].1, "{sent:?}");
    assert!(sent[1].0.contains("Denied by user"), "{sent:?}");
    assert!(sent[1].0.contains("use cargo clean"), "{sent:?}");

    chat.send("write other.txt");
    chat.expect("[N] no: ");
    chat.key(b"\x1b");
    chat.expect("cancelled; the history is kept");
    chat.expect("› ");
    chat.quit_having_echoed_no_esc();
    assert!(!dir.path().join("other.txt").exists());
}

impl Chat {
    /// Pastes `text` as a terminal does: wrapped in the bracketed-paste
    /// marks if the program asked for them (`ESC [?2004h`), else as typed.
    fn paste(&mut self, text: &str) {
        if self.terminal.text().contains("\x1b[?2004h") {
            self.key(format!("\x1b[200~{text}\x1b[201~").as_bytes());
        } else {
            self.key(text.as_bytes());
        }
    }
}

/// The blocks of the last user message of a request.
fn last_user_blocks(body: &Value) -> Vec<Value> {
    let messages = body["messages"].as_array().expect("messages");
    let last = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .expect("a user message");
    last["content"].as_array().cloned().unwrap_or_default()
}

/// A paste is one prompt, however many lines it has; a long one shows
/// folded in the line and is sent whole; an image's path in it is sent
/// as the image.
#[test]
fn a_paste_is_one_prompt_folded_when_long_and_an_image_path_is_the_image() {
    let png: &[u8] = b"\x89PNG\r\n\x1a\nnot really an image";
    let dir = workspace(&[]);
    std::fs::write(dir.path().join("shot.png"), png).unwrap();
    let server = ModelServer::start(vec![
        Reply::text("One.").into(),
        Reply::text("Two.").into(),
        Reply::text("Three.").into(),
    ]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    chat.paste("Traceback (most recent call last):\n  File \"x.py\", line 1\nNameError: nme");
    chat.key(b"\r");
    chat.expect("One.");
    chat.expect("› ");

    let long: Vec<String> = (1..=42).map(|n| format!("log line {n}")).collect();
    chat.paste(&long.join("\n"));
    chat.expect("[pasted 42 lines]");
    chat.key(b" what failed?\r");
    chat.expect("Two.");
    chat.expect("› ");

    chat.paste("what is in shot.png");
    chat.key(b"?\r");
    chat.expect("Three.");
    chat.expect("› ");
    chat.quit();

    let sent = server.requests();
    assert_eq!(sent.len(), 3);
    assert_eq!(
        last_user_blocks(&sent[0].body)[0]["text"],
        "Traceback (most recent call last):\n  File \"x.py\", line 1\nNameError: nme"
    );
    let folded = last_user_blocks(&sent[1].body)[0]["text"].clone();
    assert_eq!(folded, format!("{} what failed?", long.join("\n")));
    let blocks = last_user_blocks(&sent[2].body);
    assert_eq!(blocks[0]["text"], "what is in shot.png?");
    use base64::Engine;
    assert_eq!(blocks[1]["type"], "image", "{blocks:?}");
    assert_eq!(blocks[1]["source"]["media_type"], "image/png");
    assert_eq!(
        blocks[1]["source"]["data"],
        base64::engine::general_purpose::STANDARD.encode(png)
    );
}

/// Tab completes `@` mentions from the workspace's files, not the ignored
/// ones; a mentioned file's text goes with the prompt; a file a deny rule
/// covers is refused with the rule, nothing sent, the line given back.
#[test]
fn mentions_complete_with_tab_and_attach_the_file_through_the_rules() {
    let dir = workspace(&[
        ("src/lib.rs", "pub fn answer() -> u32 { 42 }\n"),
        (".gitignore", "ignored/\n"),
        ("ignored/notes.txt", "not offered\n"),
        ("secret.txt", "hunter2\n"),
        ("conf.txt", TEST_KEY),
    ]);
    crate::common::user_config(dir.path(), "[permissions]\ndeny = [\"read(secret.txt)\"]\n");
    let server = ModelServer::start(vec![Reply::text("It returns 42.").into()]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    chat.key(b"what is @secret.txt");
    chat.key(b"\r");
    chat.expect("secret.txt is not attached: Denied by the permission rule");
    chat.expect("nothing was sent");
    chat.expect("› what is @secret.txt");
    // The line back, cleared (Ctrl-U) for the next prompt.
    chat.key(b"\x15");
    chat.key(b"explain @ign\t @src/li\t");
    chat.expect("@src/lib.rs");
    chat.key(b" @conf.txt\r");
    chat.expect("It returns 42.");
    chat.expect("› ");
    chat.quit();

    let sent = server.requests();
    assert_eq!(sent.len(), 1, "the denied prompt was not sent");
    let blocks = last_user_blocks(&sent[0].body);
    assert_eq!(
        blocks[0]["text"].as_str().map(str::trim),
        Some("explain @ign @src/lib.rs  @conf.txt")
    );
    let attached = blocks[1]["text"].as_str().unwrap_or_default();
    assert!(attached.contains("<file path=\"src/lib.rs\""), "{attached}");
    assert!(
        attached.contains("pub fn answer() -> u32 { 42 }"),
        "{attached}"
    );
    assert!(!format!("{:?}", sent[0].body).contains("hunter2"));
    let key_file = blocks[2]["text"].as_str().unwrap_or_default();
    assert!(key_file.contains("<file path=\"conf.txt\""), "{key_file}");
    assert!(!sent[0].raw_body.contains(TEST_KEY), "the key is scrubbed");
}

/// `!command` runs in the sandbox, shows its output, and puts it in the
/// history: the next request carries it.
#[test]
fn a_bang_command_runs_and_the_model_reads_its_output_next() {
    let dir = workspace(&[("a.txt", "from the file\n"), ("leak.txt", TEST_KEY)]);
    let server = ModelServer::start(vec![Reply::text("It printed the file.").into()]);
    let mut chat = Chat::start(dir.path(), &server, &[]);
    chat.send("!cat a.txt; echo done-$((40 + 2)); cat leak.txt");
    chat.expect("done-42");
    chat.expect("(exit code 0)");
    chat.expect("› ");
    // Esc stops a command that runs long, as Ctrl-C does.
    chat.send("!sleep 30; echo never");
    chat.expect("running it (Esc or Ctrl-C stops it)");
    chat.key(b"\x1b");
    chat.expect("(cancelled; the command and its children were killed)");
    chat.expect("› ");
    chat.turn("what did it print?");
    chat.quit();
    let sent = server.requests();
    assert_eq!(sent.len(), 1, "the commands ask no model");
    let history = conversation(&sent[0].body);
    let all: String = history.iter().map(|(_, text)| text.as_str()).collect();
    assert!(
        all.contains("I ran `cat a.txt; echo done-$((40 + 2)); cat leak.txt` myself (exit code 0)"),
        "{history:?}"
    );
    assert!(!all.contains(TEST_KEY), "the key is scrubbed: {history:?}");
    assert!(all.contains("from the file\ndone-42"), "{history:?}");
    assert!(
        all.contains("I ran `sleep 30; echo never` myself (cancelled"),
        "{history:?}"
    );
    assert!(!all.contains("never\n"), "{history:?}");
    assert!(all.contains("what did it print?"), "{history:?}");
}
