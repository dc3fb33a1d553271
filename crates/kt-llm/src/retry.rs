//! When and how long to wait before trying a failed call again: exponential backoff with jitter, and the
//! server's `Retry-After` when it sends one.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::error::LlmError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = never retry).
    pub max_attempts: u32,
    /// Wait before the second attempt; doubles for each further one.
    #[serde(with = "crate::response::millis")]
    pub base_delay: Duration,
    /// Cap on the computed backoff.
    #[serde(with = "crate::response::millis")]
    pub max_delay: Duration,
    /// A `Retry-After` longer than this is not waited for: the error is returned instead, so that a run does
    /// not sleep for an hour on a quota reset.
    #[serde(with = "crate::response::millis")]
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_delay: Duration::from_millis(1000),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    pub fn never() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// How long to wait after failed attempt number `attempt` (1-based), or `None` to give up.
    pub fn delay_after(&self, attempt: u32, error: &LlmError) -> Option<Duration> {
        if !error.is_retryable() || attempt >= self.max_attempts {
            return None;
        }
        if let Some(wait) = error.retry_after() {
            return (wait <= self.max_retry_after).then_some(wait);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << (attempt - 1).min(16));
        let capped = exp.min(self.max_delay);
        // "Equal jitter": half fixed, half random, so simultaneous clients spread out but never retry at once.
        let jitter: f64 = rand::random::<f64>();
        Some(capped.mul_f64(0.5 + 0.5 * jitter))
    }
}

/// Parses a `Retry-After` value: delay seconds (`"30"`, also fractional) or an HTTP date
/// (`"Wed, 21 Oct 2015 07:28:00 GMT"`), measured from `now`. A date in the past means "now".
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    let at = time::PrimitiveDateTime::parse(value, &format)
        .ok()?
        .assume_utc();
    let at = SystemTime::from(at);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate_limited(after: Option<Duration>) -> LlmError {
        LlmError::RateLimited {
            provider: "p".into(),
            retry_after: after,
            attempts: 1,
            body: String::new(),
        }
    }

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470); // 2015-10-21 07:27:50 UTC
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after(" 0.5 ", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            max_retry_after: Duration::from_secs(1),
        };
        let e = rate_limited(None);
        for (attempt, full) in [(1, 100), (2, 200), (3, 350), (6, 350)] {
            let d = p.delay_after(attempt, &e).unwrap();
            assert!(
                d >= Duration::from_millis(full / 2) && d <= Duration::from_millis(full),
                "{attempt}: {d:?}"
            );
        }
        assert_eq!(p.delay_after(10, &e), None);
    }

    #[test]
    fn server_retry_after_is_honoured_unless_too_long() {
        let p = RetryPolicy {
            max_retry_after: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        assert_eq!(
            p.delay_after(1, &rate_limited(Some(Duration::from_secs(2)))),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            p.delay_after(1, &rate_limited(Some(Duration::from_secs(60)))),
            None
        );
    }

    #[test]
    fn auth_and_bad_request_are_never_retried() {
        let p = RetryPolicy::default();
        let auth = LlmError::Auth {
            provider: "p".into(),
            status: 401,
            body: String::new(),
            key_env: "K".into(),
        };
        let bad = LlmError::BadRequest {
            provider: "p".into(),
            status: 400,
            body: String::new(),
            hint: String::new(),
        };
        assert_eq!(p.delay_after(1, &auth), None);
        assert_eq!(p.delay_after(1, &bad), None);
    }
}
