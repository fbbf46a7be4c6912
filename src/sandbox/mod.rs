//! The OS sandbox for commands: what a `bash` or background command may
//! write, read and reach, enforced by the kernel (Landlock) in the child
//! between fork and exec, whatever the permission gate said. `bypass` stops
//! questions, never this; only the user's `sandbox.mode = "off"` does.
//!
//! This module owns the policy (which folders, which secrets, network or
//! not), the session's private temp folder, and the status that front ends
//! report. How the policy becomes Landlock rules is `landlock.rs`; the hint
//! a refused command's output gets is `denial.rs`. It knows nothing about
//! tools or process groups: `tools::process` asks it for a [`Confinement`]
//! and applies it to the command it spawns.

mod denial;
pub use denial::HINT_PREFIX;
mod landlock;
mod privileges;
mod protected;
mod seccomp;

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

use serde::Deserialize;

use crate::workspace::PinnedMount;

/// The toolchains' download caches under `$HOME`, writable in
/// `workspace-write` mode (when they exist when a command starts), so builds
/// and package managers work. Only caches: never a folder whose files a
/// shell, a build or a later command runs (`~/.cargo/bin`, `~/.cargo/env`,
/// `~/.cargo/config.toml`, `~/.rustup/toolchains`, `~/.gradle/init.d`,
/// `~/.npm/_npx`, `~/.cache/pre-commit`). Extended by `sandbox.writable`.
pub const CACHE_DIRS: &[&str] = &[
    ".cargo/registry",
    ".cargo/git",
    ".npm/_cacache",
    ".npm/_logs",
    ".yarn/berry/cache",
    ".cache/pip",
    ".cache/uv",
    ".cache/yarn",
    ".cache/go-build",
    ".local/share/pnpm/store",
    ".m2/repository",
    ".gradle/caches",
    "go/pkg/mod",
];

/// The folder git's `core.hooksPath` names in the repository at
/// `workspace`, if any: what the user's next commit runs from there.
pub fn git_hooks_folder(workspace: &Path) -> Option<PathBuf> {
    protected::hooks_path(&workspace.join(".git").join("config"), workspace)
}

/// Character devices commands write to: `> /dev/null` and friends.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
    "/dev/ptmx",
    "/dev/pts",
];

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Writes to the workspace, the private temp folder, the toolchains'
    /// caches and `sandbox.writable`.
    #[default]
    WorkspaceWrite,
    /// Writes only to the private temp folder (and `/dev/null`-like devices).
    ReadOnly,
    /// No sandbox: commands run with the agent's own rights.
    Off,
}

impl SandboxMode {
    /// How much the mode lets commands do: an untrusted project may only
    /// choose less than the user's.
    pub fn latitude(self) -> u8 {
        match self {
            SandboxMode::ReadOnly => 0,
            SandboxMode::WorkspaceWrite => 1,
            SandboxMode::Off => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::Off => "off",
        }
    }
}

/// The `[sandbox]` table of the config files.
///
/// ```toml
/// [sandbox]
/// mode = "workspace-write"   # | "read-only" | "off"
/// writable = ["~/.local/share/virtualenvs", "/opt/build"]
/// network = false            # true lets commands open TCP connections
/// ```
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SandboxSettings {
    pub mode: Option<SandboxMode>,
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    pub network: Option<bool>,
}

impl SandboxSettings {
    /// What a project's settings may change, trusted or not: only what confines
    /// more (a stricter mode, the network off). The rest is returned, as
    /// written, for the user to be told.
    pub fn restricted_by(mut self, other: SandboxSettings) -> (SandboxSettings, Vec<String>) {
        let mut ignored = Vec::new();
        let mine = self.mode.unwrap_or_default();
        match other.mode {
            Some(theirs) if theirs.latitude() <= mine.latitude() => self.mode = Some(theirs),
            Some(theirs) => ignored.push(format!("sandbox.mode = \"{}\"", theirs.name())),
            None => {}
        }
        match other.network {
            Some(false) => self.network = Some(false),
            Some(true) if self.network != Some(true) => {
                ignored.push("sandbox.network = true".into())
            }
            _ => {}
        }
        for folder in other.writable {
            ignored.push(format!("sandbox.writable \"{}\"", folder.display()));
        }
        (self, ignored)
    }
}

/// What commands may do, in absolute paths.
#[derive(Clone, Debug, PartialEq)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    /// The workspace root (writable in `workspace-write`).
    pub workspace: PathBuf,
    /// Further writable folders: the caches that exist and `sandbox.writable`.
    pub writable: Vec<PathBuf>,
    /// Paths whose contents commands may not read (the secrets above, the
    /// agent's config, and whatever the caller adds from the read rules).
    pub deny_read: Vec<PathBuf>,
    /// Outbound (and listening) TCP allowed.
    pub network: bool,
}

impl SandboxPolicy {
    /// Adds the workspace paths the read-deny rules name
    /// ([`crate::permission::PermissionGate::denied_read_prefixes`]), so a
    /// command cannot read what a rule keeps from the file tools.
    pub fn denying_reads(mut self, workspace_paths: Vec<String>) -> SandboxPolicy {
        for path in workspace_paths {
            self.deny_read.push(self.workspace.join(path));
        }
        self
    }

    /// The policy for `workspace` under `settings`, with the default
    /// writable caches and denied secrets of the current `$HOME`.
    pub fn new(settings: &SandboxSettings, workspace: &Path) -> SandboxPolicy {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let expand = |path: &Path| -> Option<PathBuf> {
            match path.strip_prefix("~") {
                Ok(rest) => home.as_ref().map(|home| home.join(rest)),
                Err(_) if path.is_absolute() => Some(path.to_path_buf()),
                Err(_) => Some(workspace.join(path)),
            }
        };
        let mut writable: Vec<PathBuf> = home
            .iter()
            .flat_map(|home| CACHE_DIRS.iter().map(move |dir| home.join(dir)))
            .collect();
        writable.extend(settings.writable.iter().filter_map(|p| expand(p)));
        let mut deny_read: Vec<PathBuf> = home
            .iter()
            .flat_map(|home| {
                crate::secret_files::HOME_SECRETS
                    .iter()
                    .map(move |dir| home.join(dir))
            })
            .collect();
        if let Some(config) = crate::config_files::user_config_path()
            .as_deref()
            .and_then(Path::parent)
        {
            deny_read.push(config.to_path_buf());
        }
        // The record of the user's sessions and the key that signs them: a
        // command that read the key could forge a session's lines. Its
        // default place is in the list of secrets; a `$XDG_STATE_HOME`
        // elsewhere is added here, unless it lies in the workspace (as the
        // tests isolate it: a deny there would split the workspace root).
        if let Some(state) = crate::config_files::user_state_dir()
            && !state.starts_with(workspace)
        {
            deny_read.push(state.join("bareagent"));
        }
        SandboxPolicy {
            mode: settings.mode.unwrap_or_default(),
            workspace: workspace.to_path_buf(),
            writable,
            deny_read,
            network: settings.network.unwrap_or(false),
        }
    }
}

/// What the kernel offers, probed once per process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SandboxStatus {
    /// The user turned it off.
    Off,
    /// Landlock is enforced for every command.
    Enforced {
        abi: i32,
        /// TCP connect/bind refused (ABI >= 4 and `sandbox.network` false).
        tcp_blocked: bool,
        /// Every socket family but unix refused by seccomp (`sandbox.network`
        /// false, on an architecture the filter knows).
        sockets_blocked: bool,
        /// Signals and abstract unix sockets confined (ABI >= 6).
        scoped: bool,
    },
    /// The kernel has no usable Landlock: commands run unconfined.
    Unavailable { reason: String },
}

impl SandboxStatus {
    /// What `policy` gets on this kernel. Where Landlock is missing, the log
    /// says so once per process.
    pub fn of(policy: &SandboxPolicy) -> SandboxStatus {
        if policy.mode == SandboxMode::Off {
            return SandboxStatus::Off;
        }
        match landlock::probe_abi() {
            Ok(abi) => SandboxStatus::Enforced {
                abi,
                tcp_blocked: abi >= 4 && !policy.network,
                sockets_blocked: !policy.network && seccomp::network_filter().is_some(),
                scoped: abi >= 6,
            },
            Err(reason) => {
                static ONCE: Once = Once::new();
                ONCE.call_once(|| {
                    tracing::warn!(%reason, "Landlock is unavailable: commands run without a sandbox")
                });
                SandboxStatus::Unavailable { reason }
            }
        }
    }
}

impl std::fmt::Display for SandboxStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SandboxStatus::Off => write!(
                f,
                "sandbox off (sandbox.mode = \"off\"): commands run with the agent's own rights"
            ),
            SandboxStatus::Unavailable { reason } => {
                write!(f, "sandbox unavailable ({reason}): commands run unconfined")
            }
            SandboxStatus::Enforced {
                abi,
                tcp_blocked,
                sockets_blocked,
                scoped,
            } => {
                write!(f, "sandbox on (Landlock ABI {abi})")?;
                match (tcp_blocked, sockets_blocked) {
                    (true, true) => write!(f, "; network off (unix sockets only)")?,
                    (true, false) => write!(f, "; outbound TCP blocked (UDP is not)")?,
                    (false, true) => write!(f, "; only TCP and unix sockets (TCP not confined)")?,
                    (false, false) => write!(f, "; network not confined")?,
                }
                if !scoped {
                    write!(f, "; signals and abstract unix sockets not confined")?;
                }
                Ok(())
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot build the Landlock rules: {0}")]
    Rules(#[from] ::landlock::RulesetError),
    #[error("Landlock gave no ruleset although the kernel offers it")]
    NoRuleset,
    #[error("cannot create the private temp folder: {0}")]
    TempDir(std::io::Error),
    #[error("cannot protect {path} from commands: {error}")]
    Protect {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// The sandbox of one session (cheap to clone): its policy, its status and
/// its private temp folder, removed when the last command using it ends.
#[derive(Clone, Debug)]
pub struct Sandbox {
    policy: Arc<SandboxPolicy>,
    status: SandboxStatus,
    tmp: Option<Arc<tempfile::TempDir>>,
}

impl Sandbox {
    /// The sandbox for the agent's commands in `workspace`: the settings'
    /// policy, plus the paths the permission rules deny reading (the
    /// gate's `denied_read_prefixes`), so a command cannot read around them.
    pub fn for_commands(
        settings: &SandboxSettings,
        workspace: &Path,
        denied_reads: Vec<String>,
    ) -> Result<Sandbox, SandboxError> {
        Sandbox::new(SandboxPolicy::new(settings, workspace).denying_reads(denied_reads))
    }

    /// Probes the kernel and creates the private temp folder. Where Landlock
    /// is missing, says so once in the log and reports [`SandboxStatus::Unavailable`].
    pub fn new(policy: SandboxPolicy) -> Result<Sandbox, SandboxError> {
        if policy.mode == SandboxMode::Off {
            return Ok(Sandbox {
                policy: Arc::new(policy),
                status: SandboxStatus::Off,
                tmp: None,
            });
        }
        let status = SandboxStatus::of(&policy);
        let tmp = tempfile::Builder::new()
            .prefix("bareagent-tmp-")
            .tempdir()
            .map_err(SandboxError::TempDir)?;
        Ok(Sandbox {
            policy: Arc::new(policy),
            status,
            tmp: Some(Arc::new(tmp)),
        })
    }

    /// No sandbox (tests and benchmarks that run the loop in-process).
    pub fn off() -> Sandbox {
        Sandbox {
            policy: Arc::new(SandboxPolicy {
                mode: SandboxMode::Off,
                workspace: PathBuf::from("/"),
                writable: Vec::new(),
                deny_read: Vec::new(),
                network: true,
            }),
            status: SandboxStatus::Off,
            tmp: None,
        }
    }

    pub fn status(&self) -> &SandboxStatus {
        &self.status
    }

    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// The private temp folder commands get as `TMPDIR`.
    pub fn temp_dir(&self) -> Option<&Path> {
        self.tmp.as_deref().map(tempfile::TempDir::path)
    }

    /// After a command (and before the next): removes what a command
    /// planted that no mount could stop and git would follow later (see
    /// `protected::sweep`). The lines are for the command's result.
    pub fn sweep(&self) -> Vec<String> {
        match self.status {
            SandboxStatus::Off => Vec::new(),
            _ => protected::sweep(&self.policy),
        }
    }

    /// The rules for one command, built now (so folders created since the
    /// last command are seen). Called in the parent: the child only applies.
    /// `views` are (file, copy mounted over it) pairs of the command's view
    /// (see `workspace/view.rs`): each copy gets the access its file has.
    pub fn confinement(&self, views: &[(&Path, &Path)]) -> Result<Confinement, SandboxError> {
        // A background command may have planted something since the last.
        self.sweep();
        // What the command may not change inside its writable folders:
        // pinned by mounts where the system gives a mount namespace, else
        // withheld from Landlock's write grants (see `protected.rs`).
        let protected = match self.status {
            SandboxStatus::Off => Vec::new(),
            _ => protected::paths(&self.policy),
        };
        let by_mounts = crate::workspace::namespaces_available().is_ok();
        let mut pinned = Vec::new();
        let mut withheld = Vec::new();
        for path in protected {
            if by_mounts {
                let pin = PinnedMount::new(&path.path, path.read_only).map_err(|error| {
                    SandboxError::Protect {
                        path: path.path.clone(),
                        error,
                    }
                })?;
                pinned.push(pin);
            } else {
                withheld.push(path.path);
            }
        }
        let ruleset = match self.status {
            SandboxStatus::Enforced { abi, .. } => Some(
                landlock::build(
                    &self.policy,
                    abi,
                    self.temp_dir(),
                    DEVICES,
                    views,
                    &withheld,
                )?
                .ok_or(SandboxError::NoRuleset)?,
            ),
            _ => None,
        };
        let filter = match self.status {
            SandboxStatus::Off => None,
            _ if self.policy.network => None,
            _ => seccomp::network_filter(),
        };
        Ok(Confinement {
            ruleset,
            filter,
            pinned,
            tmp: self.tmp.clone(),
            least_privilege: self.status != SandboxStatus::Off,
        })
    }

    /// A note for the model when a failed command's output looks like the
    /// sandbox refused it; `None` when the sandbox is not enforced.
    pub fn explain_failure(&self, output: &str) -> Option<String> {
        match self.status {
            SandboxStatus::Enforced { tcp_blocked, .. } => {
                denial::explain(output, &self.policy, self.temp_dir(), tcp_blocked)
            }
            _ => None,
        }
    }
}

/// The sandbox of one command, ready to apply in the child.
pub struct Confinement {
    ruleset: Option<OwnedFd>,
    /// The seccomp program refusing sockets other than unix ones.
    filter: Option<Arc<seccompiler::BpfProgram>>,
    /// The protected paths, mounted on themselves in the command's namespace.
    pinned: Vec<PinnedMount>,
    tmp: Option<Arc<tempfile::TempDir>>,
    /// Give up every capability and gain none at exec (`privileges.rs`):
    /// everywhere but with the sandbox off.
    least_privilege: bool,
}

impl Confinement {
    /// Sets `TMPDIR` and returns what keeps the temp folder alive while the
    /// command runs.
    pub fn environment(
        &self,
        command: &mut tokio::process::Command,
    ) -> Option<Arc<tempfile::TempDir>> {
        if let Some(tmp) = &self.tmp {
            for name in ["TMPDIR", "TMP", "TEMP"] {
                command.env(name, tmp.path());
            }
        }
        self.tmp.clone()
    }

    /// The protected paths to pin in the command's mount namespace (with
    /// the view's copies: one namespace for both).
    pub fn take_pinned(&mut self) -> Vec<PinnedMount> {
        std::mem::take(&mut self.pinned)
    }

    /// What the child needs to confine itself, prepared so that the
    /// closure that runs after fork touches no allocation. The ruleset
    /// descriptor stays open as long as `self`.
    pub fn for_child(&self) -> ChildConfinement {
        ChildConfinement {
            ruleset: self.ruleset.as_ref().map(AsRawFd::as_raw_fd),
            filter: self.filter.clone(),
            least_privilege: self.least_privilege,
        }
    }
}

/// [`Confinement`] as the child applies it.
#[derive(Clone, Debug)]
pub struct ChildConfinement {
    ruleset: Option<i32>,
    filter: Option<Arc<seccompiler::BpfProgram>>,
    least_privilege: bool,
}

impl ChildConfinement {
    /// Confines the calling process. Only async-signal-safe syscalls: it
    /// runs in the child between fork and exec, after any mounts of the
    /// command's view (Landlock forbids mounting, and mounting needs the
    /// capabilities given up here).
    ///
    /// The order matters: the bounding set can only be emptied while
    /// `CAP_SETPCAP` is held, so the capabilities themselves go last. With
    /// none left, a command run by root can neither `mknod` the disk nor
    /// read another root process's `/proc/PID/environ` (the agent's keys).
    pub fn apply(&self) -> std::io::Result<()> {
        if !self.least_privilege {
            return Ok(());
        }
        privileges::no_new_privileges()?;
        privileges::empty_bounding_set()?;
        if let Some(fd) = self.ruleset {
            landlock::restrict_self(fd)?;
        }
        if let Some(filter) = &self.filter {
            seccomp::apply(filter)?;
        }
        privileges::drop_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_merge_and_expand() {
        let user: SandboxSettings =
            toml::from_str("mode = \"read-only\"\nwritable = [\"~/venvs\"]\n").unwrap();
        let project: SandboxSettings =
            toml::from_str("network = true\nwritable = [\"build\"]\n").unwrap();
        let (merged, ignored) = user.restricted_by(project);
        assert_eq!(merged.mode, Some(SandboxMode::ReadOnly));
        assert_eq!(merged.network, None);
        assert_eq!(
            ignored,
            ["sandbox.network = true", "sandbox.writable \"build\""]
        );
        assert!(toml::from_str::<SandboxSettings>("mode = \"yolo\"\n").is_err());
        assert!(toml::from_str::<SandboxSettings>("colour = 1\n").is_err());

        let policy = SandboxPolicy::new(&merged, Path::new("/ws"));
        assert!(
            !policy.writable.contains(&PathBuf::from("/ws/build")),
            "{policy:?}"
        );
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
            assert!(policy.writable.contains(&home.join("venvs")), "{policy:?}");
            assert!(policy.deny_read.contains(&home.join(".ssh")), "{policy:?}");
        }
        assert_eq!(
            SandboxSettings::default().mode.unwrap_or_default(),
            SandboxMode::WorkspaceWrite
        );
    }
}
