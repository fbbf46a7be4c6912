//! Retries with exponential backoff and jitter, honouring `retry-after`.
//!
//! Only failures before any output are retried (the caller decides what
//! "before output" is); the attempt count is bounded. Each retry is logged
//! at `info` (a busy server is not an error until the attempts run out) and
//! told to a [`RetryObserver`], which `bareagent run` prints as one line.

use std::future::Future;
use std::sync::Arc;
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

    /// Runs `attempt` until it succeeds, fails for good, or the attempts
    /// run out, telling `observer` of each retry before its wait.
    pub async fn run<T, F, Fut>(
        &self,
        observer: Option<&RetryObserver>,
        mut attempt: F,
    ) -> Result<T, ProviderError>
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
                    let retrying = Retrying {
                        attempt: failures + 1,
                        max_attempts: self.max_attempts,
                        wait: self.delay(failures, error.retry_after()),
                        error: &error,
                    };
                    tracing::info!(
                        attempt = retrying.attempt,
                        of = self.max_attempts,
                        wait_ms = retrying.wait.as_millis() as u64,
                        "retrying model call: {error}"
                    );
                    if let Some(observer) = observer {
                        (observer.0)(&retrying);
                    }
                    tokio::time::sleep(retrying.wait).await;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

/// A retry about to happen: after `wait`, attempt number `attempt` of
/// `max_attempts`, because of `error`.
#[derive(Debug)]
pub struct Retrying<'e> {
    pub attempt: u32,
    pub max_attempts: u32,
    pub wait: Duration,
    pub error: &'e ProviderError,
}

impl std::fmt::Display for Retrying<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "retrying in {:.1} s (attempt {}/{}): {}",
            self.wait.as_secs_f64(),
            self.attempt,
            self.max_attempts,
            self.error.reason()
        )
    }
}

/// Who hears of retries as they happen (the terminal, in `bareagent run`).
#[derive(Clone)]
pub struct RetryObserver(Arc<dyn Fn(&Retrying<'_>) + Send + Sync>);

impl RetryObserver {
    pub fn new(observe: impl Fn(&Retrying<'_>) + Send + Sync + 'static) -> Self {
        RetryObserver(Arc::new(observe))
    }
}

impl std::fmt::Debug for RetryObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RetryObserver")
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
    fn a_retry_says_when_which_attempt_and_why_in_one_line() {
        let error = ProviderError::Connect {
            provider: "anthropic".into(),
            message: "connection refused to 127.0.0.1:9".into(),
        };
        let retrying = Retrying {
            attempt: 2,
            max_attempts: 4,
            wait: Duration::from_millis(430),
            error: &error,
        };
        assert_eq!(
            retrying.to_string(),
            "retrying in 0.4 s (attempt 2/4): connection refused to 127.0.0.1:9"
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
