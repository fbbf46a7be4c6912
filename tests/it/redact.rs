//! What changes from run to run, taken out of outputs before they are
//! compared with committed snapshots: the workspace's path, tool call ids
//! (a process-wide counter in the model server, and per API), timings.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

/// The workspace's path as the tools may print it (the temp dir may sit
/// behind a symlink), to be shown as `[ROOT]`.
pub struct Roots(Vec<String>);

impl Roots {
    pub fn of(dir: &Path) -> Roots {
        let mut roots = vec![dir.display().to_string()];
        if let Ok(real) = dir.canonicalize() {
            roots.insert(0, real.display().to_string());
        }
        Roots(roots)
    }

    pub fn redact(&self, text: &str) -> String {
        self.0.iter().fold(text.to_string(), |text, root| {
            text.replace(root.as_str(), "[ROOT]")
        })
    }
}

/// Stable JSON: ids (`id`, `tool_use_id`) become `call-1`, `call-2`, … in
/// order of first appearance, timings (`*_ms`) `[ms]`, the workspace `[ROOT]`.
/// `ids` carries the numbering across values (the lines of one stream).
pub fn normalise(value: &mut Value, ids: &mut BTreeMap<String, String>, root: &Roots) {
    match value {
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                match (key.as_str(), &*field) {
                    ("id" | "tool_use_id", Value::String(id)) => {
                        let next = format!("call-{}", ids.len() + 1);
                        let stable = ids.entry(id.clone()).or_insert(next).clone();
                        *field = Value::String(stable);
                    }
                    (key, Value::Number(_)) if key.ends_with("_ms") => *field = json!("[ms]"),
                    _ => normalise(field, ids, root),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| normalise(item, ids, root)),
        Value::String(text) => *text = root.redact(text),
        _ => {}
    }
}
