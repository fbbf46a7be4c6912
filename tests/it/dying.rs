//! Commands die with the agent: the built binary — `bareagent run` and the
//! language server — runs a background command and a foreground `bash` call
//! (each with a grandchild), then is killed or loses its editor; every
//! process it started, and the reaper, must be gone. Checked by PID, polled
//! with a deadline.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::{TEST_KEY, workspace};
use crate::support::lsp_client::{ClientOptions, LspClient};
use crate::support::model_server::{Hold, ModelServer, Reply, Step};

const DEADLINE: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, Debug)]
enum FrontEnd {
    Run,
    Lsp,
}

#[derive(Clone, Copy, Debug)]
enum Death {
    Signal(i32),
    /// The editor goes away: the server's stdin closes.
    StdinClosed,
    /// `bareagent run` ends its turn and exits by itself.
    Exits,
}

const CASES: &[(FrontEnd, Death)] = &[
    (FrontEnd::Run, Death::Signal(libc::SIGTERM)),
    (FrontEnd::Run, Death::Signal(libc::SIGKILL)),
    (FrontEnd::Run, Death::Signal(libc::SIGHUP)),
    (FrontEnd::Lsp, Death::Signal(libc::SIGTERM)),
    (FrontEnd::Lsp, Death::Signal(libc::SIGKILL)),
    (FrontEnd::Lsp, Death::StdinClosed),
];

/// A background command, then a foreground one that blocks; each leaves
/// its grandchild's PID and its own in a file.
fn script() -> Vec<Step> {
    let command = |file: &str| format!("sleep 1000 & echo $! > {file}; echo $$ >> {file}; wait");
    vec![
        Reply::tool(
            "bash",
            json!({"command": command("bg.pid"), "run_in_background": true}),
        )
        .into(),
        Reply::tool(
            "bash",
            json!({"command": command("fg.pid"), "timeout_ms": 600_000}),
        )
        .into(),
        Reply::text("never reached").into(),
    ]
}

fn pids_in(dir: &Path, file: &str) -> Option<Vec<i32>> {
    let text = std::fs::read_to_string(dir.join(file)).ok()?;
    let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    (pids.len() == 2).then_some(pids)
}

/// Alive and not a zombie (an orphaned zombie waits for init, which may be
/// slow to reap it; it runs nothing).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z"),
        Err(_) => false,
    }
}

fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Every living process below `root` (not `root` itself).
fn descendants(root: i32) -> BTreeSet<i32> {
    let all: Vec<i32> = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    let mut found = BTreeSet::from([root]);
    loop {
        let before = found.len();
        for &pid in &all {
            if parent_of(pid).is_some_and(|p| found.contains(&p)) {
                found.insert(pid);
            }
        }
        if found.len() == before {
            break;
        }
    }
    found.remove(&root);
    found
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The agent's process, however it was started.
enum Agent {
    Run(std::process::Child),
    Lsp(LspClient),
}

impl Agent {
    fn pid(&self) -> i32 {
        match self {
            Agent::Run(child) => child.id() as i32,
            Agent::Lsp(client) => client.pid() as i32,
        }
    }
}

fn start(front: FrontEnd, dir: &Path, server: &ModelServer) -> Agent {
    match front {
        FrontEnd::Run => Agent::Run(
            crate::common::run_against_model(&mut crate::common::bareagent(dir), server)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .args(["--permission-mode", "bypass", "go"])
                .spawn()
                .expect("bareagent run starts"),
        ),
        FrontEnd::Lsp => {
            let mut options = ClientOptions::new(dir);
            options
                .env
                .extend([("ANTHROPIC_API_KEY".into(), TEST_KEY.into())]);
            options.initialization_options = json!({
                "provider": "anthropic", "baseUrl": server.anthropic_base(), "permissionMode": "bypass",
            });
            let client = LspClient::start(Path::new(env!("CARGO_BIN_EXE_bareagent")), options);
            client.initialize();
            client.execute("bareagent.ask", json!(["go"])).expect("ask");
            Agent::Lsp(client)
        }
    }
}

#[test]
fn commands_die_with_the_agent_however_it_dies() {
    for &(front, death) in CASES {
        let case = format!("{front:?} / {death:?}");
        let dir = workspace(&[]);
        let server = ModelServer::start(script());
        let mut agent = start(front, dir.path(), &server);
        wait_for(&format!("{case}: both commands to start"), || {
            pids_in(dir.path(), "bg.pid").is_some() && pids_in(dir.path(), "fg.pid").is_some()
        });
        let pid = agent.pid();
        let theirs = descendants(pid);
        let commands: Vec<i32> = ["bg.pid", "fg.pid"]
            .iter()
            .flat_map(|f| pids_in(dir.path(), f).unwrap_or_default())
            .collect();
        for command in &commands {
            assert!(
                theirs.contains(command),
                "{case}: {command} is not below the agent: {theirs:?}"
            );
        }
        // The reaper is one of them: one more than the four commands.
        assert!(
            theirs.len() > commands.len(),
            "{case}: no reaper among {theirs:?}"
        );

        kill(&mut agent, death, &case);
        wait_for(
            &format!("{case}: every process of the agent's to end ({theirs:?})"),
            || theirs.iter().all(|&p| !alive(p)),
        );
    }
}

/// Descendants that leave the command's process group die with the agent
/// too: a `setsid` child and a double-forked daemon (its parent gone, in a
/// session of its own), started by a command that has returned (once they
/// have left its group: the command's group dies with the command). (front
/// end, how the agent dies)
#[test]
fn escaped_descendants_die_with_the_agent() {
    const ESCAPES: &str = "setsid sh -c 'echo $$ > setsid.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 & \
        ( setsid sh -c 'echo $$ > daemon.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 & ) ; \
        until [ -s setsid.pid ] && [ -s daemon.pid ]; do sleep 0.01; done; echo started";
    let cases = [
        (FrontEnd::Run, Death::Signal(libc::SIGKILL)),
        (FrontEnd::Run, Death::Signal(libc::SIGTERM)),
        (FrontEnd::Run, Death::Exits),
        (FrontEnd::Lsp, Death::StdinClosed),
    ];
    for (front, death) in cases {
        let case = format!("{front:?} / {death:?}");
        let dir = workspace(&[]);
        // The last answer waits until the escapes are seen alive.
        let hold = Hold::new();
        let then: Step = match death {
            Death::Exits => Reply::text("done").held(&hold).into(),
            _ => Reply::tool(
                "bash",
                json!({"command": "sleep 1000", "timeout_ms": 600_000}),
            )
            .into(),
        };
        let server = ModelServer::start(vec![
            Reply::tool("bash", json!({"command": ESCAPES})).into(),
            then,
            Reply::text("never reached").into(),
        ]);
        let mut agent = start(front, dir.path(), &server);
        let pid_in = |file: &str| -> Option<i32> {
            std::fs::read_to_string(dir.path().join(file))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        wait_for(&format!("{case}: the escapes to start"), || {
            pid_in("setsid.pid").is_some_and(alive)
                && pid_in("daemon.pid").is_some_and(alive)
                && server.requests().len() >= 2
        });
        let escaped: Vec<i32> = ["setsid.pid", "daemon.pid"]
            .iter()
            .filter_map(|f| pid_in(f))
            .collect();
        for escapee in &escaped {
            let (group, session) = group_and_session(*escapee);
            assert_eq!(
                (group, session),
                (*escapee, *escapee),
                "{case}: {escapee} left its group and session"
            );
        }
        hold.release();
        kill(&mut agent, death, &case);
        wait_for(
            &format!("{case}: the escaped processes to end ({escaped:?})"),
            || escaped.iter().all(|&p| !alive(p)),
        );
    }
}

/// Makes the agent die as `death` says, and waits for it.
fn kill(agent: &mut Agent, death: Death, case: &str) {
    match death {
        // SAFETY: kill sends a signal to the agent we started.
        Death::Signal(signal) => unsafe {
            libc::kill(agent.pid(), signal);
        },
        Death::StdinClosed => {
            let Agent::Lsp(client) = &*agent else {
                unreachable!("only the language server has an editor")
            };
            assert!(
                client.close_stdin_and_wait(DEADLINE).is_some(),
                "{case}: the server exits"
            );
        }
        Death::Exits => {}
    }
    if let Agent::Run(child) = agent {
        let _ = child.wait();
    }
}

/// A process's group and session ids.
fn group_and_session(pid: i32) -> (i32, i32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<i32> = stat
        .rsplit_once(')')
        .map(|(_, rest)| {
            rest.split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    // After the state: ppid, pgrp, session (the state is not a number).
    (
        fields.get(1).copied().unwrap_or(0),
        fields.get(2).copied().unwrap_or(0),
    )
}
