//! A cancellation token: cheap to clone, checked between steps and raced against running tasks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::Notify;

/// Cancels a run. Tasks running when it fires are dropped (their futures stop at the next await), the
/// step is not committed, and the run ends with [`GraphError::Cancelled`](crate::GraphError::Cancelled)
/// naming the last checkpoint, from which `resume` continues.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    inner: Arc<(AtomicBool, Notify)>,
}

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn cancel(&self) {
        self.inner.0.store(true, Ordering::SeqCst);
        self.inner.1.notify_waiters();
    }

    pub fn is_cancelled(&self) -> bool {
        self.inner.0.load(Ordering::SeqCst)
    }

    /// Completes once [`cancel`](Self::cancel) has been called.
    pub async fn cancelled(&self) {
        loop {
            // Register before checking the flag so a cancel between the two cannot be missed.
            let notified = self.inner.1.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn waiters_wake_when_cancelled_from_another_task() {
        let token = CancelToken::new();
        let t2 = token.clone();
        let waiter = tokio::spawn(async move { t2.cancelled().await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        token.cancel();
        tokio::time::timeout(Duration::from_secs(2), waiter)
            .await
            .unwrap()
            .unwrap();
        assert!(token.is_cancelled());
    }
}
