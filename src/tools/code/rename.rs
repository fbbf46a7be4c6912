//! A rename as one reviewed change: the server's `WorkspaceEdit` becomes a
//! [`Change`] across its files, computed through the edit protocol every
//! edit tool uses (`change::edit_text`: the text read now, the read
//! ledger), shown to the user as one diff, written whole or not at all, and
//! recorded for a rewind.
//!
//! Refused whole, nothing written: an edit to a file outside the workspace,
//! a file created, renamed or deleted (a module rename: do it with a
//! command), an edit computed from a version the file no longer has, edits
//! that overlap, and a file the rules deny or ask about when the user was
//! not shown the change.

use std::collections::BTreeMap;

use ropey::Rope;
use tower_lsp_server::ls_types::{
    DocumentChangeOperation, DocumentChanges, OneOf, TextEdit, Uri, WorkspaceEdit,
};

use super::target::Place;
use super::{Ask, Code, Input};
use crate::permission::Assessment;
use crate::position::{Encoding, Pos, char_index};
use crate::tools::change::edit_text;
use crate::tools::{Approved, Change, Tool, ToolContext, ToolError, edit_action};

/// One file's edits, and the version the server computed them from.
struct FileEdits {
    version: Option<i32>,
    edits: Vec<TextEdit>,
}

/// The change the server's answer makes, and how many edits it has.
pub async fn change(
    ask: &Ask<'_, '_, '_>,
    place: &Place,
    edit: Option<WorkspaceEdit>,
) -> Result<(Change, usize), ToolError> {
    let by_file = by_file(edit.unwrap_or_default())?;
    let cx = ask.cx;
    let paths = cx.workspace().paths();
    let mut files = Vec::with_capacity(by_file.len());
    let mut count = 0;
    for (uri, edits) in by_file {
        // Named as any place outside is: not at all.
        let outside = || {
            ToolError::failed(
                "the rename would change a file outside the workspace; nothing was changed",
            )
        };
        let path = uri.to_file_path().ok_or_else(outside)?;
        let path = paths
            .resolve(&path.to_string_lossy())
            .map_err(|_| outside())?;
        count += edits.edits.len();
        let (file, ()) = edit_text(cx, &path.to_string_lossy(), |text| {
            apply_edits(text, &edits.edits).map(|text| (text, ()))
        })
        .await?;
        if let (Some(computed), Some(now)) = (edits.version, file.read_version())
            && computed != now
        {
            return Err(ToolError::failed(format!(
                "{} changed while the rename was computed (version {computed}, now {now}); nothing was changed, try again",
                file.shown()
            )));
        }
        if file.before().text() != Some(file.after()) {
            files.push(file);
        }
    }
    let Some(change) = Change::of(files) else {
        return Err(ToolError::failed(format!(
            "the language server has no rename for {}",
            place.describe()
        )));
    };
    Ok((change, count))
}

/// Each file's edits, from either shape a `WorkspaceEdit` may have.
fn by_file(edit: WorkspaceEdit) -> Result<BTreeMap<Uri, FileEdits>, ToolError> {
    let mut by_file: BTreeMap<Uri, FileEdits> = BTreeMap::new();
    let mut add = |uri: Uri, version: Option<i32>, edits: Vec<TextEdit>| {
        let file = by_file.entry(uri).or_insert(FileEdits {
            version,
            edits: Vec::new(),
        });
        file.edits.extend(edits);
    };
    match edit.document_changes {
        Some(DocumentChanges::Edits(documents)) => {
            for document in documents {
                let edits = document.edits.into_iter().map(text_edit).collect();
                add(
                    document.text_document.uri,
                    document.text_document.version,
                    edits,
                );
            }
        }
        Some(DocumentChanges::Operations(operations)) => {
            for operation in operations {
                match operation {
                    DocumentChangeOperation::Edit(document) => {
                        let edits = document.edits.into_iter().map(text_edit).collect();
                        add(
                            document.text_document.uri,
                            document.text_document.version,
                            edits,
                        );
                    }
                    DocumentChangeOperation::Op(_) => {
                        return Err(ToolError::failed(
                            "the rename would also create, rename or delete files; nothing was changed \
                             (rename the files with a command, then the symbol)",
                        ));
                    }
                }
            }
        }
        None => {
            for (uri, edits) in edit.changes.unwrap_or_default() {
                add(uri, None, edits);
            }
        }
    }
    Ok(by_file)
}

fn text_edit(edit: OneOf<TextEdit, tower_lsp_server::ls_types::AnnotatedTextEdit>) -> TextEdit {
    match edit {
        OneOf::Left(edit) => edit,
        OneOf::Right(annotated) => annotated.text_edit,
    }
}

/// The text with every edit made, each at the range it names in the text
/// as it was (UTF-16 positions); overlapping edits are refused.
fn apply_edits(text: &str, edits: &[TextEdit]) -> Result<String, String> {
    let rope = Rope::from_str(text);
    let offset = |at: tower_lsp_server::ls_types::Position| {
        let pos = Pos {
            line: at.line,
            character: at.character,
        };
        rope.char_to_byte(char_index(&rope, pos, Encoding::Utf16))
    };
    let mut spans: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|edit| {
            (
                offset(edit.range.start),
                offset(edit.range.end),
                edit.new_text.as_str(),
            )
        })
        .collect();
    spans.sort_by_key(|(start, end, _)| (*start, *end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, new_text) in spans {
        if start < at || end < start {
            return Err("the language server's edits overlap; nothing was changed".into());
        }
        out.push_str(&text[at..start]);
        out.push_str(new_text);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// Every file the rename writes passes the gate as an edit of its own: a
/// rule that denies one refuses the whole rename, and one that would ask
/// refuses it unless the user was shown this very change.
pub fn check_each_file(change: &Change, cx: &ToolContext<'_, '_>) -> Result<(), ToolError> {
    let paths = cx.workspace().paths();
    for file in change.files() {
        let action = edit_action(Code::NAME, file.shown(), "(rename)".into(), paths)?;
        match cx.gate.assess(&action) {
            Assessment::Allow => {}
            Assessment::Deny(reason) => {
                return Err(ToolError::NotRun(format!(
                    "the rename would change {}: {reason}; nothing was changed",
                    file.shown()
                )));
            }
            Assessment::Ask(reason) => {
                if matches!(cx.approved, Approved::WithoutAsking) {
                    return Err(ToolError::NotRun(format!(
                        "the rename would change {}, which needs the user's approval ({reason}); \
                         nothing was changed",
                        file.shown()
                    )));
                }
            }
        }
    }
    Ok(())
}

pub fn summary(input: &Input, change: &Change, edits: usize) -> String {
    let files: Vec<&str> = change.files().iter().map(|file| file.shown()).collect();
    format!(
        "Renamed {} to `{}`: {edits} edits in {} files ({}).",
        input.about(),
        input.new_name.as_deref().unwrap_or_default().trim(),
        files.len(),
        files.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::ls_types::{Position, Range};

    fn edit(line: u32, from: u32, to: u32, text: &str) -> TextEdit {
        TextEdit::new(
            Range::new(Position::new(line, from), Position::new(line, to)),
            text.into(),
        )
    }

    #[test]
    fn edits_land_at_their_utf16_ranges_or_not_at_all() {
        // (text, edits, the result or the error's start)
        let cases: Vec<(&str, Vec<TextEdit>, Result<&str, &str>)> = vec![
            (
                "a = f(f)\n",
                vec![edit(0, 4, 5, "g"), edit(0, 6, 7, "g")],
                Ok("a = g(g)\n"),
            ),
            // Given in any order.
            (
                "f\nf\n",
                vec![edit(1, 0, 1, "gg"), edit(0, 0, 1, "gg")],
                Ok("gg\ngg\n"),
            ),
            // `𝑥` is two UTF-16 units, `é` one.
            ("𝑥é = f\n", vec![edit(0, 6, 7, "g")], Ok("𝑥é = g\n")),
            ("\r\nf\r\n", vec![edit(1, 0, 1, "g")], Ok("\r\ng\r\n")),
            (
                "abc\n",
                vec![edit(0, 0, 2, "x"), edit(0, 1, 3, "y")],
                Err("the language server's edits overlap"),
            ),
        ];
        for (text, edits, want) in cases {
            let got = apply_edits(text, &edits);
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{text:?}"),
                (Err(error), Err(start)) => assert!(error.starts_with(start), "{error}"),
                (got, want) => panic!("{text:?}: {got:?}, want {want:?}"),
            }
        }
    }
}
