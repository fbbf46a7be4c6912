//! The shell reader checked against bash itself. Thousands of generated
//! command lines — every quoting form, escapes, here-documents,
//! substitutions, operators, comments — run under a real `bash -c` whose
//! `PATH` holds only stub programs that log their own name. Every stub bash
//! ran must be a command the reader reported, for every line the reader
//! says it understood (a line it does not understand is never auto-allowed,
//! so it cannot hide a command from an allow rule).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use bareagent::permission::shell;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

const STUBS: [&str; 5] = ["c1", "c2", "c3", "c4", "c5"];

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(STUBS.to_vec()).prop_map(String::from),
        1 => Just("echo".to_string()),
        1 => Just("true".to_string()),
    ]
}

/// Characters that mean something to the shell, for the insides of quotes.
fn tricky_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        proptest::sample::select(vec![
            "a", " ", ";", "&", "|", "(", ")", "'", "\"", "\\", "$", "`", "#", "\n", "c2", "c3 ",
            "{", "}", "*", "<", ">", "$(", "\\'",
        ]),
        0..6,
    )
    .prop_map(|parts| parts.concat())
}

/// `text` as the inside of `"…"` (or `$"…"`) that bash reads back as `text`.
fn escaped_for_double_quotes(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('`', "\\`")
        .replace('$', "\\$")
}

fn word(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just("a".to_string()),
        Just("x.txt".to_string()),
        proptest::sample::select(STUBS.to_vec()).prop_map(String::from),
        tricky_text().prop_map(|t| format!("'{}'", t.replace('\'', ""))),
        tricky_text().prop_map(|t| format!("\"{}\"", escaped_for_double_quotes(&t))),
        tricky_text().prop_map(|t| format!("$'{}'", t.replace('\\', "\\\\").replace('\'', "\\'"))),
        tricky_text().prop_map(|t| format!("$\"{}\"", escaped_for_double_quotes(&t))),
        proptest::sample::select(vec![
            "\\;",
            "\\'",
            "\\\"",
            "\\|",
            "\\&",
            "\\#",
            "a\\ b",
            "$HOME",
            "${X:-y}",
            "$((1+2))",
            "\"$X\"",
            "#c5",
            "a#c5",
            "'$'\\'",
            "$'\\''",
            "{a,b}",
            // Quote-confusion probes: each is one word to bash, or a word and
            // a command, depending on how its escapes are read.
            "$'\\'' ; c2 #'",
            "'\\' ; c3 #'",
            "\"\\\" ; c2 #\"",
            "$\"\\\"\" ; c3 #\"",
            "\\' ; c2 #'",
            "$'\\\\' ; c3 #'",
            "\"\\\\\" ; c2 #\"",
        ])
        .prop_map(String::from),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    prop_oneof![
        6 => leaf,
        1 => line(depth - 1).prop_map(|l| format!("$({l})")),
        1 => line(depth - 1).prop_map(|l| format!("\"$({l})\"")),
        1 => simple(depth - 1).prop_map(|c| format!("`{c}`")),
    ]
    .boxed()
}

fn simple(depth: u32) -> BoxedStrategy<String> {
    (name(), proptest::collection::vec(word(depth), 0..4))
        .prop_map(|(name, words)| {
            let mut parts = vec![name];
            parts.extend(words);
            parts.join(" ")
        })
        .boxed()
}

fn command(depth: u32) -> BoxedStrategy<String> {
    let simple_command = simple(depth);
    prop_oneof![
        6 => simple_command.clone(),
        1 => simple_command.clone().prop_map(|c| format!("( {c} )")),
        1 => simple_command.clone().prop_map(|c| format!("{{ {c}; }}")),
        1 => (simple_command.clone(), tricky_text()).prop_map(|(c, body)| format!(
            "{c} <<'EOF'\n{}\nEOF\n",
            body.replace("EOF", "")
        )),
        1 => (simple_command.clone(), tricky_text()).prop_map(|(c, body)| format!(
            "{c} <<EOF\n{}\nEOF\n",
            body.replace("EOF", "")
        )),
        1 => simple_command.clone().prop_map(|c| format!("{c} > out.txt 2>&1")),
        1 => simple_command.prop_map(|c| format!("if {c}; then c4; fi")),
    ]
    .boxed()
}

fn line(depth: u32) -> BoxedStrategy<String> {
    let operator = proptest::sample::select(vec![" ; ", " && ", " || ", " | ", "\n", ";"]);
    (
        command(depth),
        proptest::collection::vec((operator, command(depth)), 0..3),
        proptest::option::of(tricky_text()),
    )
        .prop_map(|(first, rest, comment)| {
            let mut line = first;
            for (operator, command) in rest {
                line.push_str(operator);
                line.push_str(&command);
            }
            if let Some(comment) = comment {
                line.push_str(" #");
                line.push_str(&comment.replace('\n', ""));
            }
            line
        })
        .boxed()
}

fn make_stubs(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for stub in STUBS {
        let path = dir.join(stub);
        std::fs::write(&path, format!("#!/bin/sh\necho {stub} >> \"$STUB_LOG\"\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// The stubs bash ran for `line`.
fn run_under_bash(line: &str, stubs: &Path, work: &Path) -> BTreeSet<String> {
    let log = work.join("stub.log");
    let _ = std::fs::remove_file(&log);
    let status = Command::new("/bin/bash")
        .arg("-c")
        .arg(line)
        .current_dir(work)
        .env_clear()
        .env("PATH", stubs)
        .env("STUB_LOG", &log)
        .env("X", "value")
        .env("HOME", work)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    assert!(status.is_ok(), "bash did not start");
    std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn every_command_bash_runs_is_one_the_reader_reported() {
    let stubs = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    make_stubs(stubs.path());
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    // The same lines every run, so CI is red only for a change; set
    // SHELL_DIFFERENTIAL_RANDOM=1 to explore new ones (and add what fails
    // to the fixed cases).
    let mut runner = if std::env::var_os("SHELL_DIFFERENTIAL_RANDOM").is_some() {
        TestRunner::new(config)
    } else {
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
    };
    let understood = std::cell::Cell::new(0u32);
    let result = runner.run(&line(2), |line| {
        let parsed = shell::parse(&line);
        if !parsed.problems.is_empty() {
            return Ok(());
        }
        // A program only the running shell can name (`$(echo c2)` or a glob
        // as the command) could be anything: the gate asks for it, whatever
        // bash runs.
        if parsed
            .commands()
            .iter()
            .any(|c| c.words.first().is_some_and(|w| w.opaque || w.glob))
        {
            return Ok(());
        }
        understood.set(understood.get() + 1);
        let reported: BTreeSet<String> = parsed
            .commands()
            .iter()
            .filter_map(|c| c.program().map(String::from))
            .collect();
        let ran = run_under_bash(&line, stubs.path(), work.path());
        let hidden: Vec<&String> = ran.difference(&reported).collect();
        prop_assert!(
            hidden.is_empty(),
            "bash ran {hidden:?}, which the reader did not report, for {line:?} (reported {reported:?})"
        );
        Ok(())
    });
    eprintln!(
        "shell differential: {cases} lines, {} understood by the reader",
        understood.get()
    );
    if let Err(error) = result {
        panic!("{error}");
    }
    // A reader that understands nothing would pass vacuously.
    assert!(
        understood.get() > cases / 3,
        "the reader understood only {} of {cases} lines",
        understood.get()
    );
}
