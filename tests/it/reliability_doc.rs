//! docs/reliability.md is written from the tests' case tables, read as
//! source (tests/it/case_tables.rs): every fault, bad-input and attack case
//! a table holds, by category, with the outcome its test asserts and the
//! command that runs it. [`TABLES`] (in `reliability_doc/tables.rs`) says where each table is and how its
//! rows read; [`BUILT`] lists the tables a test builds at run time (their
//! rows are the values themselves). [`NOT_CASES`] (`reliability_doc/not_cases.rs`) names the case tables
//! that hold no such case, with why.
//!
//! `docs_reliability_md_is_what_the_tables_say` fails when the document and
//! the tables differ (a diff says where); `BAREAGENT_BLESS=1 cargo test
//! --test it reliability_doc` rewrites it. A registered table that is gone,
//! or a case table in no list, fails `every_case_table_is_listed`.

use std::collections::BTreeSet;
use std::path::Path;

use crate::case_tables::{Part, Source};

mod cells;
mod not_cases;
mod tables;

use cells::{Row, code, words};
use not_cases::NOT_CASES;
use tables::{BUILT, TABLES};

const DOC: &str = "docs/reliability.md";

/// The document's sections, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Category {
    Sandbox,
    Gate,
    Paths,
    Secrets,
    Faults,
    Protocol,
    Settings,
    Crashes,
    Integrity,
    Terminal,
}

use Category::*;

impl Category {
    const ALL: [Category; 10] = [
        Sandbox, Gate, Paths, Secrets, Faults, Protocol, Settings, Crashes, Integrity, Terminal,
    ];

    fn title(self) -> &'static str {
        match self {
            Sandbox => "Sandbox escapes",
            Gate => "Permission rules and the gate",
            Paths => "Path resolution and links",
            Secrets => "Secrets",
            Faults => "Model-server faults",
            Protocol => "Protocol bad input (LSP, ACP, JSON-RPC)",
            Settings => "Bad command lines and settings",
            Crashes => "Crashes and dying peers",
            Integrity => "Session-file and edit integrity",
            Terminal => "Terminal escapes",
        }
    }

    fn about(self) -> &'static str {
        match self {
            Sandbox => {
                "Commands the model runs, tried against the kernel's confinement (Landlock, \
                 seccomp, namespaces): what a command may not read, write or reach, and what \
                 the model is told when it is refused."
            }
            Gate => {
                "Tool calls a prompt-injected model or a hostile repository would make, and \
                 what the permission gate makes of them: run, asked (and answered no), or \
                 refused; and how rules are matched against what really runs."
            }
            Paths => {
                "Paths that try to leave the workspace: `..`, absolute paths, symbolic and \
                 hard links (planted in the repository or made during a turn), `/proc`, \
                 devices and FIFOs."
            }
            Secrets => {
                "Keys and secret files kept from the model, from logs and from error messages."
            }
            Faults => {
                "What the scripted model server injects, and what the turn does: retried, \
                 fallen back to a plain call, or ended with a clear error — never a silent \
                 retry once text was shown."
            }
            Protocol => {
                "Malformed or hostile frames from an editor or client, answered with an error \
                 or dropped, the server serving on."
            }
            Settings => {
                "Command lines, settings and answers that cannot work: refused at start with \
                 a message that names what is wrong."
            }
            Crashes => {
                "The agent killed, its editor gone, a run killed mid-turn: what it started \
                 dies with it, and what it wrote stays valid."
            }
            Integrity => {
                "Session files the agent did not write, edits over text the model did not \
                 see, and files too big to read whole."
            }
            Terminal => {
                "Model-written text that tries to drive the terminal: every control and \
                 bidirectional character is shown, never obeyed."
            }
        }
    }
}

fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One table as the document shows it.
struct Shown {
    category: Category,
    test: String,
    source: String,
    legend: Vec<(String, String)>,
    rows: Vec<[String; 2]>,
}

/// Every registered table, read; or what is wrong with the registry.
fn read_all() -> Result<Vec<Shown>, Vec<String>> {
    let mut shown = Vec::new();
    let mut errors = Vec::new();
    for table in TABLES {
        let source = Source::read(table.file);
        let found = match source.table(table.place) {
            Ok(found) => found,
            Err(error) => {
                errors.push(error);
                continue;
            }
        };
        let tests = source.tests_holding(&found, table.place);
        let Some(test) = tests.first() else {
            errors.push(format!(
                "{}: no test runs {}",
                table.file,
                table.place.key()
            ));
            continue;
        };
        let variants = table
            .outcomes
            .map(|e| source.variants(e))
            .unwrap_or_default();
        let names: Vec<String> = variants.iter().map(|(v, _)| v.clone()).collect();
        let rows = found
            .rows
            .iter()
            .map(|expr| {
                let row = Row {
                    part: Part::from(expr),
                    source: &source,
                    outcomes: &names,
                };
                [(table.case)(&row), (table.outcome)(&row)]
            })
            .collect();
        shown.push(Shown {
            category: table.category,
            test: test.clone(),
            source: format!("{} in {}", code(&table.place.key()), table.file),
            legend: variants,
            rows,
        });
    }
    for built in BUILT {
        let source = Source::read(built.file);
        if source.doc_of(built.test).is_none() {
            errors.push(format!("{}: no test {}", built.file, built.test));
            continue;
        }
        shown.push(Shown {
            category: built.category,
            test: built.test.to_string(),
            source: format!("built by the test, in {}", built.file),
            legend: built
                .outcomes
                .map(|e| source.variants(e))
                .unwrap_or_default(),
            rows: (built.rows)(),
        });
    }
    if errors.is_empty() {
        Ok(shown)
    } else {
        Err(errors)
    }
}

/// `cargo test` for one test: a unit test's path is under `src/`.
fn command(test: &str, file: &str) -> String {
    if file.starts_with("src/") {
        format!("cargo test --lib {test}")
    } else {
        format!("cargo test --test it {test}")
    }
}

/// A GitHub heading anchor.
fn anchor(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// `a_test_name` → `A test name`, with the names of protocols and formats
/// in capitals.
fn sentence(test: &str) -> String {
    let name = test.rsplit("::").next().unwrap_or(test);
    let words: Vec<String> = name
        .split('_')
        .map(|word| match word {
            "acp" | "lsp" | "mcp" | "json" | "http" | "url" | "urls" | "id" | "ids" => {
                let upper = word.to_uppercase();
                upper.replace("URLS", "URLs").replace("IDS", "IDs")
            }
            "esc" => "Esc".into(),
            word => word.to_string(),
        })
        .collect();
    let sentence = words.join(" ");
    let mut chars = sentence.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn render(shown: &[Shown]) -> String {
    let mut out = String::new();
    let total: usize = shown.iter().map(|s| s.rows.len()).sum();
    out.push_str("# Reliability\n\n");
    out.push_str(
        "<!-- Written by tests/it/reliability_doc.rs from the tests' case tables: do not \
         edit. Rewrite with `BAREAGENT_BLESS=1 cargo test --test it reliability_doc`. -->\n\n",
    );
    out.push_str(
        "Every fault, bad-input and attack case the test suite holds in a table, by \
         category, with the outcome its test asserts and the command that runs the test. \
         This file is generated from the tables themselves: `tests/it/reliability_doc.rs` \
         reads the test sources, fails when this file and the tables differ, and fails on \
         a case table it does not list (or list, with why, as no such case). \
         [security.md](security.md) is the threat model these cases test. In a case, \
         `{out}`, `{port}` and the like are values the test makes at run time (a folder \
         outside the workspace, a port), and a capitalised name is a constant of the \
         test's.\n\n",
    );
    out.push_str(&format!(
        "{total} cases in {} tables:\n\n| category | tables | cases |\n|---|---:|---:|\n",
        shown.len()
    ));
    for category in Category::ALL {
        let tables: Vec<&Shown> = shown.iter().filter(|s| s.category == category).collect();
        let cases: usize = tables.iter().map(|s| s.rows.len()).sum();
        out.push_str(&format!(
            "| [{}](#{}) | {} | {cases} |\n",
            category.title(),
            anchor(category.title()),
            tables.len()
        ));
    }
    let mut described = BTreeSet::new();
    for category in Category::ALL {
        out.push_str(&format!(
            "\n## {}\n\n{}\n",
            category.title(),
            category.about()
        ));
        let mut seen = BTreeSet::new();
        let mut last_legend = &Vec::new();
        for table in shown.iter().filter(|s| s.category == category) {
            let file = table.source.rsplit(" in ").next().unwrap_or_default();
            if seen.insert(table.test.clone()) {
                out.push_str(&format!("\n### {}\n\n", sentence(&table.test)));
                let source = Source::read(file);
                let mut doc = source.doc_of(&table.test).unwrap_or_default();
                // An integration test file says what its tests do: once,
                // under its first test that says nothing itself.
                if doc.is_empty() && file.starts_with("tests/") && described.insert(file) {
                    doc = source.module_doc();
                }
                if !doc.is_empty() {
                    out.push_str(&format!("{doc}\n\n"));
                }
            } else {
                out.push('\n');
            }
            out.push_str(&format!(
                "{} · {}\n\n",
                code(&command(&table.test, file)),
                table.source
            ));
            if !table.legend.is_empty() && table.legend != *last_legend {
                out.push_str("Outcomes:\n\n");
                for (variant, doc) in &table.legend {
                    match doc.is_empty() {
                        true => out.push_str(&format!("- **{}**\n", words(variant))),
                        false => out.push_str(&format!("- **{}**: {doc}\n", words(variant))),
                    }
                }
                out.push('\n');
                last_legend = &table.legend;
            }
            out.push_str("| case | outcome |\n|---|---|\n");
            for [case, outcome] in &table.rows {
                out.push_str(&format!("| {case} | {outcome} |\n"));
            }
        }
    }
    out
}

#[test]
fn docs_reliability_md_is_what_the_tables_say() {
    let shown = read_all().unwrap_or_else(|errors| {
        panic!(
            "the registry in tests/it/reliability_doc.rs names tables the source does not hold:\n{}",
            errors.join("\n")
        )
    });
    let made = render(&shown);
    let path = repository().join(DOC);
    if std::env::var("BAREAGENT_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &made).unwrap_or_else(|e| panic!("{DOC}: {e}"));
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    if on_disk != made {
        let diff = similar::TextDiff::from_lines(&on_disk, &made)
            .unified_diff()
            .context_radius(1)
            .header(DOC, "what the tables say")
            .to_string();
        panic!(
            "{DOC} is not what the case tables say. Rewrite it with \
             `BAREAGENT_BLESS=1 cargo test --test it reliability_doc`, read the diff, commit it.\n{diff}"
        );
    }
}

/// Every `.rs` file under `dir`, relative to the repository.
fn rust_files(dir: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![repository().join(dir)];
    while let Some(next) = stack.pop() {
        let entries =
            std::fs::read_dir(&next).unwrap_or_else(|e| panic!("{}: {e}", next.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(repository()).unwrap_or(&path);
                found.push(relative.display().to_string());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_case_table_is_listed() {
    let mut listed: BTreeSet<(String, String)> = TABLES
        .iter()
        .map(|t| (t.file.to_string(), t.place.key()))
        .collect();
    for built in BUILT {
        for place in built.covers {
            listed.insert((built.file.to_string(), place.to_string()));
        }
    }
    let not_cases: BTreeSet<(String, String)> = NOT_CASES
        .iter()
        .map(|(file, place, _)| (file.to_string(), place.to_string()))
        .collect();
    let mut found = BTreeSet::new();
    let mut unlisted = Vec::new();
    let files = rust_files("tests/it").into_iter().chain(rust_files("src"));
    for file in files {
        let source = Source::read(&file);
        for place in source.case_tables(file.starts_with("tests/")) {
            let key = (file.clone(), place);
            if !listed.contains(&key) && !not_cases.contains(&key) {
                unlisted.push(format!("{}: {}", key.0, key.1));
            }
            found.insert(key);
        }
    }
    let stale: Vec<String> = not_cases
        .difference(&found)
        .map(|(file, place)| format!("{file}: {place}"))
        .collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "tests/it/reliability_doc.rs: a case table in no list (add it to TABLES, or to \
         NOT_CASES with why):\n{}\nlisted in NOT_CASES but gone:\n{}",
        unlisted.join("\n"),
        stale.join("\n")
    );
}
