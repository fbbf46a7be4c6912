//! Permission rules: `tool` or `tool(pattern)`, in `allow`, `ask` and `deny`
//! lists. Precedence: deny, then ask, then allow, then the mode's default.
//!
//! A pattern means what the tool's target is:
//! - for `bash`, the command: `bash(cargo test:*)` is a prefix (it matches
//!   `cargo test` and `cargo test --release`), `bash(make)` the exact command;
//! - for the file tools, a glob on the workspace-relative path: `edit_file(src/**)`;
//!   a glob without `/` matches the file name in any directory: `read_file(.env*)`.
//!
//! A compound command line matches an allow rule only if every command in it
//! does, and a deny or ask rule if any command does: `bash(cargo test:*)`
//! must not let `cargo test && rm -rf ~` through.

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};

use super::shell;
use super::{Action, Target};

#[derive(Clone, Debug)]
pub struct Rule {
    pub text: String,
    tool: String,
    pattern: Option<Pattern>,
}

#[derive(Clone, Debug)]
enum Pattern {
    CommandPrefix(String),
    CommandExact(String),
    Path(GlobMatcher),
}

impl Rule {
    pub fn parse(text: &str) -> Result<Rule, String> {
        let text = text.trim();
        let (tool, pattern) = match text.split_once('(') {
            Some((tool, rest)) => {
                let inner = rest
                    .strip_suffix(')')
                    .ok_or_else(|| format!("permission rule `{text}`: missing the closing `)`"))?;
                (tool.trim(), Some(inner.trim()))
            }
            None => (text, None),
        };
        if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "permission rule `{text}`: `{tool}` is not a tool name"
            ));
        }
        let pattern = match pattern {
            None | Some("") | Some("*") | Some("**") => None,
            Some(p) if tool == "bash" => Some(match p.strip_suffix(":*") {
                Some(prefix) => Pattern::CommandPrefix(prefix.trim().to_string()),
                None => Pattern::CommandExact(p.to_string()),
            }),
            Some(p) => {
                let glob = if p.contains('/') {
                    p.trim_start_matches("./").to_string()
                } else {
                    format!("**/{p}")
                };
                let matcher = Glob::new(&glob)
                    .map_err(|error| format!("permission rule `{text}`: bad glob: {error}"))?
                    .compile_matcher();
                Some(Pattern::Path(matcher))
            }
        };
        Ok(Rule {
            text: text.to_string(),
            tool: tool.to_string(),
            pattern,
        })
    }

    /// Whether the rule covers one target (a path, or one simple command).
    fn matches_one(&self, target: &str) -> bool {
        match &self.pattern {
            None => true,
            Some(Pattern::CommandExact(exact)) => target == exact,
            Some(Pattern::CommandPrefix(prefix)) => {
                target == prefix
                    || target
                        .strip_prefix(prefix.as_str())
                        .is_some_and(|rest| rest.starts_with(' '))
            }
            Some(Pattern::Path(glob)) => glob.is_match(target),
        }
    }
}

/// The lists as they appear in a config file.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct RuleLists {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    pub allow: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub deny: Vec<Rule>,
}

/// What the rules say about one action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Deny(String),
    Ask(String),
    Allow(String),
    /// No rule matched: the mode decides.
    Unmatched,
}

impl RuleSet {
    pub fn from_lists(lists: &RuleLists) -> Result<RuleSet, String> {
        let parse = |list: &[String]| {
            list.iter()
                .map(|text| Rule::parse(text))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(RuleSet {
            allow: parse(&lists.allow)?,
            ask: parse(&lists.ask)?,
            deny: parse(&lists.deny)?,
        })
    }

    pub fn evaluate(&self, action: &Action) -> Verdict {
        let targets = targets(action);
        let any = |rules: &[Rule]| {
            rules
                .iter()
                .find(|rule| {
                    rule.tool == action.tool && targets.iter().any(|t| rule.matches_one(t))
                })
                .map(|rule| rule.text.clone())
        };
        if let Some(rule) = any(&self.deny) {
            return Verdict::Deny(rule);
        }
        if let Some(rule) = any(&self.ask) {
            return Verdict::Ask(rule);
        }
        // Allow needs every part covered, each by some rule.
        let covering: Vec<&Rule> = targets
            .iter()
            .filter_map(|t| {
                self.allow
                    .iter()
                    .find(|rule| rule.tool == action.tool && rule.matches_one(t))
            })
            .collect();
        if !targets.is_empty() && covering.len() == targets.len() {
            return Verdict::Allow(covering[0].text.clone());
        }
        Verdict::Unmatched
    }
}

/// The strings rules are matched against: the path, every simple command of
/// a command line (with wrappers unwrapped), or the empty string for a tool
/// without a target.
fn targets(action: &Action) -> Vec<String> {
    match &action.target {
        Target::Path(path) => vec![path.clone()],
        Target::Command(line) => {
            let pipelines = shell::parse(line);
            let commands: Vec<String> = shell::all_commands(&pipelines)
                .into_iter()
                .map(|c| c.words.join(" "))
                .collect();
            if commands.is_empty() {
                vec![line.trim().to_string()]
            } else {
                commands
            }
        }
        Target::None => vec![String::new()],
    }
}

/// The rule that "allow always" adds for an action: the tool for file tools,
/// the command's first words as a prefix for `bash`.
pub fn suggested_rule(action: &Action) -> String {
    match &action.target {
        Target::Command(line) => {
            let pipelines = shell::parse(line);
            let first = shell::all_commands(&pipelines)
                .into_iter()
                .next()
                .map(|c| c.words.clone())
                .unwrap_or_default();
            let mut prefix: Vec<&str> = first.iter().take(1).map(String::as_str).collect();
            if let Some(second) = first
                .get(1)
                .filter(|w| !w.starts_with('-') && !w.contains('/') && !w.contains('.'))
            {
                prefix.push(second);
            }
            format!("{}({}:*)", action.tool, prefix.join(" "))
        }
        _ => action.tool.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::ActionKind;

    fn bash(command: &str) -> Action {
        Action {
            tool: "bash".into(),
            kind: ActionKind::Execute,
            summary: command.into(),
            target: Target::Command(command.into()),
        }
    }

    fn edit(path: &str) -> Action {
        Action {
            tool: "edit_file".into(),
            kind: ActionKind::Edit,
            summary: path.into(),
            target: Target::Path(path.into()),
        }
    }

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> RuleSet {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        RuleSet::from_lists(&RuleLists {
            allow: list(allow),
            ask: list(ask),
            deny: list(deny),
        })
        .unwrap()
    }

    #[test]
    fn prefix_exact_and_glob_patterns() {
        let set = rules(
            &[
                "bash(cargo test:*)",
                "bash(make)",
                "edit_file(src/**)",
                "read_file",
            ],
            &[],
            &[],
        );
        assert_eq!(
            set.evaluate(&bash("cargo test")),
            Verdict::Allow("bash(cargo test:*)".into())
        );
        assert_eq!(
            set.evaluate(&bash("cargo test --release -p x")),
            Verdict::Allow("bash(cargo test:*)".into())
        );
        assert_eq!(set.evaluate(&bash("cargo testing")), Verdict::Unmatched);
        assert_eq!(
            set.evaluate(&bash("make")),
            Verdict::Allow("bash(make)".into())
        );
        assert_eq!(set.evaluate(&bash("make install")), Verdict::Unmatched);
        assert_eq!(
            set.evaluate(&edit("src/a/b.rs")),
            Verdict::Allow("edit_file(src/**)".into())
        );
        assert_eq!(set.evaluate(&edit("tests/a.rs")), Verdict::Unmatched);
        let read = Action {
            tool: "read_file".into(),
            kind: ActionKind::Read,
            summary: String::new(),
            target: Target::Path("x".into()),
        };
        assert_eq!(set.evaluate(&read), Verdict::Allow("read_file".into()));
    }

    #[test]
    fn precedence_is_deny_then_ask_then_allow() {
        let all = rules(&["bash"], &["bash(git:*)"], &["bash(git push:*)"]);
        assert_eq!(
            all.evaluate(&bash("git push origin")),
            Verdict::Deny("bash(git push:*)".into())
        );
        assert_eq!(
            all.evaluate(&bash("git status")),
            Verdict::Ask("bash(git:*)".into())
        );
        assert_eq!(all.evaluate(&bash("ls")), Verdict::Allow("bash".into()));
        let ask_allow = rules(&["edit_file"], &["edit_file(*.lock)"], &[]);
        assert_eq!(
            ask_allow.evaluate(&edit("Cargo.lock")),
            Verdict::Ask("edit_file(*.lock)".into())
        );
        assert_eq!(
            ask_allow.evaluate(&edit("src/main.rs")),
            Verdict::Allow("edit_file".into())
        );
        let deny_allow = rules(&["edit_file(src/**)"], &[], &["edit_file(src/secret/**)"]);
        assert_eq!(
            deny_allow.evaluate(&edit("src/secret/k.rs")),
            Verdict::Deny("edit_file(src/secret/**)".into())
        );
        assert_eq!(
            rules(&[], &[], &[]).evaluate(&edit("a")),
            Verdict::Unmatched
        );
    }

    #[test]
    fn compound_commands_need_every_part_allowed() {
        let set = rules(
            &["bash(cargo test:*)", "bash(echo:*)"],
            &[],
            &["bash(rm:*)"],
        );
        assert_eq!(
            set.evaluate(&bash("cargo test && echo ok")),
            Verdict::Allow("bash(cargo test:*)".into())
        );
        assert_eq!(
            set.evaluate(&bash("cargo test && curl x")),
            Verdict::Unmatched
        );
        assert_eq!(
            set.evaluate(&bash("cargo test; bash -c 'rm x'")),
            Verdict::Deny("bash(rm:*)".into())
        );
        assert_eq!(
            set.evaluate(&bash("echo $(rm x)")),
            Verdict::Deny("bash(rm:*)".into())
        );
    }

    #[test]
    fn other_tools_rules_do_not_apply() {
        let set = rules(&["write_file"], &[], &["read_file"]);
        assert_eq!(set.evaluate(&edit("a")), Verdict::Unmatched);
    }

    #[test]
    fn bad_rules_are_clear_errors() {
        assert!(Rule::parse("bash(cargo").unwrap_err().contains("closing"));
        assert!(
            Rule::parse("my tool")
                .unwrap_err()
                .contains("not a tool name")
        );
        assert!(
            Rule::parse("edit_file([)")
                .unwrap_err()
                .contains("bad glob")
        );
    }

    #[test]
    fn suggested_rules() {
        assert_eq!(
            suggested_rule(&bash("cargo test --release")),
            "bash(cargo test:*)"
        );
        assert_eq!(suggested_rule(&bash("ls -la")), "bash(ls:*)");
        assert_eq!(
            suggested_rule(&bash("python3 script.py")),
            "bash(python3:*)"
        );
        assert_eq!(suggested_rule(&edit("a.rs")), "edit_file");
    }
}
