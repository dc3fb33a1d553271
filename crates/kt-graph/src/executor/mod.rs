//! `Executor`: runs a compiled graph against a store, superstep by superstep, and offers the time-travel
//! and debugging operations over what it stored.
//!
//! A superstep runs every pending task concurrently on a snapshot of the state, merges their updates in
//! task order (deterministic whatever finished first), routes, and commits one checkpoint. Nothing of a
//! step is visible in history until its checkpoint commits; finished tasks of a step with several tasks
//! save their writes as they finish, so a resume after a failure or crash re-runs only the others.
//!
//! The operations sit in one file per concern, all on this one type:
//! - [`run`]: the run loop — `start`, `resume`, `resume_with`, `step`, and `drive`, which runs supersteps
//!   until the end, a stop, an error or a pause;
//! - [`superstep`]: one superstep in its phases (reuse saved writes, run the tasks, fold the updates, route,
//!   write the checkpoint), with [`merge`] folding the updates;
//! - [`inspect`]: the read side over stored checkpoints — `history`, `checkpoint`, `state_at`, `fields_at`,
//!   `diff`, `lineage`, `path` — and loading a checkpoint's typed state;
//! - [`debug`]: `replay`, `fork`, `run_node` and breakpoints.
//!
//! This file holds the type and what every operation shares: the store's run record, checkpoint ids,
//! events and node contexts.

pub(crate) mod debug;
pub(crate) mod inspect;
mod merge;
pub(crate) mod run;
mod superstep;

use crate::cancel::CancelToken;
use crate::checkpoint::{GraphRunMeta, Task};
use crate::context::{ContextInner, Journal, NodeContext, ReplayMode};
use crate::error::GraphError;
use crate::events::{Event, EventKind, EventSink};
use crate::graph::CompiledGraph;
use crate::ids::{BranchId, CheckpointId, RunId};
use crate::state::State;
use crate::store::CheckpointStore;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

type MigrateFn = Arc<dyn Fn(&mut Map<String, Value>) -> Result<(), String> + Send + Sync>;

/// Lets checkpoints written by an older graph (fingerprint `from`) be loaded: `apply` edits the stored
/// fields (JSON, by field name) into what the current state type expects.
#[derive(Clone)]
pub struct Migration {
    from: String,
    apply: MigrateFn,
}

impl Migration {
    pub fn new(
        from: impl Into<String>,
        apply: impl Fn(&mut Map<String, Value>) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            from: from.into(),
            apply: Arc::new(apply),
        }
    }
}

/// Runs a [`CompiledGraph`] with checkpoints in a [`CheckpointStore`]. Cheap to clone.
///
/// One executor at a time should drive a given run: checkpoint ids are allocated by the driving call.
pub struct Executor<S: State> {
    graph: CompiledGraph<S>,
    store: Arc<dyn CheckpointStore>,
    events: EventSink,
    migrations: Arc<Vec<Migration>>,
}

impl<S: State> Clone for Executor<S> {
    fn clone(&self) -> Self {
        Self {
            graph: self.graph.clone(),
            store: self.store.clone(),
            events: self.events.clone(),
            migrations: self.migrations.clone(),
        }
    }
}

impl<S: State> Executor<S> {
    pub fn new(graph: CompiledGraph<S>, store: Arc<dyn CheckpointStore>) -> Self {
        Self {
            graph,
            store,
            events: EventSink::default(),
            migrations: Arc::new(Vec::new()),
        }
    }

    /// Accepts checkpoints of an older graph through `migration`.
    pub fn with_migration(mut self, migration: Migration) -> Self {
        Arc::make_mut(&mut self.migrations).push(migration);
        self
    }

    pub fn graph(&self) -> &CompiledGraph<S> {
        &self.graph
    }

    pub fn store(&self) -> &Arc<dyn CheckpointStore> {
        &self.store
    }

    /// A new lossless event stream of every run this executor (or its clones) drives from now on.
    pub fn subscribe(&self) -> tokio::sync::mpsc::UnboundedReceiver<Event> {
        self.events.subscribe()
    }

    fn meta(&self, run: &RunId) -> Result<GraphRunMeta, GraphError> {
        self.store
            .get_run(run)?
            .ok_or(GraphError::RunNotFound { run: run.clone() })
    }

    fn next_id(&self, run: &RunId) -> Result<CheckpointId, GraphError> {
        Ok(CheckpointId(
            self.store.latest_checkpoint(run)?.map_or(0, |c| c.0 + 1),
        ))
    }

    fn emit(&self, run: &RunId, branch: BranchId, step: u64, kind: EventKind) {
        self.events.emit(|| Event {
            run: run.clone(),
            branch,
            step,
            kind,
        });
    }

    /// The context a node of `task` runs with: where its effects are journaled and read from.
    #[allow(clippy::too_many_arguments)]
    fn context(
        &self,
        run: &RunId,
        branch: BranchId,
        step: u64,
        task: Task,
        mode: ReplayMode,
        origin: Option<BranchId>,
        record: bool,
        cancel: &CancelToken,
        answer: Option<Value>,
    ) -> NodeContext {
        NodeContext::new(ContextInner {
            run: run.clone(),
            branch,
            step,
            task,
            attempt: AtomicU32::new(1),
            journal: Some(Journal {
                store: self.store.clone(),
                mode,
                origin,
                record,
            }),
            events: self.events.clone(),
            cancel: cancel.clone(),
            resume_value: Mutex::new(answer),
            raised: Mutex::new(None),
            calls: Mutex::new(HashMap::new()),
        })
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn unwrap_arc<S: Clone>(s: Arc<S>) -> S {
    Arc::try_unwrap(s).unwrap_or_else(|shared| (*shared).clone())
}

fn ser_err(run: &RunId, what: &str, e: serde_json::Error) -> GraphError {
    GraphError::Serialize {
        run: run.clone(),
        what: what.to_string(),
        reason: e.to_string(),
    }
}

/// The state as a map of JSON fields, as checkpoints store it.
fn to_fields<S: State>(run: &RunId, state: &S) -> Result<Map<String, Value>, GraphError> {
    match serde_json::to_value(state).map_err(|e| ser_err(run, "state", e))? {
        Value::Object(map) => Ok(map),
        other => Err(GraphError::Serialize {
            run: run.clone(),
            what: "state".into(),
            reason: format!("the state must serialize to a map of fields, got {other}"),
        }),
    }
}
