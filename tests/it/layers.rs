//! The module graph follows the layers ARCHITECTURE.md states: read from
//! the sources, as the compiler would not check it. A module depends on
//! another when its code names `crate::other` (top level) or `super::other`
//! (modules of one directory); comments and `#[cfg(test)]` modules do not
//! count. A top-level module naming one of its own layer or above fails the
//! test with the file and the name, and a cycle among the modules of one
//! directory fails it with its path, so layering stays something the code
//! enforces rather than a convention.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    found
}

/// The code of a file without comments and without its test module.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names following each `prefix::` in `code`.
fn names_after<'a>(code: &'a str, prefix: &str) -> BTreeSet<&'a str> {
    let mut names = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let after = &rest[at + prefix.len()..];
        // A raw identifier (`super::r#loop`) names the module `loop`.
        let after = after.strip_prefix("r#").unwrap_or(after);
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let before = rest[..at].chars().last();
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') && end > 0 {
            names.insert(&after[..end]);
        }
        rest = &after[end..];
    }
    names
}

type Graph = BTreeMap<String, BTreeSet<String>>;

/// A cycle in `graph`, as the path that closes it.
fn cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(found) = visit(node, graph, &mut Vec::new(), &mut done) {
            return Some(found);
        }
    }
    None
}

/// The crate's top-level modules in their layers, from the bottom, as
/// ARCHITECTURE.md ("Layers") states them: a module names only modules of
/// the layers below its own. A layer may name a module not yet written.
const LAYERS: &[&[&str]] = &[
    // 0. What std would have: locks a panic does not poison.
    &["sync"],
    // 1. Leaves: they name nothing in the crate but `sync`.
    &[
        "history",
        "workspace",
        "diff",
        "text",
        "position",
        "inbox",
        "secrets",
        "secret_files",
        "config_files",
    ],
    &[
        "tool_line",
        "diagnostics",
        "events",
        "sandbox",
        "permission",
        "sessions",
    ],
    // Side by side: a tool never reaches the model, the provider knows no tool.
    &["tools", "provider"],
    &["agent", "rewind", "mcp", "language_servers"],
    &["config"],
    // One session's core, for every front end (src/session/).
    &["session"],
    // Front ends.
    &["lsp", "acp"],
    // The command line: it names every subcommand's arguments, `acp`'s too.
    &["cli"],
    // The fuzz targets' entry points (fuzz/): they reach any module.
    &["fuzzing"],
];

/// One file's naming of another module of its directory.
struct Reference {
    file: PathBuf,
    /// The module `file` belongs to.
    from: String,
    /// The module it names.
    to: String,
}

/// The references of the files under `dir` to the modules directly in
/// `dir` (a file `x.rs` or a folder `x/` is module `x`), made with `prefix`.
fn references(dir: &Path, prefix: &str) -> Vec<Reference> {
    let modules: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
        .filter(|m| !matches!(m.as_str(), "lib" | "main" | "mod"))
        .collect();
    let mut found = Vec::new();
    for file in sources(dir) {
        let relative = file.strip_prefix(dir).unwrap();
        let module = relative
            .components()
            .next()
            .map(|c| {
                Path::new(c.as_os_str())
                    .file_stem()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap();
        if !modules.contains(&module) {
            continue;
        }
        // `super::` in a file of a sub-folder names that folder's siblings.
        if prefix == "super::" && relative.components().count() > 1 {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for name in names_after(&code(&text), prefix) {
            if name != module && modules.contains(name) {
                found.push(Reference {
                    file: file
                        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                        .unwrap_or(&file)
                        .to_path_buf(),
                    from: module.clone(),
                    to: name.to_string(),
                });
            }
        }
    }
    found
}

/// The graph the references of the files under `dir` make.
fn graph_of(dir: &Path, prefix: &str) -> Graph {
    let mut graph = Graph::new();
    for reference in references(dir, prefix) {
        graph
            .entry(reference.from)
            .or_default()
            .insert(reference.to);
    }
    graph
}

/// Each reference that breaks `layers`: to a module of the same layer or
/// above, or from or to a module in no layer.
fn against_layers(references: &[Reference], layers: &[&[&str]]) -> BTreeSet<String> {
    let layer = |module: &str| layers.iter().position(|layer| layer.contains(&module));
    let mut wrong = BTreeSet::new();
    for Reference { file, from, to } in references {
        let file = file.display();
        let problem = match (layer(from), layer(to)) {
            (Some(low), Some(high)) if high < low => None,
            (Some(low), Some(high)) => Some(format!(
                "{file}: `{from}` (layer {}) names `{to}` (layer {})",
                low + 1,
                high + 1
            )),
            (None, _) => Some(format!("module `{from}` is in no layer ({file})")),
            (_, None) => Some(format!("module `{to}` is in no layer (named in {file})")),
        };
        wrong.extend(problem);
    }
    wrong
}

#[test]
fn each_module_names_only_layers_below_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let references = references(&src, "crate::");
    assert!(references.len() > 50, "read the crate's references");
    let wrong = against_layers(&references, LAYERS);
    assert!(
        wrong.is_empty(),
        "a module names one of its own layer or above (see ARCHITECTURE.md, Layers):\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_module_graph_has_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let top = graph_of(&src, "crate::");
    assert!(top.len() > 10, "read the crate's modules: {top:?}");
    if let Some(found) = cycle(&top) {
        panic!(
            "the crate's modules depend on each other in a cycle: {}\n{top:#?}",
            found.join(" → ")
        );
    }
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let dir = entry.path();
        if !dir.is_dir() {
            continue;
        }
        let inner = graph_of(&dir, "super::");
        if let Some(found) = cycle(&inner) {
            panic!(
                "the modules of {} depend on each other in a cycle: {}",
                dir.display(),
                found.join(" → ")
            );
        }
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let graph = |edges: &[(&str, &str)]| {
        let mut graph = Graph::new();
        for (from, to) in edges {
            graph
                .entry(from.to_string())
                .or_default()
                .insert(to.to_string());
            graph.entry(to.to_string()).or_default();
        }
        graph
    };
    let cases: &[(&[(&str, &str)], bool)] = &[
        (&[("a", "b"), ("b", "c")], false),
        (&[("a", "b"), ("b", "a")], true),
        (&[("a", "b"), ("b", "c"), ("c", "a")], true),
        (&[("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")], false),
    ];
    for (edges, cyclic) in cases {
        assert_eq!(cycle(&graph(edges)).is_some(), *cyclic, "{edges:?}");
    }
    assert_eq!(
        names_after(
            "use crate::a::B; x::crate::no; crate::c_d(1) crate::r#loop",
            "crate::"
        ),
        ["a", "c_d", "loop"].into_iter().collect()
    );
}

#[test]
fn the_layer_judge_refuses_names_of_its_own_layer_and_above() {
    let layers: &[&[&str]] = &[&["low"], &["mid", "side"], &["high"]];
    let judged = |from: &str, to: &str| {
        let reference = Reference {
            file: PathBuf::from(format!("{from}.rs")),
            from: from.to_string(),
            to: to.to_string(),
        };
        against_layers(&[reference], layers)
            .into_iter()
            .collect::<Vec<_>>()
    };
    assert_eq!(judged("high", "low"), Vec::<String>::new());
    assert_eq!(judged("mid", "low"), Vec::<String>::new());
    assert_eq!(
        judged("mid", "side"),
        ["mid.rs: `mid` (layer 2) names `side` (layer 2)"]
    );
    assert_eq!(
        judged("low", "high"),
        ["low.rs: `low` (layer 1) names `high` (layer 3)"]
    );
    assert_eq!(
        judged("new", "low"),
        ["module `new` is in no layer (new.rs)"]
    );
}
