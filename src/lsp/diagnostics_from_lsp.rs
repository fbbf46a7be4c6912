//! The editor's diagnostics, from LSP into `crate::workspace::reported`: pushed by
//! a client (`bareagent/diagnostics`, a file's complete set) or carried by
//! any client's code-action request (those under the cursor).

use serde::Deserialize;
use tower_lsp_server::ls_types::{self as lsp, DiagnosticSeverity, NumberOrString, Uri};

use super::documents::path_of;
use super::state::State;
use crate::workspace::reported::{Diagnostic, Severity};

/// Diagnostics kept per file: a generated file can have thousands.
const PER_FILE: usize = 500;

/// Our own diagnostics (pending approvals on the chat file) carry this source.
pub const OURS: &str = "bareagent";

/// `bareagent/diagnostics`.
#[derive(Debug, Deserialize)]
pub struct Pushed {
    pub uri: Uri,
    pub diagnostics: Vec<lsp::Diagnostic>,
}

/// A client's report of one file's complete set.
pub fn pushed(state: &State, params: Pushed) {
    let Some(path) = path_of(&params.uri) else {
        tracing::debug!(
            uri = params.uri.as_str(),
            "diagnostics for a non-file URI: ignored"
        );
        return;
    };
    state
        .diagnostics
        .replace(path, convert(&params.diagnostics));
}

/// What a code-action request says of the lines it covers.
pub fn from_code_action(state: &State, params: &lsp::CodeActionParams) {
    let Some(path) = path_of(&params.text_document.uri) else {
        return;
    };
    let range = params.range;
    state.diagnostics.replace_lines(
        path,
        range.start.line.saturating_add(1),
        range.end.line.saturating_add(1),
        convert(&params.context.diagnostics),
    );
}

fn convert(diagnostics: &[lsp::Diagnostic]) -> Vec<Diagnostic> {
    diagnostics
        .iter()
        .filter(|d| d.source.as_deref() != Some(OURS))
        .take(PER_FILE)
        .map(|d| Diagnostic {
            severity: match d.severity {
                Some(DiagnosticSeverity::WARNING) => Severity::Warning,
                Some(DiagnosticSeverity::INFORMATION) => Severity::Information,
                Some(DiagnosticSeverity::HINT) => Severity::Hint,
                // An unknown or missing severity is shown: better one
                // line too many than a hidden error.
                _ => Severity::Error,
            },
            line: d.range.start.line.saturating_add(1),
            column: d.range.start.character.saturating_add(1),
            end_line: d.range.end.line.saturating_add(1),
            message: d.message.clone(),
            source: d.source.clone(),
            code: d.code.as_ref().map(|code| match code {
                NumberOrString::Number(n) => n.to_string(),
                NumberOrString::String(s) => s.clone(),
            }),
        })
        .collect()
}
