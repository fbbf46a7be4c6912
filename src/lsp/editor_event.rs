//! What a `bareagent/event` notification carries, as one type: the loop's
//! events with the turn and session they belong to, and the server's own (a
//! turn started or ended, an approval asked or resolved, an MCP server
//! failed, a rewind).
//!
//! Its JSON Schema ([`schema`]) is checked in at [`SCHEMA_PATH`]; the
//! editors' code is held to it (generated TypeScript types for VS Code,
//! fixtures for the Neovim plugin's handlers), and a test fails when the
//! checked-in file is stale. Every object in it is closed: a field the
//! schema does not name is an error, so a field removed here is one an
//! editor's fixture can no longer carry.

use std::borrow::Cow;

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::Value;

use crate::events::AgentEvent;
use crate::history::Usage;
use crate::session_files::Refused;

/// Where the schema is checked in, from the repository's root.
pub const SCHEMA_PATH: &str = "editors/protocol/bareagent-event.schema.json";

/// The params of one `bareagent/event` notification.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EditorEvent {
    /// A turn started on `prompt`.
    TurnStarted {
        turn: u64,
        session: String,
        prompt: String,
    },
    /// A turn ended with its final answer.
    TurnFinished {
        turn: u64,
        session: String,
        text: String,
        usage: Usage,
    },
    /// A turn ended without an answer: `message` says why (`cancelled`
    /// when it was cancelled).
    TurnFailed {
        turn: u64,
        session: String,
        message: String,
    },
    /// A question waits for the user's answer.
    ApprovalRequested {
        id: u64,
        turn: u64,
        tool: String,
        summary: String,
        reason: String,
        /// What "allow always" would save.
        rule: String,
        /// The whole unified diff of an edit, else `null`.
        diff: Option<String>,
        /// An edit's file, workspace-relative, else `null`.
        path: Option<String>,
        /// An edit's file by the URI the editor opened it with (else the
        /// file's own), else `null`.
        uri: Option<String>,
        /// An edit's file's whole text after the change, else `null`.
        proposed: Option<String>,
    },
    /// Question `id` was answered or dropped. No turn or session: it
    /// belongs to whichever asked.
    ApprovalResolved { id: u64 },
    /// An MCP server could not start, hung, or crashed; its tools are left out.
    McpServer {
        server: String,
        /// `failed`.
        state: String,
        message: String,
    },
    /// `bareagent.rewind` undid the session's last turn.
    Rewound {
        session: String,
        /// Paths put back as they were before the turn.
        restored: Vec<String>,
        /// Files left as they are, with why.
        refused: Vec<Refused>,
    },
    /// One of the loop's events, with where it belongs.
    #[serde(untagged)]
    Turn(TurnEvent),
}

/// One of the loop's events, with its turn and session.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TurnEvent {
    #[serde(flatten)]
    pub event: AgentEvent,
    #[serde(flatten)]
    pub place: Place,
    /// The session's totals: `Some` on `usage` events, where the schema
    /// requires them, and only there.
    #[serde(flatten)]
    pub session_spend: Option<SessionSpend>,
}

/// The turn and session an event belongs to.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Place {
    /// Absent for a compaction asked for between turns (`bareagent.compact`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub turn: Option<u64>,
    pub session: String,
}

/// The session's usage and cost so far, this turn's included.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct SessionSpend {
    pub session_total: Usage,
    /// USD; `null` when some call's model has no price.
    pub session_cost_usd: Option<f64>,
}

impl TurnEvent {
    /// `event` of turn `turn` (if any) in `session`, without the session's totals.
    pub fn new(event: AgentEvent, turn: Option<u64>, session: &str) -> TurnEvent {
        TurnEvent {
            event,
            place: Place {
                turn,
                session: session.to_string(),
            },
            session_spend: None,
        }
    }
}

impl From<TurnEvent> for EditorEvent {
    fn from(event: TurnEvent) -> EditorEvent {
        EditorEvent::Turn(event)
    }
}

impl JsonSchema for TurnEvent {
    fn schema_name() -> Cow<'static, str> {
        "TurnEvent".into()
    }

    /// `AgentEvent`'s variants, each with the `Place` fields among its own
    /// (and `usage` with the `SessionSpend` ones): one object per `type`, as
    /// the editors read it. Derived, `flatten` would put these fields beside
    /// the variants' `oneOf`, where no object could be closed.
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = AgentEvent::json_schema(generator);
        let place = Place::json_schema(generator);
        let spend = SessionSpend::json_schema(generator);
        if let Some(Value::Array(variants)) = schema.get_mut("oneOf") {
            for variant in variants {
                merge_fields(variant, &place);
                if variant.pointer("/properties/type/const") == Some(&Value::from("usage")) {
                    merge_fields(variant, &spend);
                }
            }
        }
        schema
    }
}

/// Adds `from`'s properties (and which are required) to object schema `into`.
fn merge_fields(into: &mut Value, from: &Schema) {
    let Some(into) = into.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(properties)) = from.get("properties")
        && let Value::Object(target) = into
            .entry("properties")
            .or_insert(Value::Object(Default::default()))
    {
        target.extend(properties.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if let Some(Value::Array(required)) = from.get("required")
        && let Value::Array(target) = into.entry("required").or_insert(Value::Array(Vec::new()))
    {
        target.extend(required.iter().cloned());
    }
}

/// The notification's JSON Schema (draft 2020-12), as serialized: a field is
/// required when it is always sent (`null` included), and no object takes
/// fields it does not name.
pub fn schema() -> Schema {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .with_transform(schemars::transform::RecursiveTransform(close_object))
        .into_generator()
        .into_root_schema_for::<EditorEvent>()
}

/// An object schema with named properties takes no others.
fn close_object(schema: &mut Schema) {
    if schema.get("properties").is_some() && schema.get("additionalProperties").is_none() {
        schema.insert("additionalProperties".into(), false.into());
    }
}
