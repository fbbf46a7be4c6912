//! What we tell a server we can take (`initialize`'s client capabilities),
//! and whether it offers a method (its server capabilities, or a later
//! `client/registerCapability`).

use std::collections::HashSet;

use serde_json::{Value, json};

/// The client capabilities the `code` tool needs: hierarchical document
/// symbols, location links, markdown hover, call hierarchy, rename with
/// `documentChanges` and `prepareRename`, workspace symbols, and versioned
/// diagnostics. No dynamic registration: what the server announces at
/// `initialize` is what it offers.
pub fn client_capabilities() -> Value {
    json!({
        "general": {"positionEncodings": ["utf-16"]},
        "workspace": {
            "configuration": true,
            "workspaceFolders": true,
            "symbol": {"symbolKind": {"valueSet": (1..=26).collect::<Vec<u32>>()}},
            "workspaceEdit": {
                "documentChanges": true,
                "resourceOperations": ["create", "rename", "delete"],
            },
        },
        "textDocument": {
            "synchronization": {"didSave": false, "willSave": false},
            "documentSymbol": {
                "hierarchicalDocumentSymbolSupport": true,
                "symbolKind": {"valueSet": (1..=26).collect::<Vec<u32>>()},
            },
            "definition": {"linkSupport": true},
            "declaration": {"linkSupport": true},
            "implementation": {"linkSupport": true},
            "typeDefinition": {"linkSupport": true},
            "references": {},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "callHierarchy": {},
            "rename": {"prepareSupport": true},
            "publishDiagnostics": {"versionSupport": true, "relatedInformation": false},
        },
        "window": {"workDoneProgress": true},
    })
}

/// The server capability that offers `method`; `None` for a method no
/// capability guards (the server answers or refuses it).
fn capability_of(method: &str) -> Option<&'static str> {
    Some(match method {
        "textDocument/definition" => "definitionProvider",
        "textDocument/declaration" => "declarationProvider",
        "textDocument/implementation" => "implementationProvider",
        "textDocument/typeDefinition" => "typeDefinitionProvider",
        "textDocument/references" => "referencesProvider",
        "textDocument/hover" => "hoverProvider",
        "textDocument/documentSymbol" => "documentSymbolProvider",
        "workspace/symbol" => "workspaceSymbolProvider",
        "textDocument/prepareCallHierarchy"
        | "callHierarchy/incomingCalls"
        | "callHierarchy/outgoingCalls" => "callHierarchyProvider",
        "textDocument/rename" | "textDocument/prepareRename" => "renameProvider",
        _ => return None,
    })
}

/// Whether a server with these capabilities (and these methods registered
/// since) offers `method`.
pub fn supports(capabilities: &Value, registered: &HashSet<String>, method: &str) -> bool {
    if registered.contains(method) {
        return true;
    }
    let Some(key) = capability_of(method) else {
        return true;
    };
    let offered = |value: &Value| value.as_bool().unwrap_or(value.is_object());
    match (method, capabilities.get(key)) {
        (_, None) => false,
        // `prepareRename` only where the rename options say so.
        ("textDocument/prepareRename", Some(rename)) => rename["prepareProvider"] == true,
        (_, Some(value)) => offered(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_is_offered_by_its_capability_or_a_registration() {
        let capabilities = json!({
            "hoverProvider": true,
            "definitionProvider": {"workDoneProgress": true},
            "referencesProvider": false,
            "renameProvider": true,
        });
        let registered: HashSet<String> = ["textDocument/implementation".to_string()].into();
        let cases = [
            ("textDocument/hover", true),
            ("textDocument/definition", true),
            ("textDocument/references", false),
            ("callHierarchy/incomingCalls", false),
            ("textDocument/implementation", true),
            ("textDocument/rename", true),
            ("textDocument/prepareRename", false),
            ("textDocument/semanticTokens/full", true),
        ];
        for (method, offered) in cases {
            assert_eq!(
                supports(&capabilities, &registered, method),
                offered,
                "{method}"
            );
        }
    }
}
