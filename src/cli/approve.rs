//! Asking the user on the command line: a prompt on a terminal, a JSON
//! request and reply line with `--json`, and no when nobody can be asked.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::diff_view;
use super::output::print_json_line;
use super::turn_keys::{Borrowed, Keys};
use crate::permission::{ActionKind, Approval, Approver, DENIED_BY_USER, Question};

pub enum TerminalApprover {
    /// Prompt on stderr, answer on stdin: a key at a time where the turn
    /// has the keyboard ([`Keys`]), else a line.
    Tty(Option<Keys>),
    /// `{"type":"approval_request","id":N,…}` on stdout; the answer is the
    /// line on stdin that names the same id (see docs/protocol.md).
    JsonLines { last_id: AtomicU64 },
    /// stdin is not a terminal: nobody can answer, so the answer is no.
    Nobody,
}

impl TerminalApprover {
    pub fn for_run(json: bool, stdin_is_terminal: bool, keys: Option<Keys>) -> Self {
        match (json, stdin_is_terminal) {
            (true, _) => TerminalApprover::JsonLines {
                last_id: AtomicU64::new(0),
            },
            (false, true) => TerminalApprover::Tty(keys),
            (false, false) => TerminalApprover::Nobody,
        }
    }
}

// The gate asks one question at a time (`permission::serial`), so each of
// these reads the answer to its own question and no other.
#[async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, question: &Question<'_>) -> Approval {
        let action = question.action;
        match self {
            TerminalApprover::Nobody => Approval::Reject(format!(
                "Denied: `{}` needs approval ({}) and there is no terminal to ask on. (The user can {}.)",
                action.tool,
                question.reason,
                how_to_allow(question)
            )),
            TerminalApprover::Tty(keys) => {
                // The keys are taken (what was typed before, flushed)
                // before the question shows: an answer typed on seeing it
                // is never flushed with the typed-ahead.
                let borrowed = match keys {
                    Some(keys) => Some(keys.borrow()),
                    None => {
                        let _ = rustix::termios::tcflush(
                            std::io::stdin(),
                            rustix::termios::QueueSelector::IFlush,
                        );
                        None
                    }
                };
                let diff = question
                    .diff()
                    .map(diff_view::for_stderr)
                    .unwrap_or_default();
                eprint!(
                    "Allow {} {}? ({})\n{diff}",
                    action.tool,
                    diff_view::visible_lines(&action.summary),
                    diff_view::visible_lines(question.reason),
                );
                match (keys, borrowed) {
                    (Some(keys), Some(borrowed)) => ask_by_key(keys, borrowed, question).await,
                    _ => {
                        eprint!(
                            "  [y] once  [s] allow {rule} for this session  [a] always allow {rule} (saved in your config for this project)  [N] no: ",
                            rule = diff_view::visible_lines(question.rule)
                        );
                        parse_word(&read_line().await.unwrap_or_default())
                    }
                }
            }
            TerminalApprover::JsonLines { last_id } => {
                let id = last_id.fetch_add(1, Ordering::Relaxed) + 1;
                print_json_line(&json!({
                    "type": "approval_request", "id": id, "tool": action.tool,
                    "kind": format!("{:?}", action.kind).to_lowercase(), "summary": action.summary,
                    "reason": question.reason, "rule": question.rule, "diff": question.diff(),
                }));
                // Until an answer for this id, or the end of input (no).
                while let Some(line) = read_line().await {
                    match parse_json_answer(&line, id) {
                        Ok(approval) => return approval,
                        Err(problem) => {
                            let message = format!(
                                "{problem}; approval {id} is still open: answer {{\"id\": {id}, \"decision\": \"allow\" | \"allow_session\" | \"allow_always\" | \"reject\"}}"
                            );
                            eprintln!("bareagent: refused an approval answer: {message}");
                            print_json_line(&json!({
                                "type": "approval_answer_refused", "id": id, "message": message,
                            }));
                        }
                    }
                }
                Approval::Reject(NO_ANSWER.to_string())
            }
        }
    }
}

/// What the user could do so that `question` is not asked: accept-edits
/// only where it would have allowed it — an edit asked only because the
/// mode asks for edits (never a command, nor an edit a rule or a sensitive
/// path asks for, which accept-edits asks for too).
fn how_to_allow(question: &Question<'_>) -> String {
    // The gate's own reason for an edit in the default mode
    // (`PermissionGate::default_reason`); checked by the run tests.
    let mode_asks =
        question.action.kind == ActionKind::Edit && question.reason == "it changes files";
    let rule = diff_view::visible_lines(question.rule);
    match mode_asks {
        true => {
            format!("rerun with --permission-mode accept-edits, or add the allow rule `{rule}`")
        }
        false => format!("add the allow rule `{rule}`, or rerun with --permission-mode bypass"),
    }
}

/// The question's keys, answered by one key: `y`, `s`, `a`, `n` or Enter,
/// `t` (no, and a line for the agent on why), `v` (the whole diff in the
/// pager, then the question again). Esc cancels the turn (the key reader
/// does that); any other key is ignored.
async fn ask_by_key(keys: &Keys, mut borrowed: Borrowed, question: &Question<'_>) -> Approval {
    let rule = diff_view::visible_lines(question.rule);
    let view = match question.diff() {
        Some(_) => "  [v] the whole diff",
        None => "",
    };
    let choices = format!(
        "  [y] once  [s] allow {rule} for this session  [a] always allow {rule} (saved in your config for this project){view}  [t] no, and tell the agent why  [N] no: "
    );
    eprint!("{choices}");
    loop {
        let Some(bytes) = borrowed.next().await else {
            return Approval::Reject(NO_ANSWER.to_string());
        };
        let (approval, said) = match bytes.first().map(u8::to_ascii_lowercase) {
            Some(b'y') => (Approval::AllowOnce, "yes"),
            Some(b's') => (Approval::AllowForSession, "yes, for this session"),
            Some(b'a') => (Approval::AllowAlways, "yes, always"),
            Some(b'n' | b'\r' | b'\n') => (Approval::Reject(DENIED_BY_USER.to_string()), "no"),
            Some(b't') => {
                eprint!("no; tell the agent why (Enter sends): ");
                let why = read_reason(&mut borrowed).await;
                return Approval::Reject(refusal(&why));
            }
            Some(b'v') if question.diff().is_some() => {
                let diff = question.diff().unwrap_or_default().to_string();
                let keys = keys.clone();
                let paged = tokio::task::spawn_blocking(move || keys.paused(|| page(&diff)))
                    .await
                    .map_err(|error| error.to_string())
                    .and_then(|paged| paged);
                if let Err(error) = paged {
                    eprintln!("\nbareagent: cannot show the diff in the pager: {error}");
                }
                eprint!("{choices}");
                continue;
            }
            _ => continue,
        };
        eprintln!("{said}");
        return approval;
    }
}

/// The user's no, with what they want the agent to know, if anything.
fn refusal(why: &str) -> String {
    match why.trim() {
        "" => DENIED_BY_USER.to_string(),
        why => format!("{DENIED_BY_USER}, who says: {why}"),
    }
}

/// A line typed with the keys borrowed (no echo from the terminal, so
/// echoed here): Enter ends it, Backspace takes a character back, other
/// control keys are ignored. Empty if the keys are given back first.
async fn read_reason(keys: &mut Borrowed) -> String {
    use std::io::Write;
    let mut line: Vec<u8> = Vec::new();
    while let Some(bytes) = keys.next().await {
        let mut echo: Vec<u8> = Vec::new();
        for byte in bytes {
            match byte {
                b'\r' | b'\n' => {
                    eprintln!();
                    return String::from_utf8_lossy(&line).into_owned();
                }
                0x7f | 0x08 => {
                    let text = String::from_utf8_lossy(&line).into_owned();
                    let mut chars = text.chars();
                    if chars.next_back().is_some() {
                        line = chars.as_str().as_bytes().to_vec();
                        echo.extend_from_slice(b"\x08 \x08");
                    }
                }
                byte if byte < 0x20 => {}
                byte => {
                    line.push(byte);
                    echo.push(byte);
                }
            }
        }
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(&echo);
        let _ = stderr.flush();
    }
    String::new()
}

/// `diff`, whole, in `$PAGER` (else `less -R`), drawn on stderr's
/// terminal; returns when the pager ends.
fn page(diff: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::fd::AsFd;
    let pager = std::env::var("PAGER")
        .ok()
        .filter(|pager| !pager.trim().is_empty())
        .unwrap_or_else(|| "less -R".to_string());
    let text = diff_view::for_pager(diff);
    let screen = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|error| error.to_string())?;
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(&pager)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::from(screen))
        .spawn()
        .map_err(|error| format!("{pager}: {error}"))?;
    if let Some(mut input) = child.stdin.take() {
        // A pager quit before the end closes its input: not an error.
        let _ = input.write_all(text.as_bytes());
    }
    child.wait().map_err(|error| error.to_string())?;
    Ok(())
}

/// The answer when stdin ends before the question is answered.
const NO_ANSWER: &str = "Denied: no answer (stdin closed)";

/// The first-run question for a directory whose own settings were left out:
/// trust it? Only `y`/`yes` trusts; anything else, end of input included, is no.
pub async fn ask_to_trust(root: &std::path::Path) -> bool {
    eprint!(
        "Trust {} and apply its .bareagent/config.toml in full (it may allow commands)? [y/N] ",
        root.display()
    );
    matches!(
        read_line()
            .await
            .unwrap_or_default()
            .trim()
            .to_lowercase()
            .as_str(),
        "y" | "yes"
    )
}

/// One line of stdin; `None` at the end of input.
///
/// On a terminal the reader gives up once nobody waits for it: a question
/// dropped by a cancelled turn must not leave a read behind that takes the
/// next line the user types (at `bareagent chat`'s prompt, say). So it
/// waits for input in short polls, and reads only when a line is there (a
/// terminal hands over one line per read, so none waits in stdin's buffer
/// unseen by the poll). Off a terminal (`--json` answers from a program,
/// several lines at once maybe) it reads as usual.
async fn read_line() -> Option<String> {
    let waiting = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let _dropped = StopWaitingOnDrop(waiting.clone());
    let terminal = std::io::stdin().is_terminal();
    tokio::task::spawn_blocking(move || {
        if terminal && !line_ready(&waiting) {
            return None;
        }
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    })
    .await
    .unwrap_or_default()
}

/// Waits for a line on the terminal while someone waits for it: false
/// once nobody does (input that came meanwhile is not theirs), or when
/// stdin cannot be polled.
fn line_ready(waiting: &std::sync::atomic::AtomicBool) -> bool {
    let stdin = std::io::stdin();
    let tick = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    while waiting.load(Ordering::Relaxed) {
        let mut fds = [rustix::event::PollFd::new(
            &stdin,
            rustix::event::PollFlags::IN,
        )];
        match rustix::event::poll(&mut fds, Some(&tick)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => {}
            Ok(_) => return waiting.load(Ordering::Relaxed),
            Err(_) => return false,
        }
    }
    false
}

/// Tells a reader that nobody waits for its line any more.
struct StopWaitingOnDrop(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Drop for StopWaitingOnDrop {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// On a terminal: `y`, `s`, `a`; anything else, end of input included, is no.
fn parse_word(line: &str) -> Approval {
    match line.trim().to_lowercase().as_str() {
        "y" | "yes" => Approval::AllowOnce,
        "s" | "session" => Approval::AllowForSession,
        "a" | "always" => Approval::AllowAlways,
        _ => Approval::Reject(DENIED_BY_USER.to_string()),
    }
}

/// With `--json`: `{"id": N, "decision": "allow" | "allow_session" |
/// "allow_always" | "reject"}` for the open question `id`. Anything else
/// is refused (the question stays open), never taken as an answer: an
/// answer meant for another question must not decide this one.
fn parse_json_answer(line: &str, id: u64) -> Result<Approval, String> {
    let value: Value = serde_json::from_str(line.trim())
        .map_err(|_| "the answer is not a JSON object".to_string())?;
    match value.get("id") {
        None => return Err("the answer has no \"id\"".into()),
        Some(given) if given.as_u64() != Some(id) => {
            return Err(format!(
                "the answer is for approval {given}, not for the open approval {id}"
            ));
        }
        Some(_) => {}
    }
    match value.get("decision").and_then(Value::as_str) {
        Some("allow") => Ok(Approval::AllowOnce),
        Some("allow_session") => Ok(Approval::AllowForSession),
        Some("allow_always") => Ok(Approval::AllowAlways),
        Some("reject") => Ok(Approval::Reject(refusal(
            value
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        ))),
        Some(other) => Err(format!("unknown decision \"{other}\"")),
        None => Err("the answer has no \"decision\"".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_answers_parse() {
        assert_eq!(parse_word("y\n"), Approval::AllowOnce);
        assert_eq!(parse_word("S"), Approval::AllowForSession);
        assert_eq!(parse_word("a"), Approval::AllowAlways);
        assert_eq!(parse_word(""), Approval::Reject(DENIED_BY_USER.into()));
        assert_eq!(parse_word("maybe"), Approval::Reject(DENIED_BY_USER.into()));
    }

    #[test]
    fn json_answers_count_only_for_their_own_id() {
        let no = Approval::Reject(DENIED_BY_USER.into());
        let cases: Vec<(&str, Result<Approval, &str>)> = vec![
            (r#"{"id": 3, "decision": "allow"}"#, Ok(Approval::AllowOnce)),
            (
                r#"{"decision": "allow_session", "id": 3}"#,
                Ok(Approval::AllowForSession),
            ),
            (
                r#"{"id": 3, "decision": "allow_always"}"#,
                Ok(Approval::AllowAlways),
            ),
            (r#"{"id": 3, "decision": "reject"}"#, Ok(no)),
            (
                r#"{"id": 3, "decision": "reject", "reason": "use rg"}"#,
                Ok(Approval::Reject(format!(
                    "{DENIED_BY_USER}, who says: use rg"
                ))),
            ),
            (r#"{"id": 4, "decision": "allow"}"#, Err("for approval 4")),
            (
                r#"{"id": "3", "decision": "allow"}"#,
                Err("for approval \"3\""),
            ),
            (
                r#"{"id": 3.0, "decision": "allow"}"#,
                Err("for approval 3.0"),
            ),
            (r#"{"decision": "allow"}"#, Err("no \"id\"")),
            (r#"{"id": 3}"#, Err("no \"decision\"")),
            (r#"{"id": 3, "decision": "yes"}"#, Err("unknown decision")),
            ("y", Err("not a JSON object")),
            ("", Err("not a JSON object")),
        ];
        for (line, expected) in cases {
            match (parse_json_answer(line, 3), expected) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{line}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{line}: {got}"),
                (got, want) => panic!("{line}: got {got:?}, wanted {want:?}"),
            }
        }
    }
}
