//! Where credentials live, as one list, for both defences that keep them
//! from the model: the sandbox denies commands reading them (under `$HOME`,
//! `sandbox::SandboxPolicy`), and the gate asks before a file tool reads or
//! changes one wherever it sits in the workspace (`permission`'s sensitive
//! and power files), which covers a workspace that is `$HOME` itself or
//! holds a copy of one. A leaf: both sides depend on it, it on nothing.

/// Credentials under `$HOME`: whole folders, or single files.
pub const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".config/hub",
    ".docker/config.json",
    ".docker/contexts",
    ".kube",
    ".npmrc",
    ".pypirc",
    ".config/gcloud",
    ".azure",
    ".oci",
    ".config/doctl",
    ".terraform.d/credentials.tfrc.json",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".password-store",
    ".local/share/keyrings",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    // The agent's own settings (its permissions and sandbox), and its
    // record of sessions with the key that signs them.
    ".config/bareagent",
    ".local/state/bareagent",
];

/// What a shell, git or the desktop runs from `$HOME` later, outside any
/// sandbox: protected from commands and asked for by the file tools when
/// the workspace holds `$HOME`.
pub const HOME_RUNS: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".config/fish",
    ".gitconfig",
    ".config/git",
    ".config/systemd",
    ".config/autostart",
    ".local/bin",
];
