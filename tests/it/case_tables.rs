//! Case tables read out of the tests' own source: where a table is (a
//! `let`, the array a `for` loop walks, the `vec!` a function returns, a
//! `const`), its rows, each row's parts as the source writes them, and the
//! tests that run it. docs/reliability.md is written from these
//! (tests/it/reliability_doc.rs), so what it lists is what the tests hold.

use std::path::Path;

use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Attribute, Block, Expr, Lit, Pat, Token};

/// Where a table is in its file.
#[derive(Clone, Copy, Debug)]
pub enum Place {
    /// `let BINDING = [...]` (or `&[...]`, `vec![...]`) in fn FUNCTION.
    Let(&'static str, &'static str),
    /// The array `for PATTERN in [...]` walks in fn FUNCTION (the pattern
    /// as written, spaces aside).
    For(&'static str, &'static str),
    /// The `vec![...]` or array fn FUNCTION returns.
    Returned(&'static str),
    /// `const NAME: &[...] = &[...]`, at any depth.
    Const(&'static str),
}

impl Place {
    /// How [`Source::case_tables`] names the same place.
    pub fn key(self) -> String {
        match self {
            Place::Let(function, binding) => let_key(function, binding),
            Place::For(function, pattern) => format!("for {pattern} in fn {function}"),
            Place::Returned(function) => fn_key(function),
            Place::Const(name) => const_key(name),
        }
    }
}

fn let_key(function: &str, binding: &str) -> String {
    format!("let {binding} in fn {function}")
}

fn fn_key(function: &str) -> String {
    format!("fn {function}")
}

fn const_key(name: &str) -> String {
    format!("const {name}")
}

/// One parsed source file.
pub struct Source {
    /// Relative to the repository's root.
    pub path: String,
    file: syn::File,
}

/// A function of the file, at any module depth.
struct Function<'a> {
    name: String,
    /// As `cargo test` names it: `attacks::every_attack_gets_its_outcome`,
    /// `permission::rules::tests::rules_match_what_runs`.
    test_path: String,
    test: bool,
    attrs: &'a [Attribute],
    block: &'a Block,
}

/// A table found: its rows and the function it is in.
pub struct Table {
    pub rows: Vec<Expr>,
    function: Option<String>,
}

impl Source {
    pub fn read(path: &str) -> Source {
        let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        let text = std::fs::read_to_string(&full)
            .unwrap_or_else(|error| panic!("{}: {error}", full.display()));
        let file =
            syn::parse_file(&text).unwrap_or_else(|error| panic!("{path}: not Rust: {error}"));
        Source {
            path: path.to_string(),
            file,
        }
    }

    /// The module `cargo test` names this file's tests under (none for
    /// the crate's root).
    fn module(&self) -> Option<String> {
        let path = self.path.trim_end_matches(".rs");
        let path = path
            .strip_prefix("tests/it/")
            .or_else(|| path.strip_prefix("src/"))
            .unwrap_or(path);
        let path = path.strip_suffix("/mod").unwrap_or(path);
        (path != "lib").then(|| path.replace('/', "::"))
    }

    fn functions(&self) -> Vec<Function<'_>> {
        let mut walk = Functions {
            module: self.module().into_iter().collect(),
            found: Vec::new(),
        };
        walk.visit_file(&self.file);
        walk.found
    }

    /// The table at `place`, or why there is none.
    pub fn table(&self, place: Place) -> Result<Table, String> {
        let missing = || format!("{}: no {}", self.path, place.key());
        let (function, expressions) = match place {
            Place::Const(name) => {
                let mut find = Consts::default();
                find.visit_file(&self.file);
                let (function, expr) = find
                    .found
                    .into_iter()
                    .find(|(_, const_name, _)| const_name == name)
                    .map(|(function, _, expr)| (function, expr))
                    .ok_or_else(missing)?;
                (function, vec![expr.clone()])
            }
            Place::Let(function, _) | Place::For(function, _) | Place::Returned(function) => {
                let functions = self.functions();
                let found = functions
                    .iter()
                    .find(|f| f.name == function)
                    .ok_or_else(missing)?;
                let expressions = match place {
                    Place::Returned(_) => match found.block.stmts.last() {
                        Some(syn::Stmt::Expr(expr, None)) => vec![expr.clone()],
                        _ => Vec::new(),
                    },
                    _ => {
                        let mut find = Tables {
                            place,
                            found: Vec::new(),
                        };
                        find.visit_block(found.block);
                        find.found
                    }
                };
                (Some(function.to_string()), expressions)
            }
        };
        if expressions.is_empty() {
            return Err(missing());
        }
        let mut rows = Vec::new();
        for expr in &expressions {
            rows.extend(rows_of(expr).ok_or_else(|| {
                format!(
                    "{}: {} is not a literal table (an array, `&[...]` or `vec![...]`)",
                    self.path,
                    place.key()
                )
            })?);
        }
        Ok(Table { rows, function })
    }

    /// The tests that run `table`: the function it is in when that is a
    /// test, else the tests of this file that name that function (or the
    /// const).
    pub fn tests_holding(&self, table: &Table, place: Place) -> Vec<String> {
        let functions = self.functions();
        // A table in a helper is run by the tests that call the helper.
        let (name, called) = match (place, &table.function) {
            (Place::Const(name), None) => (name.to_string(), false),
            (_, Some(function)) => (function.clone(), true),
            (_, None) => return Vec::new(),
        };
        if let Some(test) = functions.iter().find(|f| f.name == name && f.test) {
            return vec![test.test_path.clone()];
        }
        functions
            .iter()
            .filter(|f| f.test && names(f.block, &name, called))
            .map(|f| f.test_path.clone())
            .collect()
    }

    /// The first paragraph of `test`'s doc comment (`test` as `cargo test`
    /// names it), or `None` when this file has no such test.
    pub fn doc_of(&self, test: &str) -> Option<String> {
        let functions = self.functions();
        let function = functions.iter().find(|f| f.test && f.test_path == test)?;
        Some(first_paragraph(function.attrs))
    }

    /// The first paragraph of the file's own doc comment (`//!`).
    pub fn module_doc(&self) -> String {
        first_paragraph(&self.file.attrs)
    }

    /// Each variant of enum `name` in this file, with its doc comment.
    pub fn variants(&self, name: &str) -> Vec<(String, String)> {
        let mut find = Enums {
            name,
            found: Vec::new(),
        };
        find.visit_file(&self.file);
        find.found
    }

    /// What looks like a case table here, named as [`Place::key`] names
    /// it: a `let` named `cases`, `…_cases` or `attacks` holding a literal
    /// table, a fn named `cases` or `…_cases`, and (with `consts`) a
    /// slice const outside any function.
    pub fn case_tables(&self, consts: bool) -> Vec<String> {
        let mut found = Vec::new();
        let case_name = |name: &str| name == "cases" || name.ends_with("_cases");
        for function in self.functions() {
            if case_name(&function.name) {
                found.push(fn_key(&function.name));
            }
            let mut lets = Lets::default();
            lets.visit_block(function.block);
            for (binding, init) in lets.found {
                if (case_name(&binding) || binding == "attacks") && rows_of(&init).is_some() {
                    found.push(let_key(&function.name, &binding));
                }
            }
        }
        if consts {
            for item in &self.file.items {
                let (name, ty) = match item {
                    syn::Item::Const(c) => (&c.ident, &c.ty),
                    syn::Item::Static(s) => (&s.ident, &s.ty),
                    _ => continue,
                };
                if let syn::Type::Reference(reference) = &**ty
                    && matches!(*reference.elem, syn::Type::Slice(_))
                {
                    found.push(const_key(&name.to_string()));
                }
            }
        }
        found.sort();
        found.dedup();
        found
    }
}

/// The rows of a literal table: an array, a reference to one, `vec![...]`.
fn rows_of(expr: &Expr) -> Option<Vec<Expr>> {
    match expr {
        Expr::Array(array) => Some(array.elems.iter().cloned().collect()),
        Expr::Reference(reference) => rows_of(&reference.expr),
        Expr::Paren(inner) => rows_of(&inner.expr),
        Expr::Group(inner) => rows_of(&inner.expr),
        Expr::Macro(mac) if mac.mac.path.is_ident("vec") => mac
            .mac
            .parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated)
            .ok()
            .map(|items| items.into_iter().collect()),
        _ => None,
    }
}

/// Whether `block` names `name` (with `called`, calls it), in code or in
/// a macro's tokens.
fn names(block: &Block, name: &str, called: bool) -> bool {
    struct Names<'n> {
        name: &'n str,
        called: bool,
        seen: bool,
    }
    impl Visit<'_> for Names<'_> {
        fn visit_expr(&mut self, expr: &Expr) {
            let path = match expr {
                Expr::Call(call) => match &*call.func {
                    Expr::Path(path) => Some(&path.path),
                    _ => None,
                },
                Expr::Path(path) if !self.called => Some(&path.path),
                _ => None,
            };
            self.seen |= path
                .and_then(|path| path.segments.last())
                .is_some_and(|last| last.ident == self.name);
            syn::visit::visit_expr(self, expr);
        }
        fn visit_macro(&mut self, mac: &syn::Macro) {
            self.seen |= tokens_name(mac.tokens.clone(), self.name, self.called);
            syn::visit::visit_macro(self, mac);
        }
    }
    fn tokens_name(tokens: proc_macro2::TokenStream, name: &str, called: bool) -> bool {
        let tokens: Vec<_> = tokens.into_iter().collect();
        tokens.iter().enumerate().any(|(n, token)| match token {
            proc_macro2::TokenTree::Ident(ident) => {
                ident == name
                    && (!called
                        || matches!(tokens.get(n + 1), Some(proc_macro2::TokenTree::Group(g))
                            if g.delimiter() == proc_macro2::Delimiter::Parenthesis))
            }
            proc_macro2::TokenTree::Group(group) => tokens_name(group.stream(), name, called),
            _ => false,
        })
    }
    let mut walk = Names {
        name,
        called,
        seen: false,
    };
    walk.visit_block(block);
    walk.seen
}

struct Functions<'a> {
    module: Vec<String>,
    found: Vec<Function<'a>>,
}

impl<'a> Functions<'a> {
    fn add(&mut self, name: &syn::Ident, attrs: &'a [Attribute], block: &'a Block) {
        let test = attrs.iter().any(|attr| {
            attr.path()
                .segments
                .last()
                .is_some_and(|segment| segment.ident == "test")
        });
        let mut path = self.module.clone();
        path.push(name.to_string());
        self.found.push(Function {
            name: name.to_string(),
            test_path: path.join("::"),
            test,
            attrs,
            block,
        });
    }
}

impl<'a> Visit<'a> for Functions<'a> {
    fn visit_item_mod(&mut self, module: &'a syn::ItemMod) {
        self.module.push(module.ident.to_string());
        syn::visit::visit_item_mod(self, module);
        self.module.pop();
    }
    fn visit_item_fn(&mut self, function: &'a syn::ItemFn) {
        self.add(&function.sig.ident, &function.attrs, &function.block);
        syn::visit::visit_item_fn(self, function);
    }
    fn visit_impl_item_fn(&mut self, function: &'a syn::ImplItemFn) {
        self.add(&function.sig.ident, &function.attrs, &function.block);
        syn::visit::visit_impl_item_fn(self, function);
    }
}

/// The name a `let` binds, through a type ascription and `mut`.
fn bound_name(pat: &Pat) -> Option<String> {
    match pat {
        Pat::Ident(ident) => Some(ident.ident.to_string()),
        Pat::Type(typed) => bound_name(&typed.pat),
        _ => None,
    }
}

/// The tables at a `let` or `for` place, in one function's body.
struct Tables {
    place: Place,
    found: Vec<Expr>,
}

impl Visit<'_> for Tables {
    fn visit_local(&mut self, local: &syn::Local) {
        if let (Place::Let(_, binding), Some(init)) = (self.place, &local.init)
            && bound_name(&local.pat).as_deref() == Some(binding)
        {
            self.found.push((*init.expr).clone());
        }
        syn::visit::visit_local(self, local);
    }
    fn visit_expr_for_loop(&mut self, each: &syn::ExprForLoop) {
        if let Place::For(_, pattern) = self.place
            && squeezed(&quote_tokens(&each.pat)) == squeezed(pattern)
        {
            self.found.push((*each.expr).clone());
        }
        syn::visit::visit_expr_for_loop(self, each);
    }
}

#[derive(Default)]
struct Lets {
    found: Vec<(String, Expr)>,
}

impl Visit<'_> for Lets {
    fn visit_local(&mut self, local: &syn::Local) {
        if let (Some(name), Some(init)) = (bound_name(&local.pat), &local.init) {
            self.found.push((name, (*init.expr).clone()));
        }
        syn::visit::visit_local(self, local);
    }
}

/// Consts and statics, with the function each is in.
#[derive(Default)]
struct Consts {
    function: Vec<String>,
    found: Vec<(Option<String>, String, Expr)>,
}

impl Visit<'_> for Consts {
    fn visit_item_fn(&mut self, function: &syn::ItemFn) {
        self.function.push(function.sig.ident.to_string());
        syn::visit::visit_item_fn(self, function);
        self.function.pop();
    }
    fn visit_item_const(&mut self, item: &syn::ItemConst) {
        let function = self.function.last().cloned();
        let entry = (function, item.ident.to_string(), (*item.expr).clone());
        self.found.push(entry);
    }
    fn visit_item_static(&mut self, item: &syn::ItemStatic) {
        let function = self.function.last().cloned();
        let entry = (function, item.ident.to_string(), (*item.expr).clone());
        self.found.push(entry);
    }
}

struct Enums<'n> {
    name: &'n str,
    found: Vec<(String, String)>,
}

impl Visit<'_> for Enums<'_> {
    fn visit_item_enum(&mut self, item: &syn::ItemEnum) {
        if item.ident == self.name {
            for variant in &item.variants {
                let doc = doc_lines(&variant.attrs);
                self.found.push((variant.ident.to_string(), doc.join(" ")));
            }
        }
    }
}

/// The lines of a doc comment, trimmed.
fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(doc) if doc.path.is_ident("doc") => match &doc.value {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) => Some(text.value().trim().to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// A doc comment's first paragraph, on one line.
fn first_paragraph(attrs: &[Attribute]) -> String {
    let lines = doc_lines(attrs);
    let first = lines
        .split(|line| line.is_empty())
        .next()
        .unwrap_or_default();
    first.join(" ")
}

fn quote_tokens(pat: &Pat) -> String {
    source(pat.span()).unwrap_or_default()
}

fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The source text behind `span`, on one line: comments dropped, runs of
/// white space made one space, none inside brackets' edges or before a
/// trailing comma's bracket.
fn source(span: proc_macro2::Span) -> Option<String> {
    let text = span.source_text()?;
    Some(one_line(&text))
}

fn one_line(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    let mut space = false;
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        break;
                    }
                }
                space = true;
            }
            c if c.is_whitespace() => space = true,
            '"' | '\'' => {
                if std::mem::take(&mut space) && !out.is_empty() && !opens(&out) {
                    out.push(' ');
                }
                let raw_hashes = if c == '"' { raw_prefix(&out) } else { None };
                out.push(c);
                if c == '\'' && !is_char_literal(&mut chars.clone()) {
                    continue;
                }
                copy_literal(c, raw_hashes, &mut chars, &mut out);
            }
            c => {
                let closing = matches!(c, ')' | ']' | '}');
                let space_before = std::mem::take(&mut space);
                // A trailing comma goes; a brace keeps its inner space.
                if closing && out.ends_with(',') {
                    out.pop();
                }
                if space_before && !out.is_empty() && !opens(&out) && (c == '}' || !closing) {
                    out.push(' ');
                }
                out.push(c);
            }
        }
    }
    out
}

/// Whether the text ends where no space follows: an opening bracket.
fn opens(out: &str) -> bool {
    out.ends_with('(') || out.ends_with('[')
}

/// For a string just starting: `Some(n)` when `out` ends with a raw
/// string's `r#…` (n hashes), else `None`.
fn raw_prefix(out: &str) -> Option<usize> {
    let hashes = out.len() - out.trim_end_matches('#').len();
    let rest = out[..out.len() - hashes].strip_suffix('r')?;
    let rest = rest.strip_suffix('b').unwrap_or(rest);
    let in_a_name = rest
        .chars()
        .last()
        .is_some_and(|c| c.is_alphanumeric() || c == '_');
    (!in_a_name).then_some(hashes)
}

/// Whether a `'` starts a char literal (`'x'`, `'\n'`), not a lifetime.
fn is_char_literal(rest: &mut std::iter::Peekable<std::str::Chars<'_>>) -> bool {
    match rest.next() {
        Some('\\') => true,
        Some(_) => rest.next() == Some('\''),
        None => false,
    }
}

/// Copies a string or char literal's rest, through its closing quote.
fn copy_literal(
    quote: char,
    raw_hashes: Option<usize>,
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    out: &mut String,
) {
    while let Some(c) = chars.next() {
        out.push(c);
        match (c, raw_hashes) {
            ('\\', None) => {
                if let Some(escaped) = chars.next() {
                    out.push(escaped);
                }
            }
            (c, None) if c == quote => return,
            ('"', Some(hashes)) => {
                let closing: String = chars.clone().take(hashes).collect();
                if closing.len() == hashes && closing.chars().all(|c| c == '#') {
                    out.push_str(&closing);
                    for _ in 0..hashes {
                        chars.next();
                    }
                    return;
                }
            }
            _ => {}
        }
    }
}

/// A part of a row: the whole row, an item of it, a field.
#[derive(Clone)]
pub struct Part(Expr);

impl Part {
    /// The expression as the source writes it, on one line (a `json!`
    /// value without its macro).
    pub fn source(&self) -> String {
        let text = source(self.0.span()).unwrap_or_default();
        match text.strip_prefix("json!(") {
            Some(value) => value.strip_suffix(')').unwrap_or(value).to_string(),
            None => text,
        }
    }

    /// A literal's value (a string's text, a byte string's bytes with the
    /// unprintable ones escaped), also through `.into()`, `.to_string()`,
    /// `String::from` and `format!` (its template, placeholders and all);
    /// else the source.
    pub fn text(&self) -> String {
        literal(&self.0).unwrap_or_else(|| self.source())
    }

    /// Whether the part is a string (or bytes) the source spells out.
    pub fn is_literal(&self) -> bool {
        literal(&self.0).is_some()
    }

    /// The n-th item: of a tuple, of a call's arguments (of the receiver's,
    /// for a method call), of a struct literal's fields, of an array or a
    /// `vec![...]`.
    pub fn item(&self, n: usize) -> Option<Part> {
        items(&self.0).into_iter().nth(n).map(Part)
    }

    /// Every item, as [`Part::item`] counts them.
    pub fn items(&self) -> Vec<Part> {
        items(&self.0).into_iter().map(Part).collect()
    }

    /// A struct literal's field (through wrapping calls).
    pub fn field(&self, name: &str) -> Option<Part> {
        match &self.0 {
            Expr::Struct(literal) => literal
                .fields
                .iter()
                .find(|field| matches!(&field.member, syn::Member::Named(n) if n == name))
                .map(|field| Part(field.expr.clone())),
            Expr::Call(call) => call
                .args
                .iter()
                .find_map(|arg| Part(arg.clone()).field(name)),
            Expr::MethodCall(call) => Part((*call.receiver).clone()).field(name),
            Expr::Reference(reference) => Part((*reference.expr).clone()).field(name),
            _ => None,
        }
    }

    /// The first part, in source order, that is one of `variants` (a path
    /// or a call whose last segment is one): `Refused(-32600)`, `Asked`.
    pub fn variant(&self, variants: &[String]) -> Option<Part> {
        struct First<'v> {
            variants: &'v [String],
            found: Option<Expr>,
        }
        impl Visit<'_> for First<'_> {
            fn visit_expr(&mut self, expr: &Expr) {
                if self.found.is_some() {
                    return;
                }
                let last = path_of(expr).and_then(|path| path.segments.last());
                if last.is_some_and(|segment| self.variants.iter().any(|v| segment.ident == v)) {
                    self.found = Some(expr.clone());
                    return;
                }
                syn::visit::visit_expr(self, expr);
            }
        }
        let mut first = First {
            variants,
            found: None,
        };
        first.visit_expr(&self.0);
        first.found.map(Part)
    }

    /// The last segment of the part's path, when it is a path or a call,
    /// with the call's arguments: `Refused(-32600)` → `("Refused",
    /// [-32600])`.
    pub fn head(&self) -> Option<(String, Vec<Part>)> {
        let name = path_of(&self.0)?.segments.last()?.ident.to_string();
        let args = match &self.0 {
            Expr::Call(call) => call.args.iter().cloned().map(Part).collect(),
            _ => Vec::new(),
        };
        Some((name, args))
    }

    /// The line the part starts on.
    pub fn line(&self) -> usize {
        self.0.span().start().line
    }
}

impl From<&Expr> for Part {
    fn from(expr: &Expr) -> Part {
        Part(expr.clone())
    }
}

/// The path of a path expression, or of the function a call calls.
fn path_of(expr: &Expr) -> Option<&syn::Path> {
    match expr {
        Expr::Path(path) => Some(&path.path),
        Expr::Call(call) => match &*call.func {
            Expr::Path(path) => Some(&path.path),
            _ => None,
        },
        _ => None,
    }
}

fn items(expr: &Expr) -> Vec<Expr> {
    match expr {
        Expr::Tuple(tuple) => tuple.elems.iter().cloned().collect(),
        Expr::Call(call) => call.args.iter().cloned().collect(),
        Expr::MethodCall(call) => items(&call.receiver),
        Expr::Struct(literal) => literal.fields.iter().map(|f| f.expr.clone()).collect(),
        Expr::Reference(reference) => items(&reference.expr),
        Expr::Paren(inner) => items(&inner.expr),
        Expr::Array(_) | Expr::Macro(_) => rows_of(expr).unwrap_or_else(|| vec![expr.clone()]),
        _ => vec![expr.clone()],
    }
}

fn literal(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Lit(lit) => match &lit.lit {
            Lit::Str(text) => Some(text.value()),
            Lit::ByteStr(bytes) => Some(
                bytes
                    .value()
                    .iter()
                    .map(|&b| match b {
                        b' '..=b'~' => (b as char).to_string(),
                        b => format!("\\x{b:02x}"),
                    })
                    .collect(),
            ),
            _ => None,
        },
        Expr::Reference(reference) => literal(&reference.expr),
        Expr::Paren(inner) => literal(&inner.expr),
        Expr::MethodCall(call)
            if ["into", "to_string", "to_owned"].contains(&call.method.to_string().as_str()) =>
        {
            literal(&call.receiver)
        }
        Expr::Call(call) if matches!(&*call.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "from")) => {
            call.args.first().and_then(literal)
        }
        Expr::Macro(mac) if mac.mac.path.is_ident("format") => {
            let args = mac
                .mac
                .parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated)
                .ok()?;
            args.first().and_then(literal)
        }
        _ => None,
    }
}

mod one_line_tests {
    use super::one_line;

    #[test]
    fn source_is_put_on_one_line_with_literals_kept() {
        assert_eq!(
            one_line("Fault::Stall {\n    reply: answer(), // why\n    secs: 3,\n}"),
            "Fault::Stall { reply: answer(), secs: 3 }"
        );
        assert_eq!(
            one_line("(\n  \"a  // b\",\n  'x',\n)"),
            "(\"a  // b\", 'x')"
        );
        assert_eq!(one_line("r#\"a \" b\"#"), "r#\"a \" b\"#");
        assert_eq!(one_line("&'static str"), "&'static str");
    }
}
