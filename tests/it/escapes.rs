//! The file tools stay inside the workspace, tried as an attacker would:
//! a table of path-escape attempts across every file tool (and a
//! sub-agent), and races that swap a file or a directory for a link to
//! outside while the tools read and write. All through the real loop and
//! the scripted model server; the proof is what the model received: no
//! outside canary's content, no outside name, and nothing new outside.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bareagent::history::check_history;
use serde_json::{Value, json};

use crate::common::*;
use crate::support::model_server::{ModelServer, Reply, Step};

const CANARY: &str = "CANARY-outside-7f3a9c";
/// An outside file no call names: its name in a result is a listing leak.
const UNNAMED: &str = "listed-only-if-leaked.txt";

/// Every tool result of every request the server received (sub-agents' too).
fn every_result(server: &ModelServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .flat_map(|request| sent_tool_results(&request.body))
        .map(|(content, _)| content)
        .collect()
}

/// Every path below `dir`, links not followed, so a change shows.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path.clone());
            }
            found.push(path);
        }
    }
    found.sort();
    found
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a fresh path in a temp dir.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
}

/// The outside: a directory next to the workspace holding the canary.
fn outside() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("canary.txt"), format!("{CANARY}\n")).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/canary.txt"), format!("{CANARY}\n")).unwrap();
    std::fs::write(dir.path().join(UNNAMED), format!("{CANARY}\n")).unwrap();
    dir
}

/// A workspace full of ways out.
fn hostile_workspace(outside: &Path) -> tempfile::TempDir {
    let dir = workspace(&[
        ("inside.txt", "inside text\n"),
        ("src/main.rs", "fn main() {}\n"),
    ]);
    let root = dir.path();
    let link = |target: &Path, name: &OsStr| std::os::unix::fs::symlink(target, root.join(name));
    link(&outside.join("canary.txt"), "link_file".as_ref()).unwrap();
    link(outside, "link_dir".as_ref()).unwrap();
    let outside_name = outside.file_name().unwrap();
    let relative = Path::new("..").join(outside_name).join("canary.txt");
    link(&relative, "rel_link".as_ref()).unwrap();
    link(Path::new("/dev/zero"), "zero".as_ref()).unwrap();
    link(Path::new("/proc/self/root"), "proc_root".as_ref()).unwrap();
    mkfifo(&root.join("fifo"));
    // Names that are not UTF-8: a link, and a directory holding one.
    link(&outside.join("canary.txt"), OsStr::from_bytes(b"bad\xff")).unwrap();
    let bad_dir = root.join(OsStr::from_bytes(b"dir\xfe\xff"));
    std::fs::create_dir(&bad_dir).unwrap();
    std::os::unix::fs::symlink(outside.join("canary.txt"), bad_dir.join("leak")).unwrap();
    std::os::unix::fs::symlink(outside, bad_dir.join("leak_dir")).unwrap();
    dir
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// The tool refuses: the result is an error.
    Refused,
    /// The tool answers (nothing to escape to), with no outside content.
    Answered,
}

use Expect::*;

type Case = (&'static str, &'static str, Value, Expect);

/// The first response's calls: escapes through what was on disk at start.
fn first_cases(outside: &Path) -> Vec<Case> {
    let out = outside.display().to_string();
    let out_name = outside.file_name().unwrap().to_string_lossy().to_string();
    let long_name = "n".repeat(300);
    let past_path_max = format!("{}/f.txt", vec!["d".repeat(250); 20].join("/"));
    vec![
        (
            "file symlink",
            "read_file",
            json!({"path": "link_file"}),
            Refused,
        ),
        (
            "dir symlink",
            "read_file",
            json!({"path": "link_dir/canary.txt"}),
            Refused,
        ),
        (
            "relative symlink",
            "read_file",
            json!({"path": "rel_link"}),
            Refused,
        ),
        (
            "absolute outside",
            "read_file",
            json!({"path": format!("{out}/canary.txt")}),
            Refused,
        ),
        (
            "dot-dot",
            "read_file",
            json!({"path": format!("../{out_name}/canary.txt")}),
            Refused,
        ),
        (
            "dot-dot inside",
            "read_file",
            json!({"path": format!("src/../../{out_name}/canary.txt")}),
            Refused,
        ),
        (
            "/proc/self/root",
            "read_file",
            json!({"path": format!("/proc/self/root{out}/canary.txt")}),
            Refused,
        ),
        (
            "link to /proc/self/root",
            "read_file",
            json!({"path": format!("proc_root{out}/canary.txt")}),
            Refused,
        ),
        (
            "/proc/self/cwd",
            "read_file",
            json!({"path": "/proc/self/cwd/Cargo.toml"}),
            Refused,
        ),
        ("fifo", "read_file", json!({"path": "fifo"}), Refused),
        (
            "link to /dev/zero",
            "read_file",
            json!({"path": "zero"}),
            Refused,
        ),
        (
            "/dev/zero",
            "read_file",
            json!({"path": "/dev/zero"}),
            Refused,
        ),
        (
            "name over 255 bytes",
            "read_file",
            json!({"path": long_name}),
            Refused,
        ),
        (
            "path over PATH_MAX",
            "read_file",
            json!({"path": past_path_max}),
            Refused,
        ),
        (
            "non-UTF-8 link, lossy name",
            "read_file",
            json!({"path": "bad\u{fffd}"}),
            Refused,
        ),
        (
            "write through dir symlink",
            "write_file",
            json!({"path": "link_dir/new.txt", "content": "x"}),
            Refused,
        ),
        (
            "write through file symlink",
            "write_file",
            json!({"path": "link_file", "content": "pwned"}),
            Refused,
        ),
        (
            "write absolute outside",
            "write_file",
            json!({"path": format!("{out}/new.txt"), "content": "x"}),
            Refused,
        ),
        (
            "write dot-dot",
            "write_file",
            json!({"path": format!("../{out_name}/new.txt"), "content": "x"}),
            Refused,
        ),
        (
            "write long name",
            "write_file",
            json!({"path": "n".repeat(300), "content": "x"}),
            Refused,
        ),
        (
            "write into a fifo",
            "write_file",
            json!({"path": "fifo", "content": "x"}),
            Refused,
        ),
        (
            "edit file symlink",
            "edit_file",
            json!({"path": "link_file", "old_string": CANARY, "new_string": "x"}),
            Refused,
        ),
        (
            "edit via dir symlink",
            "edit_file",
            json!({"path": "link_dir/canary.txt", "old_string": CANARY, "new_string": "x"}),
            Refused,
        ),
        (
            "multi_edit relative symlink",
            "multi_edit",
            json!({"path": "rel_link", "edits": [{"old_string": CANARY, "new_string": "x"}]}),
            Refused,
        ),
        (
            "multi_edit /proc/self/root",
            "multi_edit",
            json!({"path": format!("/proc/self/root{out}/canary.txt"), "edits": [{"old_string": CANARY, "new_string": "x"}]}),
            Refused,
        ),
        (
            "grep dir symlink",
            "grep",
            json!({"pattern": "CANARY", "path": "link_dir"}),
            Refused,
        ),
        (
            "grep dot-dot",
            "grep",
            json!({"pattern": "CANARY", "path": ".."}),
            Refused,
        ),
        (
            "grep /proc/self/root",
            "grep",
            json!({"pattern": "CANARY", "path": format!("/proc/self/root{out}")}),
            Refused,
        ),
        (
            "grep the root, links inside",
            "grep",
            json!({"pattern": "CANARY", "output_mode": "content"}),
            Answered,
        ),
        (
            "grep with a dot-dot glob",
            "grep",
            json!({"pattern": "CANARY", "glob": "../**", "output_mode": "content"}),
            Answered,
        ),
        (
            "grep a non-UTF-8 dir",
            "grep",
            json!({"pattern": "CANARY", "path": "dir\u{fffd}\u{fffd}"}),
            Answered,
        ),
        (
            "glob dot-dot pattern",
            "glob",
            json!({"pattern": "../**/*"}),
            Answered,
        ),
        (
            "glob dot-dot path",
            "glob",
            json!({"pattern": "**/*", "path": "../"}),
            Refused,
        ),
        (
            "glob dir symlink",
            "glob",
            json!({"pattern": "**/*", "path": "link_dir"}),
            Refused,
        ),
        (
            "glob through a link",
            "glob",
            json!({"pattern": "link_dir/**"}),
            Answered,
        ),
        (
            "glob everything",
            "glob",
            json!({"pattern": "**/*"}),
            Answered,
        ),
        (
            "glob /proc/self/cwd",
            "glob",
            json!({"pattern": "**/*", "path": "/proc/self/cwd"}),
            Refused,
        ),
    ]
}

/// After a `bash` call made new links during the turn.
fn after_bash_cases() -> Vec<Case> {
    vec![
        (
            "bash-made file link",
            "read_file",
            json!({"path": "made_link"}),
            Refused,
        ),
        (
            "bash-made dir link",
            "read_file",
            json!({"path": "made_dir/canary.txt"}),
            Refused,
        ),
        (
            "bash-made dir link, nested",
            "read_file",
            json!({"path": "made_dir/sub/canary.txt"}),
            Refused,
        ),
        (
            "grep bash-made dir",
            "grep",
            json!({"pattern": "CANARY", "path": "made_dir"}),
            Refused,
        ),
        (
            "glob bash-made dir",
            "glob",
            json!({"pattern": "**", "path": "made_dir"}),
            Refused,
        ),
        (
            "edit bash-made link",
            "edit_file",
            json!({"path": "made_link", "old_string": CANARY, "new_string": "x"}),
            Refused,
        ),
        (
            "write into bash-made dir",
            "write_file",
            json!({"path": "made_dir/sub/new.txt", "content": "x"}),
            Refused,
        ),
    ]
}

fn calls(cases: &[Case]) -> Vec<(&str, Value)> {
    cases
        .iter()
        .map(|(_, tool, input, _)| (*tool, input.clone()))
        .collect()
}

#[tokio::test]
async fn no_tool_reads_or_writes_outside_the_workspace() {
    let outside = outside();
    let dir = hostile_workspace(outside.path());
    let outside_before = tree(outside.path());
    let first = first_cases(outside.path());
    let later = after_bash_cases();
    let out = outside.path().display();
    let make_links =
        format!("ln -s {out}/canary.txt made_link && ln -s {out} made_dir && echo made");
    let script: Vec<Step> = vec![
        Reply::tools(calls(&first)).into(),
        Reply::tool("bash", json!({"command": make_links})).into(),
        Reply::tools(calls(&later)).into(),
        // A sub-agent tries the same.
        Reply::tool(
            "task",
            json!({"description": "look", "prompt": "read link_file", "kind": "explore"}),
        )
        .into(),
        Reply::tools(vec![
            ("read_file", json!({"path": "link_file"})),
            ("read_file", json!({"path": "made_dir/canary.txt"})),
            ("grep", json!({"pattern": "CANARY", "path": "made_dir"})),
        ])
        .into(),
        Reply::text("the sub-agent found nothing").into(),
        Reply::text("done").into(),
    ];
    let server = ModelServer::start(script);
    let provider = provider(Api::Anthropic, &server);
    let turn = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        run_turn(&provider, dir.path(), "go", TurnOptions::default()),
    )
    .await
    .expect("no tool may hang (a FIFO, /dev/zero)");
    turn.result.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(check_history(&turn.messages), Ok(()));

    let requests = server.requests();
    let parent = sent_tool_results(&requests.last().unwrap().body);
    let sub_agent = sent_tool_results(&requests[5].body);
    assert_eq!(parent.len(), first.len() + 1 + later.len() + 1);
    assert_eq!(parent[first.len()].0.trim(), "made", "bash made the links");
    let mut checked = 0;
    let results = parent[..first.len()]
        .iter()
        .zip(&first)
        .chain(parent[first.len() + 1..].iter().zip(&later));
    for ((content, is_error), (name, tool, _, expect)) in results {
        match expect {
            Refused => assert!(is_error, "{name} ({tool}) was not refused: {content}"),
            Answered => assert!(!is_error, "{name} ({tool}) failed: {content}"),
        }
        checked += 1;
    }
    assert!(checked >= 40, "{checked} cases");
    assert!(
        sub_agent.len() == 3 && sub_agent.iter().all(|(_, e)| *e),
        "{sub_agent:?}"
    );

    // Nothing of the outside reached the model: no content, no name.
    for content in every_result(&server) {
        assert!(
            !content.contains(CANARY),
            "outside content leaked: {content}"
        );
        assert!(
            !content.contains(UNNAMED),
            "an outside name leaked: {content}"
        );
    }
    for (content, _) in turn.sink.tool_results() {
        assert!(!content.contains(CANARY), "{content}");
    }
    // Nothing was written outside, and the canary is intact.
    assert_eq!(tree(outside.path()), outside_before);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("canary.txt")).unwrap(),
        format!("{CANARY}\n")
    );
}

/// Swaps `target` between a regular file (or directory) and a link to
/// `outside_target` until stopped, each swap one atomic rename.
fn swapper(
    root: PathBuf,
    target: &'static str,
    outside_target: PathBuf,
    dir: bool,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let (real, link, target) = (
            root.join("swap.real"),
            root.join("swap.link"),
            root.join(target),
        );
        let mut swaps = 0;
        while !stop.load(Ordering::Relaxed) {
            // The link goes in (a directory has to step aside first)...
            let _ = std::fs::remove_file(&link);
            let _ = std::os::unix::fs::symlink(&outside_target, &link);
            if dir {
                let _ = std::fs::rename(&target, &real);
            }
            let _ = std::fs::rename(&link, &target);
            // Each state holds a moment, so reads meet both.
            std::thread::sleep(std::time::Duration::from_micros(200));
            // ...and the real one comes back.
            if dir {
                let _ = std::fs::remove_file(&target);
            } else {
                let _ = std::fs::write(&real, "inside text\n");
            }
            let _ = std::fs::rename(&real, &target);
            std::thread::sleep(std::time::Duration::from_micros(1000));
            swaps += 1;
        }
        swaps
    })
}

#[tokio::test]
async fn a_swapped_link_never_redirects_a_read() {
    let outside = outside();
    let dir = workspace(&[("target.txt", "inside text\n")]);
    // 20 responses of 20 reads: spread over the turn, the reads meet the
    // file in both of its states however the swapping thread is scheduled.
    let mut script: Vec<Step> = (0..20)
        .map(|_| {
            let reads = (0..20)
                .map(|_| ("read_file", json!({"path": "target.txt"})))
                .collect();
            Reply::tools(reads).into()
        })
        .collect();
    script.push(Reply::text("ok").into());
    let server = ModelServer::start(script);
    let provider = provider(Api::Anthropic, &server);
    let stop = Arc::new(AtomicBool::new(false));
    let swapping = swapper(
        dir.path().to_path_buf(),
        "target.txt",
        outside.path().join("canary.txt"),
        false,
        stop.clone(),
    );
    let turn = run_turn(&provider, dir.path(), "go", TurnOptions::default()).await;
    stop.store(true, Ordering::Relaxed);
    let swaps = swapping.join().unwrap();
    turn.result.unwrap_or_else(|e| panic!("{e}"));
    let results = sent_tool_results(&server.requests()[20].body);
    assert_eq!(results.len(), 400);
    let leaked = results.iter().filter(|(c, _)| c.contains(CANARY)).count();
    let read = results
        .iter()
        .filter(|(c, _)| c.contains("inside text"))
        .count();
    eprintln!("{swaps} swaps; {read} of 400 reads saw the inside file, {leaked} the outside one");
    assert_eq!(leaked, 0, "reads returned the outside file's contents");
    assert!(read > 0, "no read succeeded: the race test tested nothing");
}

#[tokio::test]
async fn a_swapped_directory_never_redirects_a_write() {
    let outside = outside();
    let dir = workspace(&[("out/keep.txt", "inside\n")]);
    let outside_before = tree(outside.path());
    let writes: Vec<(&str, Value)> = (0..100)
        .map(|i| {
            (
                "write_file",
                json!({"path": format!("out/file{i}.txt"), "content": "x"}),
            )
        })
        .collect();
    let server = ModelServer::start(vec![Reply::tools(writes).into(), Reply::text("ok").into()]);
    let provider = provider(Api::Anthropic, &server);
    let stop = Arc::new(AtomicBool::new(false));
    let swapping = swapper(
        dir.path().to_path_buf(),
        "out",
        outside.path().to_path_buf(),
        true,
        stop.clone(),
    );
    let turn = run_turn(&provider, dir.path(), "go", TurnOptions::default()).await;
    stop.store(true, Ordering::Relaxed);
    let swaps = swapping.join().unwrap();
    turn.result.unwrap_or_else(|e| panic!("{e}"));
    let results = sent_tool_results(&server.requests()[1].body);
    let written = results.iter().filter(|(_, e)| !e).count();
    eprintln!("{swaps} swaps; {written} of 100 writes landed inside");
    assert_eq!(
        tree(outside.path()),
        outside_before,
        "something was created outside"
    );
}

/// An agent killed in the middle of `write_file` leaves its temporary file
/// behind; the next agent on the workspace removes it, so git never shows
/// it. (Planted here: a kill lands in the middle of a write too rarely to test.)
#[test]
fn a_killed_writes_temporary_file_is_removed_at_the_next_start() {
    let dir = workspace(&[("sub/keep.txt", "x"), ("sub/.bareagent-notes.txt", "x")]);
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for name in [".bareagent-4242-dead.tmp", "sub/.bareagent-4242-dead.tmp"] {
        let path = dir.path().join(name);
        std::fs::write(&path, "half a write").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(an_hour_ago).unwrap();
    }
    let wait = "for i in $(seq 200); do [ -e .bareagent-4242-dead.tmp ] || [ -e sub/.bareagent-4242-dead.tmp ] || break; sleep 0.05; done";
    let server = ModelServer::start(vec![
        Reply::tool("bash", json!({ "command": wait })).into(),
        Reply::text("done").into(),
    ]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bareagent"))
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .args(["run", "--provider", "anthropic", "--base-url"])
        .arg(server.anthropic_base())
        .args(["--permission-mode", "bypass", "go"])
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .output()
        .unwrap();
    crate::common::assert_succeeded(&out);
    assert!(!dir.path().join(".bareagent-4242-dead.tmp").exists());
    assert!(!dir.path().join("sub/.bareagent-4242-dead.tmp").exists());
    assert!(dir.path().join("sub/keep.txt").exists());
    assert!(dir.path().join("sub/.bareagent-notes.txt").exists());
}
