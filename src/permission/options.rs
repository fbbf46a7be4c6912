//! How programs spell their options, as data: which take a value, which
//! take none; the wrappers that run a command after their own options
//! (`timeout 5 cmd`, `prlimit --nofile=10 cmd`) and git's global options
//! (`git -C . push`); where the command after them starts. Plain strings in
//! and out: the shell reader, the command check and the danger list all
//! read options here, so each spelling is known in one place.

/// How a program spells its options: which take a value (`-n 5`, `-n5`,
/// `--lines=5`, `--lines 5`), which take one only when glued on (`-n10`,
/// `--nofile=10`, prlimit's), and which take none. Long options may be
/// abbreviated, as getopt allows.
pub(super) struct OptionSpec {
    pub with_value: &'static [&'static str],
    pub glued_value: &'static [&'static str],
    pub flags: &'static [&'static str],
    /// `nice -10`: a number is an option.
    pub numbers: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OptionKind {
    Flag,
    Value,
    Glued,
}

impl OptionSpec {
    const NONE: OptionSpec = OptionSpec {
        with_value: &[],
        glued_value: &[],
        flags: &[],
        numbers: false,
    };

    fn kind(&self, option: &str) -> Option<OptionKind> {
        let lists = [
            (self.with_value, OptionKind::Value),
            (self.glued_value, OptionKind::Glued),
            (self.flags, OptionKind::Flag),
        ];
        for (list, kind) in lists {
            if list.contains(&option) {
                return Some(kind);
            }
        }
        if option.len() <= 3 || !option.starts_with("--") {
            return None;
        }
        // An abbreviation counts only when every option it may stand for
        // takes a value the same way.
        let mut kinds = lists.iter().flat_map(|(list, kind)| {
            list.iter()
                .filter(|known| known.starts_with(option))
                .map(move |_| *kind)
        });
        let first = kinds.next()?;
        kinds.all(|kind| kind == first).then_some(first)
    }

    /// How many words the option `word` takes (itself, or itself and its
    /// value); `None` for an option the spec does not know.
    fn width(&self, word: &str) -> Option<usize> {
        if let Some(long) = word.strip_prefix("--") {
            let (name, glued) = match long.split_once('=') {
                Some((name, _)) => (name, true),
                None => (long, false),
            };
            return match self.kind(&format!("--{name}"))? {
                OptionKind::Value if !glued => Some(2),
                _ => Some(1),
            };
        }
        if self.numbers && word[1..].chars().all(|c| c.is_ascii_digit()) {
            return Some(1);
        }
        // A cluster: `-fo/dev/null` is `-f -o /dev/null`.
        for (at, letter) in word.char_indices().skip(1) {
            match self.kind(&format!("-{letter}"))? {
                OptionKind::Flag => continue,
                OptionKind::Glued => return Some(1),
                OptionKind::Value => {
                    let glued = word.len() > at + letter.len_utf8();
                    return Some(if glued { 1 } else { 2 });
                }
            }
        }
        Some(1)
    }
}

/// Where, in the words after a program, the command it runs may start: past
/// its options and `operands` operands. An option the spec does not know is
/// named in `unknown`, and read both ways (a flag, or an option with a
/// value), so a deny rule sees the command either way.
pub(super) fn command_starts(
    words: &[&str],
    spec: &OptionSpec,
    operands: usize,
    unknown: &mut Option<String>,
) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut readings = MAX_READINGS;
    command_starts_from(
        words,
        spec,
        operands,
        0,
        unknown,
        &mut readings,
        &mut starts,
    );
    starts
}

/// How many readings of unknown options are followed before giving up.
const MAX_READINGS: usize = 8;

fn command_starts_from(
    words: &[&str],
    spec: &OptionSpec,
    operands: usize,
    from: usize,
    unknown: &mut Option<String>,
    readings: &mut usize,
    starts: &mut Vec<usize>,
) {
    let mut at = from;
    while let Some(&text) = words.get(at) {
        if text == "--" {
            at += 1;
            break;
        }
        if !text.starts_with('-') || text == "-" {
            break;
        }
        match spec.width(text) {
            Some(width) => at += width,
            None => {
                unknown.get_or_insert_with(|| text.to_string());
                // Past the budget, one reading only: the line asks anyway,
                // and the deny rules refuse what the reader gave up on.
                if *readings > 0 {
                    *readings -= 1;
                    command_starts_from(words, spec, operands, at + 2, unknown, readings, starts);
                }
                at += 1;
            }
        }
    }
    let start = at + operands;
    if start < words.len() && !starts.contains(&start) {
        starts.push(start);
    }
}

/// A program that runs the command it is given: its options, and how many
/// operands come before that command (timeout's duration, flock's file).
pub(super) struct Wrapper {
    pub names: &'static [&'static str],
    pub options: OptionSpec,
    pub operands: usize,
}

const fn spec(with_value: &'static [&'static str], flags: &'static [&'static str]) -> OptionSpec {
    OptionSpec {
        with_value,
        glued_value: &[],
        flags,
        numbers: false,
    }
}

/// Every wrapper the reader sees through, with its own options as data.
/// `env`, `find` and the shells' `-c` are read by code of their own.
pub(super) const WRAPPERS: [Wrapper; 26] = [
    Wrapper {
        names: &["sudo"],
        options: spec(
            &[
                "-u",
                "-g",
                "-C",
                "-h",
                "-p",
                "-U",
                "-r",
                "-t",
                "-D",
                "-R",
                "-T",
                "--user",
                "--group",
                "--close-from",
                "--host",
                "--prompt",
                "--other-user",
                "--role",
                "--type",
                "--chdir",
                "--chroot",
                "--command-timeout",
            ],
            &[
                "-A",
                "-b",
                "-E",
                "-e",
                "-H",
                "-i",
                "-K",
                "-k",
                "-l",
                "-n",
                "-P",
                "-S",
                "-s",
                "-V",
                "-v",
                "-B",
                "-N",
                "--askpass",
                "--background",
                "--preserve-env",
                "--edit",
                "--set-home",
                "--login",
                "--remove-timestamp",
                "--reset-timestamp",
                "--list",
                "--non-interactive",
                "--preserve-groups",
                "--stdin",
                "--shell",
                "--version",
                "--validate",
                "--bell",
                "--no-update",
                "--help",
            ],
        ),
        operands: 0,
    },
    Wrapper {
        names: &["doas"],
        options: spec(&["-u", "-C"], &["-n", "-s", "-L"]),
        operands: 0,
    },
    Wrapper {
        names: &["nohup"],
        options: spec(&[], &["--help", "--version"]),
        operands: 0,
    },
    Wrapper {
        names: &["time"],
        options: spec(
            &["-o", "-f", "--output", "--format"],
            &[
                "-p",
                "-a",
                "-v",
                "-q",
                "--append",
                "--verbose",
                "--portability",
                "--quiet",
            ],
        ),
        operands: 0,
    },
    Wrapper {
        names: &["command"],
        options: spec(&[], &["-p", "-v", "-V"]),
        operands: 0,
    },
    Wrapper {
        names: &["builtin"],
        options: OptionSpec::NONE,
        operands: 0,
    },
    Wrapper {
        names: &["exec"],
        options: spec(&["-a"], &["-c", "-l"]),
        operands: 0,
    },
    Wrapper {
        names: &["stdbuf"],
        options: spec(&["-i", "-o", "-e", "--input", "--output", "--error"], &[]),
        operands: 0,
    },
    Wrapper {
        names: &["setsid"],
        options: spec(&[], &["-c", "-f", "-w", "--ctty", "--fork", "--wait"]),
        operands: 0,
    },
    Wrapper {
        names: &["unbuffer"],
        options: spec(&[], &["-p"]),
        operands: 0,
    },
    Wrapper {
        names: &["chrt"],
        options: spec(
            &[
                "-T",
                "-P",
                "-D",
                "--sched-runtime",
                "--sched-period",
                "--sched-deadline",
            ],
            &[
                "-a",
                "-b",
                "-d",
                "-f",
                "-i",
                "-o",
                "-r",
                "-R",
                "-m",
                "-p",
                "-v",
                "--all-tasks",
                "--batch",
                "--deadline",
                "--fifo",
                "--idle",
                "--other",
                "--rr",
                "--reset-on-fork",
                "--max",
                "--pid",
                "--verbose",
            ],
        ),
        operands: 1, // the priority
    },
    Wrapper {
        names: &["taskset"],
        options: spec(
            &[],
            &["-a", "-c", "-p", "--all-tasks", "--cpu-list", "--pid"],
        ),
        operands: 1, // the CPU mask or list
    },
    Wrapper {
        names: &["nice"],
        options: OptionSpec {
            with_value: &["-n", "--adjustment"],
            glued_value: &[],
            flags: &[],
            numbers: true,
        },
        operands: 0,
    },
    Wrapper {
        names: &["ionice"],
        options: spec(
            &[
                "-c",
                "-n",
                "-p",
                "-P",
                "-u",
                "--class",
                "--classdata",
                "--pid",
                "--pgid",
                "--uid",
            ],
            &["-t", "--ignore"],
        ),
        operands: 0,
    },
    Wrapper {
        names: &["timeout"],
        options: spec(
            &["-s", "-k", "--signal", "--kill-after"],
            &[
                "-v",
                "-f",
                "-p",
                "--verbose",
                "--foreground",
                "--preserve-status",
            ],
        ),
        operands: 1, // the duration
    },
    Wrapper {
        names: &["prlimit"],
        options: OptionSpec {
            with_value: &["-p", "-o", "--pid", "--output"],
            // Each limit's value is optional, so it is only ever glued on.
            glued_value: &[
                "-c",
                "-d",
                "-e",
                "-f",
                "-i",
                "-l",
                "-m",
                "-n",
                "-q",
                "-r",
                "-s",
                "-t",
                "-u",
                "-v",
                "-x",
                "-y",
                "--core",
                "--data",
                "--nice",
                "--fsize",
                "--sigpending",
                "--memlock",
                "--rss",
                "--nofile",
                "--msgqueue",
                "--rtprio",
                "--stack",
                "--cpu",
                "--nproc",
                "--as",
                "--locks",
                "--rttime",
            ],
            flags: &["--noheadings", "--raw", "--verbose"],
            numbers: false,
        },
        operands: 0,
    },
    Wrapper {
        names: &["strace"],
        options: spec(
            &[
                "-a",
                "-b",
                "-e",
                "-E",
                "-I",
                "-o",
                "-O",
                "-p",
                "-P",
                "-s",
                "-S",
                "-u",
                "-U",
                "-X",
                "--attach",
                "--output",
                "--trace",
                "--signal",
                "--status",
                "--abbrev",
                "--raw",
                "--read",
                "--write",
                "--inject",
                "--fault",
                "--string-limit",
                "--columns",
                "--user",
                "--env",
                "--trace-path",
                "--summary-sort-by",
                "--quiet",
                "--silence",
            ],
            &[
                "-c",
                "-C",
                "-d",
                "-D",
                "-f",
                "-F",
                "-h",
                "-i",
                "-k",
                "-n",
                "-q",
                "-r",
                "-t",
                "-T",
                "-v",
                "-V",
                "-w",
                "-x",
                "-y",
                "-z",
                "-Z",
                "--follow-forks",
                "--output-separately",
                "--summary-only",
                "--summary",
                "--summary-wall-clock",
                "--seccomp-bpf",
                "--successful-only",
                "--failed-only",
                "--syscall-times",
                "--stack-trace",
                "--instruction-pointer",
                "--no-abbrev",
                "--timestamps",
                "--decode-pids",
                "--decode-fds",
                "--help",
                "--version",
                "--debug",
                "--verbose",
            ],
        ),
        operands: 0,
    },
    Wrapper {
        names: &["ltrace"],
        options: spec(
            &[
                "-a",
                "-A",
                "-D",
                "-e",
                "-F",
                "-l",
                "-n",
                "-o",
                "-p",
                "-s",
                "-u",
                "-w",
                "-x",
                "--align",
                "--output",
                "--library",
                "--indent",
            ],
            &[
                "-b",
                "-c",
                "-C",
                "-f",
                "-h",
                "-i",
                "-L",
                "-r",
                "-S",
                "-t",
                "-T",
                "-V",
                "--demangle",
                "--help",
                "--version",
            ],
        ),
        operands: 0,
    },
    Wrapper {
        names: &["flock"],
        options: spec(
            &["-E", "-w", "--conflict-exit-code", "--timeout"],
            &[
                "-s",
                "-x",
                "-e",
                "-n",
                "-o",
                "-u",
                "-F",
                "--shared",
                "--exclusive",
                "--nonblock",
                "--nb",
                "--close",
                "--unlock",
                "--no-fork",
                "--verbose",
            ],
        ),
        operands: 1, // the lock file
    },
    Wrapper {
        names: &["busybox"],
        options: spec(&[], &["--list", "--list-full", "--install", "-s", "--help"]),
        operands: 0,
    },
    Wrapper {
        names: &["xargs"],
        options: OptionSpec {
            with_value: &[
                "-a",
                "-d",
                "-E",
                "-I",
                "-L",
                "-n",
                "-P",
                "-s",
                "--arg-file",
                "--delimiter",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
            glued_value: &["-e", "-i", "-l", "--eof", "--replace", "--max-lines"],
            flags: &[
                "-0",
                "-o",
                "-p",
                "-r",
                "-t",
                "-x",
                "--null",
                "--open-tty",
                "--interactive",
                "--no-run-if-empty",
                "--verbose",
                "--exit",
                "--show-limits",
                "--help",
                "--version",
            ],
            numbers: false,
        },
        operands: 0,
    },
    Wrapper {
        names: &["chroot"],
        options: spec(&["--userspec", "--groups"], &["--skip-chdir"]),
        operands: 1, // the new root
    },
    Wrapper {
        names: &["unshare"],
        options: OptionSpec {
            with_value: &[
                "-R",
                "-w",
                "-S",
                "-G",
                "--root",
                "--wd",
                "--setuid",
                "--setgid",
                "--propagation",
                "--setgroups",
                "--map-user",
                "--map-group",
                "--map-users",
                "--map-groups",
                "--monotonic",
                "--boottime",
            ],
            // A namespace option may name a file to bind it to, glued on.
            glued_value: &[
                "-m",
                "-u",
                "-i",
                "-n",
                "-p",
                "-U",
                "-C",
                "-T",
                "--mount",
                "--uts",
                "--ipc",
                "--net",
                "--pid",
                "--user",
                "--cgroup",
                "--time",
                "--kill-child",
                "--mount-proc",
            ],
            flags: &[
                "-f",
                "-r",
                "-c",
                "-l",
                "--fork",
                "--map-root-user",
                "--map-current-user",
                "--map-auto",
                "--load-interp",
                "--keep-caps",
            ],
            numbers: false,
        },
        operands: 0,
    },
    Wrapper {
        names: &["nsenter"],
        options: OptionSpec {
            with_value: &["-t", "-S", "-G", "--target", "--setuid", "--setgid"],
            glued_value: &[
                "-m", "-u", "-i", "-n", "-p", "-U", "-C", "-T", "-r", "-w", "--mount", "--uts",
                "--ipc", "--net", "--pid", "--user", "--cgroup", "--time", "--root", "--wd",
            ],
            flags: &[
                "-a",
                "-F",
                "-Z",
                "-e",
                "--all",
                "--no-fork",
                "--follow-context",
                "--env",
                "--preserve-credentials",
                "--keep-caps",
            ],
            numbers: false,
        },
        operands: 0,
    },
    Wrapper {
        names: &["fakeroot"],
        options: spec(
            &["-l", "-s", "-i", "-b", "--lib", "--faked"],
            &["-u", "-h", "-v", "--unknown-is-real"],
        ),
        operands: 0,
    },
    Wrapper {
        names: &["setpriv"],
        options: spec(
            &[
                "--ruid",
                "--euid",
                "--rgid",
                "--egid",
                "--reuid",
                "--regid",
                "--groups",
                "--inh-caps",
                "--ambient-caps",
                "--bounding-set",
                "--securebits",
                "--pdeathsig",
                "--selinux-label",
                "--apparmor-profile",
                "--landlock-access",
                "--landlock-rule",
            ],
            &[
                "-d",
                "--dump",
                "--nnp",
                "--no-new-privs",
                "--clear-groups",
                "--keep-groups",
                "--init-groups",
                "--reset-env",
            ],
        ),
        operands: 0,
    },
];

/// env: its options, then `NAME=value` words, then the command.
pub(super) const ENV_OPTIONS: OptionSpec = OptionSpec {
    with_value: &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"],
    glued_value: &["--block-signal", "--default-signal", "--ignore-signal"],
    flags: &[
        "-i",
        "-0",
        "-v",
        "--ignore-environment",
        "--null",
        "--debug",
        "--list-signal-handling",
        "--help",
        "--version",
    ],
    numbers: false,
};

/// git's options that come before the subcommand.
pub(super) const GIT_GLOBAL_OPTIONS: OptionSpec = OptionSpec {
    with_value: &[
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--config-env",
        "--super-prefix",
        "--list-cmds",
        "--attr-source",
    ],
    // `--exec-path` alone prints the path; `--exec-path=DIR` sets it.
    glued_value: &["--exec-path"],
    flags: &[
        "-p",
        "-P",
        "-h",
        "-v",
        "--paginate",
        "--no-pager",
        "--bare",
        "--no-replace-objects",
        "--literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--no-optional-locks",
        "--no-advice",
        "--no-lazy-fetch",
        "--html-path",
        "--man-path",
        "--info-path",
        "--version",
        "--help",
    ],
    numbers: false,
};

/// Where git's subcommand is among its arguments (past its global
/// options), or `None` when there is none; an error naming a global option
/// git's table does not hold (where the subcommand is, is then a guess).
pub(super) fn git_subcommand(args: &[&str]) -> Result<Option<usize>, String> {
    let mut at = 0;
    while let Some(&text) = args.get(at) {
        if !text.starts_with('-') {
            return Ok(Some(at));
        }
        match GIT_GLOBAL_OPTIONS.width(text) {
            Some(width) => at += width,
            None => return Err(format!("git option `{text}` the check does not know")),
        }
    }
    Ok(None)
}

/// Whether `word` is `option` as spelled on a command line, and its value:
/// `Some(None)` when it is the option and the value is the next word.
pub(super) fn option_value<'a>(word: &'a str, option: &str) -> Option<Option<&'a str>> {
    if !option.starts_with('-') {
        // An operand such as dd's `of=FILE`.
        return word.strip_prefix(option).map(Some);
    }
    if option.starts_with("--") {
        let (name, value) = match word.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (word, None),
        };
        let abbreviates = name.len() > 3 && name.starts_with("--") && option.starts_with(name);
        return abbreviates.then_some(value);
    }
    if word.starts_with("--") || !word.starts_with('-') {
        return None;
    }
    // `-o F`, `-oF`, and the letter anywhere in a cluster (`-uo F`, `-nO'cmd'`).
    let letters = &option[1..];
    let at = word[1..].find(letters)? + 1;
    let value = &word[at + letters.len()..];
    Some((!value.is_empty()).then_some(value))
}
