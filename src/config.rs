//! Settings from `~/.config/bareagent/config.toml` and the project's
//! `.bareagent/config.toml`. Secrets are never read from here: keys come
//! from the environment.
//!
//! A project's settings come with the repository, so whoever wrote the
//! repository chose them. Until the user trusts the directory (recorded in
//! the user's config as `[projects."/abs/path"] trusted = true`, written by
//! `bareagent trust`), they may only restrict: `deny` and `ask` rules and a
//! stricter mode are taken, while `allow` rules and a wider mode are
//! ignored, each named in [`Config::ignored`] for the user to be told. A
//! trusted project's settings win over the user's; rule lists add up.
//!
//! ```toml
//! provider = "anthropic"          # or "openai"
//! model = "claude-sonnet-4-5"
//! prompt_cache_key = true         # OpenAI-compatible: default only for api.openai.com
//! effort = "high"                 # minimal | low | medium | high | xhigh | max
//! thinking = "auto"               # or "off"
//! wire = "responses"              # OpenAI: or "chat" (default: responses for api.openai.com)
//! [permissions]
//! mode = "accept-edits"           # default | accept-edits | plan | bypass
//! allow = ["bash(cargo test:*)", "edit_file(src/**)"]
//! ask = ["bash(git push:*)"]
//! deny = ["read_file(secrets/**)"]
//! [edits]
//! save = "before-commands"        # after-each-edit | never (editors only)
//! [context]
//! window = 200000                 # tokens; default: the model's, from a table
//! compact_at = 0.8                # compact past this share of the window
//! [prices."my-model"]             # USD per million tokens; cache_* default to input
//! input = 1.0
//! output = 2.0
//! cache_write = 1.25
//! cache_read = 0.1
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::permission::{PermissionMode, RuleLists};
use crate::provider::ProviderKind;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub provider: Option<ProviderKind>,
    pub model: Option<String>,
    /// Send OpenAI's `prompt_cache_key`; unset: only to api.openai.com
    /// (a strict compatible server may refuse a field it does not know).
    pub prompt_cache_key: Option<bool>,
    /// How much the model spends on an answer (`provider::Effort`).
    pub effort: Option<crate::provider::Effort>,
    /// `auto` or `off` (`provider::Thinking`).
    pub thinking: Option<crate::provider::Thinking>,
    /// OpenAI only: `responses` or `chat` (`provider::OpenAiWire`).
    pub wire: Option<crate::provider::OpenAiWire>,
    /// Prices per model, over the built-in table (`provider::models`).
    #[serde(default)]
    pub prices: BTreeMap<String, crate::provider::Price>,
    #[serde(default)]
    pub permissions: Permissions,
    #[serde(default)]
    pub sandbox: crate::sandbox::SandboxSettings,
    #[serde(default)]
    pub edits: Edits,
    #[serde(default)]
    pub context: ContextSettings,
    /// `[mcp]`: MCP servers and the limits on their tools (see `crate::mcp::config`).
    #[serde(default)]
    pub mcp: crate::mcp::McpSettings,
    /// `[code]`: the language servers our own client starts (see
    /// `crate::language_servers::config`).
    #[serde(default)]
    pub code: crate::language_servers::CodeSettings,
    /// Directories the user trusts (read from the user's config only).
    #[serde(default)]
    pub projects: BTreeMap<String, ProjectEntry>,
    /// The untrusted project's settings that were left out, as written.
    #[serde(skip)]
    pub ignored: Vec<String>,
    /// A trusted project's sandbox settings that would loosen it, left out:
    /// trust loosens permissions, never the sandbox.
    #[serde(skip)]
    pub sandbox_ignored: Vec<String>,
}

/// `[edits]`: how the agent's edits in the editor's buffers reach the disk.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Edits {
    pub save: Option<SaveEdits>,
}

/// `[context]`: the model's context window and when to compact it. (Not
/// under `model`, which is the model's name.)
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ContextSettings {
    /// Tokens; without it, the window of the model's entry in the table.
    pub window: Option<u64>,
    /// The share of the window past which the history is compacted.
    pub compact_at: Option<f64>,
}

/// When the agent's edits (unsaved, in the editor) are saved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SaveEdits {
    /// Before each command, so it runs against them: by the editor where it
    /// can save, else in a view of the command's own (the disk untouched).
    #[default]
    BeforeCommands,
    /// As soon as each edit lands, where the editor can save; else as
    /// `before-commands`.
    AfterEachEdit,
    /// Never: commands see the disk, and their results say which edits it
    /// lacks.
    Never,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProjectEntry {
    #[serde(default)]
    pub trusted: bool,
    /// Rules the user allowed for this project ("allow always"): the
    /// user's own, so they hold whether or not the project is trusted.
    #[serde(default)]
    pub allow: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    pub mode: Option<PermissionMode>,
    #[serde(flatten)]
    pub rules: RuleLists,
}

pub use crate::config_files::{project_config_path, user_config_path};

/// Why settings could not be read or written; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Malformed {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("{}: {source}", path.display())]
    NotToml {
        path: PathBuf,
        source: toml_edit::TomlError,
    },
    #[error("{}: `{key}` is not a table", path.display())]
    NotATable { path: PathBuf, key: String },
    #[error("{}: `{table}.allow` is not a list", path.display())]
    NotAList { path: PathBuf, table: String },
    #[error("cannot create {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot resolve {}: {source}", path.display())]
    Resolve {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot find the user's config directory: set HOME or XDG_CONFIG_HOME")]
    NoUserConfigDir,
    #[error(
        "{}: an MCP server named `{name}` is already there; remove it first (`bareagent mcp remove {name}`)",
        path.display()
    )]
    McpServerExists { path: PathBuf, name: String },
}

impl Config {
    /// The permission gate these settings describe, in `mode`, asking
    /// `approver`; an "always" answer is saved under the project's entry in
    /// the user's config. Both front ends build their gate here.
    /// A gate that only applies the deny rules and asks nobody: for what the
    /// user does themselves, such as a rewind.
    pub fn deny_rules_only(
        &self,
        root: &Path,
    ) -> Result<crate::permission::PermissionGate, crate::permission::RuleError> {
        let nobody = crate::permission::DenyAll("nobody is asked here".into());
        self.gate(
            crate::permission::PermissionMode::Bypass,
            Box::new(nobody),
            root,
        )
    }

    pub fn gate(
        &self,
        mode: PermissionMode,
        approver: Box<dyn crate::permission::Approver>,
        root: &Path,
    ) -> Result<crate::permission::PermissionGate, crate::permission::RuleError> {
        let rules = crate::permission::RuleSet::from_lists(&self.permissions.rules)?;
        let mut gate = crate::permission::PermissionGate::new(mode, approver).with_rules(rules);
        if let Some(hooks) = crate::sandbox::git_hooks_folder(root)
            && let Ok(root) = root.canonicalize()
            && let Ok(relative) = hooks.strip_prefix(&root)
            && let Some(relative) = relative.to_str()
            && !relative.is_empty()
        {
            gate = gate.with_power_folder(relative);
        }
        Ok(match user_config_path() {
            Some(user) => gate.saving_to(std::sync::Arc::new(ProjectRules::new(user, root))),
            None => gate,
        })
    }

    /// The user's config, then the project's over it — all of it if the
    /// user trusts the project, else only what restricts. A missing file is
    /// an empty config; a malformed one is an error naming the file.
    pub fn load(root: &Path) -> Result<Config, ConfigError> {
        let user = match user_config_path() {
            Some(path) => Config::load_file(&path)?,
            None => Config::default(),
        };
        let project = Config::load_file(&project_config_path(root))?;
        let mut config = Config::merge(user, project, root);
        // A project's `.mcp.json` (Claude Code's format): its servers, like
        // the project's own, start only in a trusted directory.
        // A name the config files give already is theirs.
        let (mut servers, problems) = crate::mcp::config::read_mcp_json(root);
        servers.retain(|name, _| !config.mcp.servers.contains_key(name));
        let trusted = config.trusts(root);
        config.mcp = std::mem::take(&mut config.mcp).with_project(
            Default::default(),
            servers,
            trusted,
            &mut config.ignored,
        );
        config.mcp.problems.extend(problems);
        Ok(config)
    }

    /// The project's settings over the user's, as far as trust allows.
    fn merge(user: Config, project: Config, root: &Path) -> Config {
        let mut config = user;
        if !project.projects.is_empty() {
            config
                .ignored
                .push("[projects] (trust is recorded only in the user's config)".into());
        }
        let trusted = config.trusts(root);
        if let Some(entry) = config.project_entry(root) {
            let allowed = entry.allow.clone();
            config.permissions.rules.allow.extend(allowed);
        }
        config.provider = project.provider.or(config.provider);
        config.model = project.model.or(config.model);
        // Not a permission: it only helps the provider route a request.
        config.prompt_cache_key = project.prompt_cache_key.or(config.prompt_cache_key);
        // Not permissions: how the model is asked, which the project may
        // know best (a pinned model's wire, a cheap default effort).
        config.effort = project.effort.or(config.effort);
        config.thinking = project.thinking.or(config.thinking);
        config.wire = project.wire.or(config.wire);
        // A repository's prices could hide what a session costs the user.
        if trusted {
            config.prices.extend(project.prices);
        } else if !project.prices.is_empty() {
            config.ignored.push("[prices]".into());
        }
        // Not a permission: any choice writes only what the agent may edit anyway.
        config.edits.save = project.edits.save.or(config.edits.save);
        // Not a permission either: it decides only when to summarise.
        config.context.window = project.context.window.or(config.context.window);
        config.context.compact_at = project.context.compact_at.or(config.context.compact_at);
        // The project's servers start only if it is trusted (the rest of
        // `[mcp]` only shapes what the model sees).
        config.mcp = std::mem::take(&mut config.mcp)
            .from(crate::mcp::Origin::User)
            .with_project(
                project.mcp,
                Default::default(),
                trusted,
                &mut config.ignored,
            );
        // A language server is a program run with the user's rights: the
        // project's start only if it is trusted.
        config.code = std::mem::take(&mut config.code).with_project(
            project.code,
            trusted,
            &mut config.ignored,
        );
        let user_mode = config.permissions.mode.unwrap_or_default();
        match project.permissions.mode {
            Some(mode) if trusted || mode.latitude() <= user_mode.latitude() => {
                config.permissions.mode = Some(mode);
            }
            Some(mode) => config.ignored.push(format!(
                "mode = \"{}\"",
                serde_json::to_value(mode)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            )),
            None => {}
        }
        let (mine, theirs) = (&mut config.permissions.rules, project.permissions.rules);
        if trusted {
            mine.allow.extend(theirs.allow);
        } else {
            for rule in theirs.allow {
                config.ignored.push(format!("allow \"{rule}\""));
            }
        }
        let mine = &mut config.permissions.rules;
        mine.ask.extend(theirs.ask);
        mine.deny.extend(theirs.deny);
        // A project may tighten the sandbox, trusted or not; only the user's
        // own config (or a flag) loosens it. In a trusted project the agent's
        // edits could otherwise turn the next session's sandbox off.
        let (sandbox, ignored) = config.sandbox.restricted_by(project.sandbox);
        config.sandbox = sandbox;
        if trusted {
            config.sandbox_ignored = ignored;
        } else {
            config.ignored.extend(ignored);
        }
        config
    }

    /// The price of `model`: the settings' entry, else the built-in one.
    pub fn price(&self, model: &str) -> Option<crate::provider::Price> {
        self.prices
            .get(model)
            .copied()
            .or_else(|| crate::provider::builtin_price(model))
    }

    /// Whether the user's config trusts the project at `root`.
    pub fn trusts(&self, root: &Path) -> bool {
        self.project_entry(root).is_some_and(|entry| entry.trusted)
    }

    fn project_entry(&self, root: &Path) -> Option<&ProjectEntry> {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        self.projects.get(root.to_string_lossy().as_ref())
    }

    /// What to tell the user about ignored project settings, once.
    pub fn ignored_notice(&self, root: &Path) -> Option<String> {
        let mut notice = Vec::new();
        if !self.ignored.is_empty() {
            notice.push(format!(
                "Ignored settings of the project in {} because this directory is not trusted: {}. \
                 If you trust this repository, run `bareagent trust` in it (or the editor command \
                 `bareagent.trustWorkspace`).",
                root.display(),
                self.ignored.join(", ")
            ));
        }
        if !self.sandbox_ignored.is_empty() {
            notice.push(format!(
                "Ignored sandbox settings of the project in {}: {}. A project's settings may only \
                 tighten the sandbox, trusted or not; loosen it in your own config \
                 (~/.config/bareagent/config.toml).",
                root.display(),
                self.sandbox_ignored.join(", ")
            ));
        }
        (!notice.is_empty()).then(|| notice.join(" "))
    }

    pub fn load_file(path: &Path) -> Result<Config, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => toml::from_str(&text).map_err(|source| ConfigError::Malformed {
                path: path.to_path_buf(),
                source,
            }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(source) => Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }
}

/// Appends `rule` to the `allow` list of the table at `table` (`["permissions"]`,
/// or `["projects", "/abs/root"]` in the user's config), keeping everything
/// else — comments and layout included (`toml_edit`). The file is replaced
/// atomically (a temp file in its directory, then a rename), so a crash or a
/// concurrent reader never sees half a file. Blocking: call it off the async
/// runtime.
pub fn add_allow_rule(path: &Path, table: &[&str], rule: &str) -> Result<(), ConfigError> {
    edit_config(path, |document| {
        let permissions = table_at(document, table).map_err(|key| ConfigError::NotATable {
            path: path.to_path_buf(),
            key,
        })?;
        push_rule(permissions, rule).map_err(|()| ConfigError::NotAList {
            path: path.to_path_buf(),
            table: table.join("."),
        })
    })
}

/// Appends `rule` to the table's `allow` list unless it is there already.
fn push_rule(permissions: &mut dyn toml_edit::TableLike, rule: &str) -> Result<(), ()> {
    let allow = permissions
        .entry("allow")
        .or_insert_with(|| toml_edit::value(toml_edit::Array::new()))
        .as_array_mut()
        .ok_or(())?;
    if allow.iter().any(|value| value.as_str() == Some(rule)) {
        return Ok(());
    }
    // The new entry is laid out like the last one: on its own line in a
    // list written one per line, after a space in a list written inline.
    let mut entry = toml_edit::Value::from(rule);
    if let Some(last) = allow.len().checked_sub(1).and_then(|at| allow.get_mut(at)) {
        // Only the line break and indentation: a comment above the last
        // entry is about that entry.
        if let Some(prefix) = last.decor().prefix().and_then(|p| p.as_str()) {
            let layout = match prefix.rfind('\n') {
                Some(at) => format!("\n{}", &prefix[at + 1..]),
                None => prefix.to_string(),
            };
            entry.decor_mut().set_prefix(layout);
        }
        // What follows the last entry (the newline before `]`) moves after
        // the new one, unless it is a comment about the last entry.
        let suffix = last.decor().suffix().cloned();
        let is_comment = suffix
            .as_ref()
            .and_then(|s| s.as_str())
            .is_some_and(|s| s.contains('#'));
        if let Some(suffix) = suffix.filter(|_| !is_comment) {
            last.decor_mut().set_suffix("");
            entry.decor_mut().set_suffix(suffix);
        }
    }
    allow.push_formatted(entry);
    Ok(())
}

/// The table at `keys` (created, implicit, where missing), or the first key
/// that names something else.
fn table_at<'a>(
    document: &'a mut toml_edit::DocumentMut,
    keys: &[&str],
) -> Result<&'a mut dyn toml_edit::TableLike, String> {
    let mut table: &mut dyn toml_edit::TableLike = document.as_table_mut();
    for key in keys {
        table = table
            .entry(key)
            .or_insert_with(|| {
                let mut new = toml_edit::Table::new();
                new.set_implicit(true);
                toml_edit::Item::Table(new)
            })
            .as_table_like_mut()
            .ok_or_else(|| key.to_string())?;
    }
    Ok(table)
}

/// Reads a TOML file (a missing one is empty), lets `change` edit it with
/// comments and layout kept, and replaces the file atomically: a temp file
/// in its directory, synced, renamed over it, with the old file's mode.
fn edit_config(
    path: &Path,
    change: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<(), ConfigError>,
) -> Result<(), ConfigError> {
    use std::io::Write;
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut document: toml_edit::DocumentMut =
        text.parse().map_err(|source| ConfigError::NotToml {
            path: path.to_path_buf(),
            source,
        })?;
    change(&mut document)?;
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(directory).map_err(|source| ConfigError::CreateDir {
        path: directory.to_path_buf(),
        source,
    })?;
    let cannot_write = |source: std::io::Error| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".config.toml.")
        .suffix(".tmp")
        .tempfile_in(directory)
        .map_err(cannot_write)?;
    temp.write_all(document.to_string().as_bytes())
        .map_err(cannot_write)?;
    // The temp file is private (0600); the replacement keeps the old mode.
    if let Ok(metadata) = std::fs::metadata(path) {
        temp.as_file()
            .set_permissions(metadata.permissions())
            .map_err(cannot_write)?;
    }
    temp.as_file().sync_all().map_err(cannot_write)?;
    temp.persist(path)
        .map_err(|error| cannot_write(error.error))?;
    Ok(())
}

/// Where "allow always" answers go: the user's config file, under the
/// project's own entry (`[projects."/abs/root"] allow`) — the user's word,
/// so it holds whether or not the project's settings are trusted.
pub struct ProjectRules {
    user_config: PathBuf,
    root: String,
}

impl ProjectRules {
    pub fn new(user_config: PathBuf, root: &Path) -> Self {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        ProjectRules {
            user_config,
            root: root.to_string_lossy().into_owned(),
        }
    }
}

impl crate::permission::RuleStore for ProjectRules {
    fn save(&self, rule: &str) -> Result<(), String> {
        add_allow_rule(&self.user_config, &["projects", &self.root], rule)
            .map_err(|error| error.to_string())
    }
}

#[cfg(test)]
mod allow_rule_tests {
    use super::*;

    #[test]
    fn adding_a_rule_keeps_comments_and_layout() {
        let cases = [
            // One rule per line, with comments everywhere.
            (
                "# Project settings, reviewed by the team.\nmodel = \"m\" # pinned\n\n[permissions]\n# what runs unasked\nallow = [\n    \"bash(cargo test:*)\", # tests\n    \"edit_file(src/**)\",\n]\ndeny = [\"bash(curl:*)\"]\n\n[other]\nx = 1\n",
                "# Project settings, reviewed by the team.\nmodel = \"m\" # pinned\n\n[permissions]\n# what runs unasked\nallow = [\n    \"bash(cargo test:*)\", # tests\n    \"edit_file(src/**)\",\n    \"bash(npm run:*)\",\n]\ndeny = [\"bash(curl:*)\"]\n\n[other]\nx = 1\n",
            ),
            // Without a trailing comma.
            (
                "[permissions]\nallow = [\n  \"a\",\n  \"b\"\n]\n",
                "[permissions]\nallow = [\n  \"a\",\n  \"b\",\n  \"bash(npm run:*)\"\n]\n",
            ),
            // Inline.
            (
                "[permissions] # rules\nallow = [\"a\", \"b\"]\n",
                "[permissions] # rules\nallow = [\"a\", \"b\", \"bash(npm run:*)\"]\n",
            ),
            // No list yet, no table yet, no file content yet.
            (
                "# mine\n[permissions]\nmode = \"default\"\n",
                "# mine\n[permissions]\nmode = \"default\"\nallow = [\"bash(npm run:*)\"]\n",
            ),
            (
                "model = \"m\"\n",
                "model = \"m\"\n\n[permissions]\nallow = [\"bash(npm run:*)\"]\n",
            ),
            ("", "[permissions]\nallow = [\"bash(npm run:*)\"]\n"),
            // Already there: the file is left as it is.
            (
                "[permissions]\nallow = [ \"bash(npm run:*)\" ]  # same\n",
                "[permissions]\nallow = [ \"bash(npm run:*)\" ]  # same\n",
            ),
        ];
        for (before, after) in cases {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(".bareagent/config.toml");
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, before).unwrap();
            add_allow_rule(&path, &["permissions"], "bash(npm run:*)").unwrap();
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                after,
                "from {before:?}"
            );
            let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(left, vec!["config.toml"], "no temp file is left behind");
        }
    }

    #[test]
    fn a_file_that_is_not_toml_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        for text in [
            "allow = [",
            "permissions = 3\n",
            "[permissions]\nallow = \"x\"\n",
        ] {
            std::fs::write(&path, text).unwrap();
            assert!(
                add_allow_rule(&path, &["permissions"], "bash(ls)").is_err(),
                "{text:?}"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
    }
}

/// Records in the user's config that the user trusts the directory `root`:
/// its project settings then apply in full. Comments and layout of the file
/// are kept; the write is atomic.
pub fn trust_project(root: &Path) -> Result<PathBuf, ConfigError> {
    let path = user_config_path().ok_or(ConfigError::NoUserConfigDir)?;
    record_trust(&path, root)?;
    Ok(path)
}

fn record_trust(path: &Path, root: &Path) -> Result<(), ConfigError> {
    let root = root.canonicalize().map_err(|source| ConfigError::Resolve {
        path: root.to_path_buf(),
        source,
    })?;
    let key = root.to_string_lossy();
    edit_config(path, |document| {
        let entry =
            table_at(document, &["projects", &key]).map_err(|key| ConfigError::NotATable {
                path: path.to_path_buf(),
                key,
            })?;
        entry.insert("trusted", toml_edit::value(true));
        Ok(())
    })
}

/// `bareagent trust --remove`: the project's settings may again only
/// restrict. Its other entries (rules the user allowed) stay. Returns the
/// user's config and whether the project was trusted.
pub fn untrust_project(root: &Path) -> Result<(PathBuf, bool), ConfigError> {
    let path = user_config_path().ok_or(ConfigError::NoUserConfigDir)?;
    let was = forget_trust(&path, root)?;
    Ok((path, was))
}

fn forget_trust(path: &Path, root: &Path) -> Result<bool, ConfigError> {
    // A project that is gone is still forgotten, by the name it was given.
    let root = root
        .canonicalize()
        .or_else(|_| std::path::absolute(root))
        .map_err(|source| ConfigError::Resolve {
            path: root.to_path_buf(),
            source,
        })?;
    let key = root.to_string_lossy();
    // Nothing to forget: the file is left as it is (or not made).
    if !holds(path, &["projects", &key, "trusted"]).unwrap_or(false) {
        return Ok(false);
    }
    let mut was = false;
    edit_config(path, |document| {
        let Some(projects) = document
            .get_mut("projects")
            .and_then(|p| p.as_table_like_mut())
        else {
            return Ok(());
        };
        let Some(entry) = projects.get_mut(&key).and_then(|e| e.as_table_like_mut()) else {
            return Ok(());
        };
        was = entry
            .remove("trusted")
            .is_some_and(|t| t.as_bool() == Some(true));
        if entry.is_empty() {
            projects.remove(&key);
        }
        Ok(())
    })?;
    Ok(was)
}

/// `bareagent mcp add`: `[mcp.servers.NAME]` in a settings file, the rest
/// of it kept as written; a name already there is refused, never replaced.
pub fn add_mcp_server(
    path: &Path,
    name: &str,
    server: toml_edit::Table,
) -> Result<(), ConfigError> {
    edit_config(path, |document| {
        let servers =
            table_at(document, &["mcp", "servers"]).map_err(|key| ConfigError::NotATable {
                path: path.to_path_buf(),
                key,
            })?;
        if servers.contains_key(name) {
            return Err(ConfigError::McpServerExists {
                path: path.to_path_buf(),
                name: name.to_string(),
            });
        }
        servers.insert(name, toml_edit::Item::Table(server));
        Ok(())
    })
}

/// Whether a settings file names an MCP server (a missing file does not).
pub fn names_mcp_server(path: &Path, name: &str) -> Result<bool, ConfigError> {
    holds(path, &["mcp", "servers", name])
}

/// Whether a settings file has an entry at `keys` (a missing file has none).
fn holds(path: &Path, keys: &[&str]) -> Result<bool, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let document: toml_edit::DocumentMut = text.parse().map_err(|source| ConfigError::NotToml {
        path: path.to_path_buf(),
        source,
    })?;
    let mut item = document.as_item();
    for key in keys {
        match item.get(key) {
            Some(next) => item = next,
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// `bareagent mcp remove`: `[mcp.servers.NAME]` out of a settings file,
/// the rest of it kept as written.
pub fn remove_mcp_server(path: &Path, name: &str) -> Result<(), ConfigError> {
    edit_config(path, |document| {
        if let Some(servers) = document
            .get_mut("mcp")
            .and_then(|m| m.get_mut("servers"))
            .and_then(|s| s.as_table_like_mut())
        {
            servers.remove(name);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The folder `core.hooksPath` names is a power folder: an edit there
    /// asks in accept-edits, as `.git/hooks` does; beside it, it does not.
    #[test]
    fn the_hooks_path_folder_asks_before_an_edit() {
        use crate::permission::{Action, ActionKind, Assessment, DenyAll, PermissionMode, Target};
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join("tools/hooks")).unwrap();
        std::fs::write(
            dir.path().join(".git/config"),
            "[core]\n\thooksPath = tools/hooks/\n",
        )
        .unwrap();
        let gate = Config::default()
            .gate(
                PermissionMode::AcceptEdits,
                Box::new(DenyAll("no".into())),
                dir.path(),
            )
            .unwrap();
        let edit = |path: &str| Action {
            tool: "write_file".into(),
            kind: ActionKind::Edit,
            summary: String::new(),
            target: Target::Path(path.into()),
        };
        assert!(matches!(
            gate.assess(&edit("tools/hooks/pre-commit")),
            Assessment::Ask(_)
        ));
        assert!(matches!(
            gate.assess(&edit("tools/build.sh")),
            Assessment::Allow
        ));
    }

    #[test]
    fn parses_merges_and_keeps_other_settings_when_saving() {
        let dir = tempfile::tempdir().unwrap();
        let path = project_config_path(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            "model = \"m\"\n[permissions]\nmode = \"plan\"\ndeny = [\"bash(curl:*)\"]\n",
        )
        .unwrap();
        add_allow_rule(&path, &["permissions"], "bash(cargo test:*)").unwrap();
        add_allow_rule(&path, &["permissions"], "bash(cargo test:*)").unwrap();
        let config = Config::load_file(&path).unwrap();
        assert_eq!(config.model.as_deref(), Some("m"));
        assert_eq!(config.permissions.mode, Some(PermissionMode::Plan));
        assert_eq!(
            config.permissions.rules.allow,
            vec!["bash(cargo test:*)".to_string()]
        );
        assert_eq!(
            config.permissions.rules.deny,
            vec!["bash(curl:*)".to_string()]
        );
    }

    /// An untrusted project may only restrict; a trusted one may widen.
    #[test]
    fn untrusted_projects_only_restrict() {
        use PermissionMode::*;
        // (user mode, project toml, trusted, mode, allow count, ignored count)
        type Case = (
            Option<PermissionMode>,
            &'static str,
            bool,
            Option<PermissionMode>,
            usize,
            usize,
        );
        let cases: Vec<Case> = vec![
            (
                None,
                "[permissions]\nmode = \"bypass\"\nallow = [\"bash\"]",
                false,
                None,
                0,
                2,
            ),
            (
                None,
                "[permissions]\nmode = \"bypass\"\nallow = [\"bash\"]",
                true,
                Some(Bypass),
                1,
                0,
            ),
            (
                None,
                "[permissions]\nmode = \"plan\"",
                false,
                Some(Plan),
                0,
                0,
            ),
            (
                Some(AcceptEdits),
                "[permissions]\nmode = \"default\"",
                false,
                Some(Default),
                0,
                0,
            ),
            (
                Some(Default),
                "[permissions]\nmode = \"accept-edits\"",
                false,
                Some(Default),
                0,
                1,
            ),
            (
                None,
                "[permissions]\ndeny = [\"bash(curl:*)\"]\nask = [\"bash\"]",
                false,
                None,
                0,
                0,
            ),
            (None, "[projects.\"/\"]\ntrusted = true", false, None, 0, 1),
        ];
        for (index, (user_mode, project, trusted, mode, allows, ignored)) in
            cases.into_iter().enumerate()
        {
            let home = tempfile::tempdir().unwrap();
            let root = tempfile::tempdir().unwrap();
            let project_path = project_config_path(root.path());
            std::fs::create_dir_all(project_path.parent().unwrap()).unwrap();
            std::fs::write(&project_path, project).unwrap();
            let mut user = Config::default();
            user.permissions.mode = user_mode;
            if trusted {
                let key = root.path().canonicalize().unwrap().display().to_string();
                user.projects.insert(
                    key,
                    ProjectEntry {
                        trusted: true,
                        allow: vec![],
                    },
                );
            }
            let config =
                Config::merge(user, Config::load_file(&project_path).unwrap(), root.path());
            assert_eq!(config.permissions.mode, mode.or(user_mode), "case {index}");
            assert_eq!(config.permissions.rules.allow.len(), allows, "case {index}");
            assert_eq!(
                config.ignored.len(),
                ignored,
                "case {index}: {:?}",
                config.ignored
            );
            assert_eq!(config.ignored_notice(root.path()).is_some(), ignored > 0);
            drop(home);
        }
    }

    #[test]
    fn trust_is_recorded_keeping_the_file_layout() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("config.toml");
        std::fs::write(&path, "# my settings\nmodel = \"m\" # pinned\n").unwrap();
        let root = tempfile::tempdir().unwrap();
        record_trust(&path, root.path()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# my settings\nmodel = \"m\" # pinned\n"),
            "{text}"
        );
        let config = Config::load_file(&path).unwrap();
        assert!(config.trusts(root.path()));
        assert!(!config.trusts(home.path()));

        // Forgotten again, the rest of the file as it was.
        assert!(forget_trust(&path, root.path()).unwrap());
        assert!(!Config::load_file(&path).unwrap().trusts(root.path()));
        assert!(
            !forget_trust(&path, root.path()).unwrap(),
            "not trusted now"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# my settings\nmodel = \"m\" # pinned\n"
        );
    }

    #[test]
    fn malformed_files_are_errors_that_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[permissions]\nmode = \"yolo\"\n").unwrap();
        let error = Config::load_file(&path).unwrap_err().to_string();
        assert!(error.contains("config.toml"), "{error}");
        std::fs::write(&path, "colour = 1\n").unwrap();
        assert!(Config::load_file(&path).is_err());
    }
}
