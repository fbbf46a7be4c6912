//! The `bareagent/event` contract with the editors. The checked-in JSON
//! Schema (editors/protocol/bareagent-event.schema.json) is the one the
//! server's `EditorEvent` makes; the fixtures the editors' tests feed their
//! handlers (editors/protocol/events.json) are events it allows, one at
//! least of every type. Every event a test's LSP client receives is held to
//! the same schema (tests/support/lsp_client.rs, on drop).
//!
//! After a change to the events: `BAREAGENT_BLESS=1 cargo test --test it
//! editor_events` rewrites the schema; then `npm run generate:events` in
//! editors/vscode, the fixtures, and the editors' code, as their tests say.

use std::collections::BTreeSet;
use std::path::Path;

use bareagent::lsp::editor_event::{SCHEMA_PATH, schema};
use serde_json::Value;

use crate::support::event_schema::violation;

fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// editors/protocol/events.json: what the editors' tests feed their handlers.
pub(crate) fn fixtures() -> Vec<Value> {
    let path = repository().join("editors/protocol/events.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Every `type` the schema names, wherever its variants are.
fn event_types(schema: &Value, into: &mut BTreeSet<String>) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::String(kind)) = schema.pointer("/properties/type/const") {
                into.insert(kind.clone());
            }
            object.values().for_each(|value| event_types(value, into));
        }
        Value::Array(items) => items.iter().for_each(|value| event_types(value, into)),
        _ => {}
    }
}

#[test]
fn the_checked_in_schema_is_the_one_the_server_makes() {
    let path = repository().join(SCHEMA_PATH);
    let made = serde_json::to_string_pretty(&schema()).expect("a schema serializes") + "\n";
    if std::env::var("BAREAGENT_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &made).expect("write the schema");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == made,
        "{SCHEMA_PATH} is not the schema of the server's events (src/lsp/editor_event.rs). \
         Regenerate it with `BAREAGENT_BLESS=1 cargo test --test it editor_events`, \
         then the VS Code types with `npm run generate:events` in editors/vscode; \
         the editors' tests then say what must follow."
    );
}

#[test]
fn the_fixtures_are_events_the_schema_allows_one_of_each_type_at_least() {
    let fixtures = fixtures();
    for (index, event) in fixtures.iter().enumerate() {
        if let Some(why) = violation(event) {
            panic!("editors/protocol/events.json[{index}] is not a valid event: {event}\n{why}");
        }
    }
    let schema: Value = serde_json::to_value(schema()).expect("a schema serializes");
    let mut types = BTreeSet::new();
    event_types(&schema, &mut types);
    let covered: BTreeSet<String> = fixtures
        .iter()
        .filter_map(|event| event["type"].as_str().map(str::to_string))
        .collect();
    let missing: Vec<&String> = types.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "no fixture in editors/protocol/events.json of {missing:?}: add one, and let the editors' \
         tests (tests/neovim/plugin_events.lua) show what it does"
    );
    // The walk found both kinds: the server's own, and the loop's.
    assert!(
        types.contains("turn_started") && types.contains("text_delta"),
        "{types:?}"
    );
}

/// The schema is strict: a field it does not name, or one missing, is a
/// violation (so a fixture cannot keep a field the server dropped).
#[test]
fn an_unknown_or_missing_field_is_a_violation() {
    let fixtures = fixtures();
    let approval = fixtures
        .iter()
        .find(|event| event["type"] == "approval_requested")
        .expect("an approval fixture");
    let delta = fixtures
        .iter()
        .find(|event| event["type"] == "text_delta")
        .expect("a text delta fixture");
    for event in [approval, delta] {
        let mut extra = event.clone();
        extra["colour"] = "blue".into();
        assert!(violation(&extra).is_some(), "{extra}");
        let mut without_session = event.clone();
        let had = without_session
            .as_object_mut()
            .and_then(|object| object.remove(if event == approval { "rule" } else { "session" }));
        assert!(had.is_some(), "{event}");
        assert!(violation(&without_session).is_some(), "{without_session}");
    }
    let mut usage = fixtures
        .iter()
        .find(|event| event["type"] == "usage")
        .expect("a usage fixture")
        .clone();
    usage["total"]["input_tokens"] = "many".into();
    assert!(violation(&usage).is_some(), "{usage}");
}
