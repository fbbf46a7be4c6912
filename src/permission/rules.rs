//! Permission rules: `tool` or `tool(pattern)`, in `allow`, `ask` and `deny`
//! lists. Precedence: deny, then ask, then allow, then the mode's default.
//!
//! A pattern means what the tool's target is:
//! - for `bash`, the command's words: `bash(cargo test:*)` is a prefix (it
//!   matches `cargo test` and `cargo test --release`), `bash(make)` the exact
//!   command;
//! - for the file tools, a glob on the workspace-relative path: `edit_file(src/**)`;
//!   a glob without `/` matches the file name in any directory: `read_file(.env*)`.
//!
//! A rule with a path pattern speaks for every tool that does the same
//! thing: `read(…)`, `read_file(…)`, `grep(…)` and `glob(…)` cover every read
//! (the file tools', the paths a `bash` line names, what `edit_file` reads
//! before it edits); `edit(…)`, `edit_file(…)`, `write_file(…)` and
//! `multi_edit(…)` cover every write (a `bash` redirect included). A rule
//! without a pattern names one tool only.
//!
//! A compound command line matches an allow rule only if every command in it
//! does, and a deny or ask rule if any command does: `bash(cargo test:*)`
//! must not let `cargo test && rm -rf ~` through. Commands are matched as
//! they run: a deny or ask rule sees the command inside a wrapper and past
//! git's global options (`git -C . push` is `git push`); an allow rule must
//! cover each command with git's global options left out, wrappers included
//! (see [`super::CommandCheck::commands_as_run`]).

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};

use super::command::as_run;
use super::dangerous;
use super::shell::{self, Word, program_name};
use super::{Action, ActionKind, Target};

#[derive(Clone, Debug)]
pub struct Rule {
    pub text: String,
    tool: String,
    pattern: Option<Pattern>,
    /// For `mcp__SERVER__*`, `mcp__SERVER` and `mcp__*`: the start of
    /// every tool name the rule covers (`mcp__SERVER__`, `mcp__`).
    mcp_prefix: Option<String>,
}

#[derive(Clone, Debug)]
enum Pattern {
    CommandPrefix(Vec<String>),
    CommandExact(Vec<String>),
    /// The matcher, and the glob as written (workspace-relative).
    Path(GlobMatcher, String),
}

/// Tools whose patterned rules speak for every read.
const READ_TOOLS: [&str; 4] = ["read", "read_file", "grep", "glob"];
/// Tools whose patterned rules speak for every write.
const EDIT_TOOLS: [&str; 4] = ["edit", "edit_file", "write_file", "multi_edit"];
/// Tools that read the file they edit.
pub(crate) const READING_EDITORS: [&str; 2] = ["edit_file", "multi_edit"];

/// One thing an action does that a rule can speak about.
#[derive(Clone, Copy, Debug)]
pub enum Subject<'a> {
    /// A simple command's words.
    Command(&'a [&'a str]),
    Read(&'a str),
    Write(&'a str),
    /// A call with nothing else to match: only rules naming the tool cover it.
    Tool,
}

/// Why a rule's text is not a rule; each names the rule as written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RuleError {
    #[error("permission rule `{0}`: missing the closing `)`")]
    Unclosed(String),
    #[error("permission rule `{rule}`: `{tool}` is not a tool name")]
    NotATool { rule: String, tool: String },
    #[error("permission rule `{0}`: the pattern must be one simple command")]
    NotOneCommand(String),
    #[error("permission rule `{0}`: the pattern must be plain words")]
    NotPlainWords(String),
    #[error("permission rule `{rule}`: bad glob: {reason}")]
    BadGlob { rule: String, reason: String },
    #[error(
        "permission rule `{0}`: an MCP rule names a tool (`mcp__SERVER__TOOL`), a server's tools (`mcp__SERVER__*` or `mcp__SERVER`) or every MCP tool (`mcp__*`), without a pattern"
    )]
    McpForm(String),
}

/// The start of every tool name an MCP rule covers, or `None` for a rule
/// naming one tool; an error for what no MCP tool can be called. Server
/// names never hold `__` (`mcp::config::valid_server_name`), so the first
/// `__` after `mcp__` ends the server's name, in a rule as in a tool.
fn mcp_prefix(text: &str, tool: &str) -> Result<Option<String>, RuleError> {
    let wrong = || RuleError::McpForm(text.to_string());
    if tool == "mcp__*" {
        return Ok(Some("mcp__".into()));
    }
    let rest = tool.strip_prefix("mcp__").ok_or_else(wrong)?;
    let (server, tool_part) = match rest.split_once("__") {
        Some((server, tool_part)) => (server, Some(tool_part)),
        None => (rest, None),
    };
    let server_ok = !server.is_empty()
        && server
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !server.starts_with('_')
        && !server.ends_with('_');
    if !server_ok {
        return Err(wrong());
    }
    match tool_part {
        // Claude Code's form: the server's name alone is all its tools.
        None | Some("*") => Ok(Some(format!("mcp__{server}__"))),
        Some(name)
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
        {
            Ok(None)
        }
        Some(_) => Err(wrong()),
    }
}

impl Rule {
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let (tool, pattern) = match text.split_once('(') {
            Some((tool, rest)) => {
                let inner = rest
                    .strip_suffix(')')
                    .ok_or_else(|| RuleError::Unclosed(text.to_string()))?;
                (tool.trim(), Some(inner.trim()))
            }
            None => (text, None),
        };
        if tool.starts_with("mcp__") {
            // An MCP tool does nothing a pattern could speak about: a rule
            // with one would match nothing, and a deny rule that matches
            // nothing fails open.
            if pattern.is_some() {
                return Err(RuleError::McpForm(text.to_string()));
            }
            return Ok(Rule {
                text: text.to_string(),
                tool: tool.to_string(),
                pattern: None,
                mcp_prefix: mcp_prefix(text, tool)?,
            });
        }
        if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(RuleError::NotATool {
                rule: text.to_string(),
                tool: tool.to_string(),
            });
        }
        let pattern = match pattern {
            None | Some("") | Some("*") | Some("**") => None,
            Some(p) if tool == "bash" => {
                let (words, prefix) = match p.strip_suffix(":*") {
                    Some(prefix) => (prefix, true),
                    None => (p, false),
                };
                let parsed = shell::parse(words);
                let commands = parsed.commands();
                let [command] = commands.as_slice() else {
                    return Err(RuleError::NotOneCommand(text.to_string()));
                };
                // Assignments alone are no command: as a prefix, no words
                // would be every command.
                if !parsed.problems.is_empty()
                    || command.words.is_empty()
                    || command.words.iter().any(|w| w.opaque || w.glob)
                {
                    return Err(RuleError::NotPlainWords(text.to_string()));
                }
                let words = command.texts().into_iter().map(String::from).collect();
                Some(if prefix {
                    Pattern::CommandPrefix(words)
                } else {
                    Pattern::CommandExact(words)
                })
            }
            Some(p) => {
                let glob = if p.contains('/') {
                    p.trim_start_matches("./").to_string()
                } else {
                    format!("**/{p}")
                };
                let matcher = Glob::new(&glob)
                    .map_err(|error| RuleError::BadGlob {
                        rule: text.to_string(),
                        reason: error.to_string(),
                    })?
                    .compile_matcher();
                Some(Pattern::Path(matcher, glob))
            }
        };
        Ok(Rule {
            text: text.to_string(),
            tool: tool.to_string(),
            pattern,
            mcp_prefix: None,
        })
    }

    /// Whether the rule names files that reads reach (`read(secrets/**)`).
    fn speaks_about_reads(&self) -> bool {
        READ_TOOLS.contains(&self.tool.as_str()) && matches!(self.pattern, Some(Pattern::Path(..)))
    }

    /// Whether the rule names `tool`. For MCP tools, deny and ask rules
    /// (`strict`) ignore ASCII case — two servers `Git` and `git` are both
    /// what a user denying `mcp__git__*` meant — while allow rules match
    /// exactly.
    fn names_tool(&self, tool: &str, strict: bool) -> bool {
        if !self.tool.starts_with("mcp__") {
            return self.tool == tool;
        }
        let same = |a: &str, b: &str| {
            if strict {
                a.eq_ignore_ascii_case(b)
            } else {
                a == b
            }
        };
        match &self.mcp_prefix {
            Some(prefix) => tool
                .get(..prefix.len())
                .is_some_and(|start| same(start, prefix)),
            None => same(&self.tool, tool),
        }
    }

    /// Whether the rule speaks about `subject` of a call to `tool`. Deny and
    /// ask rules also match a command by its program's bare name
    /// (`/bin/rm` is `rm`); allow rules only by the words as written.
    fn covers(&self, tool: &str, subject: Subject<'_>, strict: bool) -> bool {
        match (subject, &self.pattern) {
            (Subject::Command(_) | Subject::Tool, None) => self.names_tool(tool, strict),
            (Subject::Command(words), Some(Pattern::CommandExact(exact))) => {
                self.tool == "bash" && command_matches(words, exact, true, strict)
            }
            (Subject::Command(words), Some(Pattern::CommandPrefix(prefix))) => {
                self.tool == "bash" && command_matches(words, prefix, false, strict)
            }
            (Subject::Read(_) | Subject::Write(_), None) => self.names_tool(tool, strict),
            (Subject::Read(path), Some(Pattern::Path(glob, _))) => {
                READ_TOOLS.contains(&self.tool.as_str()) && glob.is_match(path)
            }
            (Subject::Write(path), Some(Pattern::Path(glob, _))) => {
                EDIT_TOOLS.contains(&self.tool.as_str()) && glob.is_match(path)
            }
            _ => false,
        }
    }
}

fn command_matches(words: &[&str], rule: &[String], exact: bool, by_name: bool) -> bool {
    if words.len() < rule.len() || (exact && words.len() != rule.len()) {
        return false;
    }
    let same = |normalize: bool| {
        words
            .iter()
            .zip(rule)
            .enumerate()
            .all(|(i, (word, expected))| {
                let word = if normalize && i == 0 {
                    program_name(word)
                } else {
                    word
                };
                word == expected
            })
    };
    same(false) || (by_name && same(true))
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
    /// Every command (for `bash`) or the path (for a file tool) is allowed.
    Allow(String),
    /// No rule matched: the mode decides.
    Unmatched,
}

impl RuleSet {
    pub fn from_lists(lists: &RuleLists) -> Result<RuleSet, RuleError> {
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
        let (commands, as_run): (Vec<Vec<&str>>, Vec<Vec<&str>>) = match &action.target {
            Target::Command(check) => (check.commands(), check.commands_as_run()),
            _ => (Vec::new(), Vec::new()),
        };
        let subjects = subjects(action, &commands);
        let tool = action.tool.as_str();
        let any = |rules: &[Rule]| {
            rules
                .iter()
                .find(|rule| subjects.iter().any(|s| rule.covers(tool, *s, true)))
                .map(|rule| rule.text.clone())
        };
        if let Some(rule) = any(&self.deny) {
            return Verdict::Deny(rule);
        }
        // A line the reader stopped reading may hide a denied command.
        if let Target::Command(check) = &action.target
            && check.parsed.problems.iter().any(|p| p == shell::GAVE_UP)
            && let Some(rule) = self
                .deny
                .iter()
                .find(|rule| rule.tool == "bash" && rule.pattern.is_some())
        {
            return Verdict::Deny(rule.text.clone());
        }
        if let Some(rule) = any(&self.ask) {
            return Verdict::Ask(rule);
        }
        // git printing history the line does not name may print what a
        // read rule denies or asks about: which, only git knows.
        if let Target::Command(check) = &action.target
            && check.reads_history
            && let Some(rule) = self
                .deny
                .iter()
                .chain(&self.ask)
                .find(|rule| rule.speaks_about_reads())
        {
            return Verdict::Ask(rule.text.clone());
        }
        // Allow needs every primary subject covered, each by some rule.
        let primary: Vec<Subject<'_>> = match &action.target {
            Target::Command(_) => as_run.iter().map(|c| Subject::Command(c)).collect(),
            _ => subjects.iter().take(1).copied().collect(),
        };
        let covering: Vec<&Rule> = primary
            .iter()
            .filter_map(|s| self.allow.iter().find(|rule| rule.covers(tool, *s, false)))
            .collect();
        if !primary.is_empty() && covering.len() == primary.len() {
            return Verdict::Allow(covering[0].text.clone());
        }
        Verdict::Unmatched
    }

    /// Whether an allow rule covers `subject` of `tool` on its own: a read
    /// of a sensitive file someone allowed, a redirect into an allowed path.
    pub fn allows(&self, tool: &str, subject: Subject<'_>) -> bool {
        self.allow
            .iter()
            .any(|rule| rule.covers(tool, subject, false))
    }

    /// Whether an allow rule with a path pattern covers `subject`: what a
    /// file that may hold secrets needs, since a rule naming only the tool
    /// (`read_file`) was written about reads in general, not about `.env`.
    pub fn names(&self, tool: &str, subject: Subject<'_>) -> bool {
        self.allow.iter().any(|rule| {
            matches!(rule.pattern, Some(Pattern::Path(..))) && rule.covers(tool, subject, false)
        })
    }

    /// The directories read-deny rules name before their first wildcard
    /// (`read(secrets/**)` → `secrets`).
    pub fn denied_read_prefixes(&self) -> Vec<String> {
        self.deny
            .iter()
            .filter(|rule| READ_TOOLS.contains(&rule.tool.as_str()))
            .filter_map(|rule| match &rule.pattern {
                Some(Pattern::Path(_, glob)) => {
                    let fixed: Vec<&str> = glob
                        .split('/')
                        .take_while(|part| !part.contains(['*', '?', '[', '{']))
                        .collect();
                    (!fixed.is_empty()).then(|| fixed.join("/"))
                }
                _ => None,
            })
            .collect()
    }

    /// The first deny (or else ask) rule that speaks about reading `path`.
    pub fn read_verdict(&self, tool: &str, path: &str) -> Verdict {
        let subject = Subject::Read(path);
        if let Some(rule) = self.deny.iter().find(|r| r.covers(tool, subject, true)) {
            return Verdict::Deny(rule.text.clone());
        }
        if let Some(rule) = self.ask.iter().find(|r| r.covers(tool, subject, true)) {
            return Verdict::Ask(rule.text.clone());
        }
        Verdict::Unmatched
    }
}

/// What rules can speak about in an action: a file tool's path (read,
/// written, or both), or a command line's commands, reads and writes.
fn subjects<'a>(action: &'a Action, commands: &'a [Vec<&'a str>]) -> Vec<Subject<'a>> {
    match &action.target {
        Target::Path(path) => match action.kind {
            ActionKind::Edit if READING_EDITORS.contains(&action.tool.as_str()) => {
                vec![Subject::Write(path), Subject::Read(path)]
            }
            ActionKind::Edit => vec![Subject::Write(path)],
            _ => vec![Subject::Read(path)],
        },
        Target::Command(check) => commands
            .iter()
            .map(|c| Subject::Command(c))
            .chain(check.reads.iter().map(|p| Subject::Read(p)))
            .chain(check.writes.iter().map(|p| Subject::Write(p)))
            .collect(),
        Target::None => vec![Subject::Tool],
    }
}

/// The rule that "allow always" adds for an action, no wider than what the
/// user saw: for a read or an edit, that one path, never every file; for
/// `bash`, the program and its first argument as a prefix (`cargo test:*`)
/// only for a plain command (no options, nothing written or run beyond
/// it, nothing the check could not follow, nothing dangerous), else that
/// exact command; the tool for the rest.
pub fn suggested_rule(action: &Action) -> String {
    match &action.target {
        Target::Path(path) if matches!(action.kind, ActionKind::Read | ActionKind::Edit) => {
            // A one-character class for what globs give meaning to; `!`
            // needs none (it means something only first in a class, where
            // `[!]` opens a negated one) and `\` is escaped by itself
            // (in `[\]` it would escape the `]`).
            // White space at the end too: a rule's pattern is trimmed, and
            // `a.txt ` would become a rule for `a.txt`. It goes in a group
            // (`{ }`), not a class: globset's classes never match a
            // character beyond ASCII.
            let kept = path.trim_end().len();
            let escaped: String = path
                .char_indices()
                .map(|(at, c)| match c {
                    '*' | '?' | '[' | ']' | '{' | '}' | '(' | ')' => format!("[{c}]"),
                    '\\' => "\\\\".to_string(),
                    c if at >= kept => format!("{{{c}}}"),
                    c => c.to_string(),
                })
                .collect();
            format!("{}(./{escaped})", action.tool)
        }
        Target::Command(check) => {
            let Some(first) = check.parsed.commands().into_iter().next() else {
                return action.tool.clone();
            };
            let words = as_run(first);
            // A program named like an assignment (`'a=b'`) stays quoted.
            let quote_program = |text: &str| {
                if shell::is_assignment(text) {
                    format!("'{}'", text.replace('\'', "'\\''"))
                } else {
                    shell_quote(text)
                }
            };
            let Some(program) = words.first().map(|w| quote_program(&w.text)) else {
                return action.tool.clone();
            };
            let known = |w: &&Word| !w.opaque && !w.glob;
            let plain = !words[1..].iter().any(|w| w.text.starts_with('-'))
                && check.concerns.is_empty()
                && check.writes.is_empty()
                && !check.reads_history
                && dangerous::dangerous_in(&check.parsed).is_none();
            let tool = &action.tool;
            match words.get(1) {
                // A word known only when it runs: the program alone, run bare.
                Some(argument) if !known(argument) => format!("{tool}({program})"),
                Some(argument) if plain => {
                    format!("{tool}({program} {}:*)", shell_quote(&argument.text))
                }
                None if plain => format!("{tool}({program}:*)"),
                _ if words.iter().all(known) => {
                    let rest = words[1..].iter().map(|w| shell_quote(&w.text));
                    let exact: Vec<String> = std::iter::once(program).chain(rest).collect();
                    format!("{tool}({})", exact.join(" "))
                }
                _ => format!("{tool}({program})"),
            }
        }
        _ => action.tool.clone(),
    }
}

/// A word as the shell reader reads it back: plain, or single-quoted.
fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=+-@%,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
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
            target: Target::Command(Box::new(crate::permission::command::tests::check(command))),
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

    /// Rules match what runs: git's global options and wrappers (with
    /// their own options) are seen through, by deny, ask and allow rules.
    #[test]
    fn rules_match_what_runs() {
        // (allow, deny, line, expected)
        let deny = |rule| Verdict::Deny(rule);
        let push = "bash(git push:*)".to_string();
        let rm = "bash(rm:*)".to_string();
        let cases: Vec<(&[&str], &[&str], &str, Verdict)> = vec![
            (
                &["bash(git:*)"],
                &["bash(git push:*)"],
                "git -C . push origin main",
                deny(push.clone()),
            ),
            (
                &[],
                &["bash(git push:*)"],
                "git --no-pager push",
                deny(push.clone()),
            ),
            (
                &[],
                &["bash(git push:*)"],
                "git -C. push",
                deny(push.clone()),
            ),
            (
                &[],
                &["bash(git push:*)"],
                "git -c a.b=c push",
                deny(push.clone()),
            ),
            (
                &[],
                &["bash(git push:*)"],
                "git --git-dir=.git --work-tree . push",
                deny(push.clone()),
            ),
            (
                &[],
                &["bash(git push:*)"],
                "git --literal-pathspecs -P push",
                deny(push.clone()),
            ),
            (
                &[],
                &["bash(git push:*)"],
                "/usr/bin/git --bare push",
                deny(push.clone()),
            ),
            (
                &[],
                &["bash(git push:*)"],
                "git --frobnicate x push",
                deny(push.clone()),
            ),
            (
                &[],
                &["bash(git push:*)"],
                "git --frobnicate push",
                deny(push.clone()),
            ),
            (
                &[],
                &["bash(git push:*)"],
                "git -C . status",
                Verdict::Unmatched,
            ),
            (
                &[],
                &["bash(rm:*)"],
                "prlimit --nofile=10 rm -rf x",
                deny(rm.clone()),
            ),
            (
                &[],
                &["bash(rm:*)"],
                "prlimit -n10 --pid 1 rm x",
                deny(rm.clone()),
            ),
            (
                &[],
                &["bash(rm:*)"],
                "strace -f -o /dev/null rm x",
                deny(rm.clone()),
            ),
            (
                &[],
                &["bash(rm:*)"],
                "strace -fo/dev/null rm x",
                deny(rm.clone()),
            ),
            (&[], &["bash(rm:*)"], "strace -Q rm x", deny(rm.clone())),
            (
                &[],
                &["bash(rm:*)"],
                "ltrace -o x -e y rm z",
                deny(rm.clone()),
            ),
            (&[], &["bash(rm:*)"], "nice -n 5 rm x", deny(rm.clone())),
            (&[], &["bash(rm:*)"], "nice -5 rm x", deny(rm.clone())),
            (&[], &["bash(rm:*)"], "ionice -c 3 rm x", deny(rm.clone())),
            (&[], &["bash(rm:*)"], "taskset -c 0 rm x", deny(rm.clone())),
            (&[], &["bash(rm:*)"], "chrt -f 10 rm x", deny(rm.clone())),
            (
                &[],
                &["bash(rm:*)"],
                "stdbuf -oL -e 0 rm x",
                deny(rm.clone()),
            ),
            (
                &[],
                &["bash(rm:*)"],
                "timeout --sig KILL 5 rm x",
                deny(rm.clone()),
            ),
            (
                &[],
                &["bash(rm:*)"],
                "flock -w 5 lock rm x",
                deny(rm.clone()),
            ),
            (
                &[],
                &["bash(rm:*)"],
                "flock lock -c 'rm x'",
                deny(rm.clone()),
            ),
            (&[], &["bash(rm:*)"], "setsid -f rm x", deny(rm.clone())),
            (&[], &["bash(rm:*)"], "unbuffer -p rm x", deny(rm.clone())),
            (&[], &["bash(rm:*)"], "doas -u root rm x", deny(rm.clone())),
            (&[], &["bash(rm:*)"], "busybox rm x", deny(rm.clone())),
            (
                &[],
                &["bash(rm:*)"],
                "env -u HOME - A=1 rm x",
                deny(rm.clone()),
            ),
            (&[], &["bash(rm:*)"], "time -p rm x", deny(rm.clone())),
            (&[], &["bash(rm:*)"], "exec -a name rm x", deny(rm.clone())),
            (&[], &["bash(rm:*)"], "xargs -I{} rm {}", deny(rm.clone())),
            (&[], &["bash(rm:*)"], "chroot / rm x", deny(rm.clone())),
            (&[], &["bash(rm:*)"], "unshare -r -n rm x", deny(rm.clone())),
            (
                &[],
                &["bash(rm:*)"],
                "nsenter -t 1 -m rm x",
                deny(rm.clone()),
            ),
            (&[], &["bash(rm:*)"], "fakeroot -- rm x", deny(rm.clone())),
            (
                &[],
                &["bash(rm:*)"],
                "setpriv --reuid 1000 rm x",
                deny(rm.clone()),
            ),
            (
                &[],
                &["bash(rm:*)"],
                "nice prlimit --nofile=1 strace -f /bin/rm x",
                deny(rm.clone()),
            ),
            (
                &[],
                &["bash(rm:*)"],
                "timeout 5 echo rm",
                Verdict::Unmatched,
            ),
            // Allow rules: the command as run must match, and a wrapper is a
            // program of its own to allow.
            (
                &["bash(git log:*)"],
                &[],
                "git --no-pager log -3",
                Verdict::Allow("bash(git log:*)".into()),
            ),
            (
                &["bash(git log:*)"],
                &[],
                "git -C . log",
                Verdict::Allow("bash(git log:*)".into()),
            ),
            (
                &["bash(git:*)"],
                &[],
                "git -C . push",
                Verdict::Allow("bash(git:*)".into()),
            ),
            (
                &["bash(git --no-pager:*)"],
                &[],
                "git --no-pager push",
                Verdict::Unmatched,
            ),
            (
                &["bash(cargo test:*)"],
                &[],
                "timeout 5 cargo test",
                Verdict::Unmatched,
            ),
            (
                &["bash(timeout:*)"],
                &[],
                "timeout 5 rm x",
                Verdict::Unmatched,
            ),
            (&["bash(rm:*)"], &[], "/bin/rm x", Verdict::Unmatched),
        ];
        for (allow, denied, line, expected) in cases {
            assert_eq!(
                rules(allow, &[], denied).evaluate(&bash(line)),
                expected,
                "{line}"
            );
        }
        // More than the reader follows (nesting, or readings of unknown
        // options): refused where a command is denied, asked where allowed.
        for line in [
            format!("{}rm x", "timeout 1 ".repeat(12)),
            format!("{}rm x", "strace -Q -Q -Q ".repeat(9)),
            format!("{}rm x", "strace -Q -Q -Q -Q ".repeat(200)),
        ] {
            assert_eq!(
                rules(&[], &[], &["bash(rm:*)"]).evaluate(&bash(&line)),
                deny(rm.clone()),
                "{line}"
            );
            let check = crate::permission::command::tests::check(&line);
            assert!(
                check.parsed.problems.iter().any(|p| p == shell::GAVE_UP),
                "{line}"
            );
        }
        // An ask rule sees through the same way.
        assert_eq!(
            rules(&["bash"], &["bash(git push:*)"], &[]).evaluate(&bash("git -C . push")),
            Verdict::Ask("bash(git push:*)".into())
        );
    }

    /// git printing history the line does not name asks wherever a rule
    /// denies or asks for reads; by name, the path is a read of its own.
    #[test]
    fn git_history_reads_meet_read_rules() {
        let set = rules(&["bash(git:*)"], &[], &["read(secrets/**)"]);
        for (line, expected) in [
            ("git log -p", Verdict::Ask("read(secrets/**)".into())),
            ("git show HEAD", Verdict::Ask("read(secrets/**)".into())),
            (
                "git cat-file -p 1a2b3c",
                Verdict::Ask("read(secrets/**)".into()),
            ),
            ("git archive HEAD", Verdict::Ask("read(secrets/**)".into())),
            ("git log -S TOKEN", Verdict::Ask("read(secrets/**)".into())),
            (
                "git show HEAD:secrets/key.txt",
                Verdict::Deny("read(secrets/**)".into()),
            ),
            (
                "git cat-file -p :0:secrets/key.txt",
                Verdict::Deny("read(secrets/**)".into()),
            ),
            ("git log --oneline", Verdict::Allow("bash(git:*)".into())),
            ("git show --stat HEAD", Verdict::Allow("bash(git:*)".into())),
            (
                "git show HEAD:README.md",
                Verdict::Allow("bash(git:*)".into()),
            ),
            (
                "git cat-file -t 1a2b3c",
                Verdict::Allow("bash(git:*)".into()),
            ),
        ] {
            assert_eq!(set.evaluate(&bash(line)), expected, "{line}");
        }
        // Without read rules, nothing to ask about.
        assert_eq!(
            rules(&["bash(git:*)"], &[], &[]).evaluate(&bash("git log -p")),
            Verdict::Allow("bash(git:*)".into())
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

    /// MCP tools are named by rules as `mcp__SERVER__TOOL`, `mcp__SERVER__*`,
    /// `mcp__SERVER` or `mcp__*`; every case a server or tool name could
    /// use to slip past a rule is here.
    #[test]
    fn mcp_rules_name_servers_and_tools_and_nothing_else() {
        let call = |tool: &str| Action {
            tool: tool.into(),
            kind: ActionKind::Execute,
            summary: String::new(),
            target: Target::None,
        };
        // (rule, tool, covered as a deny rule, covered as an allow rule)
        let cases = [
            ("mcp__git__git_status", "mcp__git__git_status", true, true),
            (
                "mcp__git__git_status",
                "mcp__git__git_statuses",
                false,
                false,
            ),
            ("mcp__git__git_status", "mcp__git__git_commit", false, false),
            ("mcp__git__*", "mcp__git__git_status", true, true),
            ("mcp__git__*", "mcp__git__git-commit", true, true),
            ("mcp__git", "mcp__git__git_status", true, true),
            ("mcp__*", "mcp__git__git_status", true, true),
            ("mcp__*", "mcp__x__y", true, true),
            // Another server whose name starts the same.
            ("mcp__git__*", "mcp__git_x__status", false, false),
            ("mcp__git__*", "mcp__gitx__status", false, false),
            ("mcp__git", "mcp__github__status", false, false),
            ("mcp__a__*", "mcp__a_b__c", false, false),
            ("mcp__a_b__*", "mcp__a__b_c", false, false),
            ("mcp__a_b", "mcp__a__b", false, false),
            ("mcp__a__b", "mcp__a_b", false, false),
            // Case: deny and ask rules cover `Git` too; allow rules only `git`.
            ("mcp__git__*", "mcp__Git__status", true, false),
            ("mcp__git__git_status", "mcp__git__GIT_STATUS", true, false),
            // Not MCP tools at all.
            ("mcp__*", "mcp_search", false, false),
            ("mcp__*", "bash", false, false),
            ("mcp__git__*", "mcp__git", false, false),
        ];
        for (rule, tool, deny, allow) in cases {
            let denying = rules(&[], &[], &[rule]);
            assert_eq!(
                matches!(denying.evaluate(&call(tool)), Verdict::Deny(_)),
                deny,
                "deny `{rule}` on {tool}"
            );
            let allowing = rules(&[rule], &[], &[]);
            assert_eq!(
                matches!(allowing.evaluate(&call(tool)), Verdict::Allow(_)),
                allow,
                "allow `{rule}` on {tool}"
            );
        }
        // What no MCP tool can be called is refused, not read as matching nothing.
        for bad in [
            "mcp__git__git_status(x)",
            "mcp__git__*(**)",
            "mcp__",
            "mcp____x",
            "mcp___git__x",
            "mcp__g*__x",
            "mcp__git__git_*",
            "mcp__*__status",
            "mcp__gіt__*",      // Cyrillic і
            "mcp__git__stаtus", // Cyrillic а
            "mcp__git__a.b",
            "mcp__git__ x",
        ] {
            assert!(
                matches!(Rule::parse(bad), Err(RuleError::McpForm(_))),
                "{bad}: {:?}",
                Rule::parse(bad).map(|r| r.text)
            );
        }
        // "Allow always" on an MCP tool suggests the rule for that tool, which parses.
        let suggested = suggested_rule(&call("mcp__git__git_commit"));
        assert_eq!(suggested, "mcp__git__git_commit");
        assert!(matches!(
            rules(&[&suggested], &[], &[]).evaluate(&call("mcp__git__git_commit")),
            Verdict::Allow(_)
        ));
    }

    #[test]
    fn bad_rules_are_clear_errors() {
        let error = |text| Rule::parse(text).unwrap_err().to_string();
        assert!(error("bash(cargo").contains("closing"));
        assert!(error("my tool").contains("not a tool name"));
        assert!(error("edit_file([)").contains("bad glob"));
    }

    #[test]
    fn suggested_rules() {
        // No wider than the command the user saw: a prefix only for a plain
        // command; with options, a write, a run or a concern, the exact command.
        for (line, rule) in [
            ("cargo test", "bash(cargo test:*)"),
            ("cargo test my_test", "bash(cargo test:*)"),
            ("cargo test --release", "bash(cargo test --release)"),
            ("ls -la", "bash(ls -la)"),
            ("ls", "bash(ls:*)"),
            ("python3 script.py", "bash(python3 script.py:*)"),
            ("python3 -c 'import x'", "bash(python3 -c 'import x')"),
            ("echo 'a b' c", "bash(echo 'a b':*)"),
            ("cat $HOME/x", "bash(cat)"),
            ("RUST_LOG=1 cargo build && ls", "bash(cargo build:*)"),
            // The issue's: a write option is no `git log:*`.
            ("git log", "bash(git log:*)"),
            (
                "git log -1 --output=Makefile",
                "bash(git log -1 --output=Makefile)",
            ),
            ("git --no-pager log -1", "bash(git log -1)"),
            ("git -C . log", "bash(git log:*)"),
            ("sort -o Makefile x", "bash(sort -o Makefile x)"),
            ("sort x", "bash(sort x:*)"),
            ("git grep -O'sh -c x' y", "bash(git grep '-Osh -c x' y)"),
            ("echo x > notes.txt", "bash(echo x)"),
            ("git push --force", "bash(git push --force)"),
            ("git show HEAD", "bash(git show HEAD)"),
            ("cat a $X", "bash(cat)"),
            // Found by fuzzing: a program named like an assignment is quoted,
            // else its rule would read as an assignment alone.
            ("cz''ac=", "bash('czac=':*)"),
        ] {
            let suggested = suggested_rule(&bash(line));
            assert_eq!(suggested, rule, "{line}");
            // The rule it suggests parses, and covers the command it came from
            // (where a rule can cover it at all).
            let set = rules(&[&suggested], &[], &[]);
            if !line.contains(['$', '*']) && !line.contains("&&") {
                assert!(
                    matches!(set.evaluate(&bash(line)), Verdict::Allow(_)),
                    "{line}: {suggested}"
                );
            }
        }
        // An edit's rule names that file: "always" on one edit is not every edit.
        let edit_rule = suggested_rule(&edit("a.rs"));
        assert_eq!(edit_rule, "edit_file(./a.rs)");
        let set = rules(&[&edit_rule], &[], &[]);
        assert!(matches!(set.evaluate(&edit("a.rs")), Verdict::Allow(_)));
        assert!(!matches!(set.evaluate(&edit("b.rs")), Verdict::Allow(_)));
        // A read asks only for one file: its rule names that file, not every read.
        let read = |path: &str| Action {
            tool: "read_file".into(),
            kind: ActionKind::Read,
            summary: String::new(),
            target: Target::Path(path.into()),
        };
        let rule = suggested_rule(&read("config/.env"));
        assert_eq!(rule, "read_file(./config/.env)");
        let set = rules(&[&rule], &[], &[]);
        assert_eq!(
            set.evaluate(&read("config/.env")),
            Verdict::Allow(rule.clone())
        );
        assert_eq!(set.evaluate(&read("other/.env")), Verdict::Unmatched);
        let odd = suggested_rule(&read("a*(b).pem"));
        let set = rules(&[&odd], &[], &[]);
        assert!(
            matches!(set.evaluate(&read("a*(b).pem")), Verdict::Allow(_)),
            "{odd}"
        );
        assert_eq!(set.evaluate(&read("axx(b).pem")), Verdict::Unmatched);
    }

    /// Found by fuzzing (fuzz/fuzz_targets/rules.rs): a command pattern
    /// of assignments alone has no words, and as a prefix no words is
    /// every command — `bash(FOO=1:*)` allowed `rm -rf /`. It is refused.
    #[test]
    fn a_command_pattern_without_words_is_refused() {
        for rule in ["bash(FOO=1:*)", "bash(FOO=1)", "bash(A=1 B=2:*)"] {
            assert_eq!(
                Rule::parse(rule).unwrap_err(),
                RuleError::NotPlainWords(rule.into()),
                "{rule}"
            );
        }
        assert!(Rule::parse("bash(FOO=1 cargo test:*)").is_ok());
    }

    /// Found by fuzzing (fuzz/fuzz_targets/rules.rs): the rule suggested
    /// for a path with `!` or `\` in it allowed nothing — `[!]` opens a
    /// negated class in a glob, and `[\]` escapes the `]` — so "allow
    /// always" kept asking; and for a path ending in white space it named
    /// another file, since a rule's pattern is trimmed (`ab ` became `ab`),
    /// or nothing, where a class held a character beyond ASCII.
    #[test]
    fn the_rule_suggested_for_any_path_allows_that_path_only() {
        let read = |path: &str| Action {
            tool: "read_file".into(),
            kind: ActionKind::Read,
            summary: String::new(),
            target: Target::Path(path.into()),
        };
        for path in [
            "a!b",
            "a\\b",
            "a*b",
            "a?b",
            "a[b]",
            "a{b,c}",
            "a(b)",
            "dir/(x){y}!\\",
            "ab ",
            "ab\t\n",
            "$(\u{2000}",
        ] {
            let rule = suggested_rule(&read(path));
            let set = rules(&[&rule], &[], &[]);
            assert!(
                matches!(set.evaluate(&read(path)), Verdict::Allow(_)),
                "{rule} does not allow {path}"
            );
            assert_eq!(set.evaluate(&read("ab")), Verdict::Unmatched, "{rule}");
        }
    }
}
