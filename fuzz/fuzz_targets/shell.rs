//! The shell reader (`permission::shell`) against bash as the oracle, as
//! `tests/it/shell_differential.rs` does for generated lines, here for
//! whatever the fuzzer writes.
//!
//! For a line the reader understands (no problems, every program named by
//! plain text) whose programs are all stubs `c1`…`c5`, bash runs it with
//! only the stubs on `PATH`, each logging its name and arguments:
//! - every stub bash ran is a command the reader reported (a command
//!   hidden from the reader would pass an allow rule unseen);
//! - for one plain simple command (no substitution, no redirect but
//!   here-document data, no expansion or glob), bash ran it at most once,
//!   and with the words the reader read (word splitting and quote removal
//!   agree).
//!
//! bash runs restricted (`-r`: no `/` in a command name, no output
//! redirects, no `exec`), every builtin disabled before the line, with an
//! empty environment in an empty directory, killed after two seconds: a
//! line the reader misreads still cannot reach anything but the stubs.
//!
//! Without bash: the words of every command the reader reports, quoted
//! again, read back as the same words.
#![no_main]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bareagent::permission::shell::{self, RedirectKind};
use libfuzzer_sys::fuzz_target;

const STUBS: [&str; 5] = ["c1", "c2", "c3", "c4", "c5"];

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    if line.contains('\0') || line.len() > 1024 {
        return;
    }
    let parsed = shell::parse(line);
    for command in parsed.commands() {
        if command.words.iter().any(|w| w.opaque || w.glob) || command.words.is_empty() {
            continue;
        }
        let quoted: Vec<String> = command
            .words
            .iter()
            .map(|w| format!("'{}'", w.text.replace('\'', "'\\''")))
            .collect();
        let again = shell::parse(&quoted.join(" "));
        assert_eq!(
            again.commands().first().map(|c| c.texts()),
            Some(command.texts()),
            "the words {:?} quoted again read otherwise",
            command.texts()
        );
    }
    if !parsed.problems.is_empty() {
        return;
    }
    let commands = parsed.commands();
    let programs: Vec<&str> = commands.iter().filter_map(|c| c.program()).collect();
    let plain_programs = commands
        .iter()
        .all(|c| c.words.first().is_none_or(|w| !w.opaque && !w.glob));
    if programs.is_empty() || !plain_programs || !programs.iter().all(|p| STUBS.contains(p)) {
        return;
    }
    let Some(ran) = run_under_bash(line) else {
        return;
    };
    for (name, _) in &ran {
        assert!(
            programs.contains(&name.as_str()),
            "bash ran {name}, which the reader did not report, for {line:?} (reported {programs:?})"
        );
    }
    let [command] = commands.as_slice() else {
        return;
    };
    let plain = !command.unwrapped
        && command.substitutions.is_empty()
        && command.assignments.is_empty()
        && command
            .redirects
            .iter()
            .all(|r| r.kind == RedirectKind::Data)
        && command.words.iter().all(|w| !w.opaque && !w.glob);
    if !plain {
        return;
    }
    assert!(
        ran.len() <= 1,
        "bash ran {ran:?} for the one command of {line:?}"
    );
    if let Some((_, args)) = ran.first() {
        let words = command.texts();
        assert_eq!(
            args.iter().map(String::as_str).collect::<Vec<_>>(),
            words[1..],
            "bash split {line:?} otherwise"
        );
    }
});

struct Sandbox {
    stubs: PathBuf,
    work: PathBuf,
    _dir: tempfile::TempDir,
}

fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let stubs = dir.path().join("stubs");
        let work = dir.path().join("work");
        std::fs::create_dir(&stubs).expect("stubs directory");
        std::fs::create_dir(&work).expect("work directory");
        for stub in STUBS {
            let path = stubs.join(stub);
            // One file per run of a stub (its pid): its name, then its
            // arguments, each ended by a NUL.
            let script = format!("#!/bin/sh\nprintf '%s\\0' {stub} \"$@\" > \"$STUB_LOG/$$\"\n");
            std::fs::write(&path, script).expect("stub");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("mode");
        }
        Sandbox {
            stubs,
            work,
            _dir: dir,
        }
    })
}

/// The stubs bash ran for `line`, each with its arguments; `None` when
/// bash did not finish in time.
fn run_under_bash(line: &str) -> Option<Vec<(String, Vec<String>)>> {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let sandbox = sandbox();
    // A directory of its own each run: a stub put in the background
    // (`c1 &`) may write after bash is gone, and must not count for the
    // next line.
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let log = sandbox.work.join(format!("log{run}"));
    std::fs::create_dir(&log).expect("log directory");
    let script = format!("enable -n $(compgen -b)\n{line}");
    let mut child = Command::new("/bin/bash")
        .arg("-r")
        .arg("-c")
        .arg(script)
        .current_dir(&sandbox.work)
        .env_clear()
        .env("PATH", &sandbox.stubs)
        .env("STUB_LOG", &log)
        .env("HOME", &sandbox.work)
        .env("X", "value")
        .env("LC_ALL", "C.UTF-8")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("bash starts");
    let deadline = Instant::now() + Duration::from_secs(2);
    let finished = loop {
        if child.try_wait().expect("wait for bash").is_some() {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    // The whole group: what bash left running in the background too.
    // SAFETY: a plain kill(2) of the group bash leads.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
    let ran = finished.then(|| read_log(&log));
    let _ = std::fs::remove_dir_all(&log);
    ran
}

fn read_log(log: &Path) -> Vec<(String, Vec<String>)> {
    let mut ran = Vec::new();
    for entry in std::fs::read_dir(log).expect("log directory").flatten() {
        let bytes = std::fs::read(entry.path()).unwrap_or_default();
        let mut fields: Vec<String> = bytes
            .split(|&b| b == 0)
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        fields.pop(); // after the last NUL
        if fields.is_empty() {
            continue;
        }
        let name = fields.remove(0);
        ran.push((name, fields));
    }
    ran
}
