//! Cutting text to a length in characters, on char boundaries: the one way
//! every surface shortens what it shows (tool output, quoted input in
//! errors, summaries of tool calls). Knows nothing of where the text goes.

/// The first `max` chars of `text` (all of it if shorter).
pub fn prefix(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

/// `text` cut to `max` chars, with `…` after a cut.
pub fn clip(text: &str, max: usize) -> String {
    let kept = prefix(text, max);
    if kept.len() < text.len() {
        format!("{kept}…")
    } else {
        text.to_string()
    }
}

/// Cuts `text` in place to `max` chars; returns whether it cut (the caller
/// says so in its own words).
pub fn truncate_chars(text: &mut String, max: usize) -> bool {
    let kept = prefix(text, max).len();
    let cut = kept < text.len();
    text.truncate(kept);
    cut
}

/// `1 model call`, `2 model calls`: a count and its noun, plural unless one.
pub fn count(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_char_boundaries() {
        // (text, max, prefix, clip)
        let cases = [
            ("", 3, "", ""),
            ("abc", 3, "abc", "abc"),
            ("abcd", 3, "abc", "abc…"),
            ("éèêë", 2, "éè", "éè…"),
            ("a😀b", 2, "a😀", "a😀…"),
            ("abc", 0, "", "…"),
        ];
        for (text, max, want_prefix, want_clip) in cases {
            assert_eq!(prefix(text, max), want_prefix, "{text:?} {max}");
            assert_eq!(clip(text, max), want_clip, "{text:?} {max}");
            let mut owned = text.to_string();
            assert_eq!(truncate_chars(&mut owned, max), want_prefix != text);
            assert_eq!(owned, want_prefix);
        }
    }
}
