//! The module graph is a DAG: read from the sources, as the compiler would
//! not check it. A module depends on another when its code names
//! `crate::other` (top level) or `super::other` (modules of one directory);
//! comments and `#[cfg(test)]` modules do not count. A cycle fails the test
//! with its path, so layering stays something the code enforces rather than
//! a convention (see ARCHITECTURE.md).

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

/// The graph of the modules directly in `dir` (a file `x.rs` or a folder
/// `x/` is module `x`), from the references `prefix` makes.
fn graph_of(src: &Path, dir: &Path, prefix: &str) -> Graph {
    let mut graph = Graph::new();
    let modules: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
        .filter(|m| !matches!(m.as_str(), "lib" | "main" | "mod"))
        .collect();
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
        let code = code(&text);
        let entry = graph.entry(module.clone()).or_default();
        for name in names_after(&code, prefix) {
            if name != module && modules.contains(name) {
                entry.insert(name.to_string());
            }
        }
    }
    let _ = src;
    graph
}

#[test]
fn the_module_graph_has_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let top = graph_of(&src, &src, "crate::");
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
        let inner = graph_of(&src, &dir, "super::");
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
