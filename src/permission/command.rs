//! What a command line touches, as far as the shell reader can tell: its
//! simple commands, the workspace paths it names or writes, and every reason
//! it cannot be checked (a *concern*). A line with a concern is never
//! auto-allowed by an `allow` rule; it asks (or, in bypass mode, runs — and
//! the sandbox still holds).
//!
//! Paths go through the same [`PathResolver`] as the file tools, so a path
//! argument or a redirect counts as inside the workspace only where a file
//! tool could have reached it.

use std::path::{Path, PathBuf};

use super::options::git_subcommand;
use super::programs::{
    Effect, effects_of, foreign_repository, reads_git_history, reads_recursively,
    sed_runs_or_writes, sed_script,
};
use super::shell::{self, Parsed, RedirectKind, SHELLS, SimpleCommand, Word, program_name};
use crate::workspace::{PathResolver, WorkspaceError};

#[derive(Clone, Debug)]
pub struct CommandCheck {
    pub line: String,
    pub parsed: Parsed,
    /// Workspace-relative paths the line names as arguments or reads.
    pub reads: Vec<String>,
    /// Workspace-relative paths the line writes through redirects.
    pub writes: Vec<String>,
    /// Directories a recursive reader (`grep -r`, `rg`, `tar`, …) reads
    /// whole, as real paths.
    pub scans: Vec<PathBuf>,
    /// The workspace root, for showing paths.
    pub root: PathBuf,
    /// Why no allow rule may let this line run unasked.
    pub concerns: Vec<String>,
    /// git prints files from its history that the line does not name
    /// (`git log -p`, `git cat-file -p OBJECT`): rules that deny or ask for
    /// reads cannot see which, so they ask.
    pub reads_history: bool,
}

/// Variables a command may be given inline (`RUST_BACKTRACE=1 cargo test`):
/// they change output, never which program runs or what it loads.
const HARMLESS_VARIABLES: [&str; 16] = [
    "RUST_BACKTRACE",
    "RUST_LOG",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CARGO_TERM_COLOR",
    "TERM",
    "TZ",
    "LANG",
    "LC_ALL",
    "CI",
    "DEBUG",
    "VERBOSE",
    "NODE_ENV",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
];

/// Builtins that change the shell itself or run text as code.
const SHELL_STATE_BUILTINS: [&str; 22] = [
    "eval",
    "source",
    ".",
    "alias",
    "unalias",
    "export",
    "declare",
    "typeset",
    "local",
    "readonly",
    "set",
    "shopt",
    "trap",
    "enable",
    "hash",
    "mapfile",
    "readarray",
    "read",
    "getopts",
    "let",
    "unset",
    "compgen",
];

/// Interpreters, and the flags with which they run code given inline.
const INTERPRETERS: [(&str, &[&str]); 17] = [
    ("python", &["-c"]),
    ("python2", &["-c"]),
    ("python3", &["-c"]),
    ("pypy", &["-c"]),
    ("pypy3", &["-c"]),
    ("node", &["-e", "-p", "--eval", "--print"]),
    ("nodejs", &["-e", "-p", "--eval", "--print"]),
    ("deno", &["eval"]),
    ("bun", &["-e", "--eval", "-p", "--print"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("Rscript", &["-e"]),
    ("osascript", &["-e"]),
    ("tclsh", &[]),
    ("pwsh", &["-c", "-Command", "-command"]),
];

/// awk's program is its first argument, and `system()` runs commands.
const AWKS: [&str; 4] = ["awk", "gawk", "mawk", "nawk"];

/// `find` actions that run commands, delete or write files.
const FIND_ACTIONS: [&str; 9] = [
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// Commands whose arguments are never paths, so an expansion among them is
/// harmless.
/// (`date` is not among them: `date -f FILE` prints the file's lines.)
const NO_PATH_ARGUMENTS: [&str; 11] = [
    "echo", "printf", "true", "false", "test", "[", ":", "sleep", "seq", "expr", "basename",
];

/// Paths outside the workspace that every command may name.
const HARMLESS_DEVICES: [&str; 8] = [
    "/dev/null",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/zero",
    "/dev/urandom",
    "/dev/random",
];

/// How many directories a line's `cd`s may reach before the check gives up.
const MAX_BASES: usize = 64;

/// How many entries of one directory a glob argument is checked against.
const MAX_GLOB_ENTRIES: usize = 2000;

impl CommandCheck {
    pub fn new(line: &str, paths: &PathResolver) -> CommandCheck {
        let parsed = shell::parse(line);
        let mut check = CommandCheck {
            line: line.to_string(),
            concerns: parsed
                .problems
                .iter()
                .map(|p| format!("the line holds {p}, which the permission check does not follow"))
                .collect(),
            parsed: Parsed::default(),
            reads: Vec::new(),
            writes: Vec::new(),
            scans: Vec::new(),
            root: paths.root().to_path_buf(),
            reads_history: false,
        };
        let bases = check.directories(&parsed, paths);
        for command in parsed.commands() {
            if command.program() == Some("git") {
                let dirs = git_directories(command, &bases, paths);
                check.command(command, &dirs, paths);
                check.git_repository(command, &dirs, paths);
                check.git_objects(command, &dirs, paths);
                check.reads_history |= reads_git_history(command);
            } else {
                check.command(command, &bases, paths);
            }
        }
        for pipeline in parsed.all_pipelines() {
            for (at, command) in pipeline.commands.iter().enumerate() {
                let program = command.program().unwrap_or_default();
                let feeds_stdin = at > 0
                    || command
                        .redirects
                        .iter()
                        .any(|r| matches!(r.kind, RedirectKind::Data | RedirectKind::Read));
                let is_interpreter = SHELLS.contains(&program)
                    || INTERPRETERS.iter().any(|(name, _)| *name == program);
                let has_script = command
                    .words
                    .get(1..)
                    .unwrap_or_default()
                    .iter()
                    .any(|w| !w.text.starts_with('-'));
                if feeds_stdin && is_interpreter && !has_script {
                    check.concern(format!("`{program}` reads a program from its input"));
                }
            }
        }
        for command in parsed.commands() {
            // git printing history reads what the working tree holds, and
            // more: a secret there asks, as for any recursive reader.
            if reads_recursively(command) || reads_git_history(command) {
                // From every directory the line may be in, as the arguments are.
                let named: Vec<PathBuf> = command.words[1..]
                    .iter()
                    .filter(|w| !w.opaque && !w.text.starts_with('-'))
                    .flat_map(|w| bases.iter().map(|base| physical(&base.join(&w.text))))
                    .filter_map(|path| paths.resolve(&path.to_string_lossy()).ok())
                    .filter(|real| real.is_dir())
                    .collect();
                // With no directory named, they read the current one.
                if named.is_empty() {
                    check.scans.extend(bases.iter().cloned());
                }
                check.scans.extend(named);
            }
        }
        check.scans.sort();
        check.scans.dedup();
        check.reads.sort();
        check.reads.dedup();
        check.writes.sort();
        check.writes.dedup();
        check.concerns.dedup();
        check.parsed = parsed;
        check
    }

    /// Every simple command's words, for deny and ask rules to match: as
    /// written, and as run (wrappers and git's global options seen through,
    /// see [`shell::parse`]).
    pub fn commands(&self) -> Vec<Vec<&str>> {
        self.parsed
            .commands()
            .into_iter()
            .map(|c| c.texts())
            .collect()
    }

    /// The commands an allow rule must each cover: every simple command,
    /// with git's global options left out (`git -C sub log` is `git log`,
    /// whose `-C` target is checked as a path). A wrapper stays: `timeout 5
    /// cargo test` needs `timeout` allowed as well as `cargo test`.
    pub fn commands_as_run(&self) -> Vec<Vec<&str>> {
        self.parsed
            .commands()
            .into_iter()
            .map(|c| as_run(c).into_iter().map(|w| w.text.as_str()).collect())
            .collect()
    }

    fn concern(&mut self, text: String) {
        if !self.concerns.contains(&text) {
            self.concerns.push(text);
        }
    }

    /// The directories relative paths may be read from: the root, and every
    /// directory a `cd` in the line moves to. A path must stay inside from
    /// each of them, since the reader does not track which one is current.
    fn directories(&mut self, parsed: &Parsed, paths: &PathResolver) -> Vec<PathBuf> {
        let mut bases = vec![paths.root().to_path_buf()];
        for command in parsed.commands() {
            let Some(program) = command.program() else {
                continue;
            };
            if !matches!(program, "cd" | "pushd" | "popd") {
                continue;
            }
            let target = command.words[1..].iter().find(|w| !w.text.starts_with('-'));
            match target {
                Some(word) if !word.opaque && !word.glob => {
                    // From every directory an earlier `cd` may have reached:
                    // `cd a && cd b` is in `a/b`, which may be a link out.
                    let mut reached = Vec::new();
                    for base in &bases {
                        match paths.resolve(&physical(&base.join(&word.text)).to_string_lossy()) {
                            Ok(real) => reached.push(real),
                            Err(_) => self.concern(format!(
                                "it changes directory to `{}`, outside the workspace",
                                word.text
                            )),
                        }
                    }
                    for real in reached {
                        if !bases.contains(&real) {
                            bases.push(real);
                        }
                    }
                    if bases.len() > MAX_BASES {
                        self.concern("it changes directory too many times to follow".into());
                        break;
                    }
                }
                _ => self.concern(format!(
                    "`{program}` moves to a directory the check cannot resolve"
                )),
            }
        }
        bases
    }

    fn command(&mut self, command: &SimpleCommand, bases: &[PathBuf], paths: &PathResolver) {
        for assignment in &command.assignments {
            self.assignment(&assignment.text);
        }
        for redirect in &command.redirects {
            match redirect.kind {
                RedirectKind::Read => self.path(&redirect.target, false, bases, paths),
                RedirectKind::Write => self.path(&redirect.target, true, bases, paths),
                RedirectKind::Duplicate | RedirectKind::Data => {}
            }
        }
        let Some(first) = command.words.first() else {
            return;
        };
        if first.opaque || first.glob {
            // A glob as the program runs whatever file name it expands to.
            self.concern(format!(
                "the program `{}` is known only when the line runs",
                first.text
            ));
            return;
        }
        let program = program_name(&first.text);
        let args = &command.words[1..];
        if SHELL_STATE_BUILTINS.contains(&program) {
            self.concern(format!(
                "`{program}` changes the shell or runs text as code"
            ));
        }
        if program == "exec" && args.is_empty() {
            self.concern("`exec` without a command redirects the whole shell".into());
        }
        if program == "env" {
            for word in args
                .iter()
                .take_while(|w| !w.text.starts_with('-') || w.text == "-i")
            {
                if shell::is_assignment(&word.text) {
                    self.assignment(&word.text);
                }
            }
        }
        if let Some((_, flags)) = INTERPRETERS.iter().find(|(name, _)| *name == program) {
            let inline = args.iter().any(|w| {
                flags.contains(&w.text.as_str())
                    || flags.iter().any(|f| {
                        f.len() == 2 && shell::is_short_flag_with(&w.text, f.as_bytes()[1] as char)
                    })
            });
            if inline {
                self.concern(format!("`{program}` runs code given on the command line"));
            }
        }
        if AWKS.contains(&program) && !args.iter().any(|w| w.text == "-f") {
            self.concern(format!(
                "`{program}` runs a program given on the command line"
            ));
        }
        if program == "xargs" {
            self.concern("`xargs` runs commands built from its input".into());
        }
        if program == "find"
            && let Some(action) = args
                .iter()
                .find(|w| FIND_ACTIONS.contains(&w.text.as_str()))
        {
            self.concern(format!(
                "`find {}` runs commands or changes files",
                action.text
            ));
        }
        if matches!(program, "watch" | "script" | "flock" | "parallel" | "ssh") {
            self.concern(format!("`{program}` runs a command line of its own"));
        }
        // What the program writes or runs through its options (the table in
        // `programs`): a written file is judged as a redirect's target is.
        let mut written = Vec::new();
        for effect in effects_of(command) {
            match effect {
                Effect::Writes { at, target } => {
                    written.push(at);
                    if target.text == "-" {
                        continue; // standard output
                    }
                    if target.text.starts_with(['|', '!']) {
                        self.concern(format!(
                            "`{program}` pipes its output into the command `{}`",
                            target.text
                        ));
                        continue;
                    }
                    self.path(&target, true, bases, paths);
                }
                Effect::Concern(why) => self.concern(why),
            }
        }
        let mut edited_in_place = false;
        if program == "sed" {
            match sed_script(args) {
                Ok((scripts, in_place)) => {
                    edited_in_place = in_place;
                    if scripts.iter().any(|script| sed_runs_or_writes(script)) {
                        self.concern(
                            "the sed script runs commands, or reads or writes files".into(),
                        );
                    }
                }
                Err(why) => self.concern(why),
            }
        }
        if program == "printf" && args.iter().any(|w| w.text.starts_with("-v")) {
            self.concern("`printf -v` sets a variable, which can change what runs".into());
        }
        let paths_free = NO_PATH_ARGUMENTS.contains(&program);
        let mut options_ended = false;
        for (at, word) in args.iter().enumerate() {
            if written.contains(&(at + 1)) {
                continue;
            }
            if word.opaque {
                if !paths_free {
                    self.concern(format!(
                        "the argument `{}` is known only when the line runs",
                        word.text
                    ));
                }
                continue;
            }
            if paths_free {
                continue;
            }
            let text = word.text.as_str();
            if text == "--" && !options_ended {
                options_ended = true;
                continue;
            }
            let is_option = !options_ended && text.starts_with('-') && text.len() > 1;
            // sed -i writes every file it is given, existing or not.
            if edited_in_place && !is_option {
                self.path(word, true, bases, paths);
                continue;
            }
            let candidates: Vec<&str> = if !is_option {
                // `if=/etc/passwd` (dd, make and the like): the value is a path too.
                let value = text.split_once('=').map(|(_, value)| value);
                std::iter::once(text).chain(value).collect()
            } else if let Some(option) = text.strip_prefix("--") {
                option.split_once('=').map(|(_, v)| v).into_iter().collect()
            } else {
                attached_values(text)
            };
            for candidate in candidates {
                // A glob names files whatever its shape: `cat *.pem`, `cat *`.
                if word.glob || looks_like_path(candidate, bases) {
                    let mut word = word.clone();
                    word.text = candidate.to_string();
                    self.path(&word, false, bases, paths);
                }
            }
        }
    }

    /// git takes its configuration, which can run programs (`core.fsmonitor`,
    /// `core.pager`), from the repository it finds where it runs. A
    /// repository other than the workspace's own `.git` (whose config is a
    /// power file) is one the agent or the repository's author could have
    /// written: a directory shaped like a bare repository can be committed.
    /// `dirs`: where git runs (see [`git_directories`]).
    fn git_repository(&mut self, command: &SimpleCommand, dirs: &[PathBuf], paths: &PathResolver) {
        let args = &command.words[1..];
        if args
            .iter()
            .any(|w| w.text.starts_with("--git-dir") || w.text.starts_with("--work-tree"))
        {
            self.concern("git is pointed at a repository the check does not vet".into());
            return;
        }
        for dir in dirs {
            if let Some(found) = foreign_repository(dir, paths.root()) {
                let shown = paths.display(&found);
                self.concern(format!(
                    "git run there reads the repository at `{}`, whose config can run programs",
                    if shown.is_empty() { "." } else { &shown }
                ));
            }
        }
    }

    /// git reads files out of its object store by name (`git show
    /// HEAD:path`, `git cat-file -p :path`, `git diff A:x B:y`): each is a
    /// read of that path, so read rules and the secrets check see it. The
    /// path is the repository's: from its top, or from where git runs when
    /// it starts with `./` or `../`.
    fn git_objects(&mut self, command: &SimpleCommand, bases: &[PathBuf], paths: &PathResolver) {
        let Ok(Some(sub)) = git_subcommand(&command.texts()[1..]) else {
            return;
        };
        let reads_by_name = matches!(
            command.words[1 + sub].text.as_str(),
            "show" | "cat-file" | "archive" | "diff" | "grep" | "ls-tree" | "difftool" | "blame"
        );
        if !reads_by_name {
            return;
        }
        for word in &command.words[2 + sub..] {
            if word.text.starts_with('-') || word.opaque {
                continue;
            }
            // `:/text` finds a commit by its message: no path.
            let Some((_, path)) = word
                .text
                .split_once(':')
                .filter(|_| !word.text.starts_with(":/"))
            else {
                continue;
            };
            // `:1:path` is a stage of the index.
            let path = match path.split_once(':') {
                Some((stage, rest)) if stage.len() == 1 && stage.as_bytes()[0].is_ascii_digit() => {
                    rest
                }
                _ => path,
            };
            let path = path.trim_end_matches('/');
            if path.is_empty() {
                continue; // the whole tree: see `reads_history`
            }
            let named = if path.starts_with("./") || path.starts_with("../") {
                Some(path.to_string())
            } else {
                repository_path(paths.root(), path)
            };
            match named {
                Some(text) => {
                    let mut target = word.clone();
                    target.text = text;
                    self.path(&target, false, bases, paths);
                }
                None => self.concern(format!(
                    "it reads `{path}` from git's objects, outside the workspace"
                )),
            }
        }
    }

    fn assignment(&mut self, text: &str) {
        let name = text.split('=').next().unwrap_or(text);
        let name = name.strip_suffix('+').unwrap_or(name);
        if !HARMLESS_VARIABLES.contains(&name) {
            self.concern(format!(
                "it sets `{name}`, which can change what the command runs"
            ));
        }
    }

    /// A path the line names: inside the workspace from every base, or a concern.
    fn path(&mut self, word: &Word, write: bool, bases: &[PathBuf], paths: &PathResolver) {
        let verb = if write { "writes" } else { "names" };
        // Only `/dev/fd/N` itself: `/dev/fd` links into `/proc/self`, so
        // `/dev/fd/../../../etc` climbs out of it.
        let descriptor = word
            .text
            .strip_prefix("/dev/fd/")
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if HARMLESS_DEVICES.contains(&word.text.as_str()) || descriptor {
            return;
        }
        if word.opaque {
            self.concern(format!(
                "it {verb} `{}`, a path known only when the line runs",
                word.text
            ));
            return;
        }
        let found = if word.glob {
            if write {
                self.concern(format!("it writes to a glob `{}`", word.text));
                return;
            }
            let matches = if word.quoted_glob {
                None
            } else {
                glob_matches(&word.text, bases)
            };
            match matches {
                Some(found) => found,
                None => {
                    self.concern(format!(
                        "it names `{}`, a glob the check cannot expand",
                        word.text
                    ));
                    return;
                }
            }
        } else {
            bases.iter().map(|base| base.join(&word.text)).collect()
        };
        for path in found {
            match paths.resolve(&physical(&path).to_string_lossy()) {
                Ok(real) => {
                    let shown = paths.display(&real);
                    let shown = if shown.is_empty() { ".".into() } else { shown };
                    if write {
                        self.writes.push(shown);
                    } else {
                        self.reads.push(shown);
                    }
                }
                Err(WorkspaceError::NulByte | WorkspaceError::Empty) => {}
                Err(WorkspaceError::NotRegular(_)) => self.concern(format!(
                    "it {verb} `{}`, a device, pipe or socket",
                    word.text
                )),
                Err(_) => self.concern(format!("it {verb} `{}`, outside the workspace", word.text)),
            }
        }
    }
}

/// Where a git command runs, for its paths: every directory the line may
/// be in, and each reached from those by git's global `-C` options in turn
/// (`git -C secrets blame key.txt` reads `secrets/key.txt`). A target
/// outside the workspace is not added: its word is checked as a path.
fn git_directories(
    command: &SimpleCommand,
    bases: &[PathBuf],
    paths: &PathResolver,
) -> Vec<PathBuf> {
    let mut dirs = bases.to_vec();
    let args = &command.words[1..];
    let globals = match git_subcommand(&command.texts()[1..]) {
        Ok(Some(sub)) => &args[..sub],
        _ => args,
    };
    let mut reached = bases.to_vec();
    for (at, word) in globals.iter().enumerate() {
        let target = match word.text.strip_prefix("-C") {
            Some("") => globals.get(at + 1).map(|w| w.text.as_str()),
            Some(glued) => Some(glued),
            None => None,
        };
        let Some(target) = target else { continue };
        reached = reached
            .iter()
            .filter_map(|dir| {
                paths
                    .resolve(&physical(&dir.join(target)).to_string_lossy())
                    .ok()
            })
            .collect();
        for dir in &reached {
            if !dirs.contains(dir) {
                dirs.push(dir.clone());
            }
        }
    }
    dirs
}

/// A command's words as run: git's global options left out.
pub(super) fn as_run(command: &SimpleCommand) -> Vec<&Word> {
    let words: Vec<&Word> = command.words.iter().collect();
    if command.program() == Some("git")
        && let Ok(Some(sub)) = git_subcommand(&command.texts()[1..])
    {
        return std::iter::once(words[0])
            .chain(words[1 + sub..].iter().copied())
            .collect();
    }
    words
}

/// A path in git's trees (from the repository's top) as an absolute path
/// under the workspace, or `None` when it lies outside: the workspace may
/// be a folder of a larger repository.
fn repository_path(root: &Path, path: &str) -> Option<String> {
    let top = root
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(root);
    let inside = root.strip_prefix(top).ok()?;
    let relative = Path::new(path).strip_prefix(inside).ok()?;
    Some(root.join(relative).to_string_lossy().into_owned())
}

/// A path as the kernel reads it: a `..` leaves the real directory reached
/// so far, so `link/..` is the parent of the link's target, not the
/// directory holding the link (which is what folding `..` away would say).
fn physical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                if let Ok(real) = out.canonicalize() {
                    out = real;
                }
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The values a short-option cluster may carry glued on (`-o/tmp/x`,
/// `-rf/etc/passwd`, `-I./include`): what follows any of its letters, where
/// that looks like a path. Which letter takes a value is the program's
/// business, so every split is checked.
fn attached_values(option: &str) -> Vec<&str> {
    option
        .char_indices()
        .skip(2)
        .filter(|&(at, _)| {
            option[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric())
        })
        .map(|(at, _)| &option[at..])
        .filter(|value| value.contains('/') || value.starts_with('.'))
        .collect()
}

/// Whether an argument is a path: it has a `/`, starts with `.`, or names
/// something that exists from one of the bases.
fn looks_like_path(text: &str, bases: &[PathBuf]) -> bool {
    !text.is_empty()
        && (text.contains('/')
            || text.starts_with('.')
            || bases
                .iter()
                .any(|base| std::fs::symlink_metadata(base.join(text)).is_ok()))
}

/// The paths a glob argument matches, for globs whose wildcards are all in
/// the last component (`src/*.rs`); `None` for any other glob.
fn glob_matches(pattern: &str, bases: &[PathBuf]) -> Option<Vec<PathBuf>> {
    let (dir, name) = match pattern.rsplit_once('/') {
        Some((dir, name)) => (dir, name),
        None => ("", pattern),
    };
    if dir.contains(['*', '?', '[']) || name.is_empty() {
        return None;
    }
    // Where globset and bash read a pattern differently: braces (literal to
    // bash, alternatives to globset), backslashes, and POSIX classes such as
    // `[[:alpha:]]`, which bash matches and globset does not.
    if name.contains(['{', '}', '\\']) || ["[:", "[=", "[."].iter().any(|c| name.contains(c)) {
        return None;
    }
    let matcher = globset::GlobBuilder::new(name)
        .literal_separator(true)
        .build()
        .ok()?
        .compile_matcher();
    let mut found = Vec::new();
    for base in bases {
        let directory = if dir.is_empty() {
            base.clone()
        } else if dir.starts_with('/') {
            PathBuf::from(dir)
        } else {
            base.join(dir)
        };
        // The directory itself must be checked too: `../*` matches nothing
        // visible here but is outside all the same.
        found.push(directory.clone());
        // `.*` matches `..` in bash before 5.2 (and with `globskipdots` off);
        // `read_dir` never lists it.
        if matcher.is_match("..") {
            found.push(directory.join(".."));
        }
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        // A directory too big to check whole: the unchecked entries may be links out.
        for (seen, entry) in entries.filter_map(Result::ok).enumerate() {
            if seen >= MAX_GLOB_ENTRIES {
                return None;
            }
            let entry_name = entry.file_name();
            if matcher.is_match(Path::new(&entry_name)) {
                found.push(directory.join(entry_name));
            }
        }
    }
    Some(found)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A check against an empty workspace of its own.
    pub fn check(line: &str) -> CommandCheck {
        let root = tempfile::tempdir().expect("temp dir").keep();
        CommandCheck::new(line, &PathResolver::new(&root).expect("resolver"))
    }

    /// Every file bash's expansion of a glob names, the check resolves too
    /// (or it asks): names chosen where globset and bash read patterns apart.
    #[test]
    fn globs_resolve_at_least_what_bash_expands() {
        let dir = tempfile::tempdir().unwrap();
        let names = [
            ".env", "a]b", "ab", "a-b", "^x", "!x", "x", "[x]", "A", "{a}b", "a*b", "a\\b", "b.pem",
        ];
        for name in names {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let paths = PathResolver::new(dir.path()).unwrap();
        let patterns = [
            "[!a]*",
            "[^a]*",
            "[]a]*",
            "a[]]b",
            "[a-]*",
            "*",
            "?",
            "[[]x]",
            "a[!]]b",
            "*[[:upper:]]*",
            "{a}*",
            "a\\*",
            "a'*'*",
            "'['x]*",
            "[a-c]?",
            "x*",
            "*b",
            ".e?v",
            "*.pem",
            "[.]env",
        ];
        for pattern in patterns {
            let line = format!("cat {pattern}");
            let out = std::process::Command::new("bash")
                .args([
                    "-c",
                    &format!("shopt -s nullglob; printf '%s\\n' {pattern}"),
                ])
                .current_dir(dir.path())
                .output()
                .unwrap();
            let expanded: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|name| dir.path().join(name).exists())
                .map(String::from)
                .collect();
            let check = CommandCheck::new(&line, &paths);
            if !check.concerns.is_empty() {
                continue;
            }
            for name in &expanded {
                assert!(
                    check.reads.contains(name),
                    "`{line}`: bash reads `{name}`, the check saw {:?}",
                    check.reads
                );
            }
        }
    }

    #[test]
    fn a_glob_over_a_directory_too_big_to_list_asks() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..=MAX_GLOB_ENTRIES {
            std::fs::write(dir.path().join(format!("f{i}")), "").unwrap();
        }
        let check = CommandCheck::new("cat f*", &PathResolver::new(dir.path()).unwrap());
        assert!(!check.concerns.is_empty(), "{:?}", check.reads.len());
    }

    #[test]
    fn a_glob_that_matches_dot_dot_names_the_parent() {
        let check = super::tests::check("ls .*");
        assert!(
            check.concerns.iter().any(|c| c.contains("outside")),
            "{:?}",
            check.concerns
        );
    }

    /// What a "read-only" program writes or runs through its options and
    /// operands (the table in `programs`): (line, files written, concern?).
    #[test]
    fn writing_and_running_options_are_known() {
        let cases: &[(&str, &[&str], bool)] = &[
            ("sort -o Makefile x", &["Makefile"], false),
            ("sort -oMakefile x", &["Makefile"], false),
            ("sort -uo Makefile x", &["Makefile"], false),
            ("sort --output=Makefile x", &["Makefile"], false),
            ("sort --out Makefile x", &["Makefile"], false),
            ("sort --compress-prog=sh x", &[], true),
            ("git log -1 --output=Makefile", &["Makefile"], false),
            ("git --no-pager log --output Makefile", &["Makefile"], false),
            ("git -C . diff --outp=Makefile", &["Makefile"], false),
            ("git archive -o out.tar HEAD", &["out.tar"], false),
            ("git grep -O'sh -c x' y", &[], true),
            ("git grep -nO y", &[], true),
            ("git grep --open-files-in-pager=sh y", &[], true),
            ("git diff --ext-diff", &[], true),
            ("git format-patch -1", &[], true),
            ("git format-patch --stdout -1", &[], false),
            ("git apply x.patch", &[], true),
            ("git apply --stat x.patch", &[], false),
            ("git apply --stat --apply x.patch", &[], true),
            ("patch --dry-run -p1 -i x.diff", &[], false),
            ("tee a b", &["a", "b"], false),
            ("dd if=x of=y", &["y"], false),
            ("curl -o out http://127.0.0.1/", &["out"], false),
            ("curl -sSLo out http://127.0.0.1/", &["out"], false),
            ("curl -O http://127.0.0.1/x", &[], true),
            ("curl -K cfg http://127.0.0.1/x", &[], true),
            ("wget http://127.0.0.1/x", &[], true),
            ("wget -O page http://127.0.0.1/x", &["page"], false),
            ("wget -qO- http://127.0.0.1/x", &[], false),
            ("less -o log x", &["log"], false),
            ("man -P sh ls", &[], true),
            ("uniq in out", &["out"], false),
            ("uniq -f 1 in out", &["out"], false),
            ("xxd -r dump bin", &["bin"], false),
            ("cp a b", &["b"], false),
            ("cp -r a b", &["b"], true),
            ("cp a b -S .bak", &["b"], false),
            ("mv a b", &["a", "b"], false),
            ("install -m 755 a b", &["b"], false),
            ("ln -s a b", &["b"], false),
            ("zip out.zip a", &["out.zip"], false),
            ("tar xf a.tar", &[], true),
            ("tar -czf out.tgz src", &[], true),
            ("unzip a.zip", &[], true),
            ("unzip -d out a.zip", &["out"], true),
            ("patch -p1 -i x.diff", &[], true),
            ("split -b 1 x", &[], true),
            ("csplit x 5", &[], true),
            ("rsync a b", &[], true),
            ("strace -p 1", &[], true),
            ("strace -o '|sh' ls", &[], true),
            ("time -o out ls", &["out"], false),
            ("time ls -lo x", &[], false),
            ("strace -f ls -o x", &[], false),
            // Reading only.
            ("sort x", &[], false),
            ("git log --oneline -5", &[], false),
            ("git grep -n foo", &[], false),
            ("curl -s http://127.0.0.1/", &[], false),
            ("uniq in", &[], false),
            ("unzip -l a.zip", &[], false),
            ("tar -tf a.tar", &[], false),
        ];
        for (line, writes, concern) in cases {
            let check = check(line);
            assert_eq!(&check.writes, writes, "{line}");
            assert_eq!(
                !check.concerns.is_empty(),
                *concern,
                "{line}: {:?}",
                check.concerns
            );
        }
    }

    /// git's object store read by name is a read of that path; what it
    /// prints without naming it is marked.
    #[test]
    fn git_object_reads_are_reads() {
        let cases: &[(&str, &[&str], bool, bool)] = &[
            // (line, reads, concern?, reads history?)
            (
                "git show HEAD:secrets/key.txt",
                &["secrets/key.txt"],
                false,
                false,
            ),
            ("git show HEAD~2:.env", &[".env"], false, false),
            ("git cat-file -p :0:.env", &[".env"], false, false),
            ("git cat-file blob v1.0:a/b", &["a/b"], false, false),
            ("git diff HEAD:a HEAD:b", &["a", "b"], false, true),
            ("git show HEAD:/etc/passwd", &[], true, false),
            ("git show :/fix", &[], false, true),
            ("git log -p", &[], false, true),
            ("git log --oneline", &[], false, false),
            ("git show --stat", &[], false, false),
            ("git cat-file -p 1a2b3c", &[], false, true),
            ("git cat-file -t 1a2b3c", &[], false, false),
            ("git archive HEAD", &[], false, true),
            ("git stash", &[], false, false),
            ("git stash show -p", &[], false, true),
        ];
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("secrets/deep")).unwrap();
        std::fs::write(root.path().join("secrets/key.txt"), "").unwrap();
        let paths = PathResolver::new(root.path()).unwrap();
        for line in [
            "git -C secrets blame key.txt",
            "git -C secrets show HEAD:./key.txt",
            "git -Csecrets/deep -C .. log -p -- key.txt",
        ] {
            let check = CommandCheck::new(line, &paths);
            assert!(
                check.reads.contains(&"secrets/key.txt".to_string()),
                "{line}: {:?}",
                check.reads
            );
        }
        for (line, reads, concern, history) in cases {
            let check = check(line);
            for read in *reads {
                assert!(
                    check.reads.contains(&read.to_string()),
                    "{line}: {:?}",
                    check.reads
                );
            }
            assert_eq!(
                !check.concerns.is_empty(),
                *concern,
                "{line}: {:?}",
                check.concerns
            );
            assert_eq!(check.reads_history, *history, "{line}");
        }
    }

    #[test]
    fn values_glued_to_options_are_paths() {
        // Every split after a letter: `-o/tmp/x` may be `-o -t -m -p/x` to some program.
        assert_eq!(attached_values("-o/tmp/x")[0], "/tmp/x");
        assert!(attached_values("-rf/etc").contains(&"/etc"));
        assert_eq!(attached_values("-I./include"), vec!["./include"]);
        assert!(attached_values("-la").is_empty());
        assert!(attached_values("-n5").is_empty());
    }
}
