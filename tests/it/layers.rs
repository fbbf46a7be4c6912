//! The module graph follows the layers ARCHITECTURE.md states: read from
//! the sources, as the compiler would not check it. A module depends on
//! another when its code names `crate::other` (top level) or `super::other`
//! (modules of one directory) anywhere in the file, read by syn; comments,
//! strings and `#[cfg(test)]` items do not count. A top-level module naming one of its own layer or above fails the
//! test with the file and the name, and a cycle among the modules of one
//! directory fails it with its path, so layering stays something the code
//! enforces rather than a convention.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::ext::IdentExt;
use syn::visit::Visit;

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

/// The modules a file's non-test code names after `root::` (`crate` or
/// `super`): every path, `use` tree and macro body of the whole file, read
/// by syn, so comments and strings never count and nothing after a test
/// helper is skipped. Items under `#[cfg(test)]` (a test module, a
/// test-only function or impl item anywhere in the file) are left out.
fn named_modules(text: &str, root: &str) -> BTreeSet<String> {
    let file = syn::parse_file(text).expect("a source file that parses");
    let mut names = Names {
        root,
        found: BTreeSet::new(),
    };
    names.visit_file(&file);
    names.found
}

struct Names<'r> {
    root: &'r str,
    found: BTreeSet<String>,
}

/// Whether `attrs` make an item test-only: `#[cfg(test)]` exactly (a
/// `cfg(any(test, …))` item is built outside tests too).
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

impl Names<'_> {
    /// The module after `root::` in a token stream (a macro's body).
    fn scan(&mut self, tokens: proc_macro2::TokenStream) {
        use proc_macro2::TokenTree;
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        for (at, tree) in trees.iter().enumerate() {
            match tree {
                TokenTree::Group(group) => self.scan(group.stream()),
                TokenTree::Ident(ident) if ident == self.root => {
                    let colons = trees[at + 1..]
                        .iter()
                        .take(2)
                        .all(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ':'));
                    let before_colon = at > 0
                        && matches!(&trees[at - 1], TokenTree::Punct(p) if p.as_char() == ':');
                    if let (true, false, Some(TokenTree::Ident(name))) =
                        (colons, before_colon, trees.get(at + 3))
                    {
                        self.found.insert(name.unraw().to_string());
                    }
                }
                _ => {}
            }
        }
    }

    /// Each first name of a `use root::…` tree.
    fn use_names(&mut self, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                self.found.insert(path.ident.unraw().to_string());
            }
            syn::UseTree::Name(name) => {
                self.found.insert(name.ident.unraw().to_string());
            }
            syn::UseTree::Rename(rename) => {
                self.found.insert(rename.ident.unraw().to_string());
            }
            syn::UseTree::Group(group) => group.items.iter().for_each(|t| self.use_names(t)),
            syn::UseTree::Glob(_) => {}
        }
    }
}

/// Skips a test-only node, else visits it as syn would.
macro_rules! unless_test_only {
    ($($method:ident($node:ty) => $walk:path;)*) => {
        $(fn $method(&mut self, node: &'ast $node) {
            if !test_only(&node.attrs) {
                $walk(self, node);
            }
        })*
    };
}

impl<'ast> syn::visit::Visit<'ast> for Names<'_> {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let mut segments = path.segments.iter();
        if path.leading_colon.is_none()
            && segments.next().is_some_and(|s| s.ident == self.root)
            && let Some(name) = segments.next()
        {
            self.found.insert(name.ident.unraw().to_string());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_use_path(&mut self, path: &'ast syn::UsePath) {
        if path.ident == self.root {
            self.use_names(&path.tree);
        } else {
            syn::visit::visit_use_path(self, path);
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.scan(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }

    unless_test_only! {
        visit_item_const(syn::ItemConst) => syn::visit::visit_item_const;
        visit_item_enum(syn::ItemEnum) => syn::visit::visit_item_enum;
        visit_item_fn(syn::ItemFn) => syn::visit::visit_item_fn;
        visit_item_impl(syn::ItemImpl) => syn::visit::visit_item_impl;
        visit_item_macro(syn::ItemMacro) => syn::visit::visit_item_macro;
        visit_item_mod(syn::ItemMod) => syn::visit::visit_item_mod;
        visit_item_static(syn::ItemStatic) => syn::visit::visit_item_static;
        visit_item_struct(syn::ItemStruct) => syn::visit::visit_item_struct;
        visit_item_trait(syn::ItemTrait) => syn::visit::visit_item_trait;
        visit_item_type(syn::ItemType) => syn::visit::visit_item_type;
        visit_item_use(syn::ItemUse) => syn::visit::visit_item_use;
        visit_impl_item_fn(syn::ImplItemFn) => syn::visit::visit_impl_item_fn;
        visit_impl_item_const(syn::ImplItemConst) => syn::visit::visit_impl_item_const;
        visit_impl_item_type(syn::ImplItemType) => syn::visit::visit_impl_item_type;
        visit_trait_item_fn(syn::TraitItemFn) => syn::visit::visit_trait_item_fn;
        visit_local(syn::Local) => syn::visit::visit_local;
        visit_expr_macro(syn::ExprMacro) => syn::visit::visit_expr_macro;
        visit_stmt_macro(syn::StmtMacro) => syn::visit::visit_stmt_macro;
        visit_field(syn::Field) => syn::visit::visit_field;
        visit_variant(syn::Variant) => syn::visit::visit_variant;
    }
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
    // 0. What std would have: locks a panic does not poison, text cut on
    // char boundaries. They name nothing in the crate.
    &["sync", "text"],
    // 1. Leaves: they name nothing in the crate but `sync`.
    &[
        "history",
        "workspace",
        "diff",
        "position",
        "inbox",
        "secrets",
        "secret_files",
        "config_files",
    ],
    &[
        "tool_line",
        "events",
        "sandbox",
        "permission",
        "session_files",
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
        if prefix == "super" && relative.components().count() > 1 {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for name in named_modules(&text, prefix) {
            if name != module && modules.contains(&name) {
                found.push(Reference {
                    file: file
                        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                        .unwrap_or(&file)
                        .to_path_buf(),
                    from: module.clone(),
                    to: name,
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
    let references = references(&src, "crate");
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
    let top = graph_of(&src, "crate");
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
        let inner = graph_of(&dir, "super");
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
}

#[test]
fn the_reader_sees_every_non_test_line_and_only_those() {
    let text = r#"
        //! crate::in_a_comment
        use crate::a::B;
        use crate::{grouped, nested::{Deep, deeper}};
        #[cfg(test)]
        fn helper() { crate::test_helper::x(); }
        fn after_the_helper() { crate::c_d(1); let s = "crate::in_a_string"; }
        fn raw() -> crate::r#loop::Loop { tracing::warn!(x = ?crate::in_macro::X); todo!() }
        impl S {
            #[cfg(test)]
            fn only_in_tests() { crate::test_impl::y() }
            fn kept() { <crate::qualified::T as Tr>::f() }
        }
        #[cfg(any(test, fuzzing))]
        fn also_outside_tests() { crate::either::z() }
        #[cfg(test)]
        mod tests { use crate::test_module::*; }
        fn last() { x::crate::no(); ::crate::neither(); }
    "#;
    assert_eq!(
        named_modules(text, "crate"),
        [
            "a",
            "c_d",
            "either",
            "grouped",
            "in_macro",
            "loop",
            "nested",
            "qualified"
        ]
        .into_iter()
        .map(String::from)
        .collect()
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

/// What only the session core builds: a front end (`src/cli`, `src/lsp`,
/// `src/acp`) that names one of these builds its own part of a session,
/// which the core then cannot keep in step with the others.
const BUILT_BY_THE_CORE: &[&str] = &[
    // A provider and its HTTP client.
    "ProviderChoice",
    // A gate.
    "PermissionGate::new",
    "deny_rules_only",
    // A sandbox.
    "SandboxPolicy",
    "Sandbox::for_commands",
    // A compaction.
    "Compaction::new",
    "CompactionSettings",
    // A turn's loop.
    "AgentParts",
    "run_loop",
    // The session's settings, changed past the handle's operations.
    "reconfigure",
];

/// The names of `BUILT_BY_THE_CORE` that `text`'s non-test code names (as
/// a path, or a method it calls).
fn core_parts_named(text: &str) -> BTreeSet<String> {
    struct Parts(BTreeSet<String>);
    impl<'ast> Visit<'ast> for Parts {
        fn visit_path(&mut self, path: &'ast syn::Path) {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            for part in BUILT_BY_THE_CORE {
                let wanted: Vec<&str> = part.split("::").collect();
                if segments
                    .windows(wanted.len())
                    .any(|w| w == wanted.as_slice())
                {
                    self.0.insert(part.to_string());
                }
            }
            syn::visit::visit_path(self, path);
        }
        fn visit_use_name(&mut self, name: &'ast syn::UseName) {
            let name = name.ident.to_string();
            if BUILT_BY_THE_CORE.contains(&name.as_str()) {
                self.0.insert(name);
            }
        }
        fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
            let method = call.method.to_string();
            if BUILT_BY_THE_CORE.contains(&method.as_str()) {
                self.0.insert(method);
            }
            syn::visit::visit_expr_method_call(self, call);
        }
        fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
            if !test_only(&module.attrs) {
                syn::visit::visit_item_mod(self, module);
            }
        }
        fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
            if !test_only(&function.attrs) {
                syn::visit::visit_item_fn(self, function);
            }
        }
    }
    let file = syn::parse_file(text).expect("a source file that parses");
    let mut parts = Parts(BTreeSet::new());
    parts.visit_file(&file);
    parts.0
}

#[test]
fn no_front_end_builds_what_the_session_core_builds() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    let mut read = 0;
    for front_end in ["cli", "lsp", "acp"] {
        for file in sources(&src.join(front_end)) {
            let text = std::fs::read_to_string(&file).unwrap();
            read += 1;
            for part in core_parts_named(&text) {
                found.push(format!("{}: {part}", file.display()));
            }
        }
    }
    assert!(read > 30, "read the front ends' files");
    assert!(
        found.is_empty(),
        "a front end builds a part of a session (ask the session core for it):\n{}",
        found.join("\n")
    );
    // The check itself finds each kind of naming.
    let sample = "use crate::provider::ProviderChoice;
        fn f(s: &S) { s.reconfigure(|l| ()); let p = SandboxPolicy::new(); crate::agent::run_loop(); }
        #[cfg(test)] mod tests { fn t() { Compaction::new(); } }";
    assert_eq!(
        core_parts_named(sample),
        ["ProviderChoice", "SandboxPolicy", "reconfigure", "run_loop"]
            .into_iter()
            .map(String::from)
            .collect()
    );
}
