//! Which language server answers for which files: `[code]` in bareagent's
//! settings files, Helix's `languages.toml`, and well-known servers found on
//! `PATH`.
//!
//! Precedence, for each file extension (the first that names a server wins):
//! 1. `[code.servers.NAME]` of a trusted project's `.bareagent/config.toml`,
//!    then of the user's config (merged in `crate::config`);
//! 2. Helix's `[[language]]` entries naming a `[language-server.NAME]`: a
//!    trusted project's `.helix/languages.toml`, then the user's
//!    (`$XDG_CONFIG_HOME/helix/languages.toml`, else `~/.config/helix/`);
//! 3. the well-known defaults ([`DEFAULTS`]) whose program is on `PATH`.
//!
//! A language server is a program run with the user's rights, so a
//! project's entries (ours or Helix's) count only once the user trusts the
//! directory (`bareagent trust`), the rule MCP servers follow; until then
//! they start nothing, and the model is told why it gets no answer.
//!
//! ```toml
//! [code]
//! request_timeout_secs = 30        # each request
//! first_request_timeout_secs = 120 # the first after a start (the server indexes)
//! diagnostics_wait_ms = 10000      # after an edit, for the server's report
//! helix = true                     # read Helix's languages.toml
//! [code.servers.pyright]
//! command = "pyright-langserver"
//! args = ["--stdio"]
//! extensions = ["py", "pyi"]
//! language = "python"              # the LSP languageId (default: by extension)
//! initialization_options = { }     # sent with `initialize`
//! settings = { python = { analysis = { typeCheckingMode = "strict" } } }
//! env = { VIRTUAL_ENV = "/opt/venv" }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// Each request, unless configured.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The first request after a start, which waits while the server indexes.
pub const FIRST_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long an edit waits for the server's report on the file: a server
/// still starting (pyright: about 3 s on a small project) reports seconds
/// later; a running one soon after the change, which ends the wait.
pub const DIAGNOSTICS_WAIT: Duration = Duration::from_secs(10);

/// `[code]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CodeSettings {
    #[serde(default)]
    pub servers: BTreeMap<String, ServerConfig>,
    pub request_timeout_secs: Option<u64>,
    pub first_request_timeout_secs: Option<u64>,
    pub diagnostics_wait_ms: Option<u64>,
    /// Read Helix's `languages.toml` (default: yes).
    pub helix: Option<bool>,
    /// Whether the project's own entries count (its `.helix` too): set
    /// when the settings files are merged.
    #[serde(skip)]
    pub project_trusted: bool,
    /// The untrusted project's servers, left out: named in the answer
    /// the model gets for their files.
    #[serde(skip)]
    pub untrusted: BTreeMap<String, ServerConfig>,
}

/// `[code.servers.NAME]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// File extensions it answers for, without the dot.
    #[serde(default)]
    pub extensions: Vec<String>,
    /// The LSP `languageId` of its documents; default: by extension.
    pub language: Option<String>,
    pub initialization_options: Option<toml::Table>,
    /// What `workspace/configuration` answers from (by section).
    pub settings: Option<toml::Table>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

impl CodeSettings {
    /// The user's `[code]` with the project's over it: its servers only
    /// if `trusted` (else each is named in `ignored` and kept for the hint).
    pub fn with_project(
        mut self,
        project: CodeSettings,
        trusted: bool,
        ignored: &mut Vec<String>,
    ) -> CodeSettings {
        if trusted {
            self.servers.extend(project.servers);
        } else {
            for name in project.servers.keys() {
                ignored.push(format!("language server `{name}` (not started)"));
            }
            self.untrusted = project.servers;
        }
        self.project_trusted = trusted;
        // How long to wait is the user's to say, or a trusted project's:
        // an untrusted one could make every edit wait.
        if trusted {
            self.request_timeout_secs = project.request_timeout_secs.or(self.request_timeout_secs);
            self.first_request_timeout_secs = project
                .first_request_timeout_secs
                .or(self.first_request_timeout_secs);
            self.diagnostics_wait_ms = project.diagnostics_wait_ms.or(self.diagnostics_wait_ms);
        }
        self.helix = project.helix.or(self.helix);
        self
    }

    pub fn request_timeout(&self) -> Duration {
        self.request_timeout_secs
            .map_or(REQUEST_TIMEOUT, Duration::from_secs)
    }

    pub fn first_request_timeout(&self) -> Duration {
        self.first_request_timeout_secs
            .map_or(FIRST_REQUEST_TIMEOUT, Duration::from_secs)
            .max(self.request_timeout())
    }

    pub fn diagnostics_wait(&self) -> Duration {
        self.diagnostics_wait_ms
            .map_or(DIAGNOSTICS_WAIT, Duration::from_millis)
    }
}

/// Who named a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// `[code.servers]` (the user's config, or a trusted project's).
    Config,
    /// A `languages.toml` of Helix's.
    Helix,
    /// A well-known server found on `PATH`.
    Default,
}

/// One server to start.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSpec {
    pub name: String,
    pub origin: Origin,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Without the dot.
    pub extensions: Vec<String>,
    /// The `languageId` for all its documents; `None`: by extension.
    pub language: Option<String>,
    pub initialization_options: Option<Value>,
    pub settings: Option<Value>,
}

impl ServerSpec {
    /// The `languageId` of a document with this extension.
    pub fn language_id(&self, extension: &str) -> String {
        match &self.language {
            Some(language) => language.clone(),
            None => language_of(extension).unwrap_or(extension).to_string(),
        }
    }

    fn from_config(name: &str, config: &ServerConfig) -> ServerSpec {
        ServerSpec {
            name: name.to_string(),
            origin: Origin::Config,
            command: config.command.clone(),
            args: config.args.clone(),
            env: config.env.clone(),
            extensions: config.extensions.iter().map(|e| dotless(e)).collect(),
            language: config.language.clone(),
            initialization_options: config.initialization_options.clone().map(json),
            settings: config.settings.clone().map(json),
        }
    }
}

/// A well-known language server: the programs tried in order (with their
/// arguments), and the extensions of its language.
pub struct WellKnown {
    pub language: &'static str,
    pub programs: &'static [(&'static str, &'static [&'static str])],
    pub extensions: &'static [&'static str],
}

/// Used when nothing configured names a server for the extension and the
/// program is on `PATH`.
pub const DEFAULTS: &[WellKnown] = &[
    WellKnown {
        language: "rust",
        programs: &[("rust-analyzer", &[])],
        extensions: &["rs"],
    },
    WellKnown {
        language: "python",
        programs: &[
            ("pyright-langserver", &["--stdio"]),
            ("basedpyright-langserver", &["--stdio"]),
        ],
        extensions: &["py", "pyi"],
    },
    WellKnown {
        language: "typescript",
        programs: &[("typescript-language-server", &["--stdio"])],
        extensions: &["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"],
    },
    WellKnown {
        language: "go",
        programs: &[("gopls", &[])],
        extensions: &["go"],
    },
    WellKnown {
        language: "c",
        programs: &[("clangd", &[])],
        extensions: &["c", "h", "cc", "cpp", "cxx", "hpp", "hh"],
    },
];

/// The LSP `languageId` of the well-known extensions (the specification's
/// table of `TextDocumentItem`).
fn language_of(extension: &str) -> Option<&'static str> {
    Some(match extension {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "cpp",
        _ => return None,
    })
}

/// Helix's language names for ours, where a `[[language]]` gives no
/// `file-types`: the extensions of that language.
fn extensions_of_language(name: &str) -> &'static [&'static str] {
    match name {
        "rust" => &["rs"],
        "python" => &["py", "pyi"],
        "typescript" => &["ts", "mts", "cts"],
        "tsx" => &["tsx"],
        "javascript" => &["js", "mjs", "cjs"],
        "jsx" => &["jsx"],
        "go" => &["go"],
        "c" => &["c", "h"],
        "cpp" => &["cc", "cpp", "cxx", "hpp", "hh"],
        _ => &[],
    }
}

/// The servers for a session, by extension.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resolved {
    pub servers: Vec<ServerSpec>,
    /// Extension → index in `servers`.
    pub by_extension: BTreeMap<String, usize>,
    /// Extension → the untrusted project's server that would answer, where
    /// no other does.
    pub untrusted: BTreeMap<String, String>,
    /// What could not be read (a malformed `languages.toml`).
    pub problems: Vec<String>,
}

/// Where the inputs come from: the files and `PATH` (tests give their own).
pub struct Sources {
    /// Helix's user `languages.toml`, if any.
    pub helix_user: Option<PathBuf>,
    /// The project's `.helix/languages.toml`.
    pub helix_project: PathBuf,
    /// Whether a program is on `PATH` (or, with a `/`, executable there).
    pub installed: Box<dyn Fn(&str) -> bool + Send + Sync>,
}

impl Sources {
    /// The real files and `PATH`, for a project at `root`.
    pub fn of(root: &Path) -> Sources {
        let helix_user = crate::config_files::user_config_home()
            .map(|config| config.join("helix").join("languages.toml"));
        Sources {
            helix_user,
            helix_project: root.join(".helix").join("languages.toml"),
            installed: Box::new(|program| find_program(program).is_some()),
        }
    }
}

/// `program` as it would be run: a path when it has a `/`, else the first
/// executable of that name on `PATH`.
pub fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &Path| {
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))?;
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".rustup")));
    (!is_idle_rustup_proxy(&found, program, rustup_home.as_deref())).then_some(found)
}

/// Whether `path` is rustup's proxy for `program` (`~/.cargo/bin/rust-analyzer`
/// is one whether or not the component is installed) while no toolchain
/// has the component: running it only says "Unknown binary".
fn is_idle_rustup_proxy(path: &Path, program: &str, rustup_home: Option<&Path>) -> bool {
    let proxy = path
        .canonicalize()
        .is_ok_and(|real| real.file_name().is_some_and(|name| name == "rustup"));
    if !proxy {
        return false;
    }
    let Some(Ok(toolchains)) = rustup_home.map(|home| std::fs::read_dir(home.join("toolchains")))
    else {
        return false;
    };
    !toolchains
        .flatten()
        .any(|toolchain| toolchain.path().join("bin").join(program).is_file())
}

/// The servers `settings` and the sources name, by the precedence above.
pub fn resolve(settings: &CodeSettings, sources: &Sources) -> Resolved {
    let mut resolved = Resolved::default();
    // Ours: already merged (a trusted project's over the user's).
    for (name, config) in &settings.servers {
        resolved.add(ServerSpec::from_config(name, config));
    }
    if settings.helix.unwrap_or(true) {
        let mut files = Vec::new();
        if settings.project_trusted {
            files.push(sources.helix_project.clone());
        }
        files.extend(sources.helix_user.clone());
        for spec in helix_servers(&files, &mut resolved.problems) {
            resolved.add(spec);
        }
    }
    for known in DEFAULTS {
        let Some((program, args)) = known
            .programs
            .iter()
            .find(|(program, _)| (sources.installed)(program))
        else {
            continue;
        };
        resolved.add(ServerSpec {
            name: program.to_string(),
            origin: Origin::Default,
            command: program.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
            extensions: known.extensions.iter().map(|e| e.to_string()).collect(),
            language: None,
            initialization_options: None,
            settings: None,
        });
    }
    for (name, config) in &settings.untrusted {
        for extension in &config.extensions {
            resolved
                .untrusted
                .entry(dotless(extension))
                .or_insert_with(|| name.clone());
        }
    }
    if !settings.project_trusted && settings.helix.unwrap_or(true) {
        let mut ignored = Vec::new();
        for spec in helix_servers(std::slice::from_ref(&sources.helix_project), &mut ignored) {
            for extension in spec.extensions {
                resolved
                    .untrusted
                    .entry(extension)
                    .or_insert(spec.name.clone());
            }
        }
    }
    // Only where nothing else answers is it worth telling.
    let answered = resolved.by_extension.clone();
    resolved
        .untrusted
        .retain(|extension, _| !answered.contains_key(extension));
    resolved
}

impl Resolved {
    /// Adds `spec` for the extensions no server has yet; a spec left with
    /// none is not added. Two sources naming one server name: the first.
    fn add(&mut self, mut spec: ServerSpec) {
        spec.extensions
            .retain(|extension| !self.by_extension.contains_key(extension));
        if spec.extensions.is_empty() || self.servers.iter().any(|s| s.name == spec.name) {
            return;
        }
        let index = self.servers.len();
        for extension in &spec.extensions {
            self.by_extension.insert(extension.clone(), index);
        }
        self.servers.push(spec);
    }

    /// The server for a file, by its extension.
    pub fn for_path(&self, path: &Path) -> Option<usize> {
        let extension = path.extension()?.to_str()?;
        self.by_extension.get(extension).copied()
    }
}

/// `languages.toml`, as far as it names language servers.
#[derive(Debug, Default, Deserialize)]
struct HelixFile {
    #[serde(default, rename = "language-server")]
    language_server: BTreeMap<String, HelixServer>,
    #[serde(default)]
    language: Vec<HelixLanguage>,
}

/// `[language-server.NAME]` (its other keys, `timeout` and such, are Helix's).
#[derive(Clone, Debug, Default, Deserialize)]
struct HelixServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    /// Helix sends it as `initializationOptions` and answers
    /// `workspace/configuration` from it.
    config: Option<toml::Value>,
    #[serde(default)]
    environment: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Deserialize)]
struct HelixLanguage {
    name: String,
    #[serde(rename = "language-id")]
    language_id: Option<String>,
    #[serde(rename = "file-types")]
    file_types: Option<Vec<FileType>>,
    #[serde(rename = "language-servers")]
    language_servers: Option<Vec<ServerRef>>,
}

/// An extension (or a whole file name), or `{ glob = "*.ext" }`.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum FileType {
    Extension(String),
    Glob { glob: String },
}

/// A server's name, or `{ name, only-features, except-features }`.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum ServerRef {
    Name(String),
    Features {
        name: String,
        #[serde(rename = "only-features")]
        only_features: Option<Vec<String>>,
        #[serde(rename = "except-features")]
        except_features: Option<Vec<String>>,
    },
}

impl ServerRef {
    fn name(&self) -> &str {
        match self {
            ServerRef::Name(name) | ServerRef::Features { name, .. } => name,
        }
    }

    /// Whether Helix would ask it where things are defined: what the
    /// `code` tool asks most (a server limited to formatting is not ours).
    fn navigates(&self) -> bool {
        const FEATURE: &str = "goto-definition";
        match self {
            ServerRef::Name(_) => true,
            ServerRef::Features {
                only_features,
                except_features,
                ..
            } => {
                only_features
                    .as_ref()
                    .is_none_or(|only| only.iter().any(|f| f == FEATURE))
                    && except_features
                        .as_ref()
                        .is_none_or(|except| !except.iter().any(|f| f == FEATURE))
            }
        }
    }
}

/// The servers Helix's files name for their languages, the first file's
/// entries over the later ones'.
fn helix_servers(files: &[PathBuf], problems: &mut Vec<String>) -> Vec<ServerSpec> {
    let mut servers: BTreeMap<String, HelixServer> = BTreeMap::new();
    let mut languages: Vec<HelixLanguage> = Vec::new();
    for path in files {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => {
                problems.push(format!("cannot read {}: {error}", path.display()));
                continue;
            }
        };
        let file: HelixFile = match toml::from_str(&text) {
            Ok(file) => file,
            Err(error) => {
                problems.push(format!("{}: {error}", path.display()));
                continue;
            }
        };
        for (name, server) in file.language_server {
            servers.entry(name).or_insert(server);
        }
        for language in file.language {
            if !languages.iter().any(|known| known.name == language.name) {
                languages.push(language);
            }
        }
    }
    let mut specs = Vec::new();
    for language in languages {
        let Some(chosen) = language
            .language_servers
            .iter()
            .flatten()
            .filter(|r| r.navigates())
            .find_map(|r| Some((r.name(), servers.get(r.name())?.command.as_ref()?)))
        else {
            continue;
        };
        let (name, command) = chosen;
        let server = &servers[name];
        let extensions: Vec<String> = match &language.file_types {
            Some(types) => types
                .iter()
                .filter_map(|t| match t {
                    FileType::Extension(extension) => Some(dotless(extension)),
                    FileType::Glob { glob } => glob
                        .strip_prefix("*.")
                        .filter(|e| !e.contains(['*', '?', '[', '/']))
                        .map(String::from),
                })
                .collect(),
            None => extensions_of_language(&language.name)
                .iter()
                .map(|e| e.to_string())
                .collect(),
        };
        let config = server.config.clone().map(json_value);
        specs.push(ServerSpec {
            name: name.to_string(),
            origin: Origin::Helix,
            command: command.clone(),
            args: server.args.clone(),
            env: server.environment.clone(),
            extensions,
            // Helix sends the language's name where it gives no `language-id`.
            language: Some(
                language
                    .language_id
                    .clone()
                    .unwrap_or(language.name.clone()),
            ),
            initialization_options: config.clone(),
            settings: config,
        });
    }
    specs
}

fn dotless(extension: &str) -> String {
    extension.trim_start_matches('.').to_string()
}

fn json(table: toml::Table) -> Value {
    json_value(toml::Value::Table(table))
}

fn json_value(value: toml::Value) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(command: &str, extensions: &[&str]) -> ServerConfig {
        ServerConfig {
            command: command.into(),
            extensions: extensions.iter().map(|e| e.to_string()).collect(),
            ..ServerConfig::default()
        }
    }

    /// Each row: what the user's and the project's `[code.servers]`,
    /// Helix's user and project files and `PATH` hold, whether the project
    /// is trusted, and which command answers `a.py` (or which untrusted
    /// server the model is told of).
    #[test]
    fn which_source_names_the_server_for_a_file() {
        #[derive(Clone)]
        struct Row {
            name: &'static str,
            user: Option<ServerConfig>,
            project: Option<ServerConfig>,
            helix_user: Option<&'static str>,
            helix_project: Option<&'static str>,
            on_path: &'static [&'static str],
            trusted: bool,
            answers: Option<&'static str>,
            untrusted: Option<&'static str>,
        }
        let helix_mine = r#"
            [language-server.mine]
            command = "helix-user-ls"
            args = ["--stdio"]
            config = { python = { analysis = { strict = true } } }
            [[language]]
            name = "python"
            file-types = ["py", { glob = "*.pyi" }]
            language-servers = [{ name = "fmt", only-features = ["format"] }, "mine"]
            [language-server.fmt]
            command = "formatter"
        "#;
        let helix_theirs = r#"
            [language-server.theirs]
            command = "helix-project-ls"
            [[language]]
            name = "python"
            language-servers = ["theirs"]
        "#;
        let none = Row {
            name: "",
            user: None,
            project: None,
            helix_user: None,
            helix_project: None,
            on_path: &[],
            trusted: false,
            answers: None,
            untrusted: None,
        };
        let rows = [
            Row {
                name: "nothing: no server",
                ..none.clone()
            },
            Row {
                name: "a default on PATH",
                on_path: &["basedpyright-langserver"],
                answers: Some("basedpyright-langserver"),
                ..none.clone()
            },
            Row {
                name: "pyright before basedpyright",
                on_path: &["basedpyright-langserver", "pyright-langserver"],
                answers: Some("pyright-langserver"),
                ..none.clone()
            },
            Row {
                name: "Helix over the defaults",
                helix_user: Some(helix_mine),
                on_path: &["pyright-langserver"],
                answers: Some("helix-user-ls"),
                ..none.clone()
            },
            Row {
                name: "ours over Helix",
                user: Some(server("ours-ls", &["py"])),
                helix_user: Some(helix_mine),
                answers: Some("ours-ls"),
                ..none.clone()
            },
            Row {
                name: "a trusted project's Helix over the user's",
                helix_user: Some(helix_mine),
                helix_project: Some(helix_theirs),
                trusted: true,
                answers: Some("helix-project-ls"),
                ..none.clone()
            },
            Row {
                name: "an untrusted project's Helix is not read",
                helix_user: Some(helix_mine),
                helix_project: Some(helix_theirs),
                answers: Some("helix-user-ls"),
                ..none.clone()
            },
            Row {
                name: "a trusted project's server over the user's",
                user: Some(server("ours-ls", &["py"])),
                project: Some(server("project-ls", &[".py"])),
                trusted: true,
                answers: Some("project-ls"),
                ..none.clone()
            },
            Row {
                name: "an untrusted project's server starts nothing, and is named",
                project: Some(server("project-ls", &["py"])),
                on_path: &[],
                untrusted: Some("project"),
                ..none.clone()
            },
            Row {
                name: "an untrusted project's Helix server is named too",
                helix_project: Some(helix_theirs),
                untrusted: Some("theirs"),
                ..none.clone()
            },
        ];
        for row in rows {
            let dir = tempfile::tempdir().unwrap();
            let write = |name: &str, text: Option<&str>| {
                let path = dir.path().join(name);
                if let Some(text) = text {
                    std::fs::write(&path, text).unwrap();
                }
                path
            };
            let sources = Sources {
                helix_user: Some(write("user.toml", row.helix_user)),
                helix_project: write("project.toml", row.helix_project),
                installed: {
                    let on_path = row.on_path;
                    Box::new(move |program| on_path.contains(&program))
                },
            };
            let user = CodeSettings {
                servers: row.user.into_iter().map(|s| ("user".into(), s)).collect(),
                ..CodeSettings::default()
            };
            let project = CodeSettings {
                servers: row
                    .project
                    .into_iter()
                    .map(|s| ("project".into(), s))
                    .collect(),
                ..CodeSettings::default()
            };
            let settings = user.with_project(project, row.trusted, &mut Vec::new());
            let resolved = resolve(&settings, &sources);
            assert_eq!(resolved.problems, Vec::<String>::new(), "{}", row.name);
            let answers = resolved
                .for_path(Path::new("/w/a.py"))
                .map(|index| resolved.servers[index].command.as_str());
            assert_eq!(answers, row.answers, "{}", row.name);
            assert_eq!(
                resolved.untrusted.get("py").map(String::as_str),
                row.untrusted,
                "{}",
                row.name
            );
        }
    }

    #[test]
    fn a_rustup_proxy_counts_only_with_its_component() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("rustup"), "").unwrap();
        std::os::unix::fs::symlink("rustup", bin.join("rust-analyzer")).unwrap();
        std::fs::write(bin.join("gopls"), "").unwrap();
        let home = dir.path().join("rustup");
        let toolchain = home.join("toolchains/stable/bin");
        std::fs::create_dir_all(&toolchain).unwrap();
        let proxy = bin.join("rust-analyzer");
        assert!(is_idle_rustup_proxy(&proxy, "rust-analyzer", Some(&home)));
        std::fs::write(toolchain.join("rust-analyzer"), "").unwrap();
        assert!(!is_idle_rustup_proxy(&proxy, "rust-analyzer", Some(&home)));
        assert!(!is_idle_rustup_proxy(
            &bin.join("gopls"),
            "gopls",
            Some(&home)
        ));
    }

    #[test]
    fn only_a_trusted_project_sets_how_long_to_wait() {
        let user = CodeSettings {
            request_timeout_secs: Some(7),
            ..CodeSettings::default()
        };
        let project = CodeSettings {
            request_timeout_secs: Some(900),
            diagnostics_wait_ms: Some(900_000),
            ..CodeSettings::default()
        };
        for (trusted, request, wait) in [
            (false, 7, DIAGNOSTICS_WAIT),
            (true, 900, Duration::from_secs(900)),
        ] {
            let settings = user
                .clone()
                .with_project(project.clone(), trusted, &mut Vec::new());
            assert_eq!(settings.request_timeout(), Duration::from_secs(request));
            assert_eq!(settings.diagnostics_wait(), wait);
        }
    }

    #[test]
    fn helix_entries_become_servers_with_their_config() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("languages.toml");
        std::fs::write(
            &path,
            r#"
            [language-server.tsls]
            command = "typescript-language-server"
            args = ["--stdio"]
            environment = { NODE_OPTIONS = "--max-old-space-size=4096" }
            config = { hostInfo = "helix" }
            [[language]]
            name = "typescript"
            language-id = "typescript"
            file-types = ["ts", { glob = "*.mts" }, { glob = "tsconfig.json" }]
            language-servers = ["tsls"]
            [[language]]
            name = "python"
            language-servers = ["undefined-here"]
            "#,
        )
        .unwrap();
        let specs = helix_servers(&[path], &mut Vec::new());
        assert_eq!(specs.len(), 1, "{specs:?}");
        let spec = &specs[0];
        assert_eq!(spec.extensions, ["ts", "mts"]);
        assert_eq!(spec.args, ["--stdio"]);
        assert_eq!(spec.env["NODE_OPTIONS"], "--max-old-space-size=4096");
        assert_eq!(
            spec.initialization_options,
            Some(serde_json::json!({"hostInfo": "helix"}))
        );
        assert_eq!(spec.language_id("ts"), "typescript");
    }
}
