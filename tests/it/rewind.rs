//! Rewind: `bareagent run --rewind` undoes the last turn — the files it
//! edited put back, the one the user changed since left as it is (and
//! named), the turn gone from the history `--continue` then sends — turn
//! after turn; and a session file that could make it write what nobody
//! recorded is refused, case by case.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{assert_succeeded, bareagent, run_against_model, workspace};
use crate::support::model_server::{ModelServer, Reply};

/// `bareagent run` in `dir` with a model that makes `calls` (one per step)
/// and then says "Done.".
fn turn(dir: &Path, extra: &[&str], prompt: &str, calls: Vec<(&str, Value)>) -> ModelServer {
    let mut script: Vec<_> = calls
        .into_iter()
        .map(|(name, input)| Reply::tool(name, input).into())
        .collect();
    script.push(Reply::text("Done.").into());
    let server = ModelServer::start(script);
    let out = run_against_model(&mut bareagent(dir), &server)
        .args(["--permission-mode", "bypass"])
        .args(extra)
        .arg(prompt)
        .output()
        .unwrap();
    assert_succeeded(&out);
    server
}

fn rewind(dir: &Path) -> (bool, String) {
    let out = bareagent(dir).args(["run", "--rewind"]).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn read(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file)).ok()
}

fn edit(path: &str, old: &str, new: &str) -> (&'static str, Value) {
    (
        "edit_file",
        json!({"path": path, "old_string": old, "new_string": new}),
    )
}

fn write(path: &str, content: &str) -> (&'static str, Value) {
    ("write_file", json!({"path": path, "content": content}))
}

/// The user texts of the history a request carried.
fn prompts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["text"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn rewind_restores_the_last_turns_files_refuses_the_users_and_forgets_the_turn() {
    let dir = workspace(&[("a.txt", "one\n"), ("b.txt", "bee\n")]);
    let dir = dir.path();
    turn(
        dir,
        &[],
        "first",
        vec![edit("a.txt", "one", "ONE"), write("new.txt", "made\n")],
    );
    turn(
        dir,
        &["--continue"],
        "second",
        vec![
            edit("a.txt", "ONE", "ONE!"),
            edit("b.txt", "bee", "BEE"),
            write("c.txt", "sea\n"),
        ],
    );
    // The user changes one of the files afterwards.
    std::fs::write(dir.join("b.txt"), "BEE, mine\n").unwrap();

    let (ok, said) = rewind(dir);
    assert!(!ok, "a refused file makes it exit non-zero: {said}");
    assert!(said.contains("restored a.txt, c.txt"), "{said}");
    assert!(said.contains("b.txt (changed since"), "{said}");
    assert_eq!(
        read(dir, "a.txt").as_deref(),
        Some("ONE\n"),
        "to the first turn's"
    );
    assert_eq!(read(dir, "c.txt"), None, "made by the turn: removed");
    assert_eq!(
        read(dir, "b.txt").as_deref(),
        Some("BEE, mine\n"),
        "the user's kept"
    );
    assert_eq!(
        read(dir, "new.txt").as_deref(),
        Some("made\n"),
        "not that turn's"
    );

    // The turn is gone from the history the session goes on with; the
    // model is told which file still holds its edits.
    let server = turn(dir, &["--continue"], "third", vec![]);
    let sent = prompts(&server.requests()[0].body);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!((sent[0].as_str(), sent[2].as_str()), ("first", "third"));
    assert!(
        sent[1].contains("these files still hold its edits") && sent[1].contains("b.txt"),
        "{sent:?}"
    );

    // Then that turn (the third) and the first, in order; then nothing.
    let (ok, said) = rewind(dir);
    assert!(ok && said.contains("rewound the last turn"), "{said}");
    let (ok, said) = rewind(dir);
    assert!(ok && said.contains("restored a.txt, new.txt"), "{said}");
    assert_eq!(read(dir, "a.txt").as_deref(), Some("one\n"));
    assert_eq!(read(dir, "new.txt"), None);
    let (ok, said) = rewind(dir);
    assert!(!ok && said.contains("nothing to rewind"), "{said}");
}

/// Whose record of the session the user's state holds.
#[derive(Clone, Copy)]
enum Vouched {
    /// The user's own: the header's token, this workspace.
    Yes,
    /// None: a file that came with the repository.
    No,
    /// The token, for another workspace.
    Elsewhere,
}

const ID: &str = "20261201T000000000-aaaa";

/// A session file whose records the rewind acts on, written by hand, and
/// the user's record of it (`sessions/vouch.rs`) as `vouched` says.
fn session_file(dir: &Path, records: &[Value], mode: u32, vouched: Vouched) {
    use std::os::unix::fs::PermissionsExt;
    let sessions = dir.join(".bareagent/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let root = dir.canonicalize().unwrap();
    let record = match vouched {
        Vouched::Yes => Some(root.display().to_string()),
        Vouched::No => None,
        Vouched::Elsewhere => Some("/somewhere/else".to_string()),
    };
    if let Some(root) = record {
        let state = dir.join(".no-user-state/bareagent/sessions");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(state.join(ID), format!("tok\n{root}\n")).unwrap();
    }
    let mut lines = vec![
        json!({"type": "header", "version": 2, "id": ID, "token": "tok",
        "created": "2026-12-01T00:00:00Z", "workspace": root.display().to_string()})
        .to_string(),
    ];
    lines.extend(records.iter().map(Value::to_string));
    // Signed with the user's key, as bareagent writes them: what is tested
    // is the rewind's own checks, past the file's integrity.
    let text = bareagent::session_files::sign_records(&dir.join(".no-user-state"), &lines).unwrap();
    let file = sessions.join(format!("{ID}.jsonl"));
    std::fs::write(&file, text).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn prompt_record() -> Value {
    json!({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": "go"}]}})
}

fn edit_record(path: &str, before: Option<&str>, after: &str) -> Value {
    json!({"type": "edit", "path": path, "before": before, "after": after})
}

/// (case, the edit records, the file mode, the user's record of it, what
/// must be said) — each an
/// attack on, or a limit of, what a rewind may write. In every case the
/// files are left exactly as they were.
#[test]
fn a_rewind_writes_nothing_it_cannot_vouch_for() {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "safe\n").unwrap();
    let victim_path = victim.display().to_string();
    let outside_name = outside.path().file_name().unwrap().to_string_lossy();
    let up = format!("../{outside_name}/victim.txt");
    let cases: Vec<(&str, Vec<Value>, u32, Vouched, &str)> = vec![
        (
            "a session file that came with the repository (0644)",
            vec![edit_record("a.txt", Some("planted\n"), "a\n")],
            0o644,
            Vouched::Yes,
            "readable by others (mode 644)",
        ),
        (
            "one cloned under umask 077 (0600, the user's, but not in their record)",
            vec![edit_record("a.txt", Some("planted\n"), "a\n")],
            0o600,
            Vouched::No,
            "not written by bareagent for you",
        ),
        (
            "one the user's record has for another workspace",
            vec![edit_record("a.txt", Some("planted\n"), "a\n")],
            0o600,
            Vouched::Elsewhere,
            "not written by bareagent for you",
        ),
        (
            "a file changed between the agent's edits of it",
            vec![
                edit_record("a.txt", Some("one\n"), "two\n"),
                edit_record("a.txt", Some("two, and the user's\n"), "a\n"),
            ],
            0o600,
            Vouched::Yes,
            "a.txt (it changed between the agent's edits",
        ),
        (
            "a path out of the workspace",
            vec![edit_record(&up, Some("owned\n"), "safe\n")],
            0o600,
            Vouched::Yes,
            "victim.txt` is outside the workspace",
        ),
        (
            "an absolute path out of the workspace",
            vec![edit_record(&victim_path, Some("owned\n"), "safe\n")],
            0o600,
            Vouched::Yes,
            "victim.txt` is outside the workspace",
        ),
        (
            "a link in the workspace to a file outside",
            vec![edit_record("link.txt", Some("owned\n"), "safe\n")],
            0o600,
            Vouched::Yes,
            "link.txt` leads outside the workspace through a symbolic link",
        ),
        (
            "a file changed since the edit",
            vec![edit_record(
                "a.txt",
                Some("before\n"),
                "not what it holds\n",
            )],
            0o600,
            Vouched::Yes,
            "a.txt (changed since",
        ),
        (
            "a file deleted since the edit",
            vec![edit_record("gone.txt", Some("was\n"), "x\n")],
            0o600,
            Vouched::Yes,
            "gone.txt (deleted since",
        ),
        (
            "a file the user's deny rules keep edits from",
            vec![edit_record("locked.txt", Some("owned\n"), "safe\n")],
            0o600,
            Vouched::Yes,
            "locked.txt (Denied by the permission rule `edit(locked.txt)`",
        ),
        (
            "a file that was binary before",
            vec![
                json!({"type": "edit", "path": "a.txt", "before": null, "binary": true, "after": "a\n"}),
            ],
            0o600,
            Vouched::Yes,
            "a.txt (it was binary before",
        ),
    ];
    for (case, edits, mode, vouched, said) in cases {
        let dir = workspace(&[
            ("a.txt", "a\n"),
            ("locked.txt", "safe\n"),
            (
                ".bareagent/config.toml",
                "[permissions]\ndeny = [\"edit(locked.txt)\"]\n",
            ),
        ]);
        let dir = dir.path();
        std::os::unix::fs::symlink(&victim, dir.join("link.txt")).unwrap();
        let mut records = vec![prompt_record()];
        records.extend(edits);
        session_file(dir, &records, mode, vouched);
        let (ok, out) = rewind(dir);
        assert!(!ok, "{case}: {out}");
        assert!(out.contains(said), "{case}: `{out}` ∌ `{said}`");
        assert_eq!(read(dir, "a.txt").as_deref(), Some("a\n"), "{case}");
        assert_eq!(read(dir, "locked.txt").as_deref(), Some("safe\n"), "{case}");
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "safe\n",
            "{case}"
        );
    }
}

/// In the editor: one `workspace/applyEdit` puts back every file the turn
/// changed — an open buffer (its unsaved text before the turn included), a
/// file the editor did not have open, a file the agent created — and the
/// next turn's history has forgotten it. A buffer the user typed in since
/// is refused, and named, and the rest still goes back.
#[test]
fn bareagent_rewind_undoes_the_turn_in_one_editor_edit() {
    use crate::lsp::{ask, options, requests_of, start, turn_end};
    for user_types in [false, true] {
        let dir = workspace(&[("open.txt", "one\n"), ("closed.txt", "two\n")]);
        let server = ModelServer::start(vec![
            Reply::tools(vec![
                edit("open.txt", "ONE", "1"),
                edit("closed.txt", "two", "2"),
                write("created.txt", "three\n"),
            ])
            .into(),
            Reply::text("Done.").into(),
            Reply::text("Again.").into(),
        ]);
        let client = start(dir.path(), options(dir.path(), &server, "bypass"));
        let open = client.open("open.txt", "ONE unsaved\n");
        let turn = ask(&client, json!("change them"))["turn"].as_u64().unwrap();
        assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
        assert_eq!(client.text(&open).as_deref(), Some("1 unsaved\n"));
        if user_types {
            client.type_at_end(&open, "mine\n");
        }
        let edits_before = requests_of(&client, "workspace/applyEdit").len();

        let answer = client.execute("bareagent.rewind", json!([])).unwrap();
        let edits = requests_of(&client, "workspace/applyEdit");
        assert_eq!(edits.len(), edits_before + 1, "one edit: {answer}");
        let closed = client.uri("closed.txt");
        assert_eq!(client.text(&closed).as_deref(), Some("two\n"), "{answer}");
        assert!(!dir.path().join("created.txt").exists(), "{answer}");
        assert_eq!(
            answer["restored"],
            if user_types {
                json!(["closed.txt", "created.txt"])
            } else {
                json!(["closed.txt", "created.txt", "open.txt"])
            }
        );
        if user_types {
            assert_eq!(client.text(&open).as_deref(), Some("1 unsaved\nmine\n"));
            assert_eq!(answer["refused"][0]["path"], "open.txt", "{answer}");
        } else {
            assert_eq!(client.text(&open).as_deref(), Some("ONE unsaved\n"));
            assert_eq!(answer["refused"], json!([]));
        }
        let chat = std::fs::read_to_string(dir.path().join(".bareagent/chat.md")).unwrap();
        assert!(chat.contains("Rewound the last turn"), "{chat}");

        // The next turn is sent the history without the rewound one.
        let turn = ask(&client, json!("again"))["turn"].as_u64().unwrap();
        assert_eq!(turn_end(&client, turn)["type"], "turn_finished");
        let requests = server.requests();
        let sent = prompts(&requests.last().unwrap().body);
        assert_eq!(sent.last().map(String::as_str), Some("again"), "{sent:?}");
        // Only a file left with the turn's edits is worth a word to the model.
        assert_eq!(sent.len(), if user_types { 2 } else { 1 }, "{sent:?}");
    }
}

/// A session another agent is writing is not touched (its turn is still
/// running); a turn a kill cut short is a turn of its own once resumed, so
/// the first rewind undoes the next turn alone, the second the killed one.
#[test]
fn a_session_in_use_is_left_alone_and_a_killed_turn_rewinds_on_its_own() {
    let dir = workspace(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let dir = dir.path();
    let server = ModelServer::start(vec![
        Reply::tool("edit_file", edit("a.txt", "a", "A").1).into(),
        Reply::tool(
            "bash",
            json!({"command": "echo started > marker && sleep 60"}),
        )
        .into(),
    ]);
    let mut running = run_against_model(&mut bareagent(dir), &server)
        .args(["--permission-mode", "bypass", "first"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !dir.join("marker").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never ran its command"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let (ok, said) = rewind(dir);
    assert!(
        !ok && said.contains("in use by another bareagent"),
        "{said}"
    );
    assert_eq!(
        read(dir, "a.txt").as_deref(),
        Some("A\n"),
        "untouched while in use"
    );
    running.kill().unwrap();
    running.wait().unwrap();

    turn(
        dir,
        &["--continue"],
        "second",
        vec![edit("b.txt", "b", "B")],
    );
    let (ok, said) = rewind(dir);
    assert!(ok && said.contains("restored b.txt"), "{said}");
    assert_eq!(
        read(dir, "a.txt").as_deref(),
        Some("A\n"),
        "not that turn's"
    );
    let (ok, said) = rewind(dir);
    assert!(ok && said.contains("restored a.txt"), "{said}");
    assert_eq!(read(dir, "a.txt").as_deref(), Some("a\n"));
}
