//! The values of the keys the agent holds, and their removal from whatever
//! a tool hands back. A command can print the agent's own environment
//! (`/proc/$PPID/environ`), a file can hold a key: the loop passes every
//! tool result and every background notice through [`Secrets::scrub`]
//! before the model, an event, the chat file, a session or a recording can
//! see it. The set is read once, at start, from the agent's environment:
//! the values of keys and tokens, and each header value of a gateway's
//! custom headers (`ANTHROPIC_CUSTOM_HEADERS`, `OPENAI_CUSTOM_HEADERS`).

use std::borrow::Cow;
use std::sync::OnceLock;

/// Names whose values count as secrets, by ending (`_AUTH_TOKEN` is a `_TOKEN`).
const SECRET_ENDINGS: [&str; 3] = ["_API_KEY", "_TOKEN", "_SECRET"];
/// Names whose value is `Name: value` lines, each value a secret.
const HEADER_LIST_ENDING: &str = "_CUSTOM_HEADERS";
/// Shorter values are left alone: `TOKEN=1` is a flag, and replacing every
/// `1` would wreck the output without hiding anything.
const MIN_SECRET_CHARS: usize = 8;

#[derive(Debug, Default)]
pub struct Secrets {
    /// (name, value), longest value first, so a value that contains another
    /// is replaced whole.
    values: Vec<(String, String)>,
}

impl Secrets {
    /// The secrets among `vars`.
    pub fn from_vars<N, V>(vars: impl IntoIterator<Item = (N, V)>) -> Self
    where
        N: AsRef<std::ffi::OsStr>,
        V: AsRef<std::ffi::OsStr>,
    {
        let mut values: Vec<(String, String)> = Vec::new();
        for (name, value) in vars {
            let (Some(name), Some(value)) = (name.as_ref().to_str(), value.as_ref().to_str())
            else {
                continue;
            };
            let upper = name.to_ascii_uppercase();
            let found: Vec<&str> = if upper.ends_with(HEADER_LIST_ENDING) {
                secret_values(value).collect()
            } else if SECRET_ENDINGS.iter().any(|end| upper.ends_with(end)) {
                vec![value]
            } else {
                continue;
            };
            values.extend(
                found
                    .into_iter()
                    .filter(|value| value.trim().chars().count() >= MIN_SECRET_CHARS)
                    .map(|value| (name.to_string(), value.to_string())),
            );
        }
        values.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        values.dedup_by(|a, b| a.1 == b.1);
        Secrets { values }
    }

    /// The agent's own secrets, read from its environment the first time
    /// (call it at start, before anything could change the environment).
    pub fn global() -> &'static Secrets {
        static GLOBAL: OnceLock<Secrets> = OnceLock::new();
        GLOBAL.get_or_init(|| Secrets::from_vars(std::env::vars_os()))
    }

    /// The names of the secrets held (never their values), for logs.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.iter().map(|(name, _)| name.as_str())
    }

    /// `text` with every secret value replaced by `[redacted NAME]`.
    pub fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut text = Cow::Borrowed(text);
        for (name, value) in &self.values {
            if text.contains(value.as_str()) {
                text = Cow::Owned(text.replace(value.as_str(), &format!("[redacted {name}]")));
            }
        }
        text
    }
}

/// The values in a custom-headers variable, for scrubbing: each header's
/// value, and a malformed line whole (it may be a secret pasted wrong).
pub fn secret_values(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n').filter_map(|line| {
        let line = line.trim();
        let value = match line.split_once(':') {
            Some((_, value)) if !value.trim().is_empty() => value.trim(),
            _ => line,
        };
        (!value.is_empty()).then_some(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_long_values_of_key_names_are_secrets() {
        let secrets = Secrets::from_vars([
            ("OPENAI_API_KEY", "sk-openai-0123456789"),
            ("GH_TOKEN", "ghp_abcdefgh"),
            ("CLAUDE_CODE_OAUTH_TOKEN", "oauth-abcdef-1"),
            ("AWS_SECRET", "aws-secret-value"),
            ("lower_api_key", "lowercase-name-1"),
            ("SHORT_TOKEN", "1234567"),
            ("PATH", "/usr/bin:/bin:/usr/local/bin"),
            ("TOKENIZER", "not-a-secret-name"),
        ]);
        let mut names: Vec<&str> = secrets.names().collect();
        names.sort();
        assert_eq!(
            names,
            [
                "AWS_SECRET",
                "CLAUDE_CODE_OAUTH_TOKEN",
                "GH_TOKEN",
                "OPENAI_API_KEY",
                "lower_api_key"
            ]
        );
    }

    #[test]
    fn each_custom_header_value_is_a_secret() {
        let secrets = Secrets::from_vars([
            (
                "ANTHROPIC_CUSTOM_HEADERS",
                "X-Gateway-Key: gw-key-0123456789\nX-Team: blue\n\nmalformed-line-secret",
            ),
            ("OPENAI_CUSTOM_HEADERS", "Authorization: Basic dXNlcjpwYXNz"),
        ]);
        let text = "gw-key-0123456789 blue malformed-line-secret Basic dXNlcjpwYXNz";
        assert_eq!(
            secrets.scrub(text),
            "[redacted ANTHROPIC_CUSTOM_HEADERS] blue [redacted ANTHROPIC_CUSTOM_HEADERS] [redacted OPENAI_CUSTOM_HEADERS]"
        );
    }

    #[test]
    fn every_occurrence_is_replaced_and_the_longest_first() {
        let secrets = Secrets::from_vars([
            ("A_API_KEY", "secret-value-1"),
            ("B_TOKEN", "secret-value-1-and-more"),
        ]);
        let cases = [
            ("nothing here", "nothing here"),
            (
                "A_API_KEY=secret-value-1\nagain secret-value-1",
                "A_API_KEY=[redacted A_API_KEY]\nagain [redacted A_API_KEY]",
            ),
            ("xsecret-value-1-and-morex", "x[redacted B_TOKEN]x"),
        ];
        for (text, scrubbed) in cases {
            assert_eq!(secrets.scrub(text), scrubbed, "{text}");
        }
        assert!(matches!(secrets.scrub("clean"), Cow::Borrowed(_)));
    }
}
