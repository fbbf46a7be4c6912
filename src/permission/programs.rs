//! What particular programs do with their arguments that the shell reader
//! cannot see: run another program (`sort --compress-program`, sed's `e`),
//! read a directory whole (`grep -r`, `ls -RL`), or take their settings from
//! a repository they find where they run (git).

use std::path::{Path, PathBuf};

use super::shell::{self, SimpleCommand, Word};

/// Options with which a program runs another program it is told of.
/// Long options may be abbreviated, as getopt allows.
pub(super) const PROGRAM_OPTIONS: [(&str, &[&str]); 5] = [
    ("sort", &["--compress-program"]),
    (
        "tar",
        &[
            "-I",
            "-F",
            "--use-compress-program",
            "--to-command",
            "--checkpoint-action",
            "--info-script",
            "--new-volume-script",
        ],
    ),
    ("rsync", &["-e", "--rsh", "--rsync-path"]),
    ("zip", &["-TT", "--unzip-command"]),
    ("man", &["-P", "--pager", "-H", "--html"]),
];

pub(super) fn runs_program(word: &str, options: &[&str]) -> bool {
    let name = word.split('=').next().unwrap_or_default();
    options
        .iter()
        .any(|option| match option.strip_prefix("--") {
            Some(_) => name.len() > 2 && name.starts_with("--") && option.starts_with(name),
            // A short one anywhere in a cluster (`-xIzstd`), or with its value glued on.
            None => {
                let letters = &option[1..];
                word.starts_with('-')
                    && !word.starts_with("--")
                    && (word.starts_with(option) || (letters.len() == 1 && word.contains(letters)))
            }
        })
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
