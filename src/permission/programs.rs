//! What particular programs do with their arguments that the shell reader
//! cannot see: run another program (`sort --compress-program`, sed's `e`),
//! read a directory whole (`grep -r`, `ls -RL`), or take their settings from
//! a repository they find where they run (git).

use std::path::{Path, PathBuf};

use super::options::{WRAPPERS, command_starts, git_subcommand, option_value};
use super::shell::{self, SimpleCommand, Word};

/// How a program can write a file or run another program through its
/// options and operands: what makes a "read-only" command more than that.
/// `program` is a program's name or `git SUBCOMMAND` (`git` alone: any).
/// Options are matched as spelled (`-o F`, `-oF`, a letter anywhere in a
/// cluster, `--output=F`, `--output F`, an abbreviation of a long one), so
/// a spelling the table cannot place counts against the command.
pub(super) struct Effects {
    pub program: &'static str,
    /// Options whose value is a file it writes; `of=` (dd) is an operand's.
    pub writes_to: &'static [&'static str],
    /// Operands it writes.
    pub operands: Written,
    /// Options with which it writes files whose names the line does not
    /// hold (`curl -O`, `tar -x`, `cp -r`).
    pub writes_unnamed: &'static [&'static str],
    /// It writes files whose names the line does not hold unless one of
    /// these options is given (`wget` without `-O`, `unzip` without `-l`);
    /// `None` when it does not.
    pub unnamed_unless: Option<&'static [&'static str]>,
    /// Options with which it runs another program.
    pub runs: &'static [&'static str],
    /// Other options whose value is the next word (so not an operand).
    pub values: &'static [&'static str],
    /// Its first argument may be a cluster without its `-` (`tar xf`).
    pub bundled_first: bool,
}

/// Which of a program's operands it writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Written {
    None,
    /// Every one (`tee`, `mv`, whose sources go away).
    Every,
    /// The last, when there are two or more (`cp`, `install`, `ln`).
    Last,
    /// The one at this place, counting from 0 (`uniq IN OUT`).
    At(usize),
}

const fn effects(program: &'static str) -> Effects {
    Effects {
        program,
        writes_to: &[],
        operands: Written::None,
        writes_unnamed: &[],
        unnamed_unless: None,
        runs: &[],
        values: &[],
        bundled_first: false,
    }
}

/// The options of cp, mv, install and ln whose value is the next word.
const COPY_VALUES: &[&str] = &[
    "-S", "--suffix", "-m", "--mode", "-o", "--owner", "-g", "--group",
];
const COPY_TARGET: &[&str] = &["-t", "--target-directory"];

/// The table: every program whose writing or running options the check knows.
pub(super) const EFFECTS: [Effects; 31] = [
    Effects {
        writes_to: &["-o", "--output"],
        runs: &["--compress-program"],
        ..effects("sort")
    },
    Effects {
        operands: Written::Every,
        ..effects("tee")
    },
    Effects {
        writes_to: &["of="],
        ..effects("dd")
    },
    Effects {
        writes_to: &[
            "-o",
            "--output",
            "-D",
            "--dump-header",
            "-c",
            "--cookie-jar",
            "--trace",
            "--trace-ascii",
            "--stderr",
            "--libcurl",
            "--etag-save",
            "--hsts",
            "--alt-svc",
        ],
        // `-K` reads options from a file: an `output` line among them.
        writes_unnamed: &[
            "-O",
            "--remote-name",
            "--remote-name-all",
            "-J",
            "--remote-header-name",
            "--output-dir",
            "-K",
            "--config",
        ],
        ..effects("curl")
    },
    Effects {
        writes_to: &[
            "-O",
            "--output-document",
            "-o",
            "--output-file",
            "-a",
            "--append-output",
        ],
        writes_unnamed: &["-P", "--directory-prefix", "-i", "--input-file"],
        unnamed_unless: Some(&["-O", "--output-document", "--spider"]),
        runs: &["--use-askpass"],
        ..effects("wget")
    },
    Effects {
        writes_to: &["-o", "-O", "--log-file", "--LOG-FILE"],
        ..effects("less")
    },
    Effects {
        runs: &["-P", "--pager", "-H", "--html"],
        ..effects("man")
    },
    Effects {
        operands: Written::At(1),
        values: &[
            "-f",
            "-s",
            "-w",
            "--skip-fields",
            "--skip-chars",
            "--check-chars",
        ],
        ..effects("uniq")
    },
    Effects {
        operands: Written::At(1),
        values: &[
            "-c", "-g", "-l", "-o", "-s", "-n", "-cols", "-len", "-seek", "-name",
        ],
        ..effects("xxd")
    },
    Effects {
        runs: &["--filter"],
        unnamed_unless: Some(&["--help", "--version"]),
        ..effects("split")
    },
    Effects {
        unnamed_unless: Some(&["--help", "--version"]),
        ..effects("csplit")
    },
    Effects {
        writes_unnamed: &[
            "-x",
            "-c",
            "-r",
            "-u",
            "-A",
            "--extract",
            "--get",
            "--create",
            "--append",
            "--update",
            "--concatenate",
            "--catenate",
            "--delete",
        ],
        runs: &[
            "-I",
            "-F",
            "--use-compress-program",
            "--to-command",
            "--checkpoint-action",
            "--info-script",
            "--new-volume-script",
        ],
        bundled_first: true,
        ..effects("tar")
    },
    Effects {
        writes_to: &["-d"],
        unnamed_unless: Some(&["-l", "-v", "-t", "-p", "-Z", "-z"]),
        ..effects("unzip")
    },
    Effects {
        operands: Written::At(0),
        writes_to: &["-O", "--output-file"],
        runs: &["-TT", "--unzip-command"],
        values: &[
            "-b",
            "-n",
            "-t",
            "-tt",
            "-P",
            "-Z",
            "-s",
            "--temp-path",
            "--suffixes",
        ],
        ..effects("zip")
    },
    Effects {
        writes_to: &["-o", "--output", "-r", "--reject-file"],
        unnamed_unless: Some(&["--dry-run"]),
        ..effects("patch")
    },
    Effects {
        operands: Written::Last,
        writes_unnamed: &[
            "-r",
            "-R",
            "-a",
            "--recursive",
            "--archive",
            "-t",
            "--target-directory",
        ],
        values: COPY_VALUES,
        ..effects("cp")
    },
    Effects {
        operands: Written::Every,
        writes_unnamed: COPY_TARGET,
        values: COPY_VALUES,
        ..effects("mv")
    },
    Effects {
        operands: Written::Last,
        writes_unnamed: COPY_TARGET,
        values: COPY_VALUES,
        ..effects("install")
    },
    Effects {
        operands: Written::Last,
        writes_unnamed: COPY_TARGET,
        values: COPY_VALUES,
        ..effects("ln")
    },
    Effects {
        runs: &["-e", "--rsh", "--rsync-path"],
        unnamed_unless: Some(&["--list-only", "-n", "--dry-run"]),
        ..effects("rsync")
    },
    Effects {
        writes_to: &["-o", "--output"],
        ..effects("time")
    },
    Effects {
        writes_to: &["-o", "--output"],
        runs: &["-p", "--attach"],
        ..effects("strace")
    },
    Effects {
        writes_to: &["-o", "--output"],
        runs: &["-p"],
        ..effects("ltrace")
    },
    // git: `--output` writes in every subcommand that has it (the diff
    // family, archive); `--ext-diff` runs the configured diff program.
    Effects {
        writes_to: &["--output"],
        runs: &["--ext-diff"],
        ..effects("git")
    },
    Effects {
        runs: &["-O", "--open-files-in-pager"],
        ..effects("git grep")
    },
    Effects {
        writes_to: &["-o"],
        runs: &["--remote", "--exec"],
        ..effects("git archive")
    },
    Effects {
        writes_to: &["-o", "--output-directory"],
        unnamed_unless: Some(&["--stdout"]),
        ..effects("git format-patch")
    },
    Effects {
        // `--stat --apply` applies all the same.
        writes_unnamed: &["--apply"],
        unnamed_unless: Some(&["--check", "--stat", "--numstat", "--summary"]),
        ..effects("git apply")
    },
    Effects {
        runs: &["-x", "--extcmd", "-t", "--tool", "-g", "--gui"],
        ..effects("git difftool")
    },
    Effects {
        writes_to: &["-o"],
        ..effects("git bundle")
    },
    Effects {
        runs: &["-t", "--tool"],
        ..effects("git mergetool")
    },
];

/// What a command does beyond reading, by the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Effect {
    /// It writes the file named by the word at this place among the
    /// command's words (the value alone: `--output=F` becomes `F`).
    Writes { at: usize, target: Word },
    /// It writes files the line does not name, or runs another program:
    /// why, for the user.
    Concern(String),
}

/// The program as the table names it (`sort`, `git log`) and where its
/// own arguments start among the command's words.
fn table_names(command: &SimpleCommand) -> Vec<(String, usize)> {
    let Some(program) = command.program() else {
        return Vec::new();
    };
    let mut names = vec![(program.to_string(), 1)];
    if program == "git"
        && let Ok(Some(sub)) = git_subcommand(&command.texts()[1..])
    {
        names.push((format!("git {}", command.words[1 + sub].text), 2 + sub));
        names[0].1 = 2 + sub;
    }
    names
}

/// Everything the table says `command` does beyond reading.
pub(super) fn effects_of(command: &SimpleCommand) -> Vec<Effect> {
    let mut found = Vec::new();
    for (name, from) in table_names(command) {
        let Some(entry) = EFFECTS.iter().find(|e| e.program == name) else {
            continue;
        };
        // A wrapper's options end where the command it runs starts.
        let end = WRAPPERS
            .iter()
            .find(|w| w.names.contains(&name.as_str()))
            .and_then(|w| {
                command_starts(&command.texts()[1..], &w.options, w.operands, &mut None)
                    .into_iter()
                    .min()
            })
            .map_or(command.words.len(), |start| start + 1);
        let words = &command.words[..end];
        fn matches<'a>(text: &'a str, options: &[&str]) -> Option<Option<&'a str>> {
            options.iter().find_map(|option| option_value(text, option))
        }
        let mut operands = Vec::new();
        let mut options_ended = false;
        let mut excused = false;
        let mut at = from;
        while let Some(word) = words.get(at) {
            let mut text = word.text.clone();
            if entry.bundled_first && at == from && !text.starts_with('-') {
                text.insert(0, '-');
            }
            if text == "--" && !options_ended {
                options_ended = true;
                at += 1;
                continue;
            }
            if options_ended || !text.starts_with('-') || text.len() == 1 {
                // dd's `of=FILE` is an operand.
                if let Some(Some(value)) = matches(&text, entry.writes_to) {
                    let mut target = word.clone();
                    target.text = value.to_string();
                    found.push(Effect::Writes { at, target });
                } else {
                    operands.push(at);
                }
                at += 1;
                continue;
            }
            excused |= entry
                .unnamed_unless
                .is_some_and(|unless| matches(&text, unless).is_some());
            if matches(&text, entry.runs).is_some() {
                found.push(Effect::Concern(format!(
                    "`{name} {}` runs a program named on the command line, or attaches to one",
                    word.text
                )));
            }
            if matches(&text, entry.writes_unnamed).is_some() {
                found.push(Effect::Concern(format!(
                    "`{name} {}` writes files the line does not name",
                    word.text
                )));
            }
            let dashed: Vec<&str> = entry
                .writes_to
                .iter()
                .copied()
                .filter(|o| o.starts_with('-'))
                .collect();
            match matches(&text, &dashed) {
                Some(Some(value)) => {
                    let mut target = word.clone();
                    target.text = value.to_string();
                    found.push(Effect::Writes { at, target });
                }
                Some(None) => {
                    if let Some(next) = words.get(at + 1) {
                        found.push(Effect::Writes {
                            at: at + 1,
                            target: next.clone(),
                        });
                    }
                    at += 1;
                }
                // An option whose value is the next word: not an operand.
                // Matched whole only, so a cluster never hides an operand.
                None if entry.values.contains(&text.as_str()) => at += 1,
                None => {}
            }
            at += 1;
        }
        let written: Vec<usize> = match entry.operands {
            Written::None => Vec::new(),
            Written::Every => operands.clone(),
            Written::Last => operands.last().copied().into_iter().collect(),
            Written::At(place) => operands.get(place).copied().into_iter().collect(),
        };
        for place in written {
            found.push(Effect::Writes {
                at: place,
                target: words[place].clone(),
            });
        }
        if entry.unnamed_unless.is_some() && !excused {
            found.push(Effect::Concern(format!(
                "`{name}` writes files the line does not name"
            )));
        }
    }
    found
}

/// sed's scripts (the `-e` values, else its first operand) and whether it
/// edits its files in place; an error where the script is in a file.
pub(super) fn sed_script(args: &[Word]) -> Result<(Vec<&str>, bool), String> {
    let mut scripts = Vec::new();
    let mut operands = Vec::new();
    let mut in_place = false;
    let mut words = args.iter().map(|w| w.text.as_str());
    while let Some(word) = words.next() {
        match word {
            "-e" | "--expression" => scripts.extend(words.next()),
            "-f" | "--file" => return Err("the sed script is read from a file".into()),
            "-l" | "--line-length" => {
                words.next();
            }
            "--" => operands.extend(words.by_ref()),
            _ if word.starts_with("--expression=") => scripts.push(&word["--expression=".len()..]),
            _ if word.starts_with("--file") => {
                return Err("the sed script is read from a file".into());
            }
            _ if word.starts_with("--in-place") => in_place = true,
            _ if word.starts_with("--") => {}
            _ if word.starts_with('-') && word.len() > 1 => {
                // A cluster: `-ne 'p'`, `-i.bak`, `-f script`.
                let letters = &word[1..];
                if letters.starts_with('i') || letters.contains('i') && !letters.contains('e') {
                    in_place = true;
                }
                if letters.contains('f') {
                    return Err("the sed script is read from a file".into());
                }
                if let Some((_, glued)) = letters.split_once('e') {
                    if glued.is_empty() {
                        scripts.extend(words.next());
                    } else {
                        scripts.push(glued);
                    }
                }
            }
            _ => operands.push(word),
        }
    }
    if scripts.is_empty() && !operands.is_empty() {
        scripts.push(operands[0]);
    }
    Ok((scripts, in_place))
}

/// Whether a sed script holds a command or flag that runs a command (`e`),
/// writes a file (`w`, `W`) or reads one (`r`, `R`): the letters left once
/// every `s`/`y` argument and every address regex is taken out. Text of
/// `a`, `i`, `c` and labels stay in, so they may ask needlessly.
pub(super) fn sed_runs_or_writes(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut rest = String::new();
    let mut i = 0;
    let skip_to = |from: usize, delimiter: char, parts: usize| {
        let (mut j, mut seen) = (from, 0);
        while j < chars.len() && seen < parts {
            if chars[j] == '\\' {
                j += 1;
            } else if chars[j] == delimiter {
                seen += 1;
            }
            j += 1;
        }
        j
    };
    while let Some(&c) = chars.get(i) {
        let next = chars.get(i + 1).copied();
        match (c, next) {
            ('s' | 'y', Some(d))
                if !d.is_alphanumeric() && !matches!(d, '\n' | '\\' | ' ' | ';') =>
            {
                i = skip_to(i + 2, d, 2);
            }
            ('/', _) => i = skip_to(i + 1, '/', 1),
            ('\\', Some(d)) => i = skip_to(i + 2, d, 1),
            _ => {
                rest.push(c);
                i += 1;
            }
        }
    }
    rest.contains(['e', 'w', 'W', 'r', 'R'])
}

/// The repository git would find from `dir` (searching up to the root) if
/// it is not the workspace's own `.git`: a `.git` below the root, or a
/// directory shaped like a bare repository (`HEAD`, `objects/`, `refs/`).
pub(super) fn foreign_repository(dir: &Path, root: &Path) -> Option<PathBuf> {
    let mut at = Some(dir);
    while let Some(dir) = at.filter(|dir| dir.starts_with(root)) {
        let bare =
            dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir();
        if dir == root {
            return (bare && !dir.join(".git").exists()).then(|| dir.to_path_buf());
        }
        if bare || dir.join(".git").exists() {
            return Some(dir.to_path_buf());
        }
        at = dir.parent();
    }
    None
}

/// git's subcommand in `command`, past its global options.
fn git_subcommand_name(command: &SimpleCommand) -> Option<&str> {
    git_subcommand_words(command).map(|(sub, _)| sub)
}

/// git's subcommand and the words after it.
fn git_subcommand_words(command: &SimpleCommand) -> Option<(&str, &[Word])> {
    let sub = git_subcommand(command.texts().get(1..)?).ok()?? + 1;
    Some((command.words[sub].text.as_str(), &command.words[sub + 1..]))
}

/// git commands that print what files held at some point in history
/// without the line naming those files: a patch log, a commit shown whole,
/// an object by its id, an archive, a search or a diff of revisions. A
/// pickaxe search (`-S`, `-G`) counts: its answer tells what a file held.
pub(super) fn reads_git_history(command: &SimpleCommand) -> bool {
    let Some((sub, rest)) = git_subcommand_words(command) else {
        return false;
    };
    let args: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    let any = |options: &[&str]| {
        args.iter().any(|arg| {
            options
                .iter()
                .any(|option| option_value(arg, option).is_some())
        })
    };
    match sub {
        "log" | "whatchanged" | "reflog" => any(&[
            "-p",
            "-u",
            "-U",
            "-S",
            "-G",
            "-L",
            "--patch",
            "--unified",
            "--cc",
            "-c",
            "--patch-with-stat",
            "--patch-with-raw",
            "--pickaxe-regex",
            "--word-diff",
            "--color-words",
            "--find-object",
        ]),
        // `git show` prints a commit's patch unless told not to.
        "show" => {
            let named = args.iter().any(|a| !a.starts_with('-'));
            let quiet = any(&[
                "-s",
                "--no-patch",
                "--stat",
                "--shortstat",
                "--numstat",
                "--name-only",
                "--name-status",
                "--summary",
                "--raw",
                "--dirstat",
            ]) && !any(&["-p", "--patch", "-u"]);
            // Every object it names is a path (`HEAD:a`): those are reads.
            let all_paths = named
                && args
                    .iter()
                    .filter(|a| !a.starts_with('-'))
                    .all(|a| names_path(a));
            !quiet && !all_paths
        }
        // By its id, or ids read from input; `-t`, `-s` and `-e` show no content.
        "cat-file" => {
            let batch = any(&["--batch", "--batch-check", "--batch-command"]);
            let by_id = args
                .iter()
                .filter(|a| !a.starts_with('-'))
                .filter(|a| !matches!(**a, "blob" | "tree" | "commit" | "tag"))
                .any(|a| !names_path(a));
            batch || (by_id && !any(&["-t", "-s", "-e"]))
        }
        "archive" | "grep" | "diff" | "diff-tree" | "diff-index" | "format-patch"
        | "fast-export" | "bundle" | "range-diff" | "difftool" => true,
        "stash" => args.first() == Some(&"show"),
        _ => false,
    }
}

/// `REV:path` or `:path` names a file (read by name); `REV:` a whole tree
/// and `:/text` a commit found by its message do not.
fn names_path(object: &str) -> bool {
    object.contains(':') && !object.ends_with(':') && !object.starts_with(":/")
}

/// Commands that read every file under a directory they are given.
pub(super) fn reads_recursively(command: &SimpleCommand) -> bool {
    let Some(program) = command.program() else {
        return false;
    };
    // Long options may be abbreviated (`--recur`), and take `=value`.
    let flag = |letters: &[char], long: &[&str]| {
        command.words[1..].iter().any(|w| {
            let name = w.text.split('=').next().unwrap_or_default();
            (name.len() > 2 && name.starts_with("--") && long.iter().any(|l| l.starts_with(name)))
                || letters
                    .iter()
                    .any(|letter| shell::is_short_flag_with(&w.text, *letter))
        })
    };
    match program {
        "rg" | "ag" | "ack" | "tar" | "zip" | "rsync" | "scp" | "du" | "tree" | "rgrep" => true,
        "diff" => flag(&['r'], &["--recursive"]),
        // git reads the working tree (and its history) whole.
        "git" => matches!(
            git_subcommand_name(command),
            Some("grep" | "diff" | "archive" | "difftool")
        ),
        // `-d recurse` (`--directories=recurse`) is `-r`; any `-d` counts.
        "grep" | "egrep" | "fgrep" => flag(
            &['r', 'R', 'd'],
            &["--recursive", "--dereference-recursive", "--directories"],
        ),
        "cp" => flag(&['r', 'R', 'a'], &["--recursive", "--archive"]),
        // Listings that follow links into what they list: names from outside.
        "ls" => flag(&['R'], &["--recursive"]) && flag(&['L'], &["--dereference"]),
        "find" => command.words[1..]
            .iter()
            .any(|w| matches!(w.text.as_str(), "-L" | "-follow")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts_that_run_or_write_are_found() {
        for script in [
            "1e rm x",
            "s/a/b/e",
            "s|a|b|w out",
            "w out",
            "$r /etc/passwd",
            "/x/W f",
        ] {
            assert!(sed_runs_or_writes(script), "{script}");
        }
        for script in [
            "1,10p",
            "s/error/warn/g",
            "/^$/d",
            "s/foo/bar/; s/x\\/y/z/",
            "y/abc/xyz/",
            "$!N",
        ] {
            assert!(!sed_runs_or_writes(script), "{script}");
        }
    }
}
