//! Retries with exponential backoff and jitter, honouring `retry-after`.
//!
//! Only failures before any output are retried (the caller decides what
//! "before output" is); the attempt count is bounded.

use std::future::Future;
use std::time::Duration;

use super::ProviderError;

#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Total attempts, the first included.
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

/// A server asking for more than this is treated as asking for this much:
/// a turn should fail visibly rather than hang for an hour.
const LONGEST_RETRY_AFTER: Duration = Duration::from_secs(60);

impl RetryPolicy {
    /// The wait after failed attempt number `attempt` (1-based).
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(asked) = retry_after {
            return asked.min(LONGEST_RETRY_AFTER);
        }
        let exponential = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)))
            .min(self.max_delay);
        // Jitter in [50%, 100%] keeps many clients from retrying in lockstep.
        exponential.mul_f64(0.5 + fastrand::f64() * 0.5)
    }

    /// Runs `attempt` until it succeeds, fails for good, or the attempts run out.
    pub async fn run<T, F, Fut>(&self, mut attempt: F) -> Result<T, ProviderError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let mut failures = 0;
        loop {
            match attempt().await {
                Ok(value) => return Ok(value),
                Err(error) if error.is_retryable() && failures + 1 < self.max_attempts => {
                    failures += 1;
                    let wait = self.delay(failures, error.retry_after());
                    tracing::warn!(%error, attempt = failures, wait_ms = wait.as_millis() as u64, "retrying model call");
                    tokio::time::sleep(wait).await;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

/// Parses `retry-after` (seconds, possibly fractional) or OpenAI's
/// `retry-after-ms`. HTTP-date forms are ignored: backoff covers them.
pub fn parse_retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    header("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let policy = RetryPolicy::default();
        for attempt in 1..10 {
            let ceiling = policy
                .base_delay
                .saturating_mul(2u32.pow(attempt - 1))
                .min(policy.max_delay);
            let wait = policy.delay(attempt, None);
            assert!(
                wait <= ceiling && wait >= ceiling / 2,
                "{attempt}: {wait:?}"
            );
        }
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3600))),
            LONGEST_RETRY_AFTER
        );
    }

    #[test]
    fn retry_after_headers_parse() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(parse_retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "1500".parse().unwrap());
        assert_eq!(
            parse_retry_after(&headers),
            Some(Duration::from_millis(1500))
        );
        headers.clear();
        headers.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(parse_retry_after(&headers), None);
    }
}
