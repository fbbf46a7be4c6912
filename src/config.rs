//! Settings from `~/.config/bareagent/config.toml` and the project's
//! `.bareagent/config.toml` (the project's win; rule lists add up).
//! Secrets are never read from here: keys come from the environment.
//!
//! ```toml
//! provider = "anthropic"          # or "openai"
//! model = "claude-sonnet-4-5"
//! [permissions]
//! mode = "accept-edits"           # default | accept-edits | plan | bypass
//! allow = ["bash(cargo test:*)", "edit_file(src/**)"]
//! ask = ["bash(git push:*)"]
//! deny = ["read_file(secrets/**)"]
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::permission::{PermissionMode, RuleLists};
use crate::provider::ProviderKind;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub provider: Option<ProviderKind>,
    pub model: Option<String>,
    #[serde(default)]
    pub permissions: Permissions,
    #[serde(default)]
    pub sandbox: crate::sandbox::SandboxSettings,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    pub mode: Option<PermissionMode>,
    #[serde(flatten)]
    pub rules: RuleLists,
}

/// The project's config file, where "allow always" answers go.
pub fn project_config_path(root: &Path) -> PathBuf {
    root.join(".bareagent").join("config.toml")
}

pub(crate) fn user_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(base.join("bareagent").join("config.toml"))
}

impl Config {
    /// The user's config, then the project's over it. A missing file is an
    /// empty config; a malformed one is an error naming the file.
    pub fn load(root: &Path) -> Result<Config, String> {
        let mut config = match user_config_path() {
            Some(path) => Config::load_file(&path)?,
            None => Config::default(),
        };
        let project = Config::load_file(&project_config_path(root))?;
        config.provider = project.provider.or(config.provider);
        config.model = project.model.or(config.model);
        config.permissions.mode = project.permissions.mode.or(config.permissions.mode);
        let (mine, theirs) = (&mut config.permissions.rules, project.permissions.rules);
        mine.allow.extend(theirs.allow);
        mine.ask.extend(theirs.ask);
        mine.deny.extend(theirs.deny);
        config.sandbox = config.sandbox.merged(project.sandbox);
        Ok(config)
    }

    pub fn load_file(path: &Path) -> Result<Config, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                toml::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(error) => Err(format!("cannot read {}: {error}", path.display())),
        }
    }
}

/// Appends `rule` to `[permissions] allow` in the file, keeping everything else.
pub fn add_allow_rule(path: &Path, rule: &str) -> Result<(), String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
    };
    let mut table: toml::Table =
        toml::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))?;
    let permissions = table
        .entry("permissions")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        .as_table_mut()
        .ok_or_else(|| format!("{}: `permissions` is not a table", path.display()))?;
    let allow = permissions
        .entry("allow")
        .or_insert_with(|| toml::Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| format!("{}: `permissions.allow` is not a list", path.display()))?;
    if !allow.iter().any(|value| value.as_str() == Some(rule)) {
        allow.push(toml::Value::String(rule.to_string()));
    }
    let text = toml::to_string_pretty(&table).map_err(|error| error.to_string())?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|error| format!("cannot create {}: {error}", parent.display()))?;
    }
    std::fs::write(path, text).map_err(|error| format!("cannot write {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        add_allow_rule(&path, "bash(cargo test:*)").unwrap();
        add_allow_rule(&path, "bash(cargo test:*)").unwrap();
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

    #[test]
    fn malformed_files_are_errors_that_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[permissions]\nmode = \"yolo\"\n").unwrap();
        let error = Config::load_file(&path).unwrap_err();
        assert!(error.contains("config.toml"), "{error}");
        std::fs::write(&path, "colour = 1\n").unwrap();
        assert!(Config::load_file(&path).is_err());
    }
}
