//! Provider failures. Each names the provider and, where there was one, the
//! HTTP status and the server's own message. None may carry a secret: the
//! HTTP layer scrubs the API key from every message it builds.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// No response: the connection was refused, the host unknown, TLS
    /// failed. `message` says which, to what (`connection refused to
    /// 127.0.0.1:9`).
    #[error("{provider}: {}", self.reason())]
    Connect { provider: String, message: String },

    /// The server's certificate did not verify: no root vouches for it, it
    /// is for another name, it expired. Another attempt meets the same
    /// certificate, so it is never retried.
    #[error("{provider}: {}", self.reason())]
    Certificate { provider: String, message: String },

    #[error("{provider}: {}", self.reason())]
    Status {
        provider: String,
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },

    #[error("{provider}: {}", self.reason())]
    Idle { provider: String, after: Duration },

    /// The stream broke: malformed SSE, a reset connection, an `error` event,
    /// or an end before the final event.
    #[error("{provider}: {}", self.reason())]
    Stream { provider: String, message: String },

    #[error("{provider}: {}", self.reason())]
    Decode { provider: String, message: String },

    /// The provider refused the request as longer than the model's context
    /// window (Anthropic's 400 "prompt is too long", OpenAI's
    /// `context_length_exceeded`): the loop compacts and tries once more.
    #[error("{provider}: the request is longer than the model's context window ({message})")]
    ContextTooLong { provider: String, message: String },

    /// The model refused a setting the request carried: a 400 that names
    /// `thinking`, an effort, a sampling parameter. Only the user can fix
    /// it (another setting, another model), so it is never retried, and
    /// it says in one line which setting to change.
    #[error("{}", self.reason())]
    Refused {
        provider: String,
        model: String,
        /// The setting, by the name the user knows it by (`thinking`,
        /// `effort`, `temperature`).
        setting: &'static str,
        /// What the request sent for it (`adaptive`, `enabled`, `max`).
        sent: Option<String>,
        message: String,
    },

    #[error("{provider}: streaming is not supported")]
    StreamingUnsupported { provider: String },

    /// A stream failed after text had been shown. Never retried silently.
    #[error("the model's reply was cut off after output began ({0}); nothing was retried")]
    Interrupted(Box<ProviderError>),

    #[error("{0}")]
    Config(String),

    #[error("replay: {0}")]
    Replay(String),
}

impl ProviderError {
    /// Worth another attempt of the same request, before any output: the
    /// failures a busy or flaky server produces.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Connect { .. } | ProviderError::Idle { .. } => true,
            ProviderError::Status { status, .. } => {
                matches!(status, 408 | 409 | 429 | 529) || (500..600).contains(status)
            }
            _ => false,
        }
    }

    /// Whether a failed stream may be replaced by a plain `create` call: only
    /// when the server itself was reachable and said nothing final.
    pub fn allows_fallback(&self) -> bool {
        matches!(
            self,
            ProviderError::StreamingUnsupported { .. }
                | ProviderError::Stream { .. }
                | ProviderError::Idle { .. }
                | ProviderError::Decode { .. }
        )
    }

    /// What went wrong, without the provider's name: the part a retry
    /// notice shows (`retrying in 0.4 s (attempt 2/4): {reason}`).
    pub fn reason(&self) -> String {
        match self {
            ProviderError::Connect { message, .. } => message.clone(),
            ProviderError::Certificate { message, .. } => format!(
                "{message} (the certificate is checked against the system's roots, or those SSL_CERT_FILE and SSL_CERT_DIR name)"
            ),
            ProviderError::Status {
                status, message, ..
            } => format!("HTTP {status}: {message}"),
            ProviderError::Idle { after, .. } => {
                format!("no data for {} s (idle timeout)", after.as_secs())
            }
            ProviderError::Stream { message, .. } => format!("stream failed: {message}"),
            ProviderError::Decode { message, .. } => format!("unexpected response: {message}"),
            ProviderError::Refused {
                provider,
                model,
                setting,
                sent,
                message,
            } => {
                let asked = match sent {
                    Some(sent) => format!("`{setting} = {sent}`"),
                    None => format!("`{setting}`"),
                };
                let change = match (*setting, sent.as_deref()) {
                    ("thinking", Some("disabled")) => {
                        "set `thinking = \"auto\"` (config.toml, --thinking or /thinking)"
                    }
                    ("thinking", _) => {
                        "set `thinking = \"off\"` (config.toml, --thinking or /thinking)"
                    }
                    ("effort", _) => {
                        "set another `effort`, or none (config.toml, --effort or /effort)"
                    }
                    _ => "remove it from the request",
                };
                let said = message.replace(['\n', '\r'], " ");
                format!(
                    "{model} does not take {asked} ({provider} said: {said}): {change}, or pick another model"
                )
            }
            other => other.to_string(),
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ProviderError;

    #[test]
    fn a_refused_setting_says_in_one_line_which_setting_to_change() {
        let refused = |setting, sent: Option<&str>| ProviderError::Refused {
            provider: "anthropic".into(),
            model: "claude-x".into(),
            setting,
            sent: sent.map(str::to_string),
            message: "\"thinking.type.adaptive\" is not supported\nfor this model".into(),
        };
        let cases = [
            (
                refused("thinking", Some("adaptive")),
                "claude-x does not take `thinking = adaptive` (anthropic said: \"thinking.type.adaptive\" is not supported for this model): set `thinking = \"off\"` (config.toml, --thinking or /thinking), or pick another model",
            ),
            (
                refused("thinking", Some("disabled")),
                "claude-x does not take `thinking = disabled` (anthropic said: \"thinking.type.adaptive\" is not supported for this model): set `thinking = \"auto\"` (config.toml, --thinking or /thinking), or pick another model",
            ),
            (
                refused("effort", Some("max")),
                "claude-x does not take `effort = max` (anthropic said: \"thinking.type.adaptive\" is not supported for this model): set another `effort`, or none (config.toml, --effort or /effort), or pick another model",
            ),
        ];
        for (error, want) in cases {
            assert_eq!(error.to_string(), want);
            assert!(!error.is_retryable() && !error.allows_fallback());
        }
    }
}
