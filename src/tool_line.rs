//! A tool call in a few words, as every surface shows it: the chat file
//! (`` `grep` add\( ``), the terminal (`→ grep add\(`), editor progress.
//! Only the words are shared; each surface adds its own marks.

use serde_json::Value;

/// The longest summary, in characters, before it is cut with `…`.
const MAX_CHARS: usize = 100;

/// A tool call's input in a few words: the path, the command, the pattern
/// or the description, else the input as JSON; cut to [`MAX_CHARS`].
pub fn brief(input: &Value) -> String {
    let text = input
        .get("path")
        .or_else(|| input.get("command"))
        .or_else(|| input.get("pattern"))
        .or_else(|| input.get("description"))
        .and_then(Value::as_str)
        .map_or_else(|| input.to_string(), str::to_string);
    crate::text::clip(&text, MAX_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_words_that_say_most() {
        let long = "x".repeat(150);
        let cases = [
            (
                json!({"path": "src/a.rs", "pattern": "fn"}),
                "src/a.rs".to_string(),
            ),
            (json!({"command": "cargo test"}), "cargo test".into()),
            (json!({"pattern": "add\\("}), "add\\(".into()),
            (json!({"description": "look around"}), "look around".into()),
            (json!({"todos": []}), r#"{"todos":[]}"#.into()),
            (json!({"command": long}), format!("{}…", "x".repeat(100))),
        ];
        for (input, want) in cases {
            assert_eq!(brief(&input), want, "{input}");
        }
    }
}
