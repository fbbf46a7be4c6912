//! An MCP tool's result as the text of a `tool_result`: text as is,
//! resource links and embedded text resources as text, what has no text
//! (images, audio, binary resources) as a note saying so — our history's
//! tool results carry text only — and structured content where there is
//! no other. Cut at the byte limit, on a character boundary, with a note.
//!
//! Read from the result's JSON rather than the SDK's types: the content
//! kinds grow with the protocol, and an unknown one is named, not dropped.

use serde_json::Value;

/// The text of `result` (the `CallToolResult` as JSON), at most `limit`
/// bytes of it, and whether the server said it is an error.
pub fn to_text(result: &Value, limit: usize) -> (String, bool) {
    let is_error = result["isError"].as_bool().unwrap_or(false);
    let mut parts: Vec<String> = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        parts.push(block_text(block));
    }
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
    {
        parts.push(structured.to_string());
    }
    let text = if parts.is_empty() {
        "(the tool returned no content)".to_string()
    } else {
        parts.join("\n")
    };
    (cap(text, limit), is_error)
}

fn block_text(block: &Value) -> String {
    let kind = block["type"].as_str().unwrap_or("");
    match kind {
        "text" => block["text"].as_str().unwrap_or_default().to_string(),
        "image" | "audio" => format!(
            "[{kind} ({}, {} bytes base64) not shown: tool results here carry text only]",
            block["mimeType"].as_str().unwrap_or("unknown type"),
            block["data"].as_str().map(str::len).unwrap_or(0)
        ),
        "resource_link" => format!(
            "[resource link: {}{}]",
            block["uri"].as_str().unwrap_or("?"),
            block["name"]
                .as_str()
                .map(|name| format!(" ({name})"))
                .unwrap_or_default()
        ),
        "resource" => {
            let resource = &block["resource"];
            let uri = resource["uri"].as_str().unwrap_or("?");
            match resource["text"].as_str() {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!(
                    "[resource {uri} ({}) is binary: not shown]",
                    resource["mimeType"].as_str().unwrap_or("unknown type")
                ),
            }
        }
        other => format!("[content of type `{other}` not shown]"),
    }
}

/// `text` cut to at most `limit` bytes (on a character boundary), with a
/// note saying how much was left out.
pub fn cap(text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[output cut: {} of {} bytes shown (the limit is `[mcp] max_result_bytes`)]",
        &text[..end],
        end,
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_of_content_becomes_text() {
        // (result, text, is_error)
        let cases = [
            (
                json!({"content": [{"type": "text", "text": "Echo: hi"}]}),
                "Echo: hi",
                false,
            ),
            (
                json!({"content": [{"type": "text", "text": "bad"}], "isError": true}),
                "bad",
                true,
            ),
            (
                json!({"content": [{"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}]}),
                "[image (image/png, 8 bytes base64) not shown: tool results here carry text only]",
                false,
            ),
            (
                json!({"content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}]}),
                "[resource link: file:///a (a)]",
                false,
            ),
            (
                json!({"content": [{"type": "resource", "resource": {"uri": "x://1", "text": "body"}}]}),
                "[resource x://1]\nbody",
                false,
            ),
            (
                json!({"content": [{"type": "resource", "resource": {"uri": "x://2", "blob": "AA=="}}]}),
                "[resource x://2 (unknown type) is binary: not shown]",
                false,
            ),
            (
                json!({"content": [], "structuredContent": {"n": 1}}),
                "{\"n\":1}",
                false,
            ),
            (json!({}), "(the tool returned no content)", false),
            (
                json!({"content": [{"type": "hologram"}]}),
                "[content of type `hologram` not shown]",
                false,
            ),
        ];
        for (result, text, is_error) in cases {
            assert_eq!(
                to_text(&result, 1000),
                (text.to_string(), is_error),
                "{result}"
            );
        }
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary_with_a_note() {
        assert_eq!(cap("short".into(), 5), "short");
        let cut = cap("ééé".into(), 3);
        assert!(cut.starts_with("é\n[output cut: 2 of 6 bytes"), "{cut}");
        let cut = cap("a".repeat(10), 4);
        assert!(cut.starts_with("aaaa\n[output cut: 4 of 10 bytes"), "{cut}");
    }
}
