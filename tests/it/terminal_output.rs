//! What the user sees of a turn on a real terminal: the built binary on a
//! pseudo-terminal of a known size, what it printed read back as a
//! terminal would show it (the `vt100` emulator): answers rendered as
//! markdown, diffs cut to a screen, the line after a turn, warnings.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::approvals::{on_a_terminal_sized, wait_exit};
use crate::common::{run_against_model, workspace};
use crate::support::model_server::{ModelServer, Reply};

/// The pseudo-terminal's size (`on_a_terminal_sized` makes it 100 wide).
const ROWS: u16 = 24;
const COLUMNS: u16 = 100;

/// `bareagent run PROMPT` against `server`, colour left to the test.
fn run(dir: &Path, server: &ModelServer, extra: &[&str], prompt: &str) -> Command {
    let mut command = crate::common::bareagent(dir);
    run_against_model(&mut command, server)
        .args(extra)
        .arg(prompt)
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color");
    command
}

/// Runs `command` with stdout and stderr on a terminal of [`ROWS`] ×
/// [`COLUMNS`] until it exits: what it wrote, and the screen it leaves
/// (kept tall, so nothing scrolls away).
fn on_screen(command: Command) -> (String, vt100::Parser) {
    let (_master, mut child, terminal) = on_a_terminal_sized(command, None, ROWS);
    let status = wait_exit(&mut child);
    let text = terminal.wait_for("the end of the output", |t| t.contains(" model call"));
    assert!(status.success(), "{status:?}: {text}");
    let mut screen = vt100::Parser::new(500, COLUMNS, 0);
    screen.process(text.as_bytes());
    (text, screen)
}

fn rows(screen: &vt100::Parser) -> Vec<String> {
    screen.screen().rows(0, COLUMNS).collect()
}

/// The answer as markdown on a terminal: no `#`, `**` or fences left,
/// bold where it said bold, a table drawn, code kept, paragraphs broken
/// between words at the terminal's width, and model text that tries to
/// clear the screen shown instead; with `NO_COLOR`, the text as it came.
#[test]
fn answers_are_markdown_on_a_terminal_wrapped_between_words() {
    let long = format!("{} internationalization ends here.", "x".repeat(90));
    let answer = format!(
        "# Plan\n\nSome **matters** here.\n\n{long}\n\n- one\n- two\n\n| name | size |\n|---|---|\n| a.txt | 12 |\n\n```rust\nfn main() {{}}\n```\n\nThen \u{1b}[2J**cleared**.\n"
    );
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Reply::text(&answer).into()]);
    let (_, screen) = on_screen(run(dir.path(), &server, &[], "plan it"));
    let shown = rows(&screen);
    let all = shown.join("\n");
    for gone in ["# Plan", "**", "```"] {
        assert!(!all.contains(gone), "{gone:?} left in:\n{all}");
    }
    for row in [
        "Plan",
        "Some matters here.",
        "• one",
        "• two",
        "  fn main() {}",
    ] {
        assert!(
            shown.iter().any(|r| r.trim_end() == row),
            "{row:?} in:\n{all}"
        );
    }
    assert!(all.contains("│ a.txt │ 12   │"), "{all}");
    assert!(
        shown
            .iter()
            .any(|r| r.starts_with("internationalization ends here.")),
        "the word that would cross the edge starts the next row:\n{all}"
    );
    let at = shown
        .iter()
        .position(|r| r.starts_with("Some matters"))
        .unwrap();
    let cell = |col| screen.screen().cell(at as u16, col).map(|c| c.bold());
    assert_eq!(
        (cell(0), cell(5)),
        (Some(false), Some(true)),
        "`matters` is bold"
    );
    assert!(
        all.contains("Then \\u{1b}[2Jcleared."),
        "shown, not obeyed:\n{all}"
    );

    let server = ModelServer::start(vec![Reply::text(&answer).into()]);
    let mut plain = run(dir.path(), &server, &[], "plan it");
    plain.env("NO_COLOR", "1");
    let (_, screen) = on_screen(plain);
    let all = rows(&screen).join("\n");
    assert!(all.contains("Some **matters** here."), "{all}");
    assert!(
        all.contains("Then \\u{1b}[2J**cleared**."),
        "shown, not obeyed:\n{all}"
    );
}

/// An edit applied without asking shows its diff cut to the screen: a
/// one-line minified file's edit takes a few rows with a count of the
/// characters left out, never thousands of wrapped rows.
#[test]
fn a_minified_files_diff_fits_the_screen() {
    let minified = format!("var x=1;{};var y=2;\n", "q".repeat(5_000));
    let dir = workspace(&[("min.js", minified.as_str())]);
    let server = ModelServer::start(vec![
        Reply::tool(
            "edit_file",
            json!({"path": "min.js", "old_string": "var y=2", "new_string": "var y=3"}),
        )
        .into(),
        Reply::text("Done.").into(),
    ]);
    let command = run(
        dir.path(),
        &server,
        &["--permission-mode", "accept-edits"],
        "bump y",
    );
    let (text, screen) = on_screen(command);
    assert!(text.contains("more characters"), "{text}");
    let shown = rows(&screen);
    let diff_rows = shown.iter().filter(|r| r.contains("qqqq")).count();
    assert!(
        (2..=2 * 4).contains(&diff_rows),
        "{diff_rows} rows of the line:\n{}",
        shown.join("\n")
    );
    assert!(text.len() < 5_000, "{} bytes written", text.len());
}

/// The largest one-line file an edit may touch (the file tools take 10 MiB
/// at most, so the 52 MB file of the report is refused before any diff):
/// edited in `accept-edits`, stderr gets a screenful, not the line twice.
#[test]
fn a_huge_one_line_files_diff_stays_small() {
    let huge = format!("{}END\n", "z".repeat((10 << 20) - 8));
    let dir = workspace(&[("huge.txt", huge.as_str())]);
    let server = ModelServer::start(vec![
        Reply::tool(
            "edit_file",
            json!({"path": "huge.txt", "old_string": "END", "new_string": "FIN"}),
        )
        .into(),
        Reply::text("Edited.").into(),
    ]);
    let out = run(
        dir.path(),
        &server,
        &["--permission-mode", "accept-edits"],
        "edit it",
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let head: String = stderr.chars().take(2_000).collect();
    assert!(out.status.success(), "{head}");
    let edited = std::fs::read_to_string(dir.path().join("huge.txt")).unwrap();
    assert!(edited.ends_with("FIN\n"), "the edit was made");
    assert!(
        stderr.len() < 16_384,
        "{} bytes on stderr: {head}",
        stderr.len()
    );
    assert!(stderr.contains("more characters"), "{head}");
}

/// The line after a turn counts in words that agree ("1 model call"), and
/// for a model with no price it still fits on one row; the note on the
/// missing price is said once, on its own line.
#[test]
fn the_line_after_a_turn_fits_a_row_and_agrees_with_its_count() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        Reply {
            input_tokens: 1_000,
            output_tokens: 500,
            cache_creation_input_tokens: 2_000,
            cache_read_input_tokens: 10_000,
            ..Reply::text("Hi.")
        }
        .into(),
    ]);
    let (text, screen) = on_screen(run(
        dir.path(),
        &server,
        &["--model", "claude-unpriced-9"],
        "hello",
    ));
    let shown = rows(&screen);
    let at = shown
        .iter()
        .position(|r| r.starts_with("[1 model call ·"))
        .unwrap_or_else(|| panic!("no turn line in:\n{text}"));
    assert!(
        shown[at].trim_end().ends_with(']'),
        "on one row of {COLUMNS}: {:?}",
        &shown[at..at + 2]
    );
    assert!(shown[at].contains("cost unknown"), "{}", shown[at]);
    assert!(shown[at + 1].contains("add [prices."), "{}", shown[at + 1]);
}

/// A warning reaches the terminal's user as one sentence of ours, not a
/// log record: a torn last line in the session file resumed.
#[test]
fn a_warning_is_a_sentence_not_a_log_record() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![Reply::text("One.").into(), Reply::text("Two.").into()]);
    let plain = |command: &mut Command| {
        let out = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    plain(&mut run(dir.path(), &server, &[], "first"));
    let sessions = dir.path().join(".bareagent/sessions");
    let file = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .expect("the session file");
    let mut torn = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    std::io::Write::write_all(&mut torn, b"{\"type\":\"mess").unwrap();
    let stderr = plain(&mut run(dir.path(), &server, &["--continue"], "second"));
    let line = stderr
        .lines()
        .find(|line| line.contains("torn last line"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        line.starts_with("bareagent: ignoring the torn last line of a session file"),
        "{line}"
    );
    assert!(!line.contains("WARN") && !line.contains("Z "), "{line}");
}

/// `sessions --help` says the order the list has.
#[test]
fn the_sessions_help_says_the_order_of_the_list() {
    let dir = workspace(&[]);
    let out = crate::common::bareagent(dir.path())
        .args(["sessions", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("the last used first"), "{help}");
}

/// A command that runs shows that it runs: its last lines, replaced in
/// place, under a spinner with the time; a key typed meanwhile (Enter)
/// leaves no stale copy of that drawing behind, and once the command ends
/// the drawing is gone and its result shows.
#[test]
fn a_running_command_shows_its_last_lines_live_and_leaves_nothing_behind() {
    use std::io::Write;
    let dir = workspace(&[]);
    let script = "for i in 1 2 3 4 5 6 7; do echo step $i; done; \
                  while [ ! -f go ]; do sleep 0.05; done; echo finished";
    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({"command": script})).into(),
        Reply::text("Ran it.").into(),
    ]);
    let command = run(
        dir.path(),
        &server,
        &["--permission-mode", "bypass"],
        "run it",
    );
    let (mut master, mut child, terminal) = on_a_terminal_sized(command, None, ROWS);
    let live = terminal.wait_for("the live tail", |t| {
        t.contains("running") && t.contains("│ step 7")
    });
    assert!(live.contains("running 0s"), "{live}");
    assert!(live.contains("│ step 3"), "the last five lines: {live}");
    let before = live.len();
    master.write_all(b"x\r").unwrap();
    terminal.wait_for("a redraw after the key", |t| {
        t[before..].contains("running")
    });
    std::fs::write(dir.path().join("go"), "").unwrap();
    let status = wait_exit(&mut child);
    let text = terminal.wait_for("the end", |t| t.contains(" model call"));
    assert!(status.success(), "{text}");
    let mut screen = vt100::Parser::new(500, COLUMNS, 0);
    screen.process(text.as_bytes());
    let shown = rows(&screen);
    let all = shown.join("\n");
    assert!(!all.contains("running"), "a stale drawing:\n{all}");
    assert!(
        all.contains("│ finished") && all.contains("Ran it."),
        "{all}"
    );
    assert!(
        !all.contains("│ step 3"),
        "only the result's lines stay:\n{all}"
    );
}

/// A stream that fails before any text is asked again without streaming,
/// and the user is told so once, in the turn's own words, not also by a
/// warning.
#[test]
fn a_streaming_fallback_is_said_once() {
    let dir = workspace(&[]);
    let server = ModelServer::start(vec![
        crate::support::model_server::Fault::MalformedSse {
            reply: Reply::text("Never shown."),
            after_text: false,
        }
        .into(),
        Reply::text("Whole answer.").into(),
    ]);
    let out = run(dir.path(), &server, &[], "hello")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("without streaming").count(), 1, "{stderr}");
    assert!(stderr.contains("asked again without streaming"), "{stderr}");
}
