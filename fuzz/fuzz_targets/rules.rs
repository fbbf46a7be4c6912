//! The permission rule matcher (`permission::rules`): a rule from any text,
//! command lines and paths from any text.
//!
//! What must hold:
//! - a compound line is denied (asked about) when any of its commands is:
//!   `a` denied means `b; a` and `a; b` denied, for lines the reader reads
//!   whole;
//! - a compound line is allowed only when each of its commands is;
//! - the rule "allow always" suggests for a path parses, allows that path
//!   and no other; the one it suggests for a single command the reader
//!   follows parses and allows that command.
#![no_main]

use std::sync::OnceLock;

use bareagent::permission::command::CommandCheck;
use bareagent::permission::rules::suggested_rule;
use bareagent::permission::{Action, ActionKind, Rule, RuleLists, RuleSet, Target, Verdict};
use bareagent::workspace::PathResolver;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A byte of flags (the rule's list: allow, ask, deny; a read or an
    // edit), then the rule, two command lines and two paths, apart by NULs.
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let mut parts = text.split('\0');
    let mut next = || parts.next().unwrap_or_default();
    let (rule, first, second, path, other) = (next(), next(), next(), next(), next());
    let paths = resolver();
    if Rule::parse(rule).is_ok() {
        compound(&in_list(rule, flags), first, second, paths);
    }
    suggested_for_path(path, other, flags & 0x80 != 0);
    suggested_for_command(first, paths);
});

fn resolver() -> &'static PathResolver {
    static PATHS: OnceLock<(tempfile::TempDir, PathResolver)> = OnceLock::new();
    &PATHS
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("a temporary directory");
            std::fs::create_dir(dir.path().join("src")).expect("src");
            std::fs::write(dir.path().join("src/main.rs"), "").expect("a file");
            let paths = PathResolver::new(dir.path()).expect("resolver");
            (dir, paths)
        })
        .1
}

fn in_list(rule: &str, list: u8) -> RuleSet {
    let mut lists = RuleLists::default();
    match list % 3 {
        0 => lists.allow.push(rule.to_string()),
        1 => lists.ask.push(rule.to_string()),
        _ => lists.deny.push(rule.to_string()),
    }
    RuleSet::from_lists(&lists).expect("a rule that parsed")
}

fn bash(line: &str, paths: &PathResolver) -> Action {
    Action {
        tool: "bash".into(),
        kind: ActionKind::Execute,
        summary: line.into(),
        target: Target::Command(Box::new(CommandCheck::new(line, paths))),
    }
}

/// Whether the reader reads `line` whole, so that joining it with another
/// by a line break makes two lines' commands and nothing else.
fn whole(line: &str, paths: &PathResolver) -> bool {
    let check = CommandCheck::new(line, paths);
    check.parsed.problems.is_empty() && !check.parsed.commands().is_empty() && !line.ends_with('\\')
}

fn compound(rules: &RuleSet, first: &str, second: &str, paths: &PathResolver) {
    if first.len() > 256 || second.len() > 256 || !whole(first, paths) || !whole(second, paths) {
        return;
    }
    let alone = rules.evaluate(&bash(first, paths));
    for joined in [format!("{first}\n{second}"), format!("{second}\n{first}")] {
        let together = rules.evaluate(&bash(&joined, paths));
        match alone {
            Verdict::Deny(_) => assert!(
                matches!(together, Verdict::Deny(_)),
                "{first:?} is denied but {joined:?} is {together:?}"
            ),
            Verdict::Ask(_) => assert!(
                matches!(together, Verdict::Deny(_) | Verdict::Ask(_)),
                "{first:?} asks but {joined:?} is {together:?}"
            ),
            Verdict::Allow(_) | Verdict::Unmatched => {}
        }
        if matches!(together, Verdict::Allow(_)) {
            for part in [first, second] {
                let verdict = rules.evaluate(&bash(part, paths));
                assert!(
                    matches!(verdict, Verdict::Allow(_)),
                    "{joined:?} is allowed but its part {part:?} is {verdict:?}"
                );
            }
        }
    }
}

fn file_action(path: &str, edit: bool) -> Action {
    let (tool, kind) = if edit {
        ("edit_file", ActionKind::Edit)
    } else {
        ("read_file", ActionKind::Read)
    };
    Action {
        tool: tool.into(),
        kind,
        summary: path.into(),
        target: Target::Path(path.into()),
    }
}

/// A workspace-relative path as the gate is given one: components that
/// are names (no empty, `.` or `..` one).
fn is_relative_path(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\0')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

fn suggested_for_path(path: &str, other: &str, edit: bool) {
    if !is_relative_path(path) {
        return;
    }
    let action = file_action(path, edit);
    let rule = suggested_rule(&action);
    let rules = in_list(&rule, 0);
    let verdict = rules.evaluate(&action);
    assert!(
        matches!(verdict, Verdict::Allow(_)),
        "the suggested rule {rule:?} does not allow {path:?}: {verdict:?}"
    );
    if is_relative_path(other) && other != path {
        let verdict = rules.evaluate(&file_action(other, edit));
        assert!(
            !matches!(verdict, Verdict::Allow(_)),
            "the rule {rule:?} suggested for {path:?} also allows {other:?}"
        );
    }
}

fn suggested_for_command(line: &str, paths: &PathResolver) {
    if line.len() > 256 {
        return;
    }
    let action = bash(line, paths);
    let Target::Command(check) = &action.target else {
        return;
    };
    let commands = check.parsed.commands();
    let [command] = commands.as_slice() else {
        return;
    };
    // A line the reader follows whole has a rule; one it does not has
    // none that parses, and the gate then saves nothing (allows once).
    let rule = suggested_rule(&action);
    if let Err(error) = Rule::parse(&rule) {
        assert!(
            !check.parsed.problems.is_empty(),
            "the rule {rule:?} suggested for {line:?} does not parse: {error}"
        );
        return;
    }
    // Every word known before it runs: for a word only the running shell
    // knows, the rule is the program run bare, on purpose.
    if command.words.iter().any(|w| w.opaque || w.glob) {
        return;
    }
    let verdict = in_list(&rule, 0).evaluate(&action);
    assert!(
        matches!(verdict, Verdict::Allow(_)),
        "the rule {rule:?} suggested for {line:?} does not allow it: {verdict:?}"
    );
}
