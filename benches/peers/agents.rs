//! The agents the peers bench runs, and how each is pointed at the scripted
//! model server, told to edit without asking, kept off every other host,
//! and scripted through one turn in its own tool names.
//!
//! Every run gets a fresh home (`HOME`, and so `~/.config`, `~/.claude`,
//! `~/.codex`) and a clean environment: `PATH`, `HOME`, `LANG`, `TERM` and
//! what each agent's row sets below, nothing inherited. Checked with
//! `WRAP="strace -f -e trace=connect,execve"`: with these settings no agent
//! connects anywhere but the server (nor asks DNS for a name).
//!
//! What each peer needed:
//! - Claude Code (`claude -p`): since 2.1 its npm package holds a native
//!   binary in a platform package, which a postinstall copies over a
//!   placeholder; we run that binary itself. `ANTHROPIC_BASE_URL` points it
//!   at the server. It refuses `--dangerously-skip-permissions` as root
//!   unless `IS_SANDBOX=1` says it runs in a sandbox. Non-essential traffic
//!   off by its documented variables. It made no side requests in `-p` mode;
//!   a request without tools would be answered off-script and counted.
//! - Codex (`codex exec`): a custom model provider (`wire_api = "responses"`)
//!   in a fresh `CODEX_HOME/config.toml`, read with `--strict-config` so a
//!   renamed key fails the run instead of silently switching a call back on.
//!   Besides analytics, feedback and the update check, its plugins feature
//!   runs `git ls-remote https://github.com/openai/plugins.git` at every
//!   start: off. It reads with `exec_command` (`cat`, in its workspace-write
//!   sandbox: its bundled bubblewrap, as none is on `PATH`) and edits with
//!   `apply_patch`, a custom (freeform) tool. The npm launcher (`codex.js`)
//!   runs on a pinned Node; from Node 22.15 it execs the native binary in
//!   place, on older Node it stays as the native binary's parent.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::model_server::{ModelServer, RecordedRequest, Reply, Step};

/// The file each agent reads and edits, its text before and after.
pub const FILE: &str = "notes.txt";
pub const BEFORE: &str = "# Release notes\n\nstatus: draft\nowner: bench\n";
pub const AFTER: &str = "# Release notes\n\nstatus: final\nowner: bench\n";
pub const PROMPT: &str = "In notes.txt, change the status from draft to final.";
const ANSWER: &str = "Done: notes.txt now says status: final.";
const API_KEY: &str = "bench-key";

/// Which API an agent speaks to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses.
    Responses,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bareagent,
    ClaudeCode,
    /// Codex's native binary run directly.
    Codex,
    /// Codex through its npm launcher (`bin/codex.js` on Node).
    CodexNpm,
}

/// One row of the table.
pub struct Agent {
    pub name: &'static str,
    pub wire: Wire,
    kind: Kind,
    /// What is spawned.
    program: PathBuf,
    /// The launcher's Node, put first on its `PATH` (it runs `env node`).
    node: Option<PathBuf>,
    /// Speaks to the server over HTTPS, as to the real APIs: a TLS front
    /// before it, trusted through the system's roots and a test CA.
    pub https: bool,
}

/// Where an agent over HTTPS finds the server: the TLS front's address,
/// and the environment that makes it trust the front.
pub struct Https {
    pub base: String,
    pub env: [(String, String); 2],
}

/// Where `scripts/bench-peers --install` puts the peers: npm's layout
/// under `dir` (`target/bench-peers`).
pub struct Installed {
    claude: PathBuf,
    codex: PathBuf,
    codex_js: PathBuf,
    node: PathBuf,
}

impl Installed {
    pub fn at(dir: &Path) -> Installed {
        let modules = dir.join("node_modules");
        let (arch, triple) = match std::env::consts::ARCH {
            "aarch64" => ("arm64", "aarch64-unknown-linux-musl"),
            _ => ("x64", "x86_64-unknown-linux-musl"),
        };
        Installed {
            // The platform package's binary: what Claude Code's postinstall
            // copies over `bin/claude.exe` (the same bytes, run directly so a
            // skipped install script cannot leave the placeholder in place).
            claude: modules.join(format!("@anthropic-ai/claude-code-linux-{arch}/claude")),
            codex: modules.join(format!(
                "@openai/codex-linux-{arch}/vendor/{triple}/bin/codex"
            )),
            codex_js: modules.join("@openai/codex/bin/codex.js"),
            node: dir.join(format!("node/node_modules/node-linux-{arch}/bin/node")),
        }
    }
}

/// The agents to run: `bareagent run` on both wires always; each peer
/// whose files are installed. Also the names of the missing peers.
pub fn available(bareagent: &Path, peers: &Installed) -> (Vec<Agent>, Vec<&'static str>) {
    let mut agents = vec![
        Agent::new(
            "bareagent-anthropic",
            Wire::Anthropic,
            Kind::Bareagent,
            bareagent,
        ),
        Agent::new(
            "bareagent-openai",
            Wire::Responses,
            Kind::Bareagent,
            bareagent,
        ),
        // The other rows speak plain HTTP; this one pays for TLS as a user
        // does: the root store loaded, the handshake.
        Agent {
            https: true,
            ..Agent::new(
                "bareagent-anthropic-https",
                Wire::Anthropic,
                Kind::Bareagent,
                bareagent,
            )
        },
    ];
    let mut missing = Vec::new();
    let mut add = |agent: Agent, present: bool| {
        if present {
            agents.push(agent);
        } else {
            missing.push(agent.name);
        }
    };
    add(
        Agent::new(
            "claude-code",
            Wire::Anthropic,
            Kind::ClaudeCode,
            &peers.claude,
        ),
        peers.claude.is_file(),
    );
    add(
        Agent::new("codex", Wire::Responses, Kind::Codex, &peers.codex),
        peers.codex.is_file(),
    );
    let mut npm = Agent::new(
        "codex-npm",
        Wire::Responses,
        Kind::CodexNpm,
        &peers.codex_js,
    );
    npm.node = Some(peers.node.clone());
    add(
        npm,
        peers.codex_js.is_file() && peers.node.is_file() && peers.codex.is_file(),
    );
    (agents, missing)
}

impl Agent {
    fn new(name: &'static str, wire: Wire, kind: Kind, program: &Path) -> Agent {
        Agent {
            name,
            wire,
            kind,
            program: program.to_path_buf(),
            node: None,
            https: false,
        }
    }

    /// The model's side of the turn, in this agent's tool names and shapes:
    /// read the file, edit it, answer.
    pub fn script(&self, work: &Path) -> Vec<Step> {
        let file = work.join(FILE);
        let file = file.to_string_lossy();
        let (read, edit) = match self.kind {
            Kind::Bareagent => (
                Reply::tool("read_file", json!({"path": FILE})),
                Reply::tool(
                    "edit_file",
                    json!({"path": FILE, "old_string": "status: draft", "new_string": "status: final"}),
                ),
            ),
            // Claude Code's tools take absolute paths.
            Kind::ClaudeCode => (
                Reply::tool("Read", json!({"file_path": file})),
                Reply::tool(
                    "Edit",
                    json!({"file_path": file, "old_string": "status: draft", "new_string": "status: final"}),
                ),
            ),
            // Codex reads through its shell tool and edits with apply_patch.
            Kind::Codex | Kind::CodexNpm => (
                Reply::tool(
                    "exec_command",
                    json!({"cmd": format!("cat {FILE}"), "workdir": work}),
                ),
                Reply::custom_tool("apply_patch", &codex_patch()),
            ),
        };
        vec![read.into(), edit.into(), Reply::text(ANSWER).into()]
    }

    /// Answers the requests this agent makes besides the turn's own calls.
    pub fn prepare(&self, server: &ModelServer) {
        match self.kind {
            Kind::Bareagent => {}
            // Calls without the turn's tools (a title, a quota probe): a
            // short text, outside the script.
            Kind::ClaudeCode => {
                server.answer_matching(|body| body.get("tools").is_none(), Reply::text("Bench"))
            }
            Kind::Codex | Kind::CodexNpm => server.serve_models(&[MODEL_OPENAI]),
        }
    }

    /// Whether `request` is one of the turn's own model calls (it carries
    /// the agent's tools), not a side request.
    pub fn is_turn_call(&self, request: &RecordedRequest) -> bool {
        request
            .body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|tools| !tools.is_empty())
    }

    /// The turn: the agent's non-interactive mode, in `work`, with `home`
    /// as its home, pointed at `server` (through `https` when it is given).
    pub fn turn(
        &self,
        home: &Path,
        work: &Path,
        server: &ModelServer,
        https: Option<&Https>,
    ) -> std::io::Result<Command> {
        let mut command = self.command(home);
        command.current_dir(work);
        if let Some(https) = https {
            command.envs(https.env.iter().map(|(k, v)| (k, v)));
        }
        match self.kind {
            Kind::Bareagent => {
                let (provider, base) = match self.wire {
                    Wire::Anthropic => match https {
                        Some(https) => ("anthropic", https.base.clone()),
                        None => ("anthropic", server.anthropic_base()),
                    },
                    Wire::Responses => {
                        // Our OpenAI provider speaks the Responses API to
                        // api.openai.com and Chat Completions to other
                        // hosts unless told: the same wire as at OpenAI,
                        // and as Codex, through the user's config.
                        let config = home.join(".config/bareagent");
                        std::fs::create_dir_all(&config)?;
                        std::fs::write(config.join("config.toml"), "wire = \"responses\"\n")?;
                        ("openai", server.openai_base())
                    }
                };
                command
                    .args(["run", "--provider", provider, "--base-url", &base])
                    // Nothing asks; commands would stay in our sandbox.
                    .args(["--permission-mode", "bypass", PROMPT])
                    .env("ANTHROPIC_API_KEY", API_KEY)
                    .env("OPENAI_API_KEY", API_KEY);
            }
            Kind::ClaudeCode => {
                command
                    .args(["-p", PROMPT, "--dangerously-skip-permissions"])
                    .env("ANTHROPIC_BASE_URL", server.anthropic_base())
                    .env("ANTHROPIC_API_KEY", API_KEY)
                    // Documented: the one switch for all non-essential
                    // traffic (auto-updater, bug command, error reporting,
                    // telemetry), and each of those by name as well.
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                    .env("DISABLE_AUTOUPDATER", "1")
                    .env("DISABLE_ERROR_REPORTING", "1")
                    .env("DISABLE_TELEMETRY", "1")
                    .env("DISABLE_BUG_COMMAND", "1")
                    // As root it refuses --dangerously-skip-permissions
                    // unless told it runs in a sandbox.
                    .env("IS_SANDBOX", "1");
            }
            Kind::Codex | Kind::CodexNpm => {
                let codex_home = home.join(".codex");
                std::fs::create_dir_all(&codex_home)?;
                std::fs::write(codex_home.join("config.toml"), codex_config(server))?;
                command
                    // exec never asks; workspace-write lets it edit the
                    // repository (and keeps its sandbox, as ours does).
                    .args([
                        "exec",
                        "--strict-config",
                        "--sandbox",
                        "workspace-write",
                        PROMPT,
                    ])
                    .env("CODEX_HOME", &codex_home)
                    .env("BENCH_API_KEY", API_KEY);
            }
        }
        Ok(command)
    }

    /// What runs this agent besides itself: the launcher's Node.
    pub fn runtime(&self) -> Option<String> {
        let output = Command::new(self.node.as_ref()?)
            .arg("--version")
            .output()
            .ok()?;
        Some(format!(
            "Node {}",
            String::from_utf8_lossy(&output.stdout).trim()
        ))
    }

    /// `--version`, in a fresh home (and in it).
    pub fn version(&self, home: &Path) -> Command {
        let mut command = self.command(home);
        command.arg("--version").current_dir(home);
        if matches!(self.kind, Kind::Codex | Kind::CodexNpm) {
            command.env("CODEX_HOME", home.join(".codex"));
        }
        command
    }

    fn command(&self, home: &Path) -> Command {
        // WRAP (as in loop_overhead): run the agent under a tool, e.g.
        // `strace -f -e trace=connect` to see which hosts it tries.
        let wrap = std::env::var("WRAP").unwrap_or_default();
        let mut words = wrap.split_whitespace();
        let mut command = match words.next() {
            Some(tool) => {
                let mut command = Command::new(tool);
                command.args(words).arg(&self.program);
                command
            }
            None => Command::new(&self.program),
        };
        let mut path = std::env::var_os("PATH").unwrap_or_default();
        if let Some(bin) = self.node.as_deref().and_then(Path::parent) {
            let mut paths = vec![bin.to_path_buf()];
            paths.extend(std::env::split_paths(&path));
            path = std::env::join_paths(paths).unwrap_or(path);
        }
        command
            .env_clear()
            .env("PATH", path)
            .env("HOME", home)
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb");
        command
    }
}

const MODEL_OPENAI: &str = "gpt-5.5";

/// Codex's config: a custom provider on the server (Responses API), and
/// every documented switch for calls to other hosts off.
fn codex_config(server: &ModelServer) -> String {
    format!(
        r#"model = "{MODEL_OPENAI}"
model_provider = "bench"
# No check for a newer release at start.
check_for_update_on_startup = false

[model_providers.bench]
name = "bench"
base_url = "{base}"
env_key = "BENCH_API_KEY"
wire_api = "responses"

# No usage analytics, no feedback uploads.
[analytics]
enabled = false

[feedback]
enabled = false

# Plugins: at start Codex would `git ls-remote` its curated plugin
# repository on github.com, and warm a featured-plugins list.
[features]
plugins = false
remote_plugin = false
plugin_sharing = false
"#,
        base = server.openai_base(),
    )
}

/// The edit as Codex's `apply_patch` takes it.
fn codex_patch() -> String {
    format!(
        "*** Begin Patch\n*** Update File: {FILE}\n@@\n-status: draft\n+status: final\n*** End Patch\n"
    )
}
