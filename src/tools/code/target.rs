//! Where in a file the model means: a symbol's name, found through the
//! file's outline (`textDocument/documentSymbol`), or a line and column.
//!
//! Models name code by name far more reliably than by column, so a name is
//! the usual way: `parse`, or `Parser.parse` (`::` works too) for a member,
//! with a line to pick one of several. A name the file uses but does not
//! declare (an imported function) is found in the text: on the line given,
//! or where it occurs once as a whole word. Anything ambiguous is an error
//! that lists the candidates, so the next call can pick.

use std::path::PathBuf;

use ropey::Rope;
use serde_json::json;
use tower_lsp_server::ls_types::{
    DocumentSymbol, DocumentSymbolResponse, Position, Range, SymbolInformation,
};

use super::{Ask, Input, answer, uri};
use crate::position::{Encoding, Pos, char_index, position};
use crate::tools::ToolError;

/// Candidates listed when a name is ambiguous.
const LISTED: usize = 8;

/// A place the model named, resolved.
pub struct Place {
    pub path: PathBuf,
    /// As the model and the user see it.
    pub shown: String,
    /// The text the server sees (the buffer's, where one is open).
    pub rope: Rope,
    /// The symbol's name, where the model gave one.
    pub name: Option<String>,
    /// In UTF-16 code units, from 0.
    pub position: Position,
}

impl Place {
    /// `path:line:col`, counted from 1 in characters, as the model reads files.
    pub fn describe(&self) -> String {
        let (line, column) = answer::line_column(&self.rope, self.position);
        match &self.name {
            Some(name) => format!("`{name}` at {}:{line}:{column}", self.shown),
            None => format!("{}:{line}:{column}", self.shown),
        }
    }
}

/// One entry of a file's outline, flattened.
#[derive(Clone, Debug)]
pub(super) struct Declared {
    pub name: String,
    /// The names it is inside, outermost first.
    pub containers: Vec<String>,
    pub kind: &'static str,
    /// Where its name is.
    pub at: Position,
    /// All of it (its body too).
    range: Range,
}

pub async fn locate(ask: &Ask<'_, '_, '_>, input: &Input) -> Result<Place, ToolError> {
    let workspace = ask.cx.workspace();
    let path = workspace.paths().resolve(input.path()?)?;
    let shown = workspace.paths().display(&path);
    let text = workspace.read_text(&path).await?.text;
    let rope = Rope::from_str(&text);
    let place = |name: Option<String>, position| Place {
        path: path.clone(),
        shown: shown.clone(),
        rope: rope.clone(),
        name,
        position,
    };
    let Some(symbol) = input.symbol.as_deref() else {
        let (Some(line), Some(column)) = (input.line, input.column) else {
            return Err(Input::invalid("give `symbol`, or `line` and `column`"));
        };
        return Ok(place(None, at_line_column(&rope, &shown, line, column)?));
    };
    let method = "textDocument/documentSymbol";
    let outline: Option<DocumentSymbolResponse> = ask
        .answer(&path, method, json!({"textDocument": {"uri": uri(&path)?}}))
        .await?;
    let declared = flatten(outline, &rope);
    let position = choose(&declared, &rope, &shown, symbol, input.line)?;
    Ok(place(Some(symbol.to_string()), position))
}

/// The position of a 1-based line and column (in characters).
fn at_line_column(rope: &Rope, shown: &str, line: u32, column: u32) -> Result<Position, ToolError> {
    let lines = answer::line_count(rope);
    if line == 0 || line as usize > lines {
        return Err(ToolError::failed(format!(
            "{shown} has {lines} lines; line {line} is not one of them"
        )));
    }
    let index = line as usize - 1;
    let start = rope.line_to_char(index);
    let char_idx = start + column.saturating_sub(1) as usize;
    let line_end = char_index(
        rope,
        Pos {
            line: index as u32,
            character: u32::MAX,
        },
        Encoding::Utf16,
    );
    let pos = position(rope, char_idx.min(line_end), Encoding::Utf16);
    Ok(Position::new(pos.line, pos.character))
}

/// The file's outline as one list, each entry knowing its containers.
pub(super) fn flatten(outline: Option<DocumentSymbolResponse>, rope: &Rope) -> Vec<Declared> {
    let mut declared = Vec::new();
    match outline {
        None => {}
        Some(DocumentSymbolResponse::Nested(symbols)) => {
            fn walk(symbols: Vec<DocumentSymbol>, containers: &[String], out: &mut Vec<Declared>) {
                for symbol in symbols {
                    out.push(Declared {
                        name: symbol.name.clone(),
                        containers: containers.to_vec(),
                        kind: answer::kind_word(symbol.kind),
                        at: symbol.selection_range.start,
                        range: symbol.range,
                    });
                    if let Some(children) = symbol.children {
                        let mut inner = containers.to_vec();
                        inner.push(symbol.name);
                        walk(children, &inner, out);
                    }
                }
            }
            walk(symbols, &[], &mut declared);
        }
        Some(DocumentSymbolResponse::Flat(symbols)) => {
            for symbol in symbols {
                declared.push(declared_from_information(symbol, rope));
            }
        }
    }
    declared
}

/// A flat entry names its container only by name, and its range starts at
/// the declaration (a keyword, a decorator), not at the name: the name is
/// looked for on its first line.
#[allow(deprecated)] // `SymbolInformation::deprecated`, a field we do not read.
fn declared_from_information(symbol: SymbolInformation, rope: &Rope) -> Declared {
    let range = symbol.location.range;
    let at = find_word(rope, range.start.line, &symbol.name)
        .filter(|at| at.character >= range.start.character)
        .unwrap_or(range.start);
    Declared {
        containers: symbol.container_name.into_iter().collect(),
        kind: answer::kind_word(symbol.kind),
        name: symbol.name,
        at,
        range,
    }
}

/// The one place `symbol` names, or an error that lists the candidates.
fn choose(
    declared: &[Declared],
    rope: &Rope,
    shown: &str,
    symbol: &str,
    line: Option<u32>,
) -> Result<Position, ToolError> {
    let parts: Vec<&str> = symbol
        .split(['.', ':'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect();
    let Some((name, containers)) = parts.split_last() else {
        return Err(Input::invalid("`symbol` is empty"));
    };
    let mut candidates: Vec<&Declared> = declared
        .iter()
        .filter(|d| same_name(&d.name, name) && inside(&d.containers, containers))
        .collect();
    if let Some(line) = line {
        let index = line.saturating_sub(1);
        candidates.retain(|d| d.range.start.line <= index && index <= d.range.end.line);
        // The innermost declaration around the line.
        candidates.sort_by_key(|d| d.range.end.line - d.range.start.line);
        candidates.truncate(1);
    }
    candidates.dedup_by_key(|d| d.at);
    match candidates.as_slice() {
        [one] => return Ok(one.at),
        [] => {}
        many => {
            let listed: Vec<String> = many
                .iter()
                .take(LISTED)
                .map(|d| {
                    let mut qualified = d.containers.clone();
                    qualified.push(d.name.clone());
                    format!(
                        "line {} ({} {})",
                        d.at.line + 1,
                        d.kind,
                        qualified.join(".")
                    )
                })
                .collect();
            return Err(ToolError::failed(format!(
                "`{symbol}` names {} symbols in {shown}: {}; give `line`, or qualify it (`Class.method`)",
                many.len(),
                listed.join(", ")
            )));
        }
    }
    // Not declared here: a use of it (an import, a call) in the text. A
    // qualified name is a declaration's: it has no use to fall back on.
    let uses = if containers.is_empty() {
        word_lines(rope, name)
    } else {
        Vec::new()
    };
    let on_line = line
        .filter(|_| containers.is_empty())
        .and_then(|line| find_word(rope, line.checked_sub(1)?, name));
    match (on_line, uses.as_slice()) {
        (Some(at), _) => Ok(at),
        (None, [only]) if line.is_none() => Ok(*only),
        (None, []) => Err(ToolError::failed(format!(
            "no symbol `{symbol}` in {shown}{}",
            declared_names(declared)
        ))),
        (None, found) => {
            let lines: Vec<String> = found
                .iter()
                .take(LISTED)
                .map(|at| (at.line + 1).to_string())
                .collect();
            Err(ToolError::failed(format!(
                "`{name}` is not declared in {shown}{}; it is used on lines {}: give `line`",
                match line {
                    Some(line) => format!(" and not used on line {line}"),
                    None => String::new(),
                },
                lines.join(", ")
            )))
        }
    }
}

/// Servers write some names with more than the name: `parse(text)` for a
/// JavaScript method, `Parser<T>` for a generic.
fn same_name(declared: &str, wanted: &str) -> bool {
    declared == wanted
        || declared
            .split(['(', '<', ' '])
            .next()
            .is_some_and(|head| head == wanted)
}

/// Whether `have` (outermost first) ends with the `wanted` containers.
fn inside(have: &[String], wanted: &[&str]) -> bool {
    wanted.len() <= have.len()
        && have[have.len() - wanted.len()..]
            .iter()
            .zip(wanted)
            .all(|(have, wanted)| same_name(have, wanted))
}

/// What the file declares, for an error: the model's next guess.
fn declared_names(declared: &[Declared]) -> String {
    if declared.is_empty() {
        return String::new();
    }
    let names: Vec<String> = declared
        .iter()
        .take(20)
        .map(|d| {
            let mut qualified = d.containers.clone();
            qualified.push(d.name.clone());
            qualified.join(".")
        })
        .collect();
    let more = declared.len().saturating_sub(names.len());
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("; it declares {}{more}", names.join(", "))
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Where `word` first stands as a whole word on 0-based `line`.
fn find_word(rope: &Rope, line: u32, word: &str) -> Option<Position> {
    if line as usize >= rope.len_lines() || word.is_empty() {
        return None;
    }
    let text: String = rope.line(line as usize).chars().collect();
    let mut from = 0;
    while let Some(offset) = text[from..].find(word) {
        let start = from + offset;
        let end = start + word.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        if !before.is_some_and(is_word_char) && !after.is_some_and(is_word_char) {
            let char_idx = rope.line_to_char(line as usize) + text[..start].chars().count();
            let pos = position(rope, char_idx, Encoding::Utf16);
            return Some(Position::new(pos.line, pos.character));
        }
        from = end;
    }
    None
}

/// The first whole-word use of `word` on each line that has one.
fn word_lines(rope: &Rope, word: &str) -> Vec<Position> {
    (0..rope.len_lines() as u32)
        .filter_map(|line| find_word(rope, line, word))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(name: &str, containers: &[&str], line: u32, end: u32) -> Declared {
        Declared {
            name: name.into(),
            containers: containers.iter().map(|c| c.to_string()).collect(),
            kind: "function",
            at: Position::new(line, 4),
            range: Range::new(Position::new(line, 0), Position::new(end, 0)),
        }
    }

    #[test]
    fn a_name_finds_its_one_declaration_or_lists_them() {
        let text = "import helper\n\nclass A:\n    def run(self): helper()\n\nclass B:\n    def run(self): pass\n\ndef main():\n    helper()\n    helper()\n";
        let rope = Rope::from_str(text);
        let outline = [
            declared("A", &[], 2, 3),
            declared("run", &["A"], 3, 3),
            declared("B", &[], 5, 6),
            declared("run", &["B"], 6, 6),
            declared("main", &[], 8, 10),
        ];
        // (symbol, line, the position's line from 0, or the error's start)
        let cases: &[(&str, Option<u32>, Result<u32, &str>)] = &[
            ("main", None, Ok(8)),
            ("A.run", None, Ok(3)),
            ("B::run", None, Ok(6)),
            ("run", Some(7), Ok(6)),
            (
                "run",
                None,
                Err(
                    "`run` names 2 symbols in f.py: line 4 (function A.run), line 7 (function B.run)",
                ),
            ),
            (
                "C.run",
                None,
                Err("no symbol `C.run` in f.py; it declares A, A.run, B, B.run, main"),
            ),
            // Used, not declared: on the line given, or wherever it is once.
            ("helper", Some(10), Ok(9)),
            (
                "helper",
                None,
                Err("`helper` is not declared in f.py; it is used on lines 1, 4, 10, 11"),
            ),
            (
                "helper",
                Some(3),
                Err("`helper` is not declared in f.py and not used on line 3"),
            ),
            ("", None, Err("Invalid input for code: `symbol` is empty")),
        ];
        for (symbol, line, want) in cases {
            let got = choose(&outline, &rope, "f.py", symbol, *line);
            match (got, want) {
                (Ok(at), Ok(line)) => assert_eq!(at.line, *line, "{symbol} {line:?}"),
                (Err(error), Err(start)) => assert!(
                    error.to_string().starts_with(start)
                        || error.to_result_text().starts_with(start),
                    "{symbol}: {error}"
                ),
                (got, want) => panic!("{symbol} {line:?}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn whole_words_only_and_columns_in_utf16() {
        let rope = Rope::from_str("é = parse_all(parse)\n");
        // `parse` inside `parse_all` is not the word; the second is, after
        // an `é` that is one UTF-16 unit.
        assert_eq!(find_word(&rope, 0, "parse"), Some(Position::new(0, 14)));
        let rope = Rope::from_str("𝑥 = f\n");
        // `𝑥` is two UTF-16 units.
        assert_eq!(find_word(&rope, 0, "f"), Some(Position::new(0, 5)));
        assert_eq!(
            at_line_column(&rope, "f", 1, 5).ok(),
            Some(Position::new(0, 5))
        );
        assert!(at_line_column(&rope, "f", 3, 1).is_err());
    }
}
