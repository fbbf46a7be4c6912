//! What a request carries to say who the user is: an API key, a gateway's
//! bearer token (`ANTHROPIC_AUTH_TOKEN`) and a gateway's own headers
//! (`ANTHROPIC_CUSTOM_HEADERS`, `OPENAI_CUSTOM_HEADERS`: `Name: value`
//! lines), read from the environment only.
//!
//! Every value here is a secret: the header values are marked sensitive
//! (HTTP/2 never indexes them), scrubbed from every error message (see
//! [`Credentials::secrets`]) and from tool output (`crate::secrets` reads the
//! same variables with [`crate::secrets::secret_values`]); `Debug` shows names only, and no
//! error quotes a value or a malformed line.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::ProviderError;

pub const ANTHROPIC_CUSTOM_HEADERS: &str = "ANTHROPIC_CUSTOM_HEADERS";
pub const OPENAI_CUSTOM_HEADERS: &str = "OPENAI_CUSTOM_HEADERS";

/// Headers that frame the HTTP message: one set by the user could corrupt
/// the request or smuggle a second one, so none may be.
const FRAMING: [&str; 10] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-connection",
];

#[derive(Clone, Default)]
pub struct Credentials {
    pub api_key: Option<String>,
    /// Sent as `Authorization: Bearer …` (a gateway's token).
    pub auth_token: Option<String>,
    /// The gateway's headers, and the variable they came from.
    pub custom_headers: Vec<(HeaderName, HeaderValue)>,
    pub custom_headers_from: &'static str,
}

/// Names only: a value must never reach a log.
impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("api_key", &self.api_key.as_ref().map(|_| "[set]"))
            .field("auth_token", &self.auth_token.as_ref().map(|_| "[set]"))
            .field(
                "custom_headers",
                &self
                    .custom_headers
                    .iter()
                    .map(|(name, _)| name.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

impl Credentials {
    /// Just a key (tests, and callers that bring their own).
    pub fn api_key(key: impl Into<String>) -> Self {
        Credentials {
            api_key: Some(key.into()).filter(|key| !key.is_empty()),
            ..Credentials::default()
        }
    }

    /// `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`, `ANTHROPIC_CUSTOM_HEADERS`.
    pub fn anthropic_from_env() -> Result<Self, ProviderError> {
        Ok(Credentials {
            api_key: env("ANTHROPIC_API_KEY"),
            auth_token: env("ANTHROPIC_AUTH_TOKEN"),
            custom_headers: parse_custom_headers(
                ANTHROPIC_CUSTOM_HEADERS,
                &env(ANTHROPIC_CUSTOM_HEADERS).unwrap_or_default(),
            )?,
            custom_headers_from: ANTHROPIC_CUSTOM_HEADERS,
        })
    }

    /// `OPENAI_API_KEY`, `OPENAI_CUSTOM_HEADERS`.
    pub fn openai_from_env() -> Result<Self, ProviderError> {
        Ok(Credentials {
            api_key: env("OPENAI_API_KEY"),
            auth_token: None,
            custom_headers: parse_custom_headers(
                OPENAI_CUSTOM_HEADERS,
                &env(OPENAI_CUSTOM_HEADERS).unwrap_or_default(),
            )?,
            custom_headers_from: OPENAI_CUSTOM_HEADERS,
        })
    }

    /// Whether the custom headers set `name` (lowercase).
    pub fn sets_header(&self, name: &str) -> bool {
        self.custom_headers.iter().any(|(n, _)| n == name)
    }

    /// The headers of every request: the provider's `own` (name, value,
    /// secret), then the custom ones. A custom header may add to them, never
    /// replace one (`x-api-key`, `authorization`, a version) nor frame the
    /// message: that is a configuration error, not a silent choice.
    pub(crate) fn headers(
        &self,
        own: &[(&'static str, String, bool)],
    ) -> Result<HeaderMap, ProviderError> {
        let mut map = HeaderMap::new();
        for (name, value, secret) in own {
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                ProviderError::Config(format!(
                    "the value for the `{name}` header holds characters a header cannot carry"
                ))
            })?;
            value.set_sensitive(*secret);
            map.insert(*name, value);
        }
        for (name, value) in &self.custom_headers {
            let own_name = own.iter().any(|(own, _, _)| own == name);
            if FRAMING.contains(&name.as_str()) || own_name {
                return Err(ProviderError::Config(format!(
                    "{}: the `{name}` header is one bareagent sets itself; remove it from {0}",
                    self.custom_headers_from
                )));
            }
            map.append(name.clone(), value.clone());
        }
        Ok(map)
    }

    /// Every secret value, for scrubbing error messages.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let custom = self
            .custom_headers
            .iter()
            .filter_map(|(_, value)| value.to_str().ok().map(str::to_string));
        self.api_key
            .iter()
            .chain(&self.auth_token)
            .cloned()
            .chain(custom)
            .filter(|value| !value.is_empty())
            .collect()
    }
}

/// `Name: value` lines, newline-separated (blank lines skipped). A line
/// that is not a header is an error naming the variable and the line
/// number, never the line: it may hold a secret.
pub fn parse_custom_headers(
    var: &str,
    text: &str,
) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
    let mut headers = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let problem = |what: &str| {
            ProviderError::Config(format!(
                "{var}, line {}: {what}; write one `Name: value` header per line",
                index + 1
            ))
        };
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| problem("no `:` between a name and a value"))?;
        let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
            problem("the name before the `:` is not an HTTP header name (letters, digits and - only, no spaces)")
        })?;
        let value = value.trim();
        if value.is_empty() {
            return Err(problem(&format!("the `{name}` header has no value")));
        }
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            problem(&format!(
                "the value of `{name}` holds characters a header cannot carry"
            ))
        })?;
        value.set_sensitive(true);
        headers.push((name, value));
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VAR: &str = "ANTHROPIC_CUSTOM_HEADERS";

    #[test]
    fn header_lines_parse_or_fail_without_quoting_the_line() {
        let ok: &[(&str, &[(&str, &str)])] = &[
            ("", &[]),
            ("\n\n", &[]),
            ("X-Gateway-Key: gw-123", &[("x-gateway-key", "gw-123")]),
            (
                "A: 1\r\nB:two words \n\nA: 3",
                &[("a", "1"), ("b", "two words"), ("a", "3")],
            ),
            (
                "X-Url: http://host:8080/p",
                &[("x-url", "http://host:8080/p")],
            ),
        ];
        for (text, want) in ok {
            let got = parse_custom_headers(VAR, text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            let got: Vec<(&str, &str)> = got
                .iter()
                .map(|(n, v)| (n.as_str(), v.to_str().unwrap()))
                .collect();
            assert_eq!(&got, want, "{text:?}");
            assert!(
                parse_custom_headers(VAR, text)
                    .unwrap()
                    .iter()
                    .all(|(_, v)| v.is_sensitive())
            );
        }
        let bad = [
            ("sk-secret-no-colon", "line 1: no `:`"),
            ("A: 1\nsk-secret-no-colon", "line 2: no `:`"),
            (": sk-secret-value", "line 1: the name"),
            ("Bearer sk-secret: x", "line 1: the name"),
            ("X-Empty:", "line 1: the `x-empty` header has no value"),
            ("X-Bad: sk-secret\u{7}", "line 1: the value of `x-bad`"),
        ];
        for (text, want) in bad {
            let error = parse_custom_headers(VAR, text).expect_err(text).to_string();
            assert!(
                error.starts_with(VAR) && error.contains(want),
                "{text:?}: {error}"
            );
            assert!(!error.contains("sk-secret"), "{text:?}: {error}");
        }
    }

    #[test]
    fn custom_headers_add_and_never_replace_or_frame() {
        let with = |text: &str| Credentials {
            api_key: Some("sk-key".into()),
            custom_headers: parse_custom_headers(VAR, text).unwrap(),
            custom_headers_from: VAR,
            ..Credentials::default()
        };
        let own = [("x-api-key", "sk-key".to_string(), true)];
        let map = with("X-Team: blue\nX-Team: green").headers(&own).unwrap();
        assert_eq!(map.get_all("x-team").iter().count(), 2);
        assert!(map["x-api-key"].is_sensitive());
        for name in [
            "X-Api-Key",
            "Host",
            "Content-Length",
            "Transfer-Encoding",
            "Content-Type",
        ] {
            let error = with(&format!("{name}: sk-other-value"))
                .headers(&own)
                .expect_err(name)
                .to_string();
            assert!(error.contains("sets itself"), "{name}: {error}");
            assert!(!error.contains("sk-other-value"), "{error}");
        }
    }

    #[test]
    fn every_value_is_a_secret_and_none_is_shown_by_debug() {
        let credentials = Credentials {
            api_key: Some("sk-key-1".into()),
            auth_token: Some("tok-2".into()),
            custom_headers: parse_custom_headers(VAR, "X-A: val-3\nX-B: val-4").unwrap(),
            custom_headers_from: VAR,
        };
        assert_eq!(
            credentials.secrets(),
            ["sk-key-1", "tok-2", "val-3", "val-4"]
        );
        let shown = format!("{credentials:?}");
        for secret in credentials.secrets() {
            assert!(!shown.contains(&secret), "{shown}");
        }
        let values: Vec<&str> =
            crate::secrets::secret_values("X-A: val-3\n\nnot a header\nX-B:").collect();
        assert_eq!(values, ["val-3", "not a header", "X-B:"]);
    }
}
