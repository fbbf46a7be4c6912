//! Which MCP servers a session may start, and how: `[mcp]` in the user's
//! and the project's `config.toml`, a project's `.mcp.json` (Claude Code's
//! `mcpServers` format, read unchanged) and the editor's `mcp` setting.
//!
//! A project's servers are programs a cloned repository chose, so they
//! start only once the user trusts the directory (`bareagent trust`);
//! until then each is named in the config's `ignored` list, which the
//! front ends show once. The user's own servers, and the editor's (the
//! user's settings too), always start.
//!
//! Values may name environment variables as `${VAR}` (or `${VAR:-default}`,
//! as in Claude Code's `.mcp.json`), in `command`, `args`, `env`, `cwd`,
//! `url` and `headers`; they are expanded only when the server starts, and
//! never logged.
//!
//! ```toml
//! [mcp]
//! start = "background"        # or "lazy": at the first turn that needs tools
//! start_timeout_secs = 10
//! max_tools = 40              # past this many, one `mcp_search` tool instead
//! description_limit = 1024    # bytes of each tool's description
//! max_result_bytes = 262144   # text of one result, then cut with a note
//! [mcp.servers.git]
//! command = "uvx"
//! args = ["mcp-server-git", "--repository", "."]
//! env = { GIT_AUTHOR_NAME = "me" }
//! [mcp.servers.github]
//! url = "https://api.githubcopilot.com/mcp/"
//! headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// Default start timeout: to `initialize` answered and tools listed.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Default number of MCP tools sent to the model before `mcp_search` takes over.
pub const MAX_TOOLS: usize = 40;
/// Default bytes of a tool's description sent to the model.
pub const DESCRIPTION_LIMIT: usize = 1024;
/// Default bytes of text of one tool result.
pub const MAX_RESULT_BYTES: usize = 256 * 1024;

/// `[mcp]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpSettings {
    #[serde(default)]
    pub servers: BTreeMap<String, ServerConfig>,
    pub start: Option<StartWhen>,
    pub start_timeout_secs: Option<u64>,
    pub max_tools: Option<usize>,
    pub description_limit: Option<usize>,
    pub max_result_bytes: Option<usize>,
    /// What could not be read (a malformed `.mcp.json`), told to the user.
    #[serde(skip)]
    pub problems: Vec<String>,
}

/// When a session's servers start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StartWhen {
    /// At session start, in the background; the first turn waits for those
    /// still starting (up to their timeout).
    #[default]
    Background,
    /// When the first turn needs the tools.
    Lazy,
}

/// `[mcp.servers.NAME]`: a command (stdio) or a URL (Streamable HTTP).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub start_timeout_secs: Option<u64>,
    /// Where the entry was read: who chose to run it.
    #[serde(skip)]
    pub origin: Origin,
}

/// Who configured a server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// The user's own config file.
    #[default]
    User,
    /// The editor's settings (the user's too).
    Editor,
    /// The project's `.bareagent/config.toml`.
    Project,
    /// The project's `.mcp.json`.
    McpJson,
}

impl Origin {
    pub fn describe(self) -> &'static str {
        match self {
            Origin::User => "the user's config",
            Origin::Editor => "the editor's settings",
            Origin::Project => ".bareagent/config.toml",
            Origin::McpJson => ".mcp.json",
        }
    }
}

/// How to reach one server, its variables still unexpanded.
#[derive(Clone, Debug, PartialEq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// One server to start.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSpec {
    pub name: String,
    pub origin: Origin,
    pub transport: Transport,
    pub start_timeout: Duration,
}

/// Why a server's entry cannot be used; each names the server.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ServerConfigError {
    #[error(
        "MCP server `{0}`: a name is ASCII letters, digits, `-` and single `_` (not at either end), so that `mcp__SERVER__TOOL` names one server"
    )]
    BadName(String),
    #[error("MCP server `{0}`: give either `command` (stdio) or `url` (Streamable HTTP)")]
    NeitherOrBoth(String),
    #[error("MCP server `{name}`: {what}")]
    Unsupported { name: String, what: String },
    #[error("MCP server `{name}`: the environment variable `{var}` is not set")]
    MissingVar { name: String, var: String },
}

/// Whether `name` can be a server's: ASCII letters, digits, `-`, and `_`
/// never doubled nor at either end — so `mcp__a__b` splits one way only,
/// and no lookalike letter can pass for another in a rule.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !name.contains("__")
        && !name.starts_with('_')
        && !name.ends_with('_')
}

impl McpSettings {
    pub fn start_timeout(&self) -> Duration {
        self.start_timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(START_TIMEOUT)
    }

    pub fn max_tools(&self) -> usize {
        self.max_tools.unwrap_or(MAX_TOOLS)
    }

    pub fn description_limit(&self) -> usize {
        self.description_limit.unwrap_or(DESCRIPTION_LIMIT)
    }

    pub fn max_result_bytes(&self) -> usize {
        self.max_result_bytes.unwrap_or(MAX_RESULT_BYTES).max(1)
    }

    /// Marks every server as configured by `origin`.
    pub fn from(mut self, origin: Origin) -> Self {
        for server in self.servers.values_mut() {
            server.origin = origin;
        }
        self
    }

    /// `other`'s servers over these (a name in both: `other`'s), and its
    /// limits where it sets them.
    pub fn overlaid(mut self, other: McpSettings) -> McpSettings {
        self.servers.extend(other.servers);
        self.start = other.start.or(self.start);
        self.start_timeout_secs = other.start_timeout_secs.or(self.start_timeout_secs);
        self.max_tools = other.max_tools.or(self.max_tools);
        self.description_limit = other.description_limit.or(self.description_limit);
        self.max_result_bytes = other.max_result_bytes.or(self.max_result_bytes);
        self.problems.extend(other.problems);
        self
    }

    /// The project's settings (`project`, from its config.toml, and
    /// `mcp_json`, from its `.mcp.json`) over the user's: the servers only
    /// if `trusted`, else each named in `ignored`. The limits are not
    /// permissions (they only shape what the model sees), so they apply.
    pub fn with_project(
        self,
        project: McpSettings,
        mcp_json: BTreeMap<String, ServerConfig>,
        trusted: bool,
        ignored: &mut Vec<String>,
    ) -> McpSettings {
        let mut project = project.from(Origin::Project);
        let mut servers = mcp_json;
        for server in servers.values_mut() {
            server.origin = Origin::McpJson;
        }
        // The project's own config wins over its `.mcp.json`.
        servers.extend(std::mem::take(&mut project.servers));
        if !trusted {
            for (name, server) in &servers {
                ignored.push(format!(
                    "MCP server `{name}` of {} (not started)",
                    server.origin.describe()
                ));
            }
            servers.clear();
        }
        project.servers = servers;
        self.overlaid(project)
    }

    /// Every server to start, and why each other one cannot start.
    pub fn specs(&self) -> (Vec<ServerSpec>, Vec<ServerConfigError>) {
        let mut specs = Vec::new();
        let mut errors = Vec::new();
        for (name, server) in &self.servers {
            match server.spec(name, self.start_timeout()) {
                Ok(spec) => specs.push(spec),
                Err(error) => errors.push(error),
            }
        }
        (specs, errors)
    }
}

impl ServerConfig {
    fn spec(&self, name: &str, default_timeout: Duration) -> Result<ServerSpec, ServerConfigError> {
        if !valid_server_name(name) {
            return Err(ServerConfigError::BadName(name.to_string()));
        }
        let transport = match (&self.command, &self.url) {
            (Some(command), None) => Transport::Stdio {
                command: command.clone(),
                args: self.args.clone(),
                env: self.env.clone(),
                cwd: self.cwd.clone(),
            },
            (None, Some(url)) => Transport::Http {
                url: url.clone(),
                headers: self.headers.clone(),
            },
            _ => return Err(ServerConfigError::NeitherOrBoth(name.to_string())),
        };
        Ok(ServerSpec {
            name: name.to_string(),
            origin: self.origin,
            transport,
            start_timeout: self
                .start_timeout_secs
                .map(Duration::from_secs)
                .unwrap_or(default_timeout),
        })
    }
}

/// One entry of a `.mcp.json`'s `mcpServers`, as Claude Code writes it.
/// Fields we do not use are ignored: the file is shared with other tools.
#[derive(Debug, Deserialize)]
struct McpJsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct McpJson {
    #[serde(rename = "mcpServers", default)]
    servers: BTreeMap<String, McpJsonServer>,
}

/// The project's `.mcp.json`: no file is no servers; a file that cannot be
/// read, or an entry of a kind we do not speak (`sse`), is an error to tell
/// the user, and the other entries still count.
pub fn read_mcp_json(root: &Path) -> (BTreeMap<String, ServerConfig>, Vec<String>) {
    let path = mcp_json_path(root);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Default::default(),
        Err(error) => {
            return (
                BTreeMap::new(),
                vec![format!("{}: {error}", path.display())],
            );
        }
    };
    parse_mcp_json(&text).unwrap_or_else(|error| {
        (
            BTreeMap::new(),
            vec![format!(
                "{}: {error}; its servers are left out",
                path.display()
            )],
        )
    })
}

pub fn mcp_json_path(root: &Path) -> PathBuf {
    root.join(".mcp.json")
}

fn parse_mcp_json(
    text: &str,
) -> Result<(BTreeMap<String, ServerConfig>, Vec<String>), serde_json::Error> {
    let file: McpJson = serde_json::from_str(text)?;
    let mut servers = BTreeMap::new();
    let mut problems = Vec::new();
    for (name, entry) in file.servers {
        let kind = entry.kind.as_deref().unwrap_or(match entry.url {
            Some(_) => "http",
            None => "stdio",
        });
        let config = match kind {
            "stdio" => ServerConfig {
                command: entry.command,
                args: entry.args,
                env: entry.env,
                cwd: entry.cwd,
                ..ServerConfig::default()
            },
            "http" | "streamable-http" | "streamableHttp" => ServerConfig {
                url: entry.url,
                headers: entry.headers,
                ..ServerConfig::default()
            },
            other => {
                problems.push(
                    ServerConfigError::Unsupported {
                        name,
                        what: format!(
                            "type `{other}` is not supported (only stdio and Streamable HTTP)"
                        ),
                    }
                    .to_string(),
                );
                continue;
            }
        };
        servers.insert(
            name,
            ServerConfig {
                origin: Origin::McpJson,
                ..config
            },
        );
    }
    Ok((servers, problems))
}

/// `text` with each `${VAR}` replaced by the variable's value (`lookup`),
/// or by `default` in `${VAR:-default}` when it is unset or empty.
/// An unset variable without a default is an error naming it: a header
/// sent empty would fail later, and less clearly. `$` without `{` is kept as is.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[at..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (inner, None),
        };
        // As the shell does: `:-` also replaces an empty value.
        match (lookup(var), default) {
            (Some(value), Some(default)) if value.is_empty() => out.push_str(default),
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(var.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// [`expand`] over the process environment.
pub fn expand_env(text: &str) -> Result<String, String> {
    expand(text, &|var| std::env::var(var).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_split_one_way_only() {
        // (name, valid)
        let cases = [
            ("git", true),
            ("my-server", true),
            ("a_b", true),
            ("GitHub2", true),
            ("", false),
            ("a__b", false),
            ("a_", false),
            ("_a", false),
            ("a b", false),
            ("a.b", false),
            ("a/b", false),
            ("gіt", false), // Cyrillic і
            ("ｇｉｔ", false),
            ("git\u{200b}", false),
            ("x".repeat(33).leak(), false),
        ];
        for (name, valid) in cases {
            assert_eq!(valid_server_name(name), valid, "{name:?}");
        }
    }

    #[test]
    fn variables_expand_or_fail_naming_the_variable() {
        let lookup = |var: &str| match var {
            "TOKEN" => Some("s3cret".to_string()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        // (text, expanded or the missing variable)
        let cases = [
            ("Bearer ${TOKEN}", Ok("Bearer s3cret")),
            ("${TOKEN}${TOKEN}", Ok("s3crets3cret")),
            ("${MISSING:-fallback}", Ok("fallback")),
            ("${EMPTY:-fallback}", Ok("fallback")),
            ("${TOKEN:-fallback}", Ok("s3cret")),
            ("$TOKEN and $", Ok("$TOKEN and $")),
            ("unclosed ${TOKEN", Ok("unclosed ${TOKEN")),
            ("${MISSING}", Err("MISSING")),
            ("a ${EMPTY} b", Ok("a  b")),
        ];
        for (text, want) in cases {
            assert_eq!(
                expand(text, &lookup),
                want.map(String::from).map_err(String::from),
                "{text}"
            );
        }
    }

    #[test]
    fn mcp_json_reads_claude_codes_format() {
        let (servers, problems) = parse_mcp_json(
            r#"{"mcpServers": {
                "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "${HOME}"}},
                "remote": {"type": "http", "url": "https://x/mcp", "headers": {"Authorization": "Bearer ${T}"}},
                "plain": {"url": "https://y/mcp"},
                "old": {"type": "sse", "url": "https://z/sse"}
            }, "other": 1}"#,
        )
        .unwrap();
        assert_eq!(servers.len(), 3);
        assert_eq!(servers["git"].command.as_deref(), Some("uvx"));
        assert_eq!(servers["git"].origin, Origin::McpJson);
        assert_eq!(servers["remote"].url.as_deref(), Some("https://x/mcp"));
        assert_eq!(servers["remote"].headers["Authorization"], "Bearer ${T}");
        assert_eq!(servers["plain"].url.as_deref(), Some("https://y/mcp"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("`old`"), "{problems:?}");
        assert!(parse_mcp_json("{").is_err());
    }

    #[test]
    fn an_untrusted_projects_servers_are_named_and_left_out() {
        let user: McpSettings =
            toml::from_str("[servers.mine]\ncommand = \"a\"\n[servers.shared]\ncommand = \"u\"")
                .unwrap();
        let project: McpSettings = toml::from_str(
            "max_tools = 5\n[servers.theirs]\ncommand = \"b\"\n[servers.shared]\ncommand = \"p\"",
        )
        .unwrap();
        let json = || {
            let mut json = BTreeMap::new();
            json.insert(
                "fromjson".to_string(),
                ServerConfig {
                    command: Some("c".into()),
                    ..ServerConfig::default()
                },
            );
            json
        };
        let mut ignored = Vec::new();
        let untrusted = user
            .clone()
            .with_project(project.clone(), json(), false, &mut ignored);
        let names: Vec<_> = untrusted.servers.keys().cloned().collect();
        assert_eq!(names, ["mine", "shared"]);
        assert_eq!(untrusted.servers["shared"].command.as_deref(), Some("u"));
        assert_eq!(untrusted.max_tools(), 5);
        assert_eq!(ignored.len(), 3, "{ignored:?}");
        assert!(
            ignored
                .iter()
                .any(|i| i.contains("`fromjson` of .mcp.json"))
        );
        let mut ignored = Vec::new();
        let trusted = user.with_project(project, json(), true, &mut ignored);
        assert!(ignored.is_empty());
        let names: Vec<_> = trusted.servers.keys().cloned().collect();
        assert_eq!(names, ["fromjson", "mine", "shared", "theirs"]);
        assert_eq!(trusted.servers["shared"].command.as_deref(), Some("p"));
        assert_eq!(trusted.servers["shared"].origin, Origin::Project);
        assert_eq!(trusted.servers["mine"].origin, Origin::User);
    }

    #[test]
    fn specs_refuse_bad_entries() {
        let settings: McpSettings = toml::from_str(
            "[servers.ok]\ncommand = \"a\"\n[servers.web]\nurl = \"http://127.0.0.1:1/mcp\"\n\
             [servers.both]\ncommand = \"a\"\nurl = \"http://x\"\n[servers.none]\n\
             [servers.\"a__b\"]\ncommand = \"a\"",
        )
        .unwrap();
        let (specs, errors) = settings.specs();
        let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ok", "web"]);
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(toml::from_str::<McpSettings>("[servers.x]\ncomand = \"a\"").is_err());
    }
}
