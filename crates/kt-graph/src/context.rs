//! What a node sees besides its state: where it runs, recorded side effects, custom events, interrupts.

use crate::cancel::CancelToken;
use crate::checkpoint::Task;
use crate::error::GraphError;
use crate::events::{Event, EventKind, EventSink};
use crate::ids::{BranchId, RunId};
use crate::store::CheckpointStore;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// Whether recorded side effects are reused from the journal or paid for again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
pub enum ReplayMode {
    /// Use a journaled result when one exists for the same (step, node, task, attempt, effect, call); run
    /// the effect only when none does. Normal runs use this too: a resumed step does not pay twice.
    #[default]
    Reuse,
    /// Always run effects, journaling the new results.
    Live,
}

/// The error of [`NodeContext::effect`].
#[derive(Debug, thiserror::Error)]
pub enum EffectError<E> {
    /// The effect itself failed; nothing was journaled.
    #[error("effect `{name}` failed: {source}")]
    Failed { name: String, source: E },
    /// The journal could not be read or written, or a journaled value no longer decodes.
    #[error("effect `{name}`: journal error: {source}")]
    Journal { name: String, source: GraphError },
}

/// Returned by [`NodeContext::interrupt`] when the run must stop and wait for an answer. Propagate it
/// (`?`) out of the node: the engine recognises the interrupt whatever error type carries it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("interrupted: waiting for a value to resume with")]
pub struct Interrupted;

pub(crate) struct Journal {
    pub store: Arc<dyn CheckpointStore>,
    pub mode: ReplayMode,
    /// The branch this one was copied from: its journal is valid for the steps after the copy.
    pub origin: Option<BranchId>,
    /// False for `run_node` without writing: nothing reaches the store.
    pub record: bool,
}

pub(crate) struct ContextInner {
    pub run: RunId,
    pub branch: BranchId,
    pub step: u64,
    pub task: Task,
    pub attempt: AtomicU32,
    pub journal: Option<Journal>,
    pub events: EventSink,
    pub cancel: CancelToken,
    pub resume_value: Mutex<Option<Value>>,
    pub raised: Mutex<Option<Value>>,
    pub calls: Mutex<HashMap<String, u32>>,
}

/// Handed to every node call. Cheap to clone.
#[derive(Clone)]
pub struct NodeContext {
    pub(crate) inner: Arc<ContextInner>,
}

impl NodeContext {
    pub(crate) fn new(inner: ContextInner) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }

    pub fn run_id(&self) -> &RunId {
        &self.inner.run
    }
    pub fn branch(&self) -> BranchId {
        self.inner.branch
    }
    /// The superstep this call belongs to.
    pub fn step(&self) -> u64 {
        self.inner.step
    }
    pub fn node(&self) -> &str {
        &self.inner.task.node
    }
    /// Index of this task among the parallel copies of a fan-out (0 when not fanned out).
    pub fn task_index(&self) -> usize {
        self.inner.task.index as usize
    }
    /// Number of parallel copies of this node in the step (1 when not fanned out).
    pub fn task_count(&self) -> usize {
        self.inner.task.count as usize
    }
    /// 1 for the first attempt, 2 for the first retry, ...
    pub fn attempt(&self) -> u32 {
        self.inner.attempt.load(Ordering::SeqCst)
    }
    pub fn cancel_token(&self) -> &CancelToken {
        &self.inner.cancel
    }

    pub(crate) fn begin_attempt(&self, attempt: u32) {
        self.inner.attempt.store(attempt, Ordering::SeqCst);
        self.lock_calls().clear();
    }

    fn lock_calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, u32>> {
        self.inner.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Emits a custom event (progress of a tuning job, tokens used, ...).
    pub fn emit(&self, name: &str, payload: impl Serialize) {
        let payload = serde_json::to_value(payload)
            .unwrap_or_else(|e| Value::String(format!("<unserializable: {e}>")));
        self.inner.events.emit(|| Event {
            run: self.inner.run.clone(),
            branch: self.inner.branch,
            step: self.inner.step,
            kind: EventKind::Custom {
                node: self.inner.task.node.clone(),
                name: name.to_string(),
                payload,
            },
        });
    }

    /// Stops the run at this node until a person (or program) answers. On the first call it records
    /// `question`, returns [`Interrupted`] (propagate it), and the run stops with
    /// [`StopReason::Interrupt`](crate::StopReason::Interrupt). `Executor::resume_with(run, answer)` re-runs
    /// the node, and this call then returns the answer.
    pub fn interrupt(&self, question: impl Serialize) -> Result<Value, Interrupted> {
        let answer = self
            .inner
            .resume_value
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(answer) = answer {
            return Ok(answer);
        }
        let q = serde_json::to_value(question).unwrap_or(Value::Null);
        *self.inner.raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(q);
        Err(Interrupted)
    }

    pub(crate) fn take_raised(&self) -> Option<Value> {
        self.inner
            .raised
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Runs a side effect whose result is journaled under (step, node, task, attempt, `name`, n-th call of
    /// `name` in this attempt). In [`ReplayMode::Reuse`] a journaled result is returned without running `f`.
    pub async fn effect<T, E, F, Fut>(&self, name: &str, f: F) -> Result<T, EffectError<E>>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let index = {
            let mut calls = self.lock_calls();
            let n = calls.entry(name.to_string()).or_insert(0);
            *n += 1;
            *n - 1
        };
        self.effect_at(name, &index.to_string(), f).await
    }

    /// Like [`effect`](Self::effect) with a caller-given key instead of the call index (stable when the
    /// number or order of calls changes between attempts).
    pub async fn effect_keyed<T, E, F, Fut>(
        &self,
        name: &str,
        key: &str,
        f: F,
    ) -> Result<T, EffectError<E>>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.effect_at(name, &format!("k:{key}"), f).await
    }

    async fn effect_at<T, E, F, Fut>(
        &self,
        name: &str,
        call: &str,
        f: F,
    ) -> Result<T, EffectError<E>>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let inner = &self.inner;
        let key = format!(
            "{}/{}/a{}/{}/{}",
            inner.step,
            inner.task.key(),
            self.attempt(),
            name,
            call
        );
        let journal_err = |source: GraphError| EffectError::Journal {
            name: name.to_string(),
            source,
        };
        if let Some(journal) = &inner.journal
            && journal.mode == ReplayMode::Reuse
        {
            let mut found = journal
                .store
                .get_effect(&inner.run, inner.branch, &key)
                .map_err(journal_err)?;
            let mut from_origin = false;
            if found.is_none()
                && let Some(origin) = journal.origin
            {
                found = journal
                    .store
                    .get_effect(&inner.run, origin, &key)
                    .map_err(journal_err)?;
                from_origin = found.is_some();
            }
            if let Some(value) = found {
                // Copy into this branch so a later replay of this branch finds it one level up.
                if from_origin && journal.record {
                    journal
                        .store
                        .put_effect(&inner.run, inner.branch, &key, &value)
                        .map_err(journal_err)?;
                }
                tracing::debug!(effect = name, key, "reused journaled effect");
                return serde_json::from_value(value).map_err(|e| {
                    journal_err(GraphError::StoreCorrupt {
                        location: journal.store.location(),
                        reason: format!(
                            "run `{}` journaled effect `{key}` no longer decodes as the requested type: {e}",
                            inner.run
                        ),
                    })
                });
            }
        }
        let value = f().await.map_err(|source| EffectError::Failed {
            name: name.to_string(),
            source,
        })?;
        if let Some(journal) = &inner.journal
            && journal.record
        {
            let json = serde_json::to_value(&value).map_err(|e| {
                journal_err(GraphError::Serialize {
                    run: inner.run.clone(),
                    what: format!("effect `{key}`"),
                    reason: e.to_string(),
                })
            })?;
            journal
                .store
                .put_effect(&inner.run, inner.branch, &key, &json)
                .map_err(journal_err)?;
        }
        Ok(value)
    }
}
