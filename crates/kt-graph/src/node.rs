//! A node is its work: an async function from the state to a typed update. Retry and timeout wrap it here
//! (see [`Retry`]); the node never sees them.

use crate::context::NodeContext;
use crate::error::NodeError;
use crate::events::{Event, EventKind};
use crate::policy::Retry;
use crate::state::State;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

/// One step of work in a graph.
///
/// `state` is a shared snapshot of the state at the start of the step; the node returns only the fields it
/// changes. Implement it for a struct holding the node's dependencies, or use [`node_fn`] for a closure.
pub trait Node<S: State>: Send + Sync + 'static {
    /// The node's own error type: retry predicates and handlers match on it.
    type Error: std::error::Error + Send + Sync + 'static;

    fn run(
        &self,
        state: Arc<S>,
        ctx: NodeContext,
    ) -> impl Future<Output = Result<S::Update, Self::Error>> + Send;
}

/// A node made from an async closure `|state: Arc<S>, ctx: NodeContext| async move { .. }`.
pub struct FnNode<F>(F);

/// Wraps a closure as a [`Node`]. Use [`NoError`] as the error type of nodes that cannot fail.
pub fn node_fn<F>(f: F) -> FnNode<F> {
    FnNode(f)
}

/// The error type of a node that cannot fail.
pub type NoError = std::convert::Infallible;

impl<S, F, Fut, E> Node<S> for FnNode<F>
where
    S: State,
    F: Fn(Arc<S>, NodeContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<S::Update, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    type Error = E;

    fn run(
        &self,
        state: Arc<S>,
        ctx: NodeContext,
    ) -> impl Future<Output = Result<S::Update, E>> + Send {
        (self.0)(state, ctx)
    }
}

/// Why a task produced no update.
#[derive(Debug, Clone)]
pub(crate) enum TaskFailure {
    /// The node failed: the message a person reads, and the node's typed error when it returned one (not
    /// for a panic or a timeout).
    Error {
        message: String,
        cause: Option<NodeError>,
    },
    Interrupted(Value),
}

pub(crate) struct TaskResult<S: State> {
    pub outcome: Result<S::Update, TaskFailure>,
    pub attempts: u32,
}

/// A node with its policies, type-erased so a graph can hold nodes of different types.
pub(crate) trait RunTask<S: State>: Send + Sync {
    fn run_task(&self, state: Arc<S>, ctx: NodeContext) -> BoxFuture<'static, TaskResult<S>>;
}

pub(crate) struct Policied<S: State, N: Node<S>> {
    pub node: Arc<N>,
    pub retry: Option<Retry<S, N::Error>>,
    pub timeout: Option<Duration>,
}

/// The error and its sources on one line: the message a person reads in events and `NodeFailed`.
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        // many errors name their cause in their own message: said once, not "X: X"
        let text = s.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        source = s.source();
    }
    msg
}

impl<S: State, N: Node<S>> RunTask<S> for Policied<S, N> {
    fn run_task(&self, state: Arc<S>, ctx: NodeContext) -> BoxFuture<'static, TaskResult<S>> {
        let node = self.node.clone();
        let retry = self.retry.clone();
        let timeout = self.timeout;
        let span = tracing::info_span!("node", node = %ctx.node(), index = ctx.task_index(), step = ctx.step());
        Box::pin(
            async move {
                let max = retry.as_ref().map_or(1, |r| r.max_attempts);
                let mut state = state;
                let mut attempt = 1;
                loop {
                    ctx.begin_attempt(attempt);
                    emit(
                        &ctx,
                        EventKind::NodeStarted {
                            node: ctx.node().into(),
                            index: ctx.task_index() as u32,
                            attempt,
                        },
                    );
                    // A panicking node fails its task like an error (reported, routable), instead of
                    // unwinding through the engine and losing the step's other work.
                    let call =
                        AssertUnwindSafe(node.run(state.clone(), ctx.clone())).catch_unwind();
                    let result = match timeout {
                        Some(limit) => tokio::time::timeout(limit, call).await.map_err(|_| limit),
                        None => Ok(call.await),
                    };
                    let (message, cause, retryable, edit) = match result {
                        Ok(Err(panic)) => (
                            format!("panicked: {}", panic_message(panic.as_ref())),
                            None,
                            false,
                            None,
                        ),
                        Ok(Ok(Ok(update))) => {
                            return TaskResult {
                                outcome: Ok(update),
                                attempts: attempt,
                            };
                        }
                        Ok(Ok(Err(error))) => {
                            if let Some(question) = ctx.take_raised() {
                                return TaskResult {
                                    outcome: Err(TaskFailure::Interrupted(question)),
                                    attempts: attempt,
                                };
                            }
                            let retryable = retry.as_ref().is_some_and(|r| r.should_retry(&error));
                            let edited = match retry.as_ref().and_then(|r| r.handler_for(&error)) {
                                Some(handler) if retryable && attempt < max => {
                                    let mut next = (*state).clone();
                                    handler(&error, &mut next);
                                    Some(Arc::new(next))
                                }
                                _ => None,
                            };
                            let message = error_chain(&error);
                            (message, Some(error), retryable, edited)
                        }
                        Err(limit) => (
                            format!("timed out after {limit:?}"),
                            None,
                            retry.as_ref().is_some_and(|r| r.retry_timeouts),
                            None,
                        ),
                    };
                    let will_retry = retryable && attempt < max;
                    // The last attempt's error goes up to the caller, which reports it: logging it too
                    // printed every failure twice. A retried attempt is said here, the only place it is.
                    if will_retry {
                        tracing::warn!(attempt, error = %message, "node attempt failed; retrying");
                    } else {
                        tracing::debug!(attempt, error = %message, "node attempt failed");
                    }
                    emit(
                        &ctx,
                        EventKind::NodeFailed {
                            node: ctx.node().into(),
                            index: ctx.task_index() as u32,
                            attempt,
                            error: message.clone(),
                            will_retry,
                        },
                    );
                    let Some(retry) = retry.as_ref().filter(|_| will_retry) else {
                        return TaskResult {
                            outcome: Err(TaskFailure::Error {
                                message,
                                cause: cause.map(NodeError::new),
                            }),
                            attempts: attempt,
                        };
                    };
                    if let Some(next) = edit {
                        state = next;
                    }
                    let delay = retry.delay(attempt + 1);
                    emit(
                        &ctx,
                        EventKind::NodeRetrying {
                            node: ctx.node().into(),
                            index: ctx.task_index() as u32,
                            next_attempt: attempt + 1,
                            delay_ms: delay.as_millis() as u64,
                        },
                    );
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
            }
            .instrument(span),
        )
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_string()
    }
}

fn emit(ctx: &NodeContext, kind: EventKind) {
    ctx.inner.events.emit(|| Event {
        run: ctx.inner.run.clone(),
        branch: ctx.inner.branch,
        step: ctx.inner.step,
        kind,
    });
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[derive(Debug)]
    struct Outer(std::io::Error, bool);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            if self.1 {
                write!(f, "LLM call failed: {}", self.0)
            } else {
                write!(f, "LLM call failed")
            }
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_the_message_already_names_is_said_once() {
        let cause = || std::io::Error::other("no recorded answer");
        assert_eq!(
            error_chain(&Outer(cause(), true)),
            "LLM call failed: no recorded answer"
        );
        assert_eq!(
            error_chain(&Outer(cause(), false)),
            "LLM call failed: no recorded answer"
        );
    }
}
