//! Small pieces both wire formats share.

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Value, json};

use super::ProviderError;
use crate::history::ContentBlock;

/// Serialises a request body.
pub(crate) fn encode(body: &impl Serialize) -> Result<Bytes, ProviderError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|error| ProviderError::Config(format!("cannot encode the request: {error}")))
}

/// A tool call whose input arrived as JSON text. Empty text means `{}` (a
/// tool without parameters); text that does not parse to an object is kept
/// as an error for the loop to report, with `{}` standing in.
pub(crate) fn tool_use_from_json(id: String, name: String, json: &str) -> ContentBlock {
    let parsed = if json.trim().is_empty() {
        Ok(json!({}))
    } else {
        serde_json::from_str::<Value>(json)
    };
    let (input, input_error) = match parsed {
        Ok(value) if value.is_object() => (value, None),
        Ok(value) => (
            json!({}),
            Some(format!(
                "input must be a JSON object, got: {}",
                clip(&value.to_string())
            )),
        ),
        Err(error) => (
            json!({}),
            Some(format!("input is not valid JSON ({error}): {}", clip(json))),
        ),
    };
    ContentBlock::ToolUse {
        id,
        name,
        input,
        input_error,
    }
}

/// Shortens text quoted in an error message.
pub(crate) fn clip(text: &str) -> String {
    crate::text::clip(text, 200)
}
