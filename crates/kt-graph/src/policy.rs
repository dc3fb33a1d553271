//! Retry policy for one node: attempts, backoff with jitter, which typed errors retry, and handlers that
//! edit the state before the next attempt. The node itself knows nothing of it.

use crate::state::State;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

type Pred<E> = Arc<dyn Fn(&E) -> bool + Send + Sync>;
type Edit<S, E> = Arc<dyn Fn(&E, &mut S) + Send + Sync>;

/// How a node is retried. `E` is the node's own error type, so predicates and handlers match on it.
///
/// ```
/// # use std::time::Duration;
/// # #[derive(Debug)] enum ApplyError { Compile(String), Network }
/// # kt_graph::state! { #[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
/// #   struct S => SUpdate { #[overwrite] prompt: String } }
/// let retry = kt_graph::Retry::<S, ApplyError>::up_to(3)
///     .backoff(Duration::from_millis(100), 2.0, Duration::from_secs(5))
///     .retry_if(|e| matches!(e, ApplyError::Compile(_) | ApplyError::Network))
///     .before_retry(
///         |e| matches!(e, ApplyError::Compile(_)),
///         |e, s| if let ApplyError::Compile(log) = e { s.prompt.push_str(log) },
///     );
/// # let _ = retry;
/// ```
pub struct Retry<S: State, E> {
    pub(crate) max_attempts: u32,
    initial: Duration,
    factor: f64,
    max_delay: Duration,
    jitter: f64,
    retry_if: Option<Pred<E>>,
    handlers: Vec<(Pred<E>, Edit<S, E>)>,
    pub(crate) retry_timeouts: bool,
}

impl<S: State, E> Clone for Retry<S, E> {
    fn clone(&self) -> Self {
        Self {
            max_attempts: self.max_attempts,
            initial: self.initial,
            factor: self.factor,
            max_delay: self.max_delay,
            jitter: self.jitter,
            retry_if: self.retry_if.clone(),
            handlers: self.handlers.clone(),
            retry_timeouts: self.retry_timeouts,
        }
    }
}

impl<S: State, E> Retry<S, E> {
    /// At most `attempts` attempts in total (1 = no retry). Defaults: every error retries, backoff 200 ms
    /// doubling up to 10 s, ±20% jitter, timeouts retry.
    pub fn up_to(attempts: u32) -> Self {
        Self {
            max_attempts: attempts.max(1),
            initial: Duration::from_millis(200),
            factor: 2.0,
            max_delay: Duration::from_secs(10),
            jitter: 0.2,
            retry_if: None,
            handlers: Vec::new(),
            retry_timeouts: true,
        }
    }

    /// Delay before retry n is `initial * factor^(n-1)`, capped at `max`.
    pub fn backoff(mut self, initial: Duration, factor: f64, max: Duration) -> Self {
        self.initial = initial;
        self.factor = factor.max(1.0);
        self.max_delay = max;
        self
    }

    /// Each delay is scaled by a random factor in `[1 - fraction, 1 + fraction]` so parallel retries spread.
    pub fn jitter(mut self, fraction: f64) -> Self {
        self.jitter = fraction.clamp(0.0, 1.0);
        self
    }

    /// Only errors for which `pred` is true are retried; the others fail (or take `on_exhausted`) at once.
    pub fn retry_if(mut self, pred: impl Fn(&E) -> bool + Send + Sync + 'static) -> Self {
        self.retry_if = Some(Arc::new(pred));
        self
    }

    /// Before retrying after an error for which `kind` is true, `edit` changes the state the next attempt
    /// sees. The first matching handler runs. The edit is local to the node's attempts: only the update the
    /// node finally returns is merged into the graph's state.
    pub fn before_retry(
        mut self,
        kind: impl Fn(&E) -> bool + Send + Sync + 'static,
        edit: impl Fn(&E, &mut S) + Send + Sync + 'static,
    ) -> Self {
        self.handlers.push((Arc::new(kind), Arc::new(edit)));
        self
    }

    /// Timeouts end the node instead of being retried.
    pub fn no_retry_on_timeout(mut self) -> Self {
        self.retry_timeouts = false;
        self
    }

    pub(crate) fn should_retry(&self, error: &E) -> bool {
        self.retry_if.as_ref().is_none_or(|p| p(error))
    }

    pub(crate) fn handler_for(&self, error: &E) -> Option<&Edit<S, E>> {
        self.handlers
            .iter()
            .find(|(kind, _)| kind(error))
            .map(|(_, edit)| edit)
    }

    /// The delay before attempt `next_attempt` (2 for the first retry).
    pub(crate) fn delay(&self, next_attempt: u32) -> Duration {
        let exp = next_attempt.saturating_sub(2).min(60) as i32;
        let base = self.initial.as_secs_f64() * self.factor.powi(exp);
        let capped = base.min(self.max_delay.as_secs_f64());
        let scale = 1.0 + self.jitter * (2.0 * unit_random() - 1.0);
        Duration::from_secs_f64((capped * scale).max(0.0))
    }
}

/// A uniform number in [0, 1): jitter only needs to differ between tasks, not to be unpredictable.
fn unit_random() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = nanos ^ COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    crate::state! {
        #[derive(Debug, Clone, Default, Serialize, Deserialize)]
        struct P => PUpdate { #[overwrite] prompt: String }
    }

    #[test]
    fn backoff_grows_by_factor_and_stays_within_jitter_and_cap() {
        let r = Retry::<P, String>::up_to(5)
            .backoff(Duration::from_millis(100), 2.0, Duration::from_millis(300))
            .jitter(0.1);
        for _ in 0..50 {
            let d2 = r.delay(2).as_secs_f64();
            let d3 = r.delay(3).as_secs_f64();
            let d5 = r.delay(5).as_secs_f64();
            assert!((0.09..=0.11).contains(&d2), "{d2}");
            assert!((0.18..=0.22).contains(&d3), "{d3}");
            assert!((0.27..=0.33).contains(&d5), "{d5}");
        }
    }

    #[test]
    fn predicate_and_first_matching_handler_decide() {
        let r = Retry::<P, String>::up_to(3)
            .retry_if(|e| e.starts_with("retry"))
            .before_retry(|e| e.contains("compile"), |e, s| s.prompt.push_str(e))
            .before_retry(|_| true, |_, s| s.prompt.push('!'));
        assert!(r.should_retry(&"retry compile".to_string()));
        assert!(!r.should_retry(&"fatal".to_string()));
        let mut s = P::default();
        (r.handler_for(&"retry compile".to_string()).unwrap())(
            &"retry compile".to_string(),
            &mut s,
        );
        assert_eq!(s.prompt, "retry compile");
        (r.handler_for(&"other".to_string()).unwrap())(&"other".to_string(), &mut s);
        assert_eq!(s.prompt, "retry compile!");
    }
}
