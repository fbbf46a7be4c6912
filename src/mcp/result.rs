//! An MCP tool's result as a `tool_result`: text as is, resource links and
//! embedded text resources as text, images as images (each checked by
//! [`Image::refusal`], and all of them together within one image's cap;
//! one refused becomes its note), what else has no text
//! (audio, binary resources) as a note saying so, and structured content
//! where there is no other. The text is cut at the byte limit, on a
//! character boundary, with a note.
//!
//! Read from the result's JSON rather than the SDK's types: the content
//! kinds grow with the protocol, and an unknown one is named, not dropped.

use serde_json::Value;

use crate::history::{Image, MAX_IMAGE_BASE64};
use crate::tools::ToolOutput;

/// `result` (the `CallToolResult` as JSON) as a tool's output, at most
/// `limit` bytes of text, and whether the server said it is an error.
pub fn to_output(result: &Value, limit: usize) -> (ToolOutput, bool) {
    let is_error = result["isError"].as_bool().unwrap_or(false);
    let mut parts: Vec<String> = Vec::new();
    let mut images: Vec<Image> = Vec::new();
    let mut image_bytes = 0;
    for block in result["content"].as_array().into_iter().flatten() {
        match image(block) {
            // All of a result's images together stay within one image's
            // cap: a server returning many cannot fill the history (each
            // is stored in the session file, and sent with every request).
            Some(Ok(image)) if image_bytes + image.data.len() > MAX_IMAGE_BASE64 => {
                parts.push(format!(
                    "[image ({}) left out: the result's images are over {MAX_IMAGE_BASE64} bytes of base64 in all]",
                    image.media_type
                ));
            }
            // A mark in the text too: the events and the chat file show
            // text only, and it keeps the text's order readable.
            Some(Ok(image)) => {
                image_bytes += image.data.len();
                parts.push(format!("[image ({}) attached]", image.media_type));
                images.push(image);
            }
            Some(Err(note)) => parts.push(note),
            None => parts.push(block_text(block)),
        }
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
    let text = cap(text, limit);
    (ToolOutput { text, images }, is_error)
}

/// An `image` block as an image, or the note standing in for one that may
/// not be sent; `None` for a block of another kind.
fn image(block: &Value) -> Option<Result<Image, String>> {
    if block["type"] != "image" {
        return None;
    }
    let image = Image {
        media_type: block["mimeType"]
            .as_str()
            .unwrap_or("unknown type")
            .to_string(),
        data: block["data"].as_str().unwrap_or_default().to_string(),
    };
    Some(match image.refusal() {
        Some(note) => Err(note),
        None => Ok(image),
    })
}

fn block_text(block: &Value) -> String {
    let kind = block["type"].as_str().unwrap_or("");
    match kind {
        "text" => block["text"].as_str().unwrap_or_default().to_string(),
        "audio" => format!(
            "[{kind} ({}, {} bytes base64) not shown: tool results here carry text or images only]",
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
                json!({"content": [{"type": "audio", "data": "aGVsbG8=", "mimeType": "audio/wav"}]}),
                "[audio (audio/wav, 8 bytes base64) not shown: tool results here carry text or images only]",
                false,
            ),
            (
                json!({"content": [{"type": "image", "data": "PHN2Zz4=", "mimeType": "image/svg+xml"}]}),
                "[image (image/svg+xml) left out: its media type `image/svg+xml` is not one of image/png, image/jpeg, image/gif, image/webp]",
                false,
            ),
            (
                json!({"content": [{"type": "image", "mimeType": "image/png"}]}),
                "[image (image/png) left out: its data is not base64]",
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
                to_output(&result, 1000),
                (ToolOutput::from(text.to_string()), is_error),
                "{result}"
            );
        }
    }

    #[test]
    fn a_results_images_stay_within_one_images_cap_in_all() {
        let half = "A".repeat(MAX_IMAGE_BASE64 / 2);
        let image = json!({"type": "image", "data": half, "mimeType": "image/png"});
        let result = json!({"content": [image, image, image]});
        let (output, _) = to_output(&result, 1000);
        assert_eq!(output.images.len(), 2);
        assert!(
            output.text.ends_with("[image (image/png) left out: the result's images are over 5242880 bytes of base64 in all]"),
            "{}",
            output.text
        );
    }

    #[test]
    fn images_within_the_cap_become_images_of_the_result() {
        let result = json!({"content": [
            {"type": "text", "text": "here"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "image", "data": "A".repeat(crate::history::MAX_IMAGE_BASE64 + 1), "mimeType": "image/png"},
        ]});
        let (output, is_error) = to_output(&result, 1000);
        assert!(!is_error);
        assert_eq!(
            output.images,
            [Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into()
            }]
        );
        assert!(
            output.text.starts_with("here\n[image (image/png) attached]\n[image (image/png) left out: it is 5242881 bytes"),
            "{}",
            output.text
        );
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
