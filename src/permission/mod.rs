//! Who may run a tool call: rules, the permission mode, then the user.
//!
//! A tool says *what* a call does (an [`Action`]); this module decides
//! *whether* it may, asking the user through an [`Approver`] when it must.
//! How the question is shown (a terminal prompt, an editor dialog, a code
//! action) is the approver's business, not the gate's.
//!
//! The order of the decision ([`PermissionGate::assess`]): a `deny` rule
//! refuses; plan mode refuses anything but reads; bypass mode allows. Then
//! any of these asks, even when an `allow` rule matches: an `ask` rule, a
//! dangerous command, a change to a file that grants power (the agent's
//! settings, `.git/`, editor and hook files), a read of a file that may hold
//! secrets, and a command line the shell reader cannot check (see
//! [`command`]). Otherwise an `allow` rule allows, and the mode decides the
//! rest. The gate only decides; the sandbox (`crate::sandbox`) holds
//! whatever it decided.

pub mod command;
pub mod dangerous;
mod file_set;
mod options;
mod programs;
pub mod rules;
pub mod serial;
pub mod shell;

use std::path::PathBuf;
use std::sync::{Arc, LazyLock, RwLock};

use crate::secret_files;
use crate::sync::ReadWriteLocked;
use async_trait::async_trait;

pub use command::CommandCheck;
use file_set::FileSet;
pub use rules::{Rule, RuleError, RuleLists, RuleSet, Subject, Verdict};

/// What a tool call would do, for deciding and for showing the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionKind {
    /// Reads inside the workspace.
    Read,
    /// Changes files inside the workspace.
    Edit,
    /// Runs a program.
    Execute,
    /// Acts only on the agent's own state: its plan, its background
    /// commands, a sub-agent whose every call is gated itself. Never asks.
    Internal,
}

/// What rules are matched against.
#[derive(Clone, Debug)]
pub enum Target {
    /// A workspace-relative path.
    Path(String),
    /// A shell command line, read by the shell reader.
    Command(Box<CommandCheck>),
    None,
}

#[derive(Clone, Debug)]
pub struct Action {
    pub tool: String,
    pub kind: ActionKind,
    /// One line the user can judge: the path, the command, the +/- counts.
    pub summary: String,
    pub target: Target,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Reads are allowed; edits and commands ask.
    #[default]
    Default,
    /// Reads and edits are allowed; commands ask.
    AcceptEdits,
    /// Read-only: everything else is denied.
    Plan,
    /// Nothing asks; deny rules still hold, and commands stay in the sandbox.
    Bypass,
}

impl PermissionMode {
    /// How much the mode lets happen unasked: a project's settings may
    /// only choose a mode that lets through less than the user's.
    pub fn latitude(self) -> u8 {
        match self {
            PermissionMode::Plan => 0,
            PermissionMode::Default => 1,
            PermissionMode::AcceptEdits => 2,
            PermissionMode::Bypass => 3,
        }
    }
}

/// One question to the user.
#[derive(Clone, Debug)]
pub struct Question<'a> {
    pub action: &'a Action,
    /// Why this asks (a rule, a danger, the mode).
    pub reason: &'a str,
    /// The rule "allow always" would add.
    pub rule: &'a str,
    /// For an edit: the change it would make.
    pub edit: Option<EditPreview<'a>>,
}

/// The change an edit would make, as the user judges it: computed from the
/// text the tool would read (the open buffer, else the disk).
#[derive(Clone, Debug)]
pub struct EditPreview<'a> {
    /// The unified diff (see `crate::diff`), across all the files.
    pub diff: &'a str,
    /// Each file the edit changes (one, but for a rename).
    pub files: Vec<ProposedFile<'a>>,
}

/// One file of an edit.
#[derive(Clone, Copy, Debug)]
pub struct ProposedFile<'a> {
    /// The file, resolved.
    pub path: &'a std::path::Path,
    /// Its text before the change; `None` for a file it creates.
    pub before: Option<&'a str>,
    /// The file's whole text after the change: what a review shows beside
    /// the current text.
    pub after: &'a str,
}

impl Question<'_> {
    /// The unified diff, for an edit.
    pub fn diff(&self) -> Option<&str> {
        self.edit.as_ref().map(|edit| edit.diff)
    }
}

/// The user's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    AllowOnce,
    /// Add the question's rule for the rest of the session.
    AllowForSession,
    /// Add the question's rule to the project's `.bareagent/config.toml`.
    AllowAlways,
    /// No, with the reason the model should read.
    Reject(String),
}

/// The user's answer to one question: a terminal prompt, a JSON line, an
/// editor's dialog or code action.
///
/// Contract: the gate asks one question at a time per gate (it wraps every
/// approver in `serial::OneAtATime`), so an implementation need not queue.
/// Anything that is not a clear yes is a no: a closed input, a dismissed
/// dialog or an answer that cannot be read returns `Reject` with a reason
/// the model will read, never an allow. Dropping the future (a cancelled
/// turn) must leave nothing pending.
#[warn(missing_docs)]
#[async_trait]
pub trait Approver: Send + Sync {
    /// Asks `question` and waits for the answer.
    async fn ask(&self, question: &Question<'_>) -> Approval;
}

/// An approver that says no: for contexts where nobody can be asked.
pub struct DenyAll(pub String);

#[async_trait]
impl Approver for DenyAll {
    async fn ask(&self, _question: &Question<'_>) -> Approval {
        Approval::Reject(self.0.clone())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// The text becomes the tool call's error result.
    Deny(String),
}

/// What the gate makes of an action before anyone is asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Assessment {
    Allow,
    Deny(String),
    /// Ask the user, for this reason.
    Ask(String),
}

pub const DENIED_BY_USER: &str = "Denied by user";

/// Files whose reading asks by default: they usually hold secrets.
pub const SENSITIVE_FILES: [&str; 11] = [
    "**/.env",
    "**/.env.*",
    "**/*.pem",
    "**/*.key",
    "**/id_rsa*",
    "**/id_ed25519*",
    "**/id_ecdsa*",
    "**/.netrc",
    "**/.npmrc",
    "**/credentials*",
    // The diffs the user opened from an approval ("Show diff"): one may
    // quote a file the model was never allowed to read (an edit of `.env`
    // the user rejected).
    ".bareagent/diffs/**",
];

/// Files whose change grants the agent power it was not given: its own
/// settings, git's configuration and hooks, files that editors, direnv or
/// hook managers run, and the instructions the agent reads into its system
/// prompt. Changing one asks in every mode but bypass.
pub const POWER_FILES: [&str; 20] = [
    ".bareagent/**",
    ".git/**",
    "**/.git/**",
    // A `.git` file (`gitdir: …`) points git at another repository.
    "**/.git",
    "**/.envrc",
    ".vscode/**",
    ".idea/**",
    ".zed/**",
    ".helix/**",
    "**/.nvim.lua",
    "**/.nvimrc",
    "**/.exrc",
    ".mcp.json",
    // cargo reads these in every directory above where it runs.
    "**/.cargo/config",
    "**/.cargo/config.toml",
    ".husky/**",
    ".pre-commit-config.yaml",
    // Read into the system prompt of every later turn (`agent::instructions`).
    "**/AGENTS.md",
    "**/CLAUDE.md",
    "**/BAREAGENT.md",
];

/// The power files. Credentials and what the user's shell runs are power
/// files too: `.ssh/authorized_keys`, `.bashrc` in a workspace at `$HOME`.
fn power_files() -> FileSet {
    FileSet::new(POWER_FILES)
        .anywhere(secret_files::HOME_SECRETS)
        .anywhere(secret_files::HOME_RUNS)
}

/// Built at the first check, once per process: every gate shares them.
static SENSITIVE: LazyLock<FileSet> =
    LazyLock::new(|| FileSet::new(SENSITIVE_FILES).anywhere(secret_files::HOME_SECRETS));
static POWER: LazyLock<FileSet> = LazyLock::new(power_files);

/// What a file tool that lists or searches many files may show of one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileVisibility {
    Visible,
    /// A deny rule hides it.
    Denied(String),
    /// It would ask before its contents are shown (an ask rule, secrets).
    NeedsApproval(String),
}

/// Decides every tool call: allow, deny, or ask the user.
///
/// Contract: deny rules win over everything, then ask rules, then allow
/// rules, then the mode; a dangerous command, a change to a power file or a
/// read of a possibly secret file asks even under an allow rule; what the
/// shell reader does not understand asks. The gate never runs or writes
/// anything itself ("always" rules go to the caller's [`RuleStore`]).
/// Clones share their rules: what "allow for session" adds, every clone
/// (a sub-agent's, the next turn's) allows.
#[warn(missing_docs)]
#[derive(Clone)]
pub struct PermissionGate {
    mode: PermissionMode,
    /// Config rules plus those added by "allow" answers, shared with sub-agents.
    rules: Arc<RwLock<RuleSet>>,
    approver: Arc<dyn Approver>,
    /// The power files with git's hooks folder among them, where
    /// `core.hooksPath` names one in the workspace; else [`POWER`].
    power: Option<Arc<FileSet>>,
    /// Where "allow always" answers are saved (the caller decides: the
    /// user's config file, under the project's own entry).
    saving: Option<Arc<dyn RuleStore>>,
}

/// Keeps the rules "allow always" answers add. The gate only decides; where
/// a rule is written is its caller's business (see
/// `config::ProjectRules`). Blocking: it is called off the async runtime.
pub trait RuleStore: Send + Sync {
    fn save(&self, rule: &str) -> Result<(), String>;
}

#[warn(missing_docs)]
impl PermissionGate {
    /// A gate in `mode`, with no rules, asking `approver`.
    pub fn new(mode: PermissionMode, approver: Box<dyn Approver>) -> Self {
        PermissionGate {
            mode,
            rules: Arc::new(RwLock::new(RuleSet::default())),
            approver: Arc::new(serial::OneAtATime::new(approver)),
            power: None,
            saving: None,
        }
    }

    /// Replaces the rules (the settings' lists, parsed).
    pub fn with_rules(self, rules: RuleSet) -> Self {
        *self.rules.write_locked() = rules;
        self
    }

    /// Also treats the folder at `relative` (to the workspace) and what it
    /// holds as power files: the folder git's `core.hooksPath` names, whose
    /// programs the user's next commit runs.
    pub fn with_power_folder(mut self, relative: &str) -> Self {
        // A folder, not a glob: its name may hold any character (`\`
        // escapes in a glob, and would drop or change the pattern).
        self.power = Some(Arc::new(power_files().under(relative)));
        self
    }

    /// Saves "allow always" answers to `store`.
    pub fn saving_to(mut self, store: Arc<dyn RuleStore>) -> Self {
        self.saving = Some(store);
        self
    }

    fn power(&self) -> &FileSet {
        self.power.as_deref().unwrap_or(&POWER)
    }

    /// The mode the gate was made with.
    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// The same mode and rules (shared: what one allows, both allow), with
    /// another approver: a new turn's.
    pub fn with_approver(&self, approver: Box<dyn Approver>) -> PermissionGate {
        PermissionGate {
            approver: Arc::new(serial::OneAtATime::new(approver)),
            ..self.clone()
        }
    }

    /// The same rules (shared) and approver in another mode: a session's
    /// mode changed by its user (ACP's `session/set_mode`).
    pub fn with_mode(&self, mode: PermissionMode) -> PermissionGate {
        PermissionGate {
            mode,
            ..self.clone()
        }
    }

    /// The same rules and mode, but whatever would ask is denied: for
    /// sub-agents and background work, which have nobody to ask.
    pub fn without_prompts(&self) -> PermissionGate {
        PermissionGate {
            approver: Arc::new(DenyAll(
                "Denied: this needs the user's approval, and a sub-agent cannot ask. Report what you would do instead."
                    .into(),
            )),
            ..self.clone()
        }
    }

    /// The decision on `action`, asking the user if the rules say to.
    pub async fn check(&self, action: &Action) -> Decision {
        match self.assess(action) {
            Assessment::Allow => Decision::Allow,
            Assessment::Deny(reason) => Decision::Deny(reason),
            Assessment::Ask(reason) => self.ask(action, &reason, None).await,
        }
    }

    /// Asks the user about an action [`assess`](Self::assess) said to ask
    /// about, for `reason`, showing the edit's change where there is one; an
    /// "allow" answer for the session or always adds the suggested rule.
    pub async fn ask(
        &self,
        action: &Action,
        reason: &str,
        edit: Option<EditPreview<'_>>,
    ) -> Decision {
        let rule = rules::suggested_rule(action);
        let question = Question {
            action,
            reason,
            rule: &rule,
            edit,
        };
        match self.approver.ask(&question).await {
            Approval::AllowOnce => Decision::Allow,
            Approval::AllowForSession => {
                self.add_session_rule(&rule);
                Decision::Allow
            }
            Approval::AllowAlways => {
                // A rule that does not parse is kept nowhere: saved, it
                // would make every later start refuse the config.
                if !self.add_session_rule(&rule) {
                    return Decision::Allow;
                }
                if let Some(store) = self.saving.clone() {
                    let saving = rule.clone();
                    // File work blocks: off the runtime's threads.
                    let saved = tokio::task::spawn_blocking(move || store.save(&saving))
                        .await
                        .unwrap_or_else(|error| Err(error.to_string()));
                    if let Err(error) = saved {
                        tracing::warn!(%error, "cannot save the permission rule");
                    }
                }
                Decision::Allow
            }
            Approval::Reject(reason) => Decision::Deny(reason),
        }
    }

    /// Why a deny rule refuses `action`, whatever the mode: what not even
    /// the user's own undo (a rewind) may do.
    pub fn denied_by_rule(&self, action: &Action) -> Option<String> {
        let rules = self.rules.read_locked();
        match rules.evaluate(action) {
            Verdict::Deny(rule) => Some(format!("Denied by the permission rule `{rule}`.")),
            _ => None,
        }
    }

    /// The decision before anyone is asked.
    pub fn assess(&self, action: &Action) -> Assessment {
        if let Some(denied) = self.denied_by_rule(action) {
            return Assessment::Deny(denied);
        }
        let rules = self.rules.read_locked();
        let verdict = rules.evaluate(action);
        if self.mode == PermissionMode::Plan
            && !matches!(action.kind, ActionKind::Read | ActionKind::Internal)
        {
            return Assessment::Deny(format!(
                "Denied: plan mode is read-only, so `{}` may not run. Describe the change you would make instead.",
                action.tool
            ));
        }
        if self.mode == PermissionMode::Bypass {
            return Assessment::Allow;
        }
        let tool = action.tool.as_str();
        // Reasons that ask even where an allow rule matched, strongest first.
        let mut reasons: Vec<String> = Vec::new();
        if let Verdict::Ask(rule) = &verdict {
            reasons.push(format!("the rule `{rule}` asks"));
        }
        let (reads, writes): (Vec<&str>, Vec<&str>) = match &action.target {
            Target::Command(check) => {
                if let Some(danger) = dangerous::dangerous_in(&check.parsed) {
                    reasons.push(format!("dangerous: {danger}"));
                }
                (
                    check.reads.iter().map(String::as_str).collect(),
                    check.writes.iter().map(String::as_str).collect(),
                )
            }
            // edit_file and multi_edit read the file first (and show lines of it
            // when `old_string` misses): a read as much as a write.
            Target::Path(path) if action.kind == ActionKind::Edit => {
                let read = rules::READING_EDITORS.contains(&tool);
                (
                    read.then_some(path.as_str()).into_iter().collect(),
                    vec![path.as_str()],
                )
            }
            Target::Path(path) if action.kind == ActionKind::Read => (vec![path.as_str()], vec![]),
            _ => (vec![], vec![]),
        };
        // A command may change any path it names; a file tool only its target.
        let may_change: Vec<&str> = match &action.target {
            Target::Command(_) => writes.iter().chain(&reads).copied().collect(),
            _ => writes.clone(),
        };
        for path in &may_change {
            if self.power().is_match(path) {
                reasons.push(format!(
                    "it changes `{path}`, which can give the agent more power or run code later"
                ));
                break;
            }
        }
        for path in &reads {
            if SENSITIVE.is_match(path) && !rules.names(tool, Subject::Read(path)) {
                reasons.push(format!("`{path}` may hold secrets"));
                break;
            }
        }
        if let Target::Command(check) = &action.target
            && let Some(reason) = self.scan_reason(check, &rules)
        {
            reasons.push(reason);
        }
        if let (Target::Command(check), Verdict::Allow(rule)) = (&action.target, &verdict) {
            if let Some(concern) = check.concerns.first() {
                reasons.push(format!("`{rule}` cannot cover it: {concern}"));
            }
            if self.mode != PermissionMode::AcceptEdits
                && let Some(path) = writes
                    .iter()
                    .find(|path| !rules.allows(tool, Subject::Write(path)))
            {
                reasons.push(format!("it writes `{path}`"));
            }
        }
        if let Some(reason) = reasons.into_iter().next() {
            return Assessment::Ask(reason);
        }
        if matches!(verdict, Verdict::Allow(_)) {
            return Assessment::Allow;
        }
        match self.default_reason(action) {
            Some(reason) => Assessment::Ask(reason),
            None => Assessment::Allow,
        }
    }

    /// Why a recursive read of the directories a command line scans must
    /// ask: a file under them that a rule denies or asks for, or that may
    /// hold secrets. Looks at the first files of a walk only (hidden and
    /// ignored ones included), and asks when the walk is cut short. Some
    /// readers follow symbolic links (`grep -R`, `zip`), so a link is judged
    /// by where it leads too: out of the workspace asks, into a directory
    /// walks that directory as well.
    fn scan_reason(&self, check: &CommandCheck, rules: &RuleSet) -> Option<String> {
        const MAX_SCANNED: usize = 20_000;
        let Ok(paths) = crate::workspace::PathResolver::new(&check.root) else {
            return Some("the workspace root cannot be resolved to check what it reads".into());
        };
        let shown = |path: &std::path::Path| {
            path.strip_prefix(&check.root)
                .unwrap_or(path)
                .to_string_lossy()
                .into_owned()
        };
        let mut seen = 0;
        let mut queue: Vec<PathBuf> = check.scans.clone();
        let mut walked: Vec<PathBuf> = Vec::new();
        while let Some(dir) = queue.pop() {
            if walked.contains(&dir) {
                continue;
            }
            walked.push(dir.clone());
            let walk = ignore::WalkBuilder::new(&dir)
                .standard_filters(false)
                .follow_links(false)
                .build();
            for entry in walk.flatten() {
                seen += 1;
                if seen > MAX_SCANNED {
                    return Some(format!(
                        "it reads every file under `{}`, too many to check for secrets",
                        shown(&dir)
                    ));
                }
                let relative = shown(entry.path());
                let mut names = vec![relative.clone()];
                if entry.path_is_symlink() {
                    match paths.resolve(&entry.path().to_string_lossy()) {
                        Err(_) => {
                            return Some(format!(
                                "it reads every file under its directory, and `{relative}` links outside the workspace"
                            ));
                        }
                        Ok(real) if real.is_dir() => queue.push(real),
                        Ok(real) => names.push(shown(&real)),
                    }
                }
                for name in &names {
                    let why = match rules.read_verdict("bash", name) {
                        Verdict::Deny(rule) | Verdict::Ask(rule) => {
                            format!("the rule `{rule}` covers")
                        }
                        _ if SENSITIVE.is_match(name.as_str())
                            && !rules.names("bash", Subject::Read(name)) =>
                        {
                            "may hold secrets".to_string()
                        }
                        _ => continue,
                    };
                    return Some(format!(
                        "it reads every file under its directory, `{name}` among them, which {why}"
                    ));
                }
            }
        }
        None
    }

    /// Whether a file found by a listing or a search may be shown: grep and
    /// glob skip the files a read of which would be denied or would ask.
    pub fn file_visibility(&self, tool: &str, path: &str) -> FileVisibility {
        let rules = self.rules.read_locked();
        match rules.read_verdict(tool, path) {
            Verdict::Deny(rule) => return FileVisibility::Denied(rule),
            Verdict::Ask(rule) if self.mode != PermissionMode::Bypass => {
                return FileVisibility::NeedsApproval(format!("the rule `{rule}` asks"));
            }
            _ => {}
        }
        if self.mode != PermissionMode::Bypass
            && SENSITIVE.is_match(path)
            && !rules.names(tool, Subject::Read(path))
        {
            return FileVisibility::NeedsApproval("it may hold secrets".into());
        }
        FileVisibility::Visible
    }

    /// The read-deny rules' fixed directories (`secrets/**` → `secrets`),
    /// for the sandbox to keep commands out of.
    pub fn denied_read_prefixes(&self) -> Vec<String> {
        let rules = self.rules.read_locked();
        rules.denied_read_prefixes()
    }

    /// The mode's own reason to ask, if it has one.
    fn default_reason(&self, action: &Action) -> Option<String> {
        let asks = match (self.mode, action.kind) {
            (_, ActionKind::Read | ActionKind::Internal) => false,
            (PermissionMode::AcceptEdits, ActionKind::Edit) => false,
            (PermissionMode::Default | PermissionMode::AcceptEdits, _) => true,
            (PermissionMode::Plan | PermissionMode::Bypass, _) => false,
        };
        asks.then(|| match action.kind {
            ActionKind::Edit => "it changes files".into(),
            _ if action.tool.starts_with("mcp__") => {
                "it calls an MCP tool its server does not mark read-only".into()
            }
            _ => "it runs a command".into(),
        })
    }

    /// Adds `text` to the session's allow rules; says whether it could (a
    /// line the reader does not follow whole has no rule that parses).
    fn add_session_rule(&self, text: &str) -> bool {
        match Rule::parse(text) {
            Ok(rule) => {
                self.rules.write_locked().allow.push(rule);
                true
            }
            Err(error) => {
                tracing::warn!(%error, "cannot add the session rule");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Answers from a list and remembers the questions.
    struct Scripted(Mutex<Vec<Approval>>, Arc<Mutex<Vec<String>>>);

    #[async_trait]
    impl Approver for Scripted {
        async fn ask(&self, question: &Question<'_>) -> Approval {
            self.1.lock().unwrap().push(format!(
                "{} [{}] {}",
                question.action.tool, question.reason, question.rule
            ));
            self.0
                .lock()
                .unwrap()
                .pop()
                .unwrap_or(Approval::Reject(DENIED_BY_USER.into()))
        }
    }

    fn gate(
        mode: PermissionMode,
        answers: Vec<Approval>,
        lists: RuleLists,
    ) -> (PermissionGate, Arc<Mutex<Vec<String>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let gate =
            PermissionGate::new(mode, Box::new(Scripted(Mutex::new(answers), asked.clone())))
                .with_rules(RuleSet::from_lists(&lists).unwrap());
        (gate, asked)
    }

    fn action(tool: &str, kind: ActionKind, target: Target) -> Action {
        Action {
            tool: tool.into(),
            kind,
            summary: String::new(),
            target,
        }
    }

    fn bash(line: &str) -> Action {
        action(
            "bash",
            ActionKind::Execute,
            Target::Command(Box::new(command::tests::check(line))),
        )
    }

    fn edit(path: &str) -> Action {
        action("edit_file", ActionKind::Edit, Target::Path(path.into()))
    }

    fn read(path: &str) -> Action {
        action("read_file", ActionKind::Read, Target::Path(path.into()))
    }

    fn lists(allow: &[&str], ask: &[&str], deny: &[&str]) -> RuleLists {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        RuleLists {
            allow: l(allow),
            ask: l(ask),
            deny: l(deny),
        }
    }

    /// (mode, rules, action) → (asked?, allowed?), answering "no" to every question.
    #[tokio::test]
    async fn every_precedence_case() {
        use PermissionMode::*;
        let none = || lists(&[], &[], &[]);
        let cases: Vec<(PermissionMode, RuleLists, Action, bool, bool)> = vec![
            // mode defaults
            (Default, none(), read("src/a.rs"), false, true),
            (Default, none(), edit("src/a.rs"), true, false),
            (Default, none(), bash("ls"), true, false),
            (AcceptEdits, none(), edit("src/a.rs"), false, true),
            (AcceptEdits, none(), bash("ls"), true, false),
            (Plan, none(), read("a"), false, true),
            (Plan, none(), edit("a"), false, false),
            (Plan, none(), bash("ls"), false, false),
            (Bypass, none(), bash("rm -rf /"), false, true),
            // allow beats the mode default
            (
                Default,
                lists(&["bash(cargo test:*)"], &[], &[]),
                bash("cargo test"),
                false,
                true,
            ),
            (
                Default,
                lists(&["edit_file(src/**)"], &[], &[]),
                edit("src/a.rs"),
                false,
                true,
            ),
            (
                Default,
                lists(&["edit_file(src/**)"], &[], &[]),
                edit("docs/a.md"),
                true,
                false,
            ),
            // ask beats allow and the mode
            (
                Default,
                lists(&["bash"], &["bash(git:*)"], &[]),
                bash("git status"),
                true,
                false,
            ),
            (
                AcceptEdits,
                lists(&[], &["edit_file(*.lock)"], &[]),
                edit("Cargo.lock"),
                true,
                false,
            ),
            (
                Default,
                lists(&[], &["read_file(docs/**)"], &[]),
                read("docs/x.md"),
                true,
                false,
            ),
            // deny beats everything, bypass and plan included
            (
                Default,
                lists(&["bash"], &["bash"], &["bash(curl:*)"]),
                bash("curl x"),
                false,
                false,
            ),
            (
                Bypass,
                lists(&[], &[], &["edit_file(secrets/**)"]),
                edit("secrets/k"),
                false,
                false,
            ),
            (
                AcceptEdits,
                lists(&["edit_file"], &[], &["edit_file(*.pem)"]),
                edit("k.pem"),
                false,
                false,
            ),
            // plan mode is read-only even under allow rules
            (
                Plan,
                lists(&["edit_file"], &[], &[]),
                edit("a"),
                false,
                false,
            ),
            // dangerous commands ask even under an allow rule
            (
                Default,
                lists(&["bash(git:*)"], &[], &[]),
                bash("git push --force"),
                true,
                false,
            ),
            (
                Default,
                lists(&["bash"], &[], &[]),
                bash("cargo build && sudo make install"),
                true,
                false,
            ),
            (
                AcceptEdits,
                lists(&["bash"], &[], &[]),
                bash("ls"),
                false,
                true,
            ),
            // sensitive files ask by default, but an explicit allow wins
            (Default, none(), read(".env"), true, false),
            (Default, none(), read("config/server.pem"), true, false),
            (
                Default,
                none(),
                read(".bareagent/diffs/3.diff"),
                true,
                false,
            ),
            (Bypass, none(), read(".env.local"), false, true),
            (
                Default,
                lists(&["read_file(.env)"], &[], &[]),
                read(".env"),
                false,
                true,
            ),
        ];
        for (index, (mode, rules, action, asks, allowed)) in cases.into_iter().enumerate() {
            let (gate, asked) = gate(mode, vec![], rules);
            let decision = gate.check(&action).await;
            assert_eq!(
                asked.lock().unwrap().len() == 1,
                asks,
                "case {index}: {mode:?} {action:?}"
            );
            assert_eq!(
                decision == Decision::Allow,
                allowed,
                "case {index}: {mode:?} {action:?} {decision:?}"
            );
        }
    }

    #[tokio::test]
    async fn allow_for_session_adds_a_rule_that_later_calls_use() {
        let (gate, asked) = gate(
            PermissionMode::Default,
            vec![Approval::AllowForSession],
            lists(&[], &[], &[]),
        );
        assert_eq!(gate.check(&bash("cargo test a")).await, Decision::Allow);
        assert_eq!(gate.check(&bash("cargo test b")).await, Decision::Allow);
        assert_eq!(asked.lock().unwrap().len(), 1);
        assert!(asked.lock().unwrap()[0].ends_with("bash(cargo test:*)"));
        // The rule does not cover other commands, nor dangerous ones.
        assert!(matches!(
            gate.check(&bash("cargo build")).await,
            Decision::Deny(_)
        ));
        // Sub-agents share the rule but never ask.
        let quiet = gate.without_prompts();
        assert_eq!(quiet.check(&bash("cargo test c")).await, Decision::Allow);
        assert!(
            matches!(quiet.check(&edit("a.rs")).await, Decision::Deny(reason) if reason.contains("sub-agent"))
        );
        assert_eq!(
            asked.lock().unwrap().len(),
            2,
            "only the parent's own question was asked"
        );
    }

    /// A home and a project, each a temporary directory, and a gate in
    /// default mode answering `answers` that saves "always" rules to the
    /// user's config in that home (its path is returned).
    struct Saving {
        _home: tempfile::TempDir,
        project: tempfile::TempDir,
        gate: PermissionGate,
        asked: Arc<Mutex<Vec<String>>>,
    }

    fn saving(answers: Vec<Approval>) -> (Saving, std::path::PathBuf) {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let path = home.path().join("bareagent/config.toml");
        let (gate, asked) = gate(PermissionMode::Default, answers, lists(&[], &[], &[]));
        let store = crate::config::ProjectRules::new(path.clone(), project.path());
        let gate = gate.saving_to(Arc::new(store));
        let saving = Saving {
            _home: home,
            project,
            gate,
            asked,
        };
        (saving, path)
    }

    #[tokio::test]
    async fn allow_always_saves_the_rule_for_the_project_in_the_users_config() {
        let (saving, path) = saving(vec![Approval::AllowAlways]);
        let Saving { gate, project, .. } = &saving;
        assert_eq!(gate.check(&bash("npm run lint")).await, Decision::Allow);
        let saved = crate::config::Config::load_file(&path).unwrap();
        let entry = saved
            .projects
            .get(project.path().canonicalize().unwrap().to_str().unwrap())
            .expect("the project's entry");
        assert_eq!(entry.allow, vec!["bash(npm run:*)".to_string()]);
        assert!(
            !entry.trusted,
            "allowing a rule is not trusting the project"
        );
    }

    /// Found by fuzzing (fuzz/fuzz_targets/rules.rs): the rule suggested
    /// for a line the reader does not follow whole (`git` with an option
    /// it does not know) is no rule — it does not parse — and "allow
    /// always" saved it anyway, into a config every later start refuses.
    /// Such an answer allows the call once and saves nothing.
    #[tokio::test]
    async fn allow_always_saves_only_a_rule_that_parses() {
        let (saving, path) = saving(vec![Approval::AllowAlways, Approval::AllowAlways]);
        let Saving { gate, asked, .. } = &saving;
        let line = bash("git -a");
        assert!(Rule::parse(&rules::suggested_rule(&line)).is_err());
        assert_eq!(gate.check(&line).await, Decision::Allow);
        assert!(!path.exists(), "{:?}", std::fs::read_to_string(&path));
        // Not allowed for the session either: the next call asks again.
        assert_eq!(gate.check(&line).await, Decision::Allow);
        assert_eq!(asked.lock().unwrap().len(), 2);
    }
}
