//! A small shell-syntax reader: enough of POSIX sh and bash to find every
//! simple command in a line, so that permission checks look at each command
//! of `a && b; c | d`, inside `$(…)`, backticks, `( … )`, `{ …; }`, and inside
//! wrappers such as `bash -c '…'`, `env`, `xargs` or `sudo`.
//!
//! It does not evaluate anything: variables stay as written, globs are not
//! expanded. What it must never do is *hide* a command, so anything it does
//! not understand is kept as words of some command rather than dropped.

/// One simple command: its words after quote removal, and the commands run by
/// substitutions inside those words (`$(…)`, backticks, `<(…)`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    pub words: Vec<String>,
    pub substitutions: Vec<Pipeline>,
}

/// Commands joined by `|`: the output of each feeds the next.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pipeline {
    pub commands: Vec<SimpleCommand>,
}

/// Reads a command line into its pipelines (those joined by `;`, `&&`, `||`,
/// `&`, newlines and grouping), in order. Wrappers are unwrapped: for
/// `sudo env X=1 rm -rf /` the pipeline holds `sudo env X=1 rm -rf /` and,
/// after it, `rm -rf /` as a command of its own.
pub fn parse(line: &str) -> Vec<Pipeline> {
    let mut reader = Reader {
        chars: line.chars().collect(),
        at: 0,
        in_backtick: false,
    };
    let mut pipelines = reader.pipelines(None);
    let mut unwrapped = Vec::new();
    for pipeline in &pipelines {
        for command in &pipeline.commands {
            unwrap_wrappers(&command.words, 0, &mut unwrapped);
        }
    }
    pipelines.extend(unwrapped);
    pipelines
}

/// Every simple command in the parsed line, substitutions included.
pub fn all_commands(pipelines: &[Pipeline]) -> Vec<&SimpleCommand> {
    let mut out = Vec::new();
    for pipeline in pipelines {
        for command in &pipeline.commands {
            out.push(command);
            out.extend(all_commands(&command.substitutions));
        }
    }
    out
}

/// All pipelines, those inside substitutions included.
pub fn all_pipelines(pipelines: &[Pipeline]) -> Vec<&Pipeline> {
    let mut out = Vec::new();
    for pipeline in pipelines {
        out.push(pipeline);
        for command in &pipeline.commands {
            out.extend(all_pipelines(&command.substitutions));
        }
    }
    out
}

/// Commands that run their arguments as another command line or command.
const SHELLS: [&str; 6] = ["sh", "bash", "zsh", "dash", "ksh", "fish"];

/// Finds the command a wrapper runs (`env X=1 cmd`, `sudo -u u cmd`,
/// `xargs -0 cmd`, `bash -c 'line'`, …) and adds it as a pipeline of its own.
fn unwrap_wrappers(words: &[String], depth: usize, out: &mut Vec<Pipeline>) {
    if depth > 8 || words.is_empty() {
        return;
    }
    let name = program_name(&words[0]);
    let rest = &words[1..];
    let inner: Option<&[String]> = match name {
        "env" => Some(skip_while_options(rest, |w| {
            w.contains('=') || w.starts_with('-')
        })),
        "sudo" | "doas" => Some(skip_options_with_values(
            rest,
            &["-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t"],
        )),
        "xargs" => Some(skip_options_with_values(
            rest,
            &["-n", "-L", "-P", "-s", "-I", "-d", "-E", "-a"],
        )),
        "nohup" | "time" | "command" | "builtin" | "exec" | "stdbuf" | "chroot" | "setsid"
        | "unbuffer" => Some(skip_while_options(rest, |w| w.starts_with('-'))),
        "nice" | "ionice" => Some(skip_options_with_values(rest, &["-n", "-c"])),
        "timeout" => {
            let after = skip_options_with_values(rest, &["-s", "-k", "--signal", "--kill-after"]);
            after.get(1..) // the duration, then the command
        }
        "find" => {
            // find … -exec CMD … ;   and -execdir, -ok, -okdir
            let at = rest
                .iter()
                .position(|w| matches!(w.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"));
            at.map(|i| {
                let command = &rest[i + 1..];
                let end = command
                    .iter()
                    .position(|w| w == ";" || w == "+")
                    .unwrap_or(command.len());
                &command[..end]
            })
        }
        _ => None,
    };
    if let Some(inner) = inner.filter(|inner| !inner.is_empty()) {
        out.push(Pipeline {
            commands: vec![SimpleCommand {
                words: inner.to_vec(),
                substitutions: Vec::new(),
            }],
        });
        unwrap_wrappers(inner, depth + 1, out);
    }
    // A shell or eval with a command line as an argument: read that line too.
    let line = match name {
        shell if SHELLS.contains(&shell) => rest
            .iter()
            .position(|w| {
                w == "-c" || (w.starts_with('-') && !w.starts_with("--") && w.contains('c'))
            })
            .and_then(|i| rest.get(i + 1))
            .cloned(),
        "eval" => Some(rest.join(" ")),
        _ => None,
    };
    if let Some(line) = line {
        for pipeline in parse(&line) {
            for command in &pipeline.commands {
                unwrap_wrappers(&command.words, depth + 1, out);
            }
            out.push(pipeline);
        }
    }
}

/// `/usr/bin/rm` and `rm` are the same program; `\rm` skips aliases.
pub fn program_name(word: &str) -> &str {
    let word = word.trim_start_matches('\\');
    word.rsplit('/').next().unwrap_or(word)
}

fn skip_while_options(words: &[String], is_option: impl Fn(&str) -> bool) -> &[String] {
    let start = words
        .iter()
        .position(|w| !is_option(w))
        .unwrap_or(words.len());
    &words[start..]
}

fn skip_options_with_values<'a>(words: &'a [String], with_value: &[&str]) -> &'a [String] {
    let mut i = 0;
    while let Some(word) = words.get(i) {
        if word == "--" {
            return &words[i + 1..];
        }
        if !word.starts_with('-') {
            break;
        }
        i += if with_value.contains(&word.as_str()) {
            2
        } else {
            1
        };
    }
    &words[i.min(words.len())..]
}

struct Reader {
    chars: Vec<char>,
    at: usize,
    /// Inside `…`: a backtick there closes, it does not open.
    in_backtick: bool,
}

/// Words that start a compound command; the command proper follows them.
const PREFIX_KEYWORDS: [&str; 9] = [
    "if", "then", "else", "elif", "do", "while", "until", "!", "{",
];
/// Words that end one.
const END_KEYWORDS: [&str; 4] = ["fi", "done", "esac", "}"];

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn peek2(&self) -> Option<char> {
        self.chars.get(self.at + 1).copied()
    }

    /// Reads pipelines until the end, or until `close` (`)` or a backtick).
    fn pipelines(&mut self, close: Option<char>) -> Vec<Pipeline> {
        let mut pipelines = Vec::new();
        let mut pipeline = Pipeline::default();
        let mut command = SimpleCommand::default();
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else { break };
            if Some(c) == close {
                self.at += 1;
                break;
            }
            match c {
                '#' => self.skip_comment(),
                '\n' | ';' | '&' | '|' => {
                    let piped = c == '|' && self.peek2() != Some('|');
                    self.at += 1;
                    if matches!(
                        (c, self.peek()),
                        ('&', Some('&')) | ('|', Some('|')) | ('|', Some('&')) | (';', Some(';'))
                    ) {
                        self.at += 1;
                    }
                    Self::end_command(&mut pipeline, &mut command);
                    if !piped {
                        Self::end_pipeline(&mut pipelines, &mut pipeline);
                    }
                }
                '(' => {
                    // A subshell: its pipelines stand on their own.
                    self.at += 1;
                    Self::end_command(&mut pipeline, &mut command);
                    Self::end_pipeline(&mut pipelines, &mut pipeline);
                    pipelines.extend(self.pipelines(Some(')')));
                }
                ')' => self.at += 1, // unbalanced: ignore, keep reading
                '<' | '>' => self.redirection(&mut command),
                _ => {
                    let before = command.substitutions.len();
                    let word = self.word(&mut command);
                    let keyword = command.words.is_empty() && command.substitutions.len() == before;
                    if keyword && PREFIX_KEYWORDS.contains(&word.as_str()) {
                        continue;
                    }
                    if keyword && END_KEYWORDS.contains(&word.as_str()) {
                        Self::end_command(&mut pipeline, &mut command);
                        Self::end_pipeline(&mut pipelines, &mut pipeline);
                        continue;
                    }
                    // `2>`: the fd number was dropped, leaving nothing.
                    if word.is_empty() && matches!(self.peek(), Some('<' | '>')) {
                        continue;
                    }
                    // Assignments before the command name (`A=1 cmd`) are not the command.
                    if command.words.is_empty() && is_assignment(&word) {
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
        if !command.words.is_empty() || !command.substitutions.is_empty() {
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
        while matches!(self.peek(), Some(' ' | '\t'))
            || (self.peek() == Some('\\') && self.peek2() == Some('\n'))
        {
            self.at += if self.peek() == Some('\\') { 2 } else { 1 };
        }
    }

    fn skip_comment(&mut self) {
        while self.peek().is_some_and(|c| c != '\n') {
            self.at += 1;
        }
    }

    /// `>`, `>>`, `<`, `2>&1`, `&>`, `<(…)`: the target word is a file, not an argument.
    fn redirection(&mut self, command: &mut SimpleCommand) {
        let c = self.peek();
        self.at += 1;
        if self.peek() == Some('(') {
            // Process substitution: a command of its own.
            self.at += 1;
            let inner = self.pipelines(Some(')'));
            command.substitutions.extend(inner);
            return;
        }
        while matches!(self.peek(), Some('>' | '<' | '&' | '|')) {
            self.at += 1;
        }
        let _ = c;
        self.skip_blanks();
        if self
            .peek()
            .is_some_and(|c| !matches!(c, '\n' | ';' | '|' | '&' | ')'))
        {
            let mut sink = SimpleCommand::default();
            self.word(&mut sink);
            command.substitutions.extend(sink.substitutions);
        }
    }

    /// One word, quotes removed; substitutions inside it go to `command`.
    fn word(&mut self, command: &mut SimpleCommand) -> String {
        let mut word = String::new();
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => {
                    // `2>`: a digit run right before a redirection is its fd.
                    if matches!(c, '<' | '>')
                        && !word.is_empty()
                        && word.chars().all(|d| d.is_ascii_digit())
                    {
                        word.clear();
                    }
                    break;
                }
                '\\' => {
                    self.at += 1;
                    if let Some(next) = self.peek() {
                        if next != '\n' {
                            word.push(next);
                        }
                        self.at += 1;
                    }
                }
                '\'' => {
                    self.at += 1;
                    while let Some(q) = self.peek() {
                        self.at += 1;
                        if q == '\'' {
                            break;
                        }
                        word.push(q);
                    }
                }
                '"' => {
                    self.at += 1;
                    while let Some(q) = self.peek() {
                        match q {
                            '"' => {
                                self.at += 1;
                                break;
                            }
                            '\\' if matches!(self.peek2(), Some('"' | '\\' | '$' | '`')) => {
                                word.push(self.peek2().unwrap_or('\\'));
                                self.at += 2;
                            }
                            '$' if self.peek2() == Some('(') => {
                                word.push_str(&self.substitution(command))
                            }
                            '`' => word.push_str(&self.backtick(command)),
                            _ => {
                                word.push(q);
                                self.at += 1;
                            }
                        }
                    }
                }
                '$' if self.peek2() == Some('(') => word.push_str(&self.substitution(command)),
                '`' if self.in_backtick => break,
                '`' => word.push_str(&self.backtick(command)),
                _ => {
                    word.push(c);
                    self.at += 1;
                }
            }
        }
        word
    }

    /// `$(…)` (or `$((…))`, read the same way): the inner line is parsed and
    /// kept; the word gets a placeholder.
    fn substitution(&mut self, command: &mut SimpleCommand) -> String {
        self.at += 2;
        let inner = self.pipelines(Some(')'));
        command.substitutions.extend(inner);
        "$(…)".to_string()
    }

    fn backtick(&mut self, command: &mut SimpleCommand) -> String {
        self.at += 1;
        let outer = std::mem::replace(&mut self.in_backtick, true);
        let inner = self.pipelines(Some('`'));
        self.in_backtick = outer;
        command.substitutions.extend(inner);
        "$(…)".to_string()
    }
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(line: &str) -> Vec<Vec<String>> {
        all_commands(&parse(line))
            .into_iter()
            .map(|c| c.words.clone())
            .collect()
    }

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
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
    }

    #[test]
    fn keywords_and_escapes() {
        let found = commands("if true; then rm -r ~; fi; for f in *; do echo $f; done");
        assert!(found.contains(&words(&["rm", "-r", "~"])), "{found:?}");
        assert_eq!(
            commands("echo a\\ b \\\n c"),
            vec![words(&["echo", "a b", "c"])]
        );
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
        ] {
            let _ = parse(line);
        }
    }
}
