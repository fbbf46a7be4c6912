//! The `code` tool answers from a real type checker (pyright, from npm)
//! over a project built so that text search is wrong: a comment, a string
//! and another class's method share the name asked about. The same turn in
//! `bareagent run`, the language server with a Helix-like client (no
//! `bareagent/codeIntelligence`, so our own servers answer) and
//! `bareagent acp`: references, a definition across files and an import,
//! an inferred type, a symbol found by name, a rename across three files as
//! one approved change (undone by a rewind), and the type error an edit
//! makes, reported after the edit.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};

use crate::acp::{drive, of_type, python};
use crate::common::{bareagent, run_against_model, sent_tool_results, workspace};
use crate::lsp::{ask, options, requests_of, start, turn_end};
use crate::support::model_server::{ModelServer, Reply, Step};

/// Where the pinned language servers are (`.ci/run` installs them):
/// `None` skips the test, unless `BAREAGENT_REQUIRE_LSP=1` makes it fail.
pub fn servers_bin() -> Option<PathBuf> {
    let found = std::env::var_os("BAREAGENT_LSP_BIN")
        .map(PathBuf::from)
        .filter(|dir| dir.join("pyright-langserver").exists());
    if found.is_none() {
        crate::support::peers::missing(
            crate::support::peers::Peer::LanguageServers,
            "BAREAGENT_LSP_BIN does not hold pyright-langserver",
        );
    }
    found
}

/// `PATH` with the language servers first.
pub fn path_with(bin: &Path) -> String {
    let rest = std::env::var("PATH").unwrap_or_default();
    format!("{}:{rest}", bin.display())
}

/// `bareagent run` with `args` (`--json` among them), the servers on
/// `PATH`, allowing every question after `meanwhile` has run; the diffs
/// the questions showed. Fails when the run does.
fn run_allowing(
    root: &Path,
    server: &ModelServer,
    bin: &Path,
    args: &[&str],
    mut meanwhile: impl FnMut(&Value),
) -> Vec<String> {
    use std::io::{BufRead, Write};
    let mut child = run_against_model(&mut bareagent(root), server)
        .env("PATH", path_with(bin))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bareagent run");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let mut diffs = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let Ok(event) = serde_json::from_str::<Value>(&line.expect("a line")) else {
            continue;
        };
        if event["type"] == "approval_request" {
            meanwhile(&event);
            diffs.push(event["diff"].as_str().unwrap_or_default().to_string());
            let answer = json!({"id": event["id"], "decision": "allow"});
            writeln!(stdin, "{answer}").expect("answer");
        }
    }
    let out = child.wait_with_output().expect("exit");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    diffs
}

const SHAPES: &str = "\
class Circle:
    def __init__(self, r: float) -> None:
        self.r = r

    def area(self) -> float:
        return 3.14159 * self.r * self.r


class Square:
    def __init__(self, side: float) -> None:
        self.side = side

    def area(self) -> float:
        return self.side * self.side


def total_area(circles: list[Circle]) -> float:
    # the area of each: area() summed
    return sum(c.area() for c in circles)
";

const REPORT: &str = "\
from pkg.shapes import Circle, Square


def describe(c: Circle) -> str:
    label = \"area\"
    half = c.area() / 2
    return f\"{label}: {half}\"


def square_report(s: Square) -> float:
    return s.area()
";

const MAIN: &str = "\
from pkg import shapes
from pkg.report import describe

print(describe(shapes.Circle(2.0)))
";

/// The fixture: `Circle.area` is used twice (in `total_area` and in
/// `describe`); the word `area` is also in a comment, a string, and
/// `Square.area` and its use.
pub fn fixture() -> tempfile::TempDir {
    workspace(&[
        ("pkg/__init__.py", ""),
        ("pkg/shapes.py", SHAPES),
        ("pkg/report.py", REPORT),
        ("main.py", MAIN),
        ("pyrightconfig.json", "{\"include\": [\".\"]}\n"),
    ])
}

/// The model's calls, in order, then its answer.
fn script() -> Vec<Step> {
    let code = |input: Value| Step::from(Reply::tool("code", input));
    vec![
        code(json!({"operation": "references", "path": "pkg/shapes.py", "symbol": "Circle.area"})),
        code(json!({"operation": "definition", "path": "main.py", "symbol": "describe", "line": 4})),
        code(json!({"operation": "hover", "path": "pkg/report.py", "symbol": "half"})),
        code(json!({"operation": "workspace_symbols", "symbol": "square_report"})),
        code(json!({"operation": "callers", "path": "pkg/shapes.py", "symbol": "Circle.area"})),
        code(json!({"operation": "symbols", "path": "pkg/shapes.py"})),
        code(json!({"operation": "callees", "path": "pkg/report.py", "symbol": "describe"})),
        code(json!({"operation": "rename", "path": "pkg/shapes.py", "symbol": "Circle", "new_name": "Disk"})),
        Reply::tool(
            "edit_file",
            json!({"path": "pkg/report.py", "old_string": "    return s.area()", "new_string": "    return str(s.area())"}),
        )
        .into(),
        Reply::text("Done.").into(),
    ]
}

/// The front ends the turn runs in.
#[derive(Clone, Copy, Debug)]
enum FrontEnd {
    Run,
    Lsp,
    Acp,
}

/// Runs the script's turn in `front`, allowing what is asked; returns the
/// diffs the user was shown when asked, or `None` where the ACP SDK is
/// missing.
fn turn(front: FrontEnd, root: &Path, server: &ModelServer, bin: &Path) -> Option<Vec<String>> {
    const PROMPT: &str = "look at the shapes";
    match front {
        FrontEnd::Run => Some(run_allowing(root, server, bin, &["--json", PROMPT], |_| {})),
        FrontEnd::Lsp => {
            let mut options = options(root, server, "default");
            options.env.push(("PATH".into(), path_with(bin)));
            crate::lsp::with_user_config(&mut options, &root.join(".no-user-config"));
            let client = start(root, options);
            let turn = ask(&client, json!({"prompt": PROMPT}))["turn"]
                .as_u64()
                .expect("a turn");
            let end = turn_end(&client, turn);
            assert_eq!(end["type"], "turn_finished", "{end}");
            let diffs = crate::lsp::events_of(&client, "approval_requested")
                .iter()
                .map(|event| event["diff"].as_str().unwrap_or_default().to_string())
                .collect();
            // The status names the session's server, running.
            let status = client
                .execute("bareagent.status", json!([]))
                .expect("status");
            let servers = &status["sessions"][0]["languageServers"];
            let pyright = servers
                .as_array()
                .into_iter()
                .flatten()
                .find(|s| s["command"] == "pyright-langserver");
            assert_eq!(
                pyright.map(|s| s["status"]["state"].clone()),
                Some(json!("running")),
                "{status}"
            );
            // The rewind: the turn's edits undone in one editor edit.
            let edits = requests_of(&client, "workspace/applyEdit").len();
            let answer = client
                .execute("bareagent.rewind", json!([]))
                .expect("rewind");
            assert_eq!(
                requests_of(&client, "workspace/applyEdit").len(),
                edits + 1,
                "{answer}"
            );
            Some(diffs)
        }
        FrontEnd::Acp => {
            let python = python()?;
            let transcript = drive(
                &python,
                root,
                server,
                // The state and config `bareagent(root)` uses, so that
                // `run --rewind` knows the session as the user's.
                json!({"fs": false, "env": {
                           "PATH": path_with(bin),
                           "XDG_STATE_HOME": root.join(".no-user-state"),
                           "XDG_CONFIG_HOME": root.join(".no-user-config"),
                       },
                       "answers": ["allow_once", "allow_once", "allow_once"],
                       "steps": [{"new": {}}, {"prompt": PROMPT}]}),
            );
            let response = of_type(&transcript, "prompt_response");
            assert_eq!(
                response
                    .first()
                    .map(|r| r["response"]["stopReason"].clone()),
                Some(json!("end_turn")),
                "{transcript:#?}"
            );
            // Each permission question's diffs, one per file, as one text.
            Some(
                of_type(&transcript, "request_permission")
                    .iter()
                    .map(|asked| {
                        asked["toolCall"]["content"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter(|c| c["type"] == "diff")
                            .map(|c| format!("{}\n", c["path"].as_str().unwrap_or_default()))
                            .collect()
                    })
                    .collect(),
            )
        }
    }
}

#[test]
fn the_code_tool_answers_from_the_type_checker_in_every_front_end() {
    let Some(bin) = servers_bin() else {
        return;
    };
    let mut failed = Vec::new();
    for front in [FrontEnd::Run, FrontEnd::Lsp, FrontEnd::Acp] {
        let dir = fixture();
        let root = dir.path().canonicalize().expect("root");
        // A cold pyright on a loaded machine reports late; the wait ends
        // with its report.
        crate::common::user_config(&root, "[code]\ndiagnostics_wait_ms = 60000\n");
        let server = ModelServer::start(script());
        let Some(diffs) = turn(front, &root, &server, &bin) else {
            continue;
        };
        if let Err(why) = check(front, &root, &server, &diffs) {
            failed.push(format!("{front:?}: {why}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// What the model was told, and what became of the files.
fn check(
    front: FrontEnd,
    root: &Path,
    server: &ModelServer,
    diffs: &[String],
) -> Result<(), String> {
    let requests = server.requests();
    let last = requests.last().ok_or("no request")?;
    let results = sent_tool_results(&last.body);
    let said = |n: usize| {
        results
            .get(n)
            .map(|(text, _)| text.as_str())
            .unwrap_or_default()
    };
    let expect = |holds: bool, why: String| if holds { Ok(()) } else { Err(why) };
    // References: exactly the two real uses — not the comment, the string,
    // `Square.area` or its use.
    let references = said(0);
    expect(
        references.starts_with("2 references")
            && references.contains("pkg/shapes.py\n  19:18  return sum(c.area() for c in circles)")
            && references.contains("pkg/report.py\n  6:14  half = c.area() / 2")
            && !references.contains("s.area()")
            && !references.contains('#'),
        format!("references: {references}"),
    )?;
    // Definition: across files and an import.
    let definition = said(1);
    expect(
        definition.contains("pkg/report.py\n  4:5  def describe(c: Circle) -> str:"),
        format!("definition: {definition}"),
    )?;
    // Hover: the inferred type.
    let hover = said(2);
    expect(hover.contains("half: float"), format!("hover: {hover}"))?;
    // A symbol by name.
    let symbols = said(3);
    expect(
        symbols.contains("pkg/report.py\n  10:5  function `square_report`"),
        format!("workspace symbols: {symbols}"),
    )?;
    // Callers: each call, in the function that makes it.
    let callers = said(4);
    expect(
        callers.starts_with("2 calls")
            && callers.contains(
                "19:18  return sum(c.area() for c in circles)   (in function `total_area`)",
            )
            && callers.contains("6:14  half = c.area() / 2   (in function `describe`)"),
        format!("callers: {callers}"),
    )?;
    // The outline: members under their class.
    let outline = said(5);
    expect(
        outline.contains("    1  class Circle\n")
            && outline.contains("    5    method area\n")
            && outline.contains("   13    method area\n")
            && outline.contains("   17  function total_area"),
        format!("symbols: {outline}"),
    )?;
    // Callees: what `describe` calls, where each is declared.
    let callees = said(6);
    expect(
        callees.contains("pkg/shapes.py\n  5:9  method `area` (declared here)"),
        format!("callees: {callees}"),
    )?;
    // The rename: one change across three files, shown whole when asked.
    let rename = said(7);
    expect(
        rename.starts_with("Renamed `Circle` to `Disk`") && rename.contains("in 3 files"),
        format!("rename: {rename}"),
    )?;
    let asked = diffs.first().map(String::as_str).unwrap_or_default();
    expect(
        ["main.py", "pkg/report.py", "pkg/shapes.py"]
            .iter()
            .all(|file| asked.contains(file)),
        format!("the question showed {diffs:?}"),
    )?;
    // The edit's type error, reported after the edit.
    let edit = said(8);
    expect(
        edit.contains("error") && edit.contains("\"str\"") && edit.contains("\"float\""),
        format!("the edit's result: {edit}"),
    )?;
    // Rewound (the language server rewound in the turn's client; the
    // others here): the files are as they were.
    if !matches!(front, FrontEnd::Lsp) {
        let out = bareagent(root)
            .args(["run", "--rewind"])
            .output()
            .expect("rewind");
        expect(
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )?;
    }
    for (file, text) in [
        ("pkg/shapes.py", SHAPES),
        ("pkg/report.py", REPORT),
        ("main.py", MAIN),
    ] {
        let now = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        expect(now == text, format!("{file} after the rewind:\n{now}"))?;
    }
    Ok(())
}

/// Each way a language server fails reaches the model as a clear `code`
/// error, and the session goes on: the next call, to a good server in the
/// same run, is answered. A location outside the workspace is counted,
/// never named. One `bareagent run`, the fake server (tests/fixtures/lsp)
/// in a different mode for each file type.
#[test]
fn each_servers_fault_is_a_clear_tool_error_and_the_turn_goes_on() {
    let fake = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/lsp/fake_server.py"
    );
    // (the server's mode, the operation, what the model must read)
    let rows: &[(&str, &str, &str)] = &[
        ("not-installed", "hover", "is not installed"),
        ("crash-at-start", "hover", "did not start"),
        ("crash-mid", "hover", "stopped while answering"),
        (
            "hang",
            "hover",
            "did not answer textDocument/hover within 3 s",
        ),
        (
            "invalid-json",
            "hover",
            "something that is not the protocol",
        ),
        ("not-jsonrpc", "hover", "something that is not the protocol"),
        (
            "error",
            "references",
            "refused textDocument/references: fake failure",
        ),
        ("no-hover", "hover", "does not support textDocument/hover"),
        (
            "outside",
            "references",
            "(1 outside the workspace not shown)",
        ),
    ];
    let mut config = String::from(
        "[code]\nrequest_timeout_secs = 1\nfirst_request_timeout_secs = 3\nhelix = false\n",
    );
    let mut files = vec![("a.good".to_string(), "x = 1\n".to_string())];
    let mut script: Vec<Step> = Vec::new();
    let good = json!({"operation": "hover", "path": "a.good", "line": 1, "column": 1});
    for (index, (mode, operation, _)) in rows.iter().enumerate() {
        let command = if *mode == "not-installed" {
            "bareagent-no-such-server"
        } else {
            "python3"
        };
        config.push_str(&format!(
            "[code.servers.{mode}]\ncommand = {command:?}\nargs = [{fake:?}, {mode:?}]\nextensions = [\"f{index}\"]\n"
        ));
        files.push((format!("a.f{index}"), "x = 1\n".into()));
        let path = format!("a.f{index}");
        script.push(
            Reply::tool(
                "code",
                json!({"operation": operation, "path": path, "line": 1, "column": 1}),
            )
            .into(),
        );
        script.push(Reply::tool("code", good.clone()).into());
    }
    config.push_str(&format!(
        "[code.servers.good]\ncommand = \"python3\"\nargs = [{fake:?}, \"good\"]\nextensions = [\"good\"]\n"
    ));
    script.push(Reply::text("Done.").into());
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let dir = workspace(&files);
    let root = dir.path().canonicalize().expect("root");
    crate::common::user_config(&root, &config);
    let server = ModelServer::start(script);
    let out = run_against_model(&mut bareagent(&root), &server)
        .args(["--permission-mode", "bypass", "ask the servers"])
        .output()
        .expect("bareagent run");
    crate::common::assert_succeeded(&out);
    let requests = server.requests();
    let results = sent_tool_results(&requests.last().expect("a request").body);
    assert_eq!(results.len(), rows.len() * 2, "{results:?}");
    for (index, (mode, _, want)) in rows.iter().enumerate() {
        let (said, is_error) = &results[index * 2];
        assert!(said.contains(want), "{mode}: {said}");
        assert!(!said.contains("/etc/passwd"), "{mode}: {said}");
        assert_eq!(*is_error, *mode != "outside", "{mode}: {said}");
        let (next, next_error) = &results[index * 2 + 1];
        assert!(
            !next_error && next.contains("fake hover: x = 1"),
            "after {mode}: {next}"
        );
    }
}

/// A rename is refused whole, nothing written, when one of its files
/// changes while the user is asked (the change they allowed is no longer
/// the one that would be made), and when a rule denies an edit of any one
/// of its files — though the file it was asked about is allowed.
#[test]
fn a_rename_is_refused_whole_when_a_file_changes_while_asked_or_a_rule_denies_one() {
    let Some(bin) = servers_bin() else {
        return;
    };
    const USERS: &str = "# the user's line\n";
    // (the case, the mode, config.toml, what the model reads)
    let rows = [
        (
            "changed while asked",
            "default",
            "",
            "changed while the user was being asked",
        ),
        (
            "a rule denies main.py",
            "accept-edits",
            "[permissions]\ndeny = [\"edit(main.py)\"]\n",
            "the rename would change main.py: ",
        ),
    ];
    for (case, mode, config, want) in rows {
        let dir = fixture();
        let root = dir.path().canonicalize().expect("root");
        crate::common::user_config(&root, config);
        let server = ModelServer::start(vec![
            Reply::tool(
                "code",
                json!({"operation": "rename", "path": "pkg/shapes.py", "symbol": "Circle", "new_name": "Disk"}),
            )
            .into(),
            Reply::text("Done.").into(),
        ]);
        let args = ["--json", "--permission-mode", mode, "rename it"];
        run_allowing(&root, &server, &bin, &args, |_| {
            // The user types in one of the rename's files meanwhile.
            let report = root.join("pkg/report.py");
            std::fs::write(&report, format!("{REPORT}{USERS}")).expect("the user's edit");
        });
        let requests = server.requests();
        let results = sent_tool_results(&requests.last().expect("a request").body);
        let (said, is_error) = &results[0];
        assert!(*is_error && said.contains(want), "{case}: {said}");
        let report = if case == "changed while asked" {
            format!("{REPORT}{USERS}")
        } else {
            REPORT.to_string()
        };
        for (file, text) in [
            ("pkg/shapes.py", SHAPES),
            ("pkg/report.py", report.as_str()),
            ("main.py", MAIN),
        ] {
            let now = std::fs::read_to_string(root.join(file)).unwrap_or_default();
            assert_eq!(now, text, "{case}: {file}");
        }
    }
}

/// A sub-agent asks the same answerer as its parent: an explore sub-agent
/// gets the code tool's questions but not `rename` (it only reads).
#[test]
fn an_explore_sub_agent_asks_code_but_cannot_rename() {
    let Some(bin) = servers_bin() else {
        return;
    };
    let dir = fixture();
    let root = dir.path().canonicalize().expect("root");
    let server = ModelServer::start(vec![
        Reply::tool(
            "task",
            json!({"description": "find uses", "prompt": "find the uses of Circle.area", "kind": "explore"}),
        )
        .into(),
        Reply::tool(
            "code",
            json!({"operation": "references", "path": "pkg/shapes.py", "symbol": "Circle.area"}),
        )
        .into(),
        Reply::tool(
            "code",
            json!({"operation": "rename", "path": "pkg/shapes.py", "symbol": "Circle", "new_name": "Disk"}),
        )
        .into(),
        Reply::text("Two uses.").into(),
        Reply::text("Done.").into(),
    ]);
    let out = run_against_model(&mut bareagent(&root), &server)
        .env("PATH", path_with(&bin))
        .args(["--permission-mode", "bypass", "explore"])
        .output()
        .expect("bareagent run");
    crate::common::assert_succeeded(&out);
    let requests = server.requests();
    // The sub-agent's last request carries both its results.
    let results = sent_tool_results(&requests[3].body);
    let references = results.first().map(|r| r.0.as_str()).unwrap_or_default();
    assert!(references.starts_with("2 references"), "{results:?}");
    let (rename, is_error) = results.get(1).cloned().unwrap_or_default();
    assert!(
        is_error && rename.contains("rename is not available here"),
        "{results:?}"
    );
    let shapes = std::fs::read_to_string(root.join("pkg/shapes.py")).unwrap_or_default();
    assert_eq!(shapes, SHAPES);
}

/// The attacks on `code` a hostile language server (or a repository that
/// ships one's configuration, once trusted) would make, as one table: its
/// answers name files outside the workspace, reach out through a link the
/// repository planted, touch files that grant power, create files, or point
/// at a file the read rules deny. A rename is refused whole — nothing
/// written, the file it was asked about included — and a place the model
/// may not see is counted, never shown. Accept-edits mode, so the gate
/// would let an ordinary rename through unasked.
#[test]
fn a_hostile_servers_answers_are_refused_or_hidden() {
    let fake = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/lsp/fake_server.py"
    );
    const SECRET: &str = "hunter2";
    // (the attack, its targets (`{root}`, `{out}` substituted), the fake's
    // extra argument, deny rules, the operation, what the model must read)
    let rows: &[(&str, &str, &str, &str, &str, &str)] = &[
        (
            "a rename edits a file outside the workspace",
            "{out}/victim",
            "",
            "",
            "rename",
            "outside the workspace; nothing was changed",
        ),
        (
            "a rename edits outside through a link the repository planted",
            "{root}/link/victim",
            "",
            "",
            "rename",
            "outside the workspace; nothing was changed",
        ),
        (
            "a rename edits a git hook",
            "{root}/.git/hooks/pre-commit",
            "",
            "",
            "rename",
            "needs the user's approval",
        ),
        (
            "a rename edits .envrc, which the shell runs",
            "{root}/.envrc",
            "",
            "",
            "rename",
            "needs the user's approval",
        ),
        (
            "a rename edits a file a rule denies",
            "{root}/secret.fk",
            "",
            "\"edit(secret.fk)\"",
            "rename",
            "the rename would change secret.fk: ",
        ),
        (
            "a rename also creates a file",
            "{root}/new.fk",
            "--create",
            "",
            "rename",
            "would also create, rename or delete files",
        ),
        (
            "references name a file the read rules deny",
            "{root}/secret.fk",
            "",
            "\"read(secret.fk)\"",
            "references",
            "(Skipped 1 file denied by",
        ),
        (
            "references reach outside through a link",
            "{root}/link/victim",
            "",
            "",
            "references",
            "(1 outside the workspace not shown)",
        ),
    ];
    let mut failed = Vec::new();
    for (attack, targets, extra, deny, operation, want) in rows {
        let dir = workspace(&[
            ("a.fk", "x = 1\n"),
            ("secret.fk", "password = hunter2\n"),
            (".git/hooks/pre-commit", "#!/bin/sh\n"),
            (".envrc", "export A=1\n"),
        ]);
        let root = dir.path().canonicalize().expect("root");
        let outside = tempfile::tempdir().expect("outside");
        std::fs::write(outside.path().join("victim"), "precious\n").expect("victim");
        std::os::unix::fs::symlink(outside.path(), root.join("link")).expect("link");
        let before = |root: &Path| -> Vec<String> {
            ["a.fk", "secret.fk", ".git/hooks/pre-commit", ".envrc"]
                .iter()
                .map(|f| std::fs::read_to_string(root.join(f)).unwrap_or_default())
                .collect()
        };
        let files = before(&root);
        let targets = targets
            .replace("{root}", &root.display().to_string())
            .replace("{out}", &outside.path().display().to_string());
        let mut args = vec![
            fake.to_string(),
            "hostile".into(),
            "--targets".into(),
            targets,
        ];
        if !extra.is_empty() {
            args.push(extra.to_string());
        }
        crate::common::user_config(
            &root,
            &format!(
                "[permissions]\ndeny = [{deny}]\n[code]\nhelix = false\n\
                 [code.servers.hostile]\ncommand = \"python3\"\nargs = {}\nextensions = [\"fk\"]\n",
                json!(args)
            ),
        );
        let input = match *operation {
            "rename" => {
                json!({"operation": "rename", "path": "a.fk", "line": 1, "column": 1, "new_name": "owned"})
            }
            _ => json!({"operation": "references", "path": "a.fk", "line": 1, "column": 1}),
        };
        let server = ModelServer::start(vec![
            Reply::tool("code", input).into(),
            Reply::text("Done.").into(),
        ]);
        let out = run_against_model(&mut bareagent(&root), &server)
            .args(["--permission-mode", "accept-edits", "go"])
            .output()
            .expect("bareagent run");
        let requests = server.requests();
        let said = requests
            .last()
            .and_then(|r| sent_tool_results(&r.body).into_iter().next())
            .map(|(text, _)| text)
            .unwrap_or_default();
        let victim = std::fs::read_to_string(outside.path().join("victim")).unwrap_or_default();
        let broken = if !out.status.success() {
            Some(format!(
                "the run failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        } else if !said.contains(want) {
            Some(format!("the model read: {said}"))
        } else if said.contains(SECRET) || said.contains("victim") {
            Some(format!("the model was shown what it may not see: {said}"))
        } else if before(&root) != files || victim != "precious\n" || root.join("new.fk").exists() {
            Some(format!("a file was written: {said}"))
        } else {
            None
        };
        if let Some(broken) = broken {
            failed.push(format!("{attack}: {broken}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}
