//! A set of workspace paths the gate treats specially (the sensitive and
//! the power files), matched case-insensitively: on macOS and Windows
//! `.GIT/config` is `.git/config`.
//!
//! Why not globset's case-insensitive globs: each one becomes a regex,
//! and a set of ~160 compiled into one regex cost 20M instructions, two
//! thirds of a whole `bareagent run` turn, before the first model request.
//! Instead the path and the patterns are both case-folded and matched
//! case-sensitively, which lets globset answer most patterns by a hash
//! lookup (a base name, an extension, a literal prefix), and a name that
//! counts wherever it sits (`.ssh`, `.config/gh`: [`FileSet::anywhere`])
//! is a run of path components, compared without any regex.

use std::borrow::Cow;

use globset::{GlobSet, GlobSetBuilder};

/// Paths matching any of some globs, holding any of some names, or under
/// some folders.
pub struct FileSet {
    globs: GlobSet,
    /// Each name's components, folded: a path holding them in a row matches.
    names: Vec<Vec<String>>,
    /// Each folder's components, folded: a path starting with them matches.
    folders: Vec<Vec<String>>,
}

impl FileSet {
    /// The paths `patterns` (workspace-relative globs) match. A pattern
    /// globset cannot read is left out: every pattern here is the
    /// program's own, and `every_own_pattern_is_read` checks them.
    pub fn new<S: AsRef<str>>(patterns: impl IntoIterator<Item = S>) -> FileSet {
        let mut set = GlobSetBuilder::new();
        for pattern in patterns {
            if let Ok(glob) = globset::Glob::new(&fold(pattern.as_ref())) {
                set.add(glob);
            }
        }
        FileSet {
            globs: set.build().unwrap_or_else(|_| GlobSet::empty()),
            names: Vec::new(),
            folders: Vec::new(),
        }
    }

    /// Also every path that holds one of `names` (`.ssh`, `.config/gh`),
    /// wherever it sits, and everything beneath it: what the globs
    /// `**/NAME` and `**/NAME/**` match.
    pub fn anywhere(mut self, names: &[&str]) -> FileSet {
        self.names
            .extend(names.iter().map(|name| components(&fold(name))));
        self
    }

    /// Also the workspace folder at `relative` and everything in it, its
    /// name taken literally (no glob).
    pub fn under(mut self, relative: &str) -> FileSet {
        self.folders.push(components(&fold(relative)));
        self
    }

    pub fn is_match(&self, path: &str) -> bool {
        let path = fold(path);
        if self.globs.is_match(path.as_ref()) {
            return true;
        }
        let parts = components(&path);
        let holds = |name: &Vec<String>| {
            !name.is_empty()
                && parts
                    .windows(name.len())
                    .any(|window| window.iter().eq(name.iter()))
        };
        let under = |folder: &Vec<String>| !folder.is_empty() && parts.starts_with(folder);
        self.names.iter().any(holds) || self.folders.iter().any(under)
    }
}

/// A path's components: `.` and empty ones (`a//b`, `./a`) say nothing.
fn components(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .map(str::to_string)
        .collect()
}

/// Case folding for our ASCII patterns: lower case, and the two letters
/// outside ASCII that Unicode folds to ASCII ones (`ſ` is `s`; the Kelvin
/// sign is `k`, which `to_lowercase` already gives). It may match more
/// than globset's own folding, which stops at ASCII; never less.
fn fold(text: &str) -> Cow<'_, str> {
    if text
        .bytes()
        .all(|b| b.is_ascii() && !b.is_ascii_uppercase())
    {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .flat_map(char::to_lowercase)
            .map(|c| if c == 'ſ' { 's' } else { c })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The set of `**/.env`, `**/.env.*`, `**/*.pem`, `**/*.key`, `.git/**`,
    /// `**/id_rsa*` and the names `.ssh`, `.config/gh`, `.bashrc`, against
    /// what it replaced: globset's case-insensitive globs, `**/NAME` and
    /// `**/NAME/**` for each name. The set must match every
    /// path those matched; it may match more (globset folds ASCII only).
    #[test]
    fn matches_what_case_insensitive_globs_match() {
        let patterns = [
            "**/.env",
            "**/.env.*",
            "**/*.pem",
            "**/*.key",
            ".git/**",
            "**/id_rsa*",
        ];
        let names = [".ssh", ".config/gh", ".bashrc"];
        let set = FileSet::new(patterns).anywhere(&names);
        let mut old = GlobSetBuilder::new();
        for pattern in patterns.iter().map(|p| p.to_string()).chain(
            names
                .iter()
                .flat_map(|n| [format!("**/{n}"), format!("**/{n}/**")]),
        ) {
            old.add(
                globset::GlobBuilder::new(&pattern)
                    .case_insensitive(true)
                    .build()
                    .unwrap(),
            );
        }
        let old = old.build().unwrap();
        // (path, whether it matches)
        let cases = [
            (".env", true),
            ("a/b/.ENV", true),
            (".env.local", true),
            (".envrc", false),
            ("certs/Server.PEM", true),
            ("pem", false),
            (".git/config", true),
            (".GIT/hooks/pre-commit", true),
            ("sub/.git/config", false),
            ("keys/ID_RSA.pub", true),
            (".ssh", true),
            (".ssh/id_ed25519", true),
            ("home/.SSH/config", true),
            ("./.ssh/config", true),
            ("a//.ssh", true),
            (".sshd/config", false),
            ("x.ssh/config", false),
            (".config/gh/hosts.yml", true),
            ("u/.Config/GH", true),
            (".config/ghost", false),
            (".config", false),
            ("gh/.config", false),
            (".bashrc", true),
            ("dotfiles/.BashRC", true),
            (".bashrc.bak", false),
            // Letters outside ASCII that Unicode folds to ASCII ones (the
            // long s, the Kelvin sign): the set counts them, globset did not.
            (".\u{17f}sh/config", true),
            ("certs/a.\u{212a}EY", true),
            ("src/main.rs", false),
            ("", false),
        ];
        for (path, expected) in cases {
            assert_eq!(set.is_match(path), expected, "{path:?}");
            assert!(
                !old.is_match(path) || expected,
                "globset matches {path:?}, the set does not"
            );
        }
    }

    /// A folder is taken literally, whatever its name holds: a glob's
    /// escape character, its metacharacters. (folder, path, matches)
    #[test]
    fn a_folder_is_matched_by_its_name_literally() {
        let cases = [
            ("hooks\\", "hooks\\/pre-commit", true),
            ("a\\b", "a\\b/x", true),
            ("a\\b", "ab/x", false),
            ("[x]", "[x]/pre-push", true),
            ("[x]", "x/pre-push", false),
            ("*", "anything/else", false),
            (".githooks/", ".GitHooks/pre-commit", true),
            (".githooks", ".githooks", true),
            (".githooks", ".githooks-old/pre-commit", false),
            ("tools/hooks", "tools/hooks/post-merge", true),
            ("tools/hooks", "other/tools/hooks/post-merge", false),
        ];
        for (folder, path, expected) in cases {
            let set = FileSet::new::<&str>([]).under(folder);
            assert_eq!(set.is_match(path), expected, "{folder:?} {path:?}");
        }
    }

    /// Every pattern the gate builds its sets from is one globset reads:
    /// `FileSet::new` leaves out what it cannot read, which for our own
    /// patterns would be a hole.
    #[test]
    fn every_own_pattern_is_read() {
        for pattern in super::super::SENSITIVE_FILES
            .iter()
            .chain(super::super::POWER_FILES.iter())
        {
            assert!(globset::Glob::new(&fold(pattern)).is_ok(), "{pattern}");
        }
    }
}
