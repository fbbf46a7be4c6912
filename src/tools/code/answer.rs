//! A language server's answer as the model reads it: short, and only what
//! the workspace and the read policy let it see.
//!
//! Places are `line:col` (from 1, in characters) and the line's text,
//! grouped under their file's workspace-relative path, at most [`SHOWN`] of
//! them with a count of the rest. A place in a file outside the workspace
//! (a library, the standard library) is counted, never named; one in a file
//! the read policy hides is counted with the reason, as `grep` does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ropey::Rope;
use serde_json::{Value, json};
use tower_lsp_server::ls_types::{
    CallHierarchyIncomingCall, CallHierarchyItem, CallHierarchyOutgoingCall,
    DocumentSymbolResponse, GotoDefinitionResponse, Hover, HoverContents, Location, MarkedString,
    OneOf, Position, SymbolInformation, SymbolKind, Uri, WorkspaceSymbol,
};

use super::target::Place;
use super::{Ask, Operation, uri};
use crate::position::{Encoding, Pos, char_index};
use crate::tools::ToolError;
use crate::tools::visibility::HiddenFiles;

/// Places listed in one answer; the rest are counted.
const SHOWN: usize = 100;

/// A line's text is cut here.
const LINE_CHARS: usize = 160;

/// A hover's text is cut here: some servers quote whole modules.
const HOVER_CHARS: usize = 4000;

/// Symbols listed in an outline.
const OUTLINE: usize = 300;

/// 1-based line and column, in characters, of a UTF-16 position.
pub fn line_column(rope: &Rope, at: Position) -> (usize, usize) {
    let pos = Pos {
        line: at.line,
        character: at.character,
    };
    let char_idx = char_index(rope, pos, Encoding::Utf16);
    let line = rope.char_to_line(char_idx);
    (line + 1, char_idx - rope.line_to_char(line) + 1)
}

/// Lines as an editor counts them (a last line break ends a line, it does
/// not start one).
pub fn line_count(rope: &Rope) -> usize {
    let lines = rope.len_lines();
    if lines > 1 && rope.line(lines - 1).len_chars() == 0 {
        lines - 1
    } else {
        lines
    }
}

pub fn kind_word(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::FILE => "file",
        SymbolKind::MODULE => "module",
        SymbolKind::NAMESPACE => "namespace",
        SymbolKind::PACKAGE => "package",
        SymbolKind::CLASS => "class",
        SymbolKind::METHOD => "method",
        SymbolKind::PROPERTY => "property",
        SymbolKind::FIELD => "field",
        SymbolKind::CONSTRUCTOR => "constructor",
        SymbolKind::ENUM => "enum",
        SymbolKind::INTERFACE => "interface",
        SymbolKind::FUNCTION => "function",
        SymbolKind::VARIABLE => "variable",
        SymbolKind::CONSTANT => "constant",
        SymbolKind::STRING => "string",
        SymbolKind::NUMBER => "number",
        SymbolKind::BOOLEAN => "boolean",
        SymbolKind::ARRAY => "array",
        SymbolKind::OBJECT => "object",
        SymbolKind::KEY => "key",
        SymbolKind::NULL => "null",
        SymbolKind::ENUM_MEMBER => "enum member",
        SymbolKind::STRUCT => "struct",
        SymbolKind::EVENT => "event",
        SymbolKind::OPERATOR => "operator",
        SymbolKind::TYPE_PARAMETER => "type parameter",
        _ => "symbol",
    }
}

/// The answer to an operation at one place.
pub async fn at_place(
    ask: &Ask<'_, '_, '_>,
    operation: Operation,
    place: &Place,
) -> Result<String, ToolError> {
    let at = json!({
        "textDocument": {"uri": uri(&place.path)?},
        "position": place.position,
    });
    let about = place.describe();
    match operation {
        Operation::Definition | Operation::Implementations => {
            let (method, what) = match operation {
                Operation::Definition => ("textDocument/definition", "definition"),
                _ => ("textDocument/implementation", "implementation"),
            };
            let found: Option<GotoDefinitionResponse> = ask.answer(&place.path, method, at).await?;
            let mut listing = Listing::new(ask, &place.path);
            for (uri, position) in goto_places(found) {
                listing.add(&uri, position, None);
            }
            Ok(listing.render(&format!("{what} of {about}"), what).await)
        }
        Operation::References => {
            let method = "textDocument/references";
            let mut params = at;
            params["context"] = json!({"includeDeclaration": false});
            let found: Option<Vec<Location>> = ask.answer(&place.path, method, params).await?;
            let mut listing = Listing::new(ask, &place.path);
            for location in found.unwrap_or_default() {
                listing.add(&location.uri, location.range.start, None);
            }
            Ok(listing
                .render(
                    &format!("references to {about} (its declaration not counted)"),
                    "reference",
                )
                .await)
        }
        Operation::Hover => {
            let method = "textDocument/hover";
            let hover: Option<Hover> = ask.answer(&place.path, method, at).await?;
            Ok(match hover.map(|hover| hover_text(hover.contents)) {
                Some(text) if !text.trim().is_empty() => {
                    format!("{about}:\n{}", crate::text::clip(text.trim(), HOVER_CHARS))
                }
                _ => format!("The language server knows nothing to show for {about}."),
            })
        }
        Operation::Callers | Operation::Callees => calls(ask, operation, place, at).await,
        Operation::Symbols | Operation::WorkspaceSymbols | Operation::Rename => {
            Err(ToolError::failed("not an operation at a place"))
        }
    }
}

/// Callers: each call site, in the function that makes it. Callees: each
/// function called, where it is declared.
async fn calls(
    ask: &Ask<'_, '_, '_>,
    operation: Operation,
    place: &Place,
    at: Value,
) -> Result<String, ToolError> {
    let about = place.describe();
    let method = "textDocument/prepareCallHierarchy";
    let items: Option<Vec<CallHierarchyItem>> = ask.answer(&place.path, method, at).await?;
    let Some(item) = items.and_then(|items| items.into_iter().next()) else {
        return Ok(format!(
            "The language server knows no calls of {about} (is it a function or a method?)."
        ));
    };
    let mut listing = Listing::new(ask, &place.path);
    let params = json!({"item": item});
    match operation {
        Operation::Callers => {
            let method = "callHierarchy/incomingCalls";
            let calls: Option<Vec<CallHierarchyIncomingCall>> =
                ask.answer(&place.path, method, params).await?;
            for call in calls.unwrap_or_default() {
                let within = format!("in {} `{}`", kind_word(call.from.kind), call.from.name);
                for range in &call.from_ranges {
                    listing.add(&call.from.uri, range.start, Some(within.clone()));
                }
            }
            Ok(listing.render(&format!("calls of {about}"), "call").await)
        }
        _ => {
            let method = "callHierarchy/outgoingCalls";
            let calls: Option<Vec<CallHierarchyOutgoingCall>> =
                ask.answer(&place.path, method, params).await?;
            for call in calls.unwrap_or_default() {
                let what = format!(
                    "{} `{}` (declared here)",
                    kind_word(call.to.kind),
                    call.to.name
                );
                listing.add_named(&call.to.uri, call.to.selection_range.start, what);
            }
            Ok(listing
                .render(&format!("functions {about} calls"), "function")
                .await)
        }
    }
}

/// A file's outline: each symbol on its line, members indented.
pub fn outline(
    ask: &Ask<'_, '_, '_>,
    path: &Path,
    outline: Option<DocumentSymbolResponse>,
    rope: &Rope,
) -> Result<String, ToolError> {
    let shown = ask.cx.workspace().paths().display(path);
    let mut lines: Vec<String> = super::target::flatten(outline, rope)
        .iter()
        .map(|d| {
            let indent = "  ".repeat(d.containers.len());
            format!("{:>5}  {indent}{} {}", d.at.line + 1, d.kind, d.name)
        })
        .collect();
    if lines.is_empty() {
        return Ok(format!("The language server lists no symbols in {shown}."));
    }
    let total = lines.len();
    lines.truncate(OUTLINE);
    let more = match total - lines.len() {
        0 => String::new(),
        rest => format!("\n… and {rest} more"),
    };
    Ok(format!(
        "Symbols in {shown} (line, kind, name):\n{}{more}",
        lines.join("\n")
    ))
}

/// Symbols found by name across the workspace.
pub async fn workspace_symbols(
    ask: &Ask<'_, '_, '_>,
    query: &str,
    result: Value,
) -> Result<String, ToolError> {
    let root = ask.cx.workspace().paths().root().to_path_buf();
    let items: Vec<Value> = match result {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        other => vec![other],
    };
    let mut listing = Listing::new(ask, &root);
    for item in items {
        // Either shape a server may send: a `SymbolInformation` (a range),
        // or a `WorkspaceSymbol` (perhaps only a file).
        if let Ok(symbol) = serde_json::from_value::<SymbolInformation>(item.clone()) {
            let what = symbol_label(symbol.kind, &symbol.name, symbol.container_name.as_deref());
            listing.add_named(&symbol.location.uri, symbol.location.range.start, what);
        } else if let Ok(symbol) = serde_json::from_value::<WorkspaceSymbol>(item) {
            let what = symbol_label(symbol.kind, &symbol.name, symbol.container_name.as_deref());
            let (uri, at) = match symbol.location {
                OneOf::Left(location) => (location.uri, location.range.start),
                OneOf::Right(location) => (location.uri, Position::new(0, 0)),
            };
            listing.add_named(&uri, at, what);
        } else {
            return Err(ask.garbage(
                &root,
                "workspace/symbol",
                "an item is neither a SymbolInformation nor a WorkspaceSymbol",
            ));
        }
    }
    Ok(listing
        .render(&format!("symbols matching `{query}`"), "symbol")
        .await)
}

fn symbol_label(kind: SymbolKind, name: &str, container: Option<&str>) -> String {
    match container {
        Some(container) if !container.is_empty() => {
            format!("{} `{name}` in {container}", kind_word(kind))
        }
        _ => format!("{} `{name}`", kind_word(kind)),
    }
}

fn goto_places(found: Option<GotoDefinitionResponse>) -> Vec<(Uri, Position)> {
    match found {
        None => Vec::new(),
        Some(GotoDefinitionResponse::Scalar(location)) => {
            vec![(location.uri, location.range.start)]
        }
        Some(GotoDefinitionResponse::Array(locations)) => locations
            .into_iter()
            .map(|location| (location.uri, location.range.start))
            .collect(),
        Some(GotoDefinitionResponse::Link(links)) => links
            .into_iter()
            .map(|link| (link.target_uri, link.target_selection_range.start))
            .collect(),
    }
}

fn hover_text(contents: HoverContents) -> String {
    fn marked(string: MarkedString) -> String {
        match string {
            MarkedString::String(text) => text,
            MarkedString::LanguageString(code) => {
                format!("```{}\n{}\n```", code.language, code.value)
            }
        }
    }
    match contents {
        HoverContents::Scalar(string) => marked(string),
        HoverContents::Array(strings) => strings
            .into_iter()
            .map(marked)
            .collect::<Vec<_>>()
            .join("\n\n"),
        HoverContents::Markup(markup) => markup.value,
    }
}

/// Places gathered from an answer, checked and rendered.
struct Listing<'c, 'a, 'b> {
    ask: &'c Ask<'c, 'a, 'b>,
    hidden: HiddenFiles,
    /// By path; each place with what to say of it instead of (or after)
    /// its line.
    places: BTreeMap<PathBuf, Vec<(Position, Note)>>,
    outside: usize,
}

enum Note {
    /// The line's text, then this.
    After(Option<String>),
    /// This instead of the line's text.
    Named(String),
}

impl<'c, 'a, 'b> Listing<'c, 'a, 'b> {
    fn new(ask: &'c Ask<'c, 'a, 'b>, decided: &Path) -> Self {
        let root = ask.cx.workspace().paths().root();
        Listing {
            ask,
            hidden: HiddenFiles::new(
                ask.cx.gate,
                <super::Code as crate::tools::Tool>::NAME,
                root,
                decided,
            ),
            places: BTreeMap::new(),
            outside: 0,
        }
    }

    fn add(&mut self, uri: &Uri, at: Position, after: Option<String>) {
        self.insert(uri, at, Note::After(after));
    }

    fn add_named(&mut self, uri: &Uri, at: Position, what: String) {
        self.insert(uri, at, Note::Named(what));
    }

    fn insert(&mut self, uri: &Uri, at: Position, note: Note) {
        let Some(path) = self.inside(uri) else {
            self.outside += 1;
            return;
        };
        if self.hidden.hides(&path) {
            return;
        }
        let places = self.places.entry(path).or_default();
        if !places.iter().any(|(seen, _)| *seen == at) {
            places.push((at, note));
        }
    }

    /// The file a URI names, if it is inside the workspace (the resolver
    /// decides, links and all).
    fn inside(&self, uri: &Uri) -> Option<PathBuf> {
        let path = uri.to_file_path()?;
        let paths = self.ask.cx.workspace().paths();
        let resolved = paths.resolve(&path.to_string_lossy()).ok()?;
        resolved.is_file().then_some(resolved)
    }

    async fn render(mut self, title: &str, noun: &str) -> String {
        let total: usize = self.places.values().map(Vec::len).sum();
        let mut out = Vec::new();
        let mut shown = 0;
        let workspace = self.ask.cx.workspace();
        for (path, places) in &mut self.places {
            if shown >= SHOWN {
                break;
            }
            places.sort_by_key(|(at, _)| (at.line, at.character));
            let rope = match workspace.read_text(path).await {
                Ok(file) => Some(Rope::from_str(&file.text)),
                Err(_) => None,
            };
            out.push(workspace.paths().display(path));
            for (at, note) in places.iter() {
                if shown >= SHOWN {
                    break;
                }
                shown += 1;
                let (line, column) = match &rope {
                    Some(rope) => line_column(rope, *at),
                    None => (at.line as usize + 1, at.character as usize + 1),
                };
                let text = rope
                    .as_ref()
                    .filter(|rope| (at.line as usize) < rope.len_lines())
                    .map(|rope| rope.line(at.line as usize).to_string())
                    .unwrap_or_default();
                let text = crate::text::clip(text.trim(), LINE_CHARS);
                let said = match note {
                    Note::After(None) => text,
                    Note::After(Some(after)) => format!("{text}   ({after})"),
                    Note::Named(what) => what.clone(),
                };
                out.push(format!("  {line}:{column}  {said}"));
            }
        }
        let plural = |n: usize| {
            if n == 1 {
                noun.to_string()
            } else {
                format!("{noun}s")
            }
        };
        let mut head = match total {
            0 => format!("No {} ({title}).", plural(2)),
            n => format!("{n} {} ({title}):", plural(n)),
        };
        if total > shown {
            out.push(format!("… and {} more not shown", total - shown));
        }
        if self.outside > 0 {
            out.push(format!(
                "({} outside the workspace not shown)",
                self.outside
            ));
        }
        if let Some(note) = self.hidden.note() {
            out.push(note);
        }
        if !out.is_empty() {
            head.push('\n');
        }
        head + &out.join("\n")
    }
}
