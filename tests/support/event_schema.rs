//! The checked-in JSON Schema of `bareagent/event`
//! (editors/protocol/bareagent-event.schema.json), compiled once: what the
//! editors are promised, and so what every event a test sees must be.

use std::sync::OnceLock;

use boon::{Compiler, SchemaIndex, Schemas};
use serde_json::Value;

pub const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/editors/protocol/bareagent-event.schema.json"
);

fn compiled() -> &'static (Schemas, SchemaIndex) {
    static COMPILED: OnceLock<(Schemas, SchemaIndex)> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let mut schemas = Schemas::new();
        let index = Compiler::new()
            .compile(SCHEMA, &mut schemas)
            .unwrap_or_else(|error| panic!("{SCHEMA}: {error:#}"));
        (schemas, index)
    })
}

/// Why `event` is not an event the schema allows; `None` when it is.
pub fn violation(event: &Value) -> Option<String> {
    let (schemas, index) = compiled();
    schemas
        .validate(event, *index)
        .err()
        .map(|error| format!("{error:#}"))
}
