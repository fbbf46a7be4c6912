//! A shell-syntax reader that understands a command line or says it does not.
//!
//! It reads enough of bash to find every simple command in a line — in
//! `a && b; c | d`, `$(…)`, backticks, `( … )`, `{ …; }`, `bash -c '…'` and
//! wrappers such as `env`, `sudo` or `timeout` — with every redirect and
//! every word after quote removal (`'…'`, `"…"`, `$'…'`, `$"…"`, escapes),
//! and here-document bodies skipped as data, as bash skips them.
//!
//! It evaluates nothing. A word whose value is only known when the command
//! runs (`$HOME`, `$(…)`, `~`, a brace expansion) is marked *opaque*; a word
//! with an unquoted `*`, `?` or `[` is marked *glob*. Whatever the reader
//! does not follow (`case`, `for`, functions, `eval`, arithmetic with
//! commands, an unterminated quote, …) is reported in
//! [`Parsed::problems`]: a line with problems is never auto-allowed. The
//! reader must never *hide* a command, so even then it keeps every command it
//! did find, for deny rules to see.

use super::options;

/// One word after quote removal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    /// Holds an expansion whose value only the running shell knows.
    pub opaque: bool,
    /// Holds an unquoted glob character (`*`, `?`, `[`).
    pub glob: bool,
    /// Some part of it was quoted or escaped (so it is not a keyword).
    pub quoted: bool,
    /// A glob that also holds a quoted `*`, `?`, `[` or `]`, which bash
    /// matches literally: the text alone no longer says what it matches.
    pub quoted_glob: bool,
    /// How many bytes of `text` came before the first quote or escape: an
    /// assignment's name must lie in them (`"A"=1 cmd` runs a program `A=1`).
    unquoted_prefix: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirectKind {
    /// `<`: reads the file.
    Read,
    /// `>`, `>>`, `>|`, `&>`, `<>`: writes the file.
    Write,
    /// `2>&1`, `<&0`, `>&-`: duplicates or closes a descriptor; no file.
    Duplicate,
    /// `<<EOF` and `<<<word`: data for stdin; no file.
    Data,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    pub kind: RedirectKind,
    pub target: Word,
}

/// One simple command: assignments before it, its words, its redirects, and
/// the commands run by substitutions inside them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    pub assignments: Vec<Word>,
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    pub substitutions: Vec<Pipeline>,
    /// Found inside another command (a wrapper's argument, `bash -c`).
    pub unwrapped: bool,
}

impl SimpleCommand {
    /// The words as plain strings.
    pub fn texts(&self) -> Vec<&str> {
        self.words.iter().map(|w| w.text.as_str()).collect()
    }

    /// The program's name, without its directory or a leading backslash.
    pub fn program(&self) -> Option<&str> {
        self.words.first().map(|w| program_name(&w.text))
    }
}

/// Commands joined by `|`: the output of each feeds the next.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pipeline {
    pub commands: Vec<SimpleCommand>,
}

/// A whole command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub pipelines: Vec<Pipeline>,
    /// What the reader did not follow; empty when it understood everything.
    pub problems: Vec<String>,
}

impl Parsed {
    /// Every simple command, those in substitutions and wrappers included.
    pub fn commands(&self) -> Vec<&SimpleCommand> {
        let mut out = Vec::new();
        collect_commands(&self.pipelines, &mut out);
        out
    }

    /// Every pipeline, those inside substitutions included.
    pub fn all_pipelines(&self) -> Vec<&Pipeline> {
        let mut out = Vec::new();
        collect_pipelines(&self.pipelines, &mut out);
        out
    }
}

fn collect_commands<'a>(pipelines: &'a [Pipeline], out: &mut Vec<&'a SimpleCommand>) {
    for pipeline in pipelines {
        for command in &pipeline.commands {
            out.push(command);
            collect_commands(&command.substitutions, out);
        }
    }
}

fn collect_pipelines<'a>(pipelines: &'a [Pipeline], out: &mut Vec<&'a Pipeline>) {
    for pipeline in pipelines {
        out.push(pipeline);
        for command in &pipeline.commands {
            collect_pipelines(&command.substitutions, out);
        }
    }
}

/// Reads a command line. Wrappers are unwrapped: for `sudo env X=1 rm -rf /`
/// the result holds `sudo env X=1 rm -rf /` and, after it, `rm -rf /` as a
/// command of its own (marked `unwrapped`).
pub fn parse(line: &str) -> Parsed {
    parse_at_depth(line, 0)
}

/// How deep `bash -c "bash -c '…'"` may nest before the reader gives up.
const MAX_DEPTH: usize = 8;

/// How many commands wrappers may hand on in one line before the reader
/// gives up (each unknown option doubles them).
const MAX_UNWRAPPED: usize = 64;

/// The problem of a line the reader stopped reading: commands in it may be
/// hidden from deny rules, which therefore refuse it (see `rules`).
pub const GAVE_UP: &str = "more nesting, wrappers or readings than the reader follows";

fn parse_at_depth(line: &str, depth: usize) -> Parsed {
    let mut reader = Reader {
        chars: line.chars().collect(),
        at: 0,
        problems: Vec::new(),
        heredocs: Vec::new(),
        depth,
    };
    let mut pipelines = reader.pipelines(None);
    if !reader.heredocs.is_empty() {
        reader.problem("a here-document that never starts");
    }
    let mut problems = reader.problems;
    let mut unwrapped = Vec::new();
    for pipeline in &pipelines {
        for command in &pipeline.commands {
            unwrap_wrappers(command, depth, &mut unwrapped, &mut problems);
        }
    }
    pipelines.extend(unwrapped);
    problems.dedup();
    Parsed {
        pipelines,
        problems,
    }
}

/// Shells: their `-c` argument is a command line of its own.
pub const SHELLS: [&str; 8] = [
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "busybox",
];

/// Finds the command a wrapper runs (`env X=1 cmd`, `sudo -u u cmd`,
/// `timeout 5 cmd`, `prlimit --nofile=10 cmd`, `bash -c 'line'`, …) and
/// adds it as a pipeline of its own; `git`'s global options are seen
/// through the same way (`git -C . push` runs `git push`). Each wrapper's
/// options are data (`options::WRAPPERS`); one it does not know is a
/// problem, and the command is found both ways it could be read.
fn unwrap_wrappers(
    command: &SimpleCommand,
    depth: usize,
    out: &mut Vec<Pipeline>,
    problems: &mut Vec<String>,
) {
    if depth > MAX_DEPTH || out.len() > MAX_UNWRAPPED {
        problems.push(GAVE_UP.into());
        return;
    }
    let words = &command.words;
    let Some(first) = words.first() else { return };
    let name = program_name(&first.text);
    let rest = &words[1..];
    let texts: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    let mut unknown = None;
    let inners: Vec<Vec<Word>> = match name {
        "env" => env_commands(rest, problems),
        "git" => options::command_starts(&texts, &options::GIT_GLOBAL_OPTIONS, 0, &mut unknown)
            .into_iter()
            .filter(|start| *start > 0)
            .map(|start| {
                std::iter::once(first.clone())
                    .chain(rest[start..].iter().cloned())
                    .collect()
            })
            .collect(),
        "find" => rest
            .iter()
            .position(|w| matches!(w.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"))
            .map(|i| {
                let tail = &rest[i + 1..];
                let end = tail
                    .iter()
                    .position(|w| w.text == ";" || w.text == "+")
                    .unwrap_or(tail.len());
                tail[..end].to_vec()
            })
            .into_iter()
            .collect(),
        _ => match options::WRAPPERS.iter().find(|w| w.names.contains(&name)) {
            Some(wrapper) => {
                options::command_starts(&texts, &wrapper.options, wrapper.operands, &mut unknown)
                    .into_iter()
                    .map(|start| rest[start..].to_vec())
                    // `flock FILE -c 'line'` runs the line with `sh -c`.
                    .map(|inner| match inner.first() {
                        Some(w)
                            if name == "flock" && matches!(w.text.as_str(), "-c" | "--command") =>
                        {
                            let sh = Word {
                                text: "sh".into(),
                                ..Word::default()
                            };
                            std::iter::once(sh).chain(inner).collect()
                        }
                        _ => inner,
                    })
                    .collect()
            }
            None => Vec::new(),
        },
    };
    if let Some(option) = unknown {
        problems.push(format!(
            "`{name}` with the option `{option}`, which the check does not know"
        ));
    }
    for inner in inners.into_iter().filter(|inner| !inner.is_empty()) {
        let inner = SimpleCommand {
            words: inner,
            unwrapped: true,
            ..SimpleCommand::default()
        };
        unwrap_wrappers(&inner, depth + 1, out, problems);
        out.push(Pipeline {
            commands: vec![inner],
        });
    }
    // A shell with a command line as its argument, or `eval`: read that line too.
    let eval_line = (name == "eval").then(|| {
        let line: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
        (line.join(" "), rest.iter().any(|w| w.opaque))
    });
    let eval_word = eval_line.map(|(text, opaque)| Word {
        text,
        opaque,
        ..Word::default()
    });
    if SHELLS.contains(&name) || eval_word.is_some() {
        let script = match &eval_word {
            Some(word) => Some(Some(word)),
            None => rest
                .iter()
                .position(|w| is_short_flag_with(&w.text, 'c'))
                .map(|i| rest.get(i + 1)),
        };
        if let Some(script) = script {
            match script {
                Some(word) if !word.opaque => {
                    let parsed = parse_at_depth(&word.text, depth + 1);
                    problems.extend(parsed.problems);
                    for mut pipeline in parsed.pipelines {
                        for command in &mut pipeline.commands {
                            command.unwrapped = true;
                        }
                        out.push(pipeline);
                    }
                }
                Some(_) => problems.push(format!("`{name} -c` runs a line known only at run time")),
                None => problems.push(format!("`{name} -c` without a command line")),
            }
        }
    }
}

/// `env -i -u NAME A=1 B=2 cmd`: the command after env's options and
/// assignments, each way an unknown option may be read.
fn env_commands(words: &[Word], problems: &mut Vec<String>) -> Vec<Vec<Word>> {
    let mut unknown = None;
    let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    let starts = options::command_starts(&texts, &options::ENV_OPTIONS, 0, &mut unknown);
    if let Some(option) = unknown {
        problems.push(format!(
            "`env` with the option `{option}`, which the check does not know"
        ));
    }
    let options = &words[..starts.first().copied().unwrap_or(words.len())];
    let has = |option: &str| {
        options
            .iter()
            .any(|w| options::option_value(&w.text, option).is_some())
    };
    if has("-S") || has("--split-string") {
        problems.push("`env -S` splits a string into a command".into());
    }
    if has("-C") || has("--chdir") {
        problems.push("`env -C` runs the command in another directory".into());
    }
    starts
        .into_iter()
        .map(|start| {
            let rest = &words[start..];
            let skip = rest
                .iter()
                .position(|w| w.text != "-" && !is_assignment(&w.text))
                .unwrap_or(rest.len());
            rest[skip..].to_vec()
        })
        .collect()
}

/// `-c`, `-xc`, `-ec`: a cluster of one-letter flags holding `letter`.
pub fn is_short_flag_with(word: &str, letter: char) -> bool {
    word.len() > 1
        && word.starts_with('-')
        && !word.starts_with("--")
        && word[1..].chars().all(|c| c.is_ascii_alphabetic())
        && word.contains(letter)
}

/// `/usr/bin/rm` and `rm` are the same program; `\rm` skips aliases.
pub fn program_name(word: &str) -> &str {
    let word = word.trim_start_matches('\\');
    word.rsplit('/').next().unwrap_or(word)
}

/// `NAME=value` (or `NAME+=value`) with a valid shell name.
pub fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let name = name.strip_suffix('+').unwrap_or(name);
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// A here-document waiting for its body after the current line.
struct PendingHeredoc {
    delimiter: String,
    /// A quoted delimiter (`<<'EOF'`): the body is literal.
    quoted: bool,
    /// `<<-`: leading tabs are stripped from body lines.
    strip_tabs: bool,
}

struct Reader {
    chars: Vec<char>,
    at: usize,
    problems: Vec<String>,
    heredocs: Vec<PendingHeredoc>,
    depth: usize,
}

/// Words that start a compound command; the command proper follows them.
const PREFIX_KEYWORDS: [&str; 9] = [
    "if", "then", "else", "elif", "do", "while", "until", "!", "{",
];
/// Words that end one.
const END_KEYWORDS: [&str; 4] = ["fi", "done", "esac", "}"];
/// Compound commands whose structure the reader does not follow.
const UNFOLLOWED_KEYWORDS: [&str; 7] = ["case", "for", "select", "function", "coproc", "[[", "]]"];

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.at + offset).copied()
    }

    fn problem(&mut self, text: &str) {
        self.problems.push(text.to_string());
    }

    /// Reads pipelines until the end, or until `close` (`)`).
    fn pipelines(&mut self, close: Option<char>) -> Vec<Pipeline> {
        let mut pipelines = Vec::new();
        let mut pipeline = Pipeline::default();
        let mut command = SimpleCommand::default();
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                if close.is_some() {
                    self.problem("an unclosed `(` or `$(`");
                }
                break;
            };
            if Some(c) == close {
                self.at += 1;
                break;
            }
            match c {
                '#' => self.skip_comment(),
                '&' if self.peek_at(1) == Some('>') => self.redirection(&mut command, 0),
                '\n' | ';' | '&' | '|' => {
                    let piped = c == '|' && self.peek_at(1) != Some('|');
                    self.at += 1;
                    if matches!(
                        (c, self.peek()),
                        ('&', Some('&')) | ('|', Some('|')) | ('|', Some('&'))
                    ) {
                        self.at += 1;
                    }
                    if c == ';' && matches!(self.peek(), Some(';' | '&')) {
                        self.problem("`;;` outside a `case` the reader follows");
                        self.at += 1;
                    }
                    Self::end_command(&mut pipeline, &mut command);
                    if !piped {
                        Self::end_pipeline(&mut pipelines, &mut pipeline);
                    }
                    if c == '\n' {
                        self.heredoc_bodies();
                    }
                    if piped {
                        // `a |` + newline (or a comment) + `b` is still one pipeline.
                        self.skip_line_breaks();
                    }
                }
                '(' => {
                    if self.peek_at(1) == Some('(') {
                        self.problem("an arithmetic command `(( … ))`");
                    }
                    if !command.words.is_empty() {
                        // `name() { … }` defines a function.
                        self.problem("a function definition");
                    }
                    self.at += 1;
                    Self::end_command(&mut pipeline, &mut command);
                    Self::end_pipeline(&mut pipelines, &mut pipeline);
                    let inner = self.pipelines(Some(')'));
                    pipelines.extend(inner);
                }
                ')' => {
                    self.problem("an unbalanced `)`");
                    self.at += 1;
                }
                '<' | '>' => self.redirection(&mut command, 0),
                _ => {
                    let start = self.at;
                    let word = self.word(&mut command);
                    // `2>file`: the digits were the descriptor.
                    if matches!(self.peek(), Some('<' | '>'))
                        && !word.quoted
                        && !word.text.is_empty()
                        && word.text.chars().all(|d| d.is_ascii_digit())
                    {
                        self.redirection(&mut command, start);
                        continue;
                    }
                    if self.at == start {
                        // Nothing consumed: a character no rule above takes.
                        self.problem("a character the reader does not follow");
                        self.at += 1;
                        continue;
                    }
                    let first = command.words.is_empty() && !word.quoted && !word.opaque;
                    if first && PREFIX_KEYWORDS.contains(&word.text.as_str()) {
                        continue;
                    }
                    if first && END_KEYWORDS.contains(&word.text.as_str()) {
                        Self::end_command(&mut pipeline, &mut command);
                        Self::end_pipeline(&mut pipelines, &mut pipeline);
                        continue;
                    }
                    if first && UNFOLLOWED_KEYWORDS.contains(&word.text.as_str()) {
                        self.problems
                            .push(format!("a `{}` compound command", word.text));
                    }
                    if command.words.is_empty() && is_assignment_word(&word) {
                        command.assignments.push(word);
                        continue;
                    }
                    command.words.push(word);
                }
            }
        }
        Self::end_command(&mut pipeline, &mut command);
        Self::end_pipeline(&mut pipelines, &mut pipeline);
        pipelines
    }

    fn end_command(pipeline: &mut Pipeline, command: &mut SimpleCommand) {
        let command = std::mem::take(command);
        if !command.words.is_empty()
            || !command.substitutions.is_empty()
            || !command.assignments.is_empty()
            || !command.redirects.is_empty()
        {
            pipeline.commands.push(command);
        }
    }

    fn end_pipeline(pipelines: &mut Vec<Pipeline>, pipeline: &mut Pipeline) {
        let pipeline = std::mem::take(pipeline);
        if !pipeline.commands.is_empty() {
            pipelines.push(pipeline);
        }
    }

    fn skip_blanks(&mut self) {
        loop {
            match (self.peek(), self.peek_at(1)) {
                (Some(' ' | '\t'), _) => self.at += 1,
                (Some('\\'), Some('\n')) => self.at += 2,
                _ => break,
            }
        }
    }

    /// Blanks, comments and newlines (with the here-document bodies they start).
    fn skip_line_breaks(&mut self) {
        loop {
            self.skip_blanks();
            match self.peek() {
                Some('#') => self.skip_comment(),
                Some('\n') => {
                    self.at += 1;
                    self.heredoc_bodies();
                }
                _ => break,
            }
        }
    }

    fn skip_comment(&mut self) {
        while self.peek().is_some_and(|c| c != '\n') {
            self.at += 1;
        }
    }

    /// Skips the bodies of the here-documents opened on the line just ended.
    fn heredoc_bodies(&mut self) {
        for heredoc in std::mem::take(&mut self.heredocs) {
            let mut found = false;
            while self.at < self.chars.len() {
                let start = self.at;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.at += 1;
                }
                let line: String = self.chars[start..self.at].iter().collect();
                if self.peek() == Some('\n') {
                    self.at += 1;
                }
                let line = if heredoc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if line == heredoc.delimiter {
                    found = true;
                    break;
                }
                if !heredoc.quoted && line.contains(['$', '`', '\\']) {
                    self.problem("a here-document whose body expands `$`, `` ` `` or `\\`");
                }
            }
            if !found {
                self.problem("a here-document without its closing delimiter");
            }
        }
    }

    /// A redirection starting at the operator (or at `start`, where an fd
    /// number began): `>`, `>>`, `>|`, `<`, `<>`, `&>`, `&>>`, `2>&1`,
    /// `<<EOF`, `<<<word`, and process substitutions `<(…)`, `>(…)`.
    fn redirection(&mut self, command: &mut SimpleCommand, _start: usize) {
        let op: String = {
            let mut op = String::new();
            while let Some(c) = self.peek() {
                if !matches!(c, '<' | '>' | '&' | '|') || op.len() >= 3 {
                    break;
                }
                // `>|` and `&>` take their second character; `|` alone ends a command.
                if c == '|' && op != ">" {
                    break;
                }
                if c == '&' && !(op.is_empty() || op == ">" || op == "<") {
                    break;
                }
                op.push(c);
                self.at += 1;
            }
            if op == "<<" && self.peek() == Some('-') {
                op.push('-');
                self.at += 1;
            }
            op
        };
        if self.peek() == Some('(') && matches!(op.as_str(), "<" | ">") {
            self.at += 1;
            let inner = self.pipelines(Some(')'));
            if op == ">" {
                self.problem("a process substitution `>(…)` that writes");
            }
            command.substitutions.extend(inner);
            return;
        }
        let kind = match op.as_str() {
            "<" => RedirectKind::Read,
            ">" | ">>" | ">|" | "&>" | "&>>" | "<>" => RedirectKind::Write,
            ">&" | "<&" => RedirectKind::Duplicate,
            "<<" | "<<-" | "<<<" => RedirectKind::Data,
            _ => {
                self.problems
                    .push(format!("a redirection `{op}` the reader does not follow"));
                RedirectKind::Write
            }
        };
        self.skip_blanks();
        if self
            .peek()
            .is_none_or(|c| matches!(c, '\n' | ';' | '|' | '&' | '(' | ')' | '<' | '>'))
        {
            self.problem("a redirection without a target");
            return;
        }
        let target = self.word(command);
        let kind = match kind {
            // `>&file` is `&>file`; only digits and `-` duplicate.
            RedirectKind::Duplicate
                if !(target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit())) =>
            {
                if op == "<&" {
                    RedirectKind::Read
                } else {
                    RedirectKind::Write
                }
            }
            other => other,
        };
        if op == "<<" || op == "<<-" {
            self.heredocs.push(PendingHeredoc {
                delimiter: target.text.clone(),
                quoted: target.quoted,
                strip_tabs: op == "<<-",
            });
            if target.opaque {
                self.problem("a here-document delimiter with an expansion");
            }
        }
        command.redirects.push(Redirect { kind, target });
    }

    /// One word, quotes removed; substitutions inside it go to `command`.
    fn word(&mut self, command: &mut SimpleCommand) -> Word {
        let mut word = Word::default();
        let starts_at = self.at;
        let mut unquoted_glob_chars = 0;
        while let Some(c) = self.peek() {
            if !word.quoted && matches!(c, '\\' | '\'' | '"' | '$' | '`') {
                word.unquoted_prefix = word.text.len();
            }
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
                '\\' => {
                    word.quoted = true;
                    self.at += 1;
                    match self.peek() {
                        Some(next) => {
                            if next != '\n' {
                                word.text.push(next);
                            }
                            self.at += 1;
                        }
                        // Escaping nothing at the end, bash keeps it.
                        None => word.text.push('\\'),
                    }
                }
                '\'' => {
                    word.quoted = true;
                    self.at += 1;
                    self.single_quoted(&mut word);
                }
                '"' => {
                    word.quoted = true;
                    self.at += 1;
                    self.double_quoted(&mut word, command);
                }
                '$' if self.peek_at(1) == Some('\'') => {
                    word.quoted = true;
                    self.at += 2;
                    self.ansi_c_quoted(&mut word);
                }
                '$' if self.peek_at(1) == Some('"') => {
                    word.quoted = true;
                    self.at += 2;
                    self.double_quoted(&mut word, command);
                }
                '$' => self.dollar(&mut word, command),
                '`' => self.backtick(&mut word, command),
                '*' | '?' | '[' => {
                    word.glob = true;
                    unquoted_glob_chars += 1;
                    word.text.push(c);
                    self.at += 1;
                }
                ']' => {
                    unquoted_glob_chars += 1;
                    word.text.push(c);
                    self.at += 1;
                }
                '~' if self.at == starts_at
                    || (word.text.ends_with(['=', ':']) && is_assignment(&word.text)) =>
                {
                    // `~`, `~user`: a home directory; bash also expands it
                    // after the `=` or a `:` of `name=…` (`if=~/.ssh/id_rsa`).
                    word.opaque = true;
                    word.text.push(c);
                    self.at += 1;
                }
                '{' => {
                    // `{a,b}`, `{1..9}`: brace expansion makes several words.
                    if self.brace_expands() {
                        word.opaque = true;
                    }
                    word.text.push(c);
                    self.at += 1;
                }
                _ => {
                    word.text.push(c);
                    self.at += 1;
                }
            }
        }
        if !word.quoted {
            word.unquoted_prefix = word.text.len();
        }
        let glob_chars = word
            .text
            .chars()
            .filter(|c| matches!(c, '*' | '?' | '[' | ']'))
            .count();
        word.quoted_glob = word.glob && glob_chars != unquoted_glob_chars;
        word
    }

    /// Whether the `{` at the cursor opens a brace expansion (`,` or `..`
    /// before its matching `}`). Quoted and escaped text is skipped, not a
    /// word's end: `{"a b",/etc/passwd}` expands to two words.
    fn brace_expands(&self) -> bool {
        let mut depth = 0;
        let mut previous = '{';
        let mut chars = self.chars[self.at..].iter().copied();
        while let Some(c) = chars.next() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return false;
                    }
                }
                ',' if depth >= 1 => return true,
                '.' if previous == '.' && depth >= 1 => return true,
                '\\' => {
                    chars.next();
                }
                '\'' if !chars.by_ref().any(|q| q == '\'') => return false,
                '"' => {
                    let mut escaped = false;
                    for q in chars.by_ref() {
                        match q {
                            '"' if !escaped => break,
                            '\\' if !escaped => escaped = true,
                            _ => escaped = false,
                        }
                    }
                }
                ' ' | '\t' | '\n' | ';' | '|' | '&' => return false,
                _ => {}
            }
            previous = c;
        }
        false
    }

    fn single_quoted(&mut self, word: &mut Word) {
        while let Some(q) = self.peek() {
            self.at += 1;
            if q == '\'' {
                return;
            }
            word.text.push(q);
        }
        self.problem("an unterminated `'` quote");
    }

    /// `$'…'`: backslash escapes as in C. Escapes that build characters from
    /// numbers make the word opaque rather than decoded here.
    fn ansi_c_quoted(&mut self, word: &mut Word) {
        while let Some(q) = self.peek() {
            self.at += 1;
            match q {
                '\'' => return,
                '\\' => {
                    let Some(escaped) = self.peek() else { break };
                    self.at += 1;
                    let plain = match escaped {
                        'a' => Some('\u{7}'),
                        'b' => Some('\u{8}'),
                        'e' | 'E' => Some('\u{1b}'),
                        'f' => Some('\u{c}'),
                        'n' => Some('\n'),
                        'r' => Some('\r'),
                        't' => Some('\t'),
                        'v' => Some('\u{b}'),
                        '\\' | '\'' | '"' | '?' => Some(escaped),
                        _ => None,
                    };
                    match plain {
                        Some(c) => word.text.push(c),
                        None => {
                            // \xHH, \NNN, \uHHHH, \cX: a character the reader does not rebuild.
                            word.opaque = true;
                            word.text.push('\\');
                            word.text.push(escaped);
                        }
                    }
                }
                _ => word.text.push(q),
            }
        }
        self.problem("an unterminated `$'` quote");
    }

    fn double_quoted(&mut self, word: &mut Word, command: &mut SimpleCommand) {
        while let Some(q) = self.peek() {
            match q {
                '"' => {
                    self.at += 1;
                    return;
                }
                '\\' => {
                    match self.peek_at(1) {
                        Some(next @ ('"' | '\\' | '$' | '`')) => word.text.push(next),
                        Some('\n') => {}
                        Some(next) => {
                            word.text.push('\\');
                            word.text.push(next);
                        }
                        None => word.text.push('\\'),
                    }
                    self.at += 2;
                }
                '$' => self.dollar(word, command),
                '`' => self.backtick(word, command),
                _ => {
                    word.text.push(q);
                    self.at += 1;
                }
            }
        }
        self.problem("an unterminated `\"` quote");
    }

    /// `$name`, `${…}`, `$(…)`, `$((…))`, or a lone `$`.
    fn dollar(&mut self, word: &mut Word, command: &mut SimpleCommand) {
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                let start = self.at;
                self.at += 3;
                let body = self.balanced(')');
                if body.contains("$(") || body.contains('`') {
                    self.problem("an arithmetic expansion that runs commands");
                }
                // `$((PATH=0))` assigns: the program lookup changes.
                if body.contains('=') {
                    self.problem("an arithmetic expansion that assigns");
                }
                if self.peek() == Some(')') {
                    self.at += 1; // the first `)`, where `balanced` stopped
                }
                if self.peek() == Some(')') {
                    self.at += 1;
                } else {
                    self.problem("an unterminated `$((`");
                }
                word.opaque = true;
                word.text.extend(&self.chars[start..self.at]);
            }
            Some('(') => {
                self.at += 2;
                let inner = self.pipelines(Some(')'));
                command.substitutions.extend(inner);
                word.opaque = true;
                word.text.push_str("$(…)");
            }
            Some('{') => {
                let start = self.at;
                self.at += 2;
                let body = self.balanced('}');
                if body.contains(['$', '`', '\'', '"', '\\']) {
                    self.problem("a `${…}` expansion holding quotes or other expansions");
                }
                // `${X=v}`, `${X:=v}` and arithmetic in `${X:off}` or `${a[i]}`
                // assign: `${BASH_CMDS[cat]=/bin/rm}` makes `cat` run rm.
                if body.contains('=') {
                    self.problem("a `${…}` expansion that assigns");
                }
                word.opaque = true;
                word.text.extend(&self.chars[start..self.at]);
            }
            Some(c) if c.is_ascii_alphanumeric() || c == '_' => {
                word.opaque = true;
                word.text.push('$');
                self.at += 1;
                if c.is_ascii_digit() {
                    word.text.push(c);
                    self.at += 1;
                    return;
                }
                while let Some(c) = self
                    .peek()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                {
                    word.text.push(c);
                    self.at += 1;
                }
            }
            Some('[') => {
                // `$[…]`: bash's old arithmetic, which can assign like `$((…))`.
                self.problem("an arithmetic expansion `$[…]`");
                word.opaque = true;
                word.text.push('$');
                self.at += 1;
            }
            Some(c @ ('@' | '*' | '#' | '?' | '-' | '$' | '!')) => {
                word.opaque = true;
                word.text.push('$');
                word.text.push(c);
                self.at += 2;
            }
            _ => {
                word.text.push('$');
                self.at += 1;
            }
        }
    }

    /// Text up to the `close` that balances an already-open one; the cursor
    /// is left on that `close` (consumed for `}`).
    fn balanced(&mut self, close: char) -> String {
        let open = if close == ')' { '(' } else { '{' };
        let mut depth = 1;
        let mut body = String::new();
        while let Some(c) = self.peek() {
            if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    if close == '}' {
                        self.at += 1;
                    }
                    return body;
                }
            }
            body.push(c);
            self.at += 1;
        }
        self.problems.push(format!("an unterminated `{open}`"));
        body
    }

    /// `` `…` ``: the inner text, with `\``, `\\` and `\$` unescaped, is a
    /// command line of its own.
    fn backtick(&mut self, word: &mut Word, command: &mut SimpleCommand) {
        self.at += 1;
        let mut inner = String::new();
        let mut closed = false;
        while let Some(c) = self.peek() {
            self.at += 1;
            match c {
                '`' => {
                    closed = true;
                    break;
                }
                '\\' if matches!(self.peek(), Some('`' | '\\' | '$')) => {
                    if let Some(next) = self.peek() {
                        inner.push(next);
                    }
                    self.at += 1;
                }
                _ => inner.push(c),
            }
        }
        if !closed {
            self.problem("an unterminated backtick");
        }
        let parsed = parse_at_depth(&inner, self.depth + 1);
        self.problems.extend(parsed.problems);
        command.substitutions.extend(parsed.pipelines);
        word.opaque = true;
        word.text.push_str("$(…)");
    }
}

/// An assignment word: its name part unquoted.
fn is_assignment_word(word: &Word) -> bool {
    is_assignment(&word.text)
        && word
            .text
            .find('=')
            .is_some_and(|eq| eq < word.unquoted_prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(line: &str) -> Vec<Vec<String>> {
        parse(line)
            .commands()
            .into_iter()
            .map(|c| c.words.iter().map(|w| w.text.clone()).collect())
            .collect()
    }

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn understood(line: &str) -> bool {
        parse(line).problems.is_empty()
    }

    /// Found by fuzzing against bash (fuzz/fuzz_targets/shell.rs): a
    /// backslash that ends the line escapes nothing, and bash keeps it; the
    /// reader dropped it.
    #[test]
    fn a_backslash_at_the_end_is_kept() {
        assert_eq!(commands("c1 a\\"), vec![words(&["c1", "a\\"])]);
        assert_eq!(commands("c1 'a'\\"), vec![words(&["c1", "a\\"])]);
        assert_eq!(commands("c1 \\"), vec![words(&["c1", "\\"])]);
        assert_eq!(commands("c1 a\\\nb"), vec![words(&["c1", "ab"])]);
    }

    #[test]
    fn splits_on_operators_and_keeps_quotes_together() {
        assert_eq!(
            commands("cargo build && echo 'a && b' ; ls -la|wc -l || true"),
            vec![
                words(&["cargo", "build"]),
                words(&["echo", "a && b"]),
                words(&["ls", "-la"]),
                words(&["wc", "-l"]),
                words(&["true"])
            ]
        );
    }

    #[test]
    fn finds_commands_in_substitutions_subshells_and_groups() {
        let found =
            commands("echo $(rm -rf /) `whoami` (cd /tmp && ls) { git status; } > out.txt 2>&1");
        assert!(found.contains(&words(&["rm", "-rf", "/"])), "{found:?}");
        assert!(found.contains(&words(&["whoami"])), "{found:?}");
        assert!(found.contains(&words(&["cd", "/tmp"])), "{found:?}");
        assert!(found.contains(&words(&["git", "status"])), "{found:?}");
        assert!(
            !found.iter().flatten().any(|w| w == "out.txt"),
            "redirect targets are not arguments"
        );
    }

    #[test]
    fn redirect_targets_are_kept_with_their_kind() {
        let parsed = parse("echo x > /tmp/a 2>>log <in.txt 2>&1 &>all >|clob cat <<<data");
        let redirects: Vec<(RedirectKind, String)> = parsed
            .commands()
            .iter()
            .flat_map(|c| c.redirects.iter())
            .map(|r| (r.kind, r.target.text.clone()))
            .collect();
        use RedirectKind::*;
        assert_eq!(
            redirects,
            vec![
                (Write, "/tmp/a".to_string()),
                (Write, "log".to_string()),
                (Read, "in.txt".to_string()),
                (Duplicate, "1".to_string()),
                (Write, "all".to_string()),
                (Write, "clob".to_string()),
                (Data, "data".to_string()),
            ]
        );
        assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
    }

    #[test]
    fn ansi_c_quotes_and_heredocs_hide_nothing() {
        // bash reads $'\'' as one quote character: the `;` after it is an operator.
        let found = commands("echo $'\\'' ; rm -rf victim #'");
        assert!(
            found.contains(&words(&["rm", "-rf", "victim"])),
            "{found:?}"
        );
        // A quoted here-document's body is data, and what follows the delimiter runs.
        let found = commands("echo <<'EOF'\necho '\nEOF\nrm -rf victim #'");
        assert!(
            found.contains(&words(&["rm", "-rf", "victim"])),
            "{found:?}"
        );
        assert!(!found.iter().flatten().any(|w| w == "'"), "{found:?}");
        assert!(understood("cat <<'EOF'\n$(not run)\nEOF\n"));
        assert!(!understood("cat <<EOF\n$(runs)\nEOF\n"));
        assert!(!understood("cat <<EOF\nno end"));
    }

    #[test]
    fn assignments_are_kept_apart() {
        let parsed = parse("GIT_CONFIG_COUNT=1 GIT_CONFIG_VALUE_0='rm -rf x' git status");
        let command = &parsed.commands()[0];
        assert_eq!(command.texts(), vec!["git", "status"]);
        assert_eq!(command.assignments.len(), 2);
        assert_eq!(command.assignments[1].text, "GIT_CONFIG_VALUE_0=rm -rf x");
    }

    #[test]
    fn expansions_are_opaque_and_globs_marked() {
        let parsed = parse("cat $HOME/x \"${A}\" ~/y {a,b} $'\\x2f' *.rs 'lit*'");
        let command = &parsed.commands()[0];
        let flags: Vec<(bool, bool)> = command.words.iter().map(|w| (w.opaque, w.glob)).collect();
        assert_eq!(
            flags,
            vec![
                (false, false),
                (true, false),
                (true, false),
                (true, false),
                (true, false),
                (true, false),
                (false, true),
                (false, false)
            ]
        );
    }

    #[test]
    fn unwraps_shells_and_wrappers() {
        let found = commands("FOO=1 sudo -u root env BAR=2 bash -c 'git push --force origin main'");
        assert!(
            found.contains(&words(&["git", "push", "--force", "origin", "main"])),
            "{found:?}"
        );
        let found = commands("find . -name '*.o' -exec rm -rf {} \\;");
        assert!(found.contains(&words(&["rm", "-rf", "{}"])), "{found:?}");
        let found = commands("ls | xargs -n 1 rm -rf");
        assert!(found.contains(&words(&["rm", "-rf"])), "{found:?}");
        let found = commands("timeout -s KILL 5 sh -c \"echo \\\"$(git clean -fdx)\\\"\"");
        assert!(
            found.contains(&words(&["git", "clean", "-fdx"])),
            "{found:?}"
        );
        let found = commands("echo `echo \\`rm -r x\\``");
        assert!(found.contains(&words(&["rm", "-r", "x"])), "{found:?}");
    }

    /// Each wrapper's own options are data: the command after them is
    /// found, and an option the table does not know is a problem.
    #[test]
    fn wrappers_are_seen_through_with_their_options() {
        for (line, inner, known) in [
            ("prlimit --nofile=10 rm -rf x", "rm -rf x", true),
            ("strace -f -o /dev/null rm x", "rm x", true),
            ("stdbuf -oL rm x", "rm x", true),
            ("timeout -k 1 --signal=KILL 5 rm x", "rm x", true),
            ("flock -n lock rm x", "rm x", true),
            ("flock lock -c 'rm x'", "rm x", true),
            ("busybox sh -c 'rm x'", "rm x", true),
            ("env -i A=1 rm x", "rm x", true),
            ("git -C . --no-pager push", "git push", true),
            ("sudo -u root -- rm x", "rm x", true),
            ("strace -Q rm x", "rm x", false),
            ("strace -Q 1 rm x", "rm x", false),
            ("nice --frob rm x", "rm x", false),
            ("git --frob push", "git push", false),
            ("env -C /tmp rm x", "rm x", false),
        ] {
            let parsed = parse(line);
            let found: Vec<String> = parsed
                .commands()
                .iter()
                .map(|c| c.texts().join(" "))
                .collect();
            assert!(found.contains(&inner.to_string()), "{line}: {found:?}");
            assert_eq!(
                parsed.problems.is_empty(),
                known,
                "{line}: {:?}",
                parsed.problems
            );
        }
    }

    #[test]
    fn brace_expansion_is_seen_through_quoted_blanks() {
        for line in ["cat {\"a b\",/etc}", "cat {a\\ b,/etc}", "cat {'a b',/etc}"] {
            assert!(parse(line).commands()[0].words[1].opaque, "{line}");
        }
        assert!(!parse("echo '{a b,c}'").commands()[0].words[1].opaque);
    }

    #[test]
    fn a_pipe_continues_past_newlines_and_comments() {
        let parsed = parse("echo x | # feed it\n\n  sh");
        assert_eq!(parsed.pipelines[0].commands.len(), 2, "{parsed:?}");
    }

    #[test]
    fn tilde_after_an_assignments_equals_is_a_home_directory() {
        let parsed = parse("dd if=~/.ssh/id_rsa a=b:~/x --file=~/y");
        let opaque: Vec<bool> = parsed.commands()[0]
            .words
            .iter()
            .map(|w| w.opaque)
            .collect();
        // bash: `if=/root/.ssh/id_rsa a=b:/root/x --file=~/y`.
        assert_eq!(opaque, vec![false, true, true, false]);
    }

    #[test]
    fn a_glob_with_quoted_wildcards_is_marked() {
        let parsed = parse("cat '['x]* \\** a*");
        let flags: Vec<bool> = parsed.commands()[0].words[1..]
            .iter()
            .map(|w| w.quoted_glob)
            .collect();
        assert_eq!(flags, vec![true, true, false]);
    }

    #[test]
    fn keywords_and_escapes() {
        let found = commands("if true; then rm -r ~; fi; while false; do echo; done");
        assert!(found.contains(&words(&["rm", "-r", "~"])), "{found:?}");
        assert_eq!(
            commands("echo a\\ b \\\n c"),
            vec![words(&["echo", "a b", "c"])]
        );
    }

    #[test]
    fn what_it_does_not_follow_is_a_problem() {
        for line in [
            "case x in a) rm -rf y;; esac",
            "for f in *; do rm $f; done",
            "f() { rm -rf x; }; f",
            "echo $(( $(rm x) ))",
            "(( x = 1 ))",
            "echo ${A:-$(rm x)}",
            "echo 'unterminated",
            "echo \"x $(",
            "tee >(sh)",
            "cat <<EOF",
            "bash -c \"$CMD\"",
            "echo )",
            "[[ -f x ]]",
            "echo ${BASH_CMDS[cat]=/bin/rm}",
            "echo ${CDPATH:=/}",
            "echo ${HOME:PATH=0}",
            "echo $((PATH=0))",
            "echo $[PATH=0]",
        ] {
            assert!(!understood(line), "understood: {line}");
        }
        for line in [
            "cargo test --release",
            "git status && git diff | head -n 5",
            "ls -la src/ > listing.txt 2>&1",
            "echo \"$(git rev-parse HEAD)\"",
            "cat <<'EOF' > notes.md\nhello $x\nEOF\n",
            "if test -f Cargo.toml; then cargo build; fi",
        ] {
            assert!(
                understood(line),
                "not understood: {line}: {:?}",
                parse(line).problems
            );
        }
    }

    #[test]
    fn never_panics_on_unbalanced_input() {
        for line in [
            "echo 'unterminated",
            "echo \"x $(",
            "(((",
            ")))",
            "`",
            "a | | b",
            "\\",
            "echo $(",
            "<(",
            ">",
            "$'\\",
            "${",
            "$((",
            "<<",
            "&>",
            "{",
        ] {
            let _ = parse(line);
        }
    }
}
