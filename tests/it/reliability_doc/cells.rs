//! How a row reads in the document: a [`Row`] of a table, its parts as
//! prose or code spans, outcomes in words.

use crate::case_tables::{Part, Source};

/// One row of a table, for the registry's readers.
pub struct Row<'a> {
    pub part: Part,
    pub source: &'a Source,
    pub outcomes: &'a [String],
}

impl Row<'_> {
    pub fn at(&self) -> String {
        format!("{}:{}", self.source.path, self.part.line())
    }

    pub fn item(&self, n: usize) -> Part {
        self.part
            .item(n)
            .unwrap_or_else(|| panic!("{}: the row has no item {n}", self.at()))
    }

    pub fn whole(&self) -> Part {
        self.part.clone()
    }

    pub fn field(&self, name: &str) -> Part {
        self.part
            .field(name)
            .unwrap_or_else(|| panic!("{}: the row has no field `{name}`", self.at()))
    }

    /// The row's outcome: the first part that is a variant of the table's
    /// outcome enum.
    pub fn outcome(&self) -> Part {
        self.part
            .variant(self.outcomes)
            .unwrap_or_else(|| panic!("{}: no outcome in the row", self.at()))
    }

    /// The doc comment of the variant `part` names, in enum `name`.
    pub fn variant_doc(&self, name: &str, part: Part) -> String {
        let (variant, _) = part
            .head()
            .unwrap_or_else(|| panic!("{}: not a variant", self.at()));
        self.source
            .variants(name)
            .into_iter()
            .find(|(v, _)| *v == variant)
            .map(|(_, doc)| doc)
            .unwrap_or_else(|| panic!("{}: no variant {variant} in {name}", self.at()))
    }
}

/// Text as a code span: control and bidirectional characters written as
/// escapes (`\n`, `\u{1b}`), `|` escaped for the table.
pub fn code(text: &str) -> String {
    if text.is_empty() {
        return "*(empty)*".into();
    }
    let shown = shown(text).replace('|', "\\|");
    if shown.contains('`') {
        format!("`` {shown} ``")
    } else {
        format!("`{shown}`")
    }
}

/// Text as prose: what markdown would read as markup escaped.
pub fn prose(text: &str) -> String {
    shown(text)
        .chars()
        .map(|c| match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '$' | '#' => format!("\\{c}"),
            c => c.to_string(),
        })
        .collect()
}

/// Text with what would hide or reorder it on the page written as escapes:
/// control characters, bidirectional and zero-width ones, and letters that
/// pass for Latin ones (Greek, Cyrillic, full-width) — the cases that use
/// them would read as their harmless twins.
pub fn shown(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' => "\\n".to_string(),
            '\r' => "\\r".to_string(),
            '\t' => "\\t".to_string(),
            c if c.is_control()
                || matches!(c, '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '\u{061C}')
                || matches!(c, '\u{0370}'..='\u{052F}' | '\u{FF00}'..='\u{FFEF}') =>
            {
                c.escape_unicode().to_string()
            }
            c => c.to_string(),
        })
        .collect()
}

/// A part as the table shows it: a string the source spells out as prose,
/// anything else as code.
pub fn name(part: Part) -> String {
    if part.is_literal() {
        prose(&part.text())
    } else {
        code(&part.source())
    }
}

/// A part as code: a literal's value, else its source.
pub fn value(part: Part) -> String {
    code(&part.text())
}

/// `SucceedsSaying` → `succeeds saying`.
pub fn words(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_uppercase() && !out.is_empty() {
            out.push(' ');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// An outcome in words: `Refused(Some("x"))` → refused: `x`; `Asked` →
/// asked; `Ok(())` → ok; a literal → itself as code.
pub fn said(part: Part) -> String {
    match part.head() {
        Some((wrap, inner)) if (wrap == "Some" || wrap == "Ok") && inner.len() == 1 => {
            said(inner[0].clone())
        }
        Some((err, inner)) if err == "Err" && inner.len() == 1 => {
            format!("error: {}", said(inner[0].clone()))
        }
        Some((name, args)) if name.starts_with(char::is_uppercase) => {
            let args: Vec<String> = args
                .iter()
                .filter_map(|arg| match arg.head() {
                    Some((none, _)) if none == "None" => None,
                    Some((some, inner)) if some == "Some" && inner.len() == 1 => {
                        Some(said(inner[0].clone()))
                    }
                    _ if arg.source() == "()" => None,
                    _ => Some(said(arg.clone())),
                })
                .collect();
            if args.is_empty() {
                words(&name)
            } else {
                format!("{}: {}", words(&name), args.join(", "))
            }
        }
        _ => value(part),
    }
}

/// `true` or `false` as the source writes it, as one of two texts.
pub fn either(part: Part, yes: &str, no: &str) -> String {
    match part.source().as_str() {
        "true" => yes.to_string(),
        "false" => no.to_string(),
        other => panic!("{other}: not a bool"),
    }
}

/// A command line's arguments as one code span (without the program's
/// name, so the docs' own command check leaves it alone).
pub fn arguments(part: Part) -> String {
    if !part.source().starts_with("&[") {
        return value(part);
    }
    let args: Vec<String> = part
        .items()
        .iter()
        .map(|arg| {
            let text = arg.text();
            if text.is_empty() || text.contains(char::is_whitespace) {
                format!("{text:?}")
            } else {
                text
            }
        })
        .collect();
    code(&args.join(" "))
}

/// A list of rules, `&["a", "b"]`, as code spans; `None` when empty.
pub fn rules(part: Part) -> Option<String> {
    let rules: Vec<String> = part.items().iter().map(|r| code(&r.text())).collect();
    (!rules.is_empty()).then(|| rules.join(" "))
}

/// `n thing` or `n things`.
pub fn count(n: &str, thing: &str) -> String {
    if n == "1" {
        format!("{n} {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// An optional mode: `None` → not set, `Some(AcceptEdits)` → accept edits.
pub fn mode(part: Part) -> String {
    match part.head() {
        Some((none, _)) if none == "None" => "not set".into(),
        Some((some, inner)) if some == "Some" && inner.len() == 1 => words(&inner[0].source()),
        _ => words(&part.source()),
    }
}

/// Each rule of a list, as code.
pub fn rules_of(part: Part) -> impl Iterator<Item = String> {
    part.items().into_iter().map(|rule| code(&rule.text()))
}

/// An id the source writes as `null` or `json!(25)`.
pub fn code_of_id(id: &str) -> String {
    code(id.trim_start_matches("json!(").trim_end_matches(')'))
}
