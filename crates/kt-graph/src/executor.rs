//! `Executor`: runs a compiled graph against a store, superstep by superstep, and offers the time-travel
//! and debugging operations (resume, replay, fork, step, run_node, history, diff, breakpoints).
//!
//! A superstep runs every pending task concurrently on a snapshot of the state, merges their updates in
//! task order (deterministic whatever finished first), routes, and commits one checkpoint. Nothing of a
//! step is visible in history until its checkpoint commits; finished tasks of a step with several tasks
//! save their writes as they finish, so a resume after a failure or crash re-runs only the others.

use crate::builder::START;
use crate::cancel::CancelToken;
use crate::checkpoint::{
    BranchInfo, Breakpoints, Checkpoint, CheckpointSource, FULL_SNAPSHOT_EVERY, FieldOp,
    NodeTiming, RoutedFailure, RunMeta, StateRecord, StopReason, Task, fold_ops,
};
use crate::context::{ContextInner, Journal, NodeContext, ReplayMode};
use crate::error::GraphError;
use crate::events::{Event, EventKind, EventSink};
use crate::graph::CompiledGraph;
use crate::ids::{BranchId, CheckpointId, RunId};
use crate::node::TaskFailure;
use crate::state::{Merge, State, merge_of};
use crate::store::CheckpointStore;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tracing::Instrument;

/// Options of one call that runs steps.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// A run never goes past this superstep number (counted from the run's start, across resumes).
    pub step_limit: u64,
    /// Fired from elsewhere to stop the run; the current step is dropped uncommitted.
    pub cancel: CancelToken,
    /// Whether journaled effects are reused (default) or paid for again.
    pub effects: ReplayMode,
    /// Stop with [`RunOutcome::Paused`] after this many supersteps in this call (`step` uses 1).
    pub max_steps: Option<u64>,
    /// Breakpoints to store with a new run (`start` only; use `set_breakpoints` later).
    pub breakpoints: Breakpoints,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            step_limit: 10_000,
            cancel: CancelToken::new(),
            effects: ReplayMode::Reuse,
            max_steps: None,
            breakpoints: Breakpoints::default(),
        }
    }
}

/// How a call that runs steps ended (errors aside).
#[derive(Debug, Clone)]
pub enum RunOutcome<S> {
    /// No tasks remain.
    Finished { state: S, checkpoint: CheckpointId },
    /// A breakpoint or a node's interrupt stopped the run; `resume`/`resume_with` continues it.
    Stopped {
        state: S,
        checkpoint: CheckpointId,
        reason: StopReason,
    },
    /// `max_steps` supersteps were run; `resume` continues.
    Paused { state: S, checkpoint: CheckpointId },
}

impl<S> RunOutcome<S> {
    pub fn state(&self) -> &S {
        match self {
            Self::Finished { state, .. }
            | Self::Stopped { state, .. }
            | Self::Paused { state, .. } => state,
        }
    }
    pub fn into_state(self) -> S {
        match self {
            Self::Finished { state, .. }
            | Self::Stopped { state, .. }
            | Self::Paused { state, .. } => state,
        }
    }
    pub fn checkpoint(&self) -> CheckpointId {
        match self {
            Self::Finished { checkpoint, .. }
            | Self::Stopped { checkpoint, .. }
            | Self::Paused { checkpoint, .. } => *checkpoint,
        }
    }
    pub fn is_finished(&self) -> bool {
        matches!(self, Self::Finished { .. })
    }
}

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

/// One field that differs between two checkpoints (`None`: absent on that side).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldDiff {
    pub field: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// Options of [`Executor::run_node`].
#[derive(Debug, Clone, Copy)]
pub struct RunNodeOptions {
    /// Store the result as a checkpoint on a new branch (whose next tasks are the node's successors).
    pub write: bool,
    /// Live (default for debugging: the point is usually to see a fresh answer) or reuse the journal.
    pub effects: ReplayMode,
}

impl Default for RunNodeOptions {
    fn default() -> Self {
        Self {
            write: false,
            effects: ReplayMode::Live,
        }
    }
}

/// The result of [`Executor::run_node`].
#[derive(Debug, Clone)]
pub struct NodeRun<S> {
    /// The fields the node set, as JSON.
    pub update: Vec<(&'static str, Value)>,
    /// The saved state with the update merged.
    pub state: S,
    pub attempts: u32,
    /// The new checkpoint when writing was asked for.
    pub checkpoint: Option<CheckpointId>,
}

/// The nodes and edges a run took up to a checkpoint, for highlighting in an export.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunPath {
    pub nodes: Vec<String>,
    pub edges: Vec<(String, String)>,
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

enum Done<S: State> {
    Update(S::Update),
    Routed { message: String, to: String },
}

/// How a superstep ended (errors aside): committed, or stopped by a node's interrupt before committing.
enum StepEnd {
    Committed(Checkpoint, Vec<Task>),
    Interrupt { node: String, payload: Value },
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
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

    // ---------------------------------------------------------------- running

    /// Starts a new run from `initial`: checkpoint 0 holds the input, then steps run until the end, a
    /// stop, an error or `max_steps`.
    pub async fn start(
        &self,
        run: RunId,
        initial: S,
        opts: RunOptions,
    ) -> Result<RunOutcome<S>, GraphError> {
        let meta = RunMeta {
            run: run.clone(),
            fingerprint: self.graph.fingerprint().to_string(),
            breakpoints: opts.breakpoints.clone(),
            branches: vec![BranchInfo {
                id: BranchId(0),
                origin: None,
                inherits_effects: false,
            }],
            stopped: None,
        };
        self.store.create_run(&meta)?;
        let fields = to_fields(&run, &initial)?;
        let input = Checkpoint {
            id: CheckpointId(0),
            parent: None,
            branch: BranchId(0),
            step: 0,
            fingerprint: self.graph.fingerprint().to_string(),
            next: self.graph.successors(START, &initial)?,
            timings: Vec::new(),
            failures: Vec::new(),
            source: CheckpointSource::Input,
            created_ms: now_ms(),
            state: StateRecord::Full(fields),
        };
        self.store.put_checkpoint(&run, &input)?;
        self.emit(
            &run,
            BranchId(0),
            0,
            EventKind::CheckpointSaved {
                checkpoint: input.id,
            },
        );
        self.drive(meta, input, initial, &opts, None).await
    }

    /// Continues the run from its latest checkpoint (after a crash, a breakpoint, a pause or a fork).
    pub async fn resume(&self, run: &RunId, opts: RunOptions) -> Result<RunOutcome<S>, GraphError> {
        self.resume_inner(run, opts, None).await
    }

    /// Continues a run stopped by a node's interrupt, handing `answer` to that node's
    /// [`NodeContext::interrupt`] call.
    pub async fn resume_with(
        &self,
        run: &RunId,
        answer: impl Serialize,
        opts: RunOptions,
    ) -> Result<RunOutcome<S>, GraphError> {
        let value = serde_json::to_value(answer).map_err(|e| GraphError::Serialize {
            run: run.clone(),
            what: "resume value".into(),
            reason: e.to_string(),
        })?;
        self.resume_inner(run, opts, Some(value)).await
    }

    /// Runs exactly one superstep from the latest checkpoint.
    pub async fn step(
        &self,
        run: &RunId,
        mut opts: RunOptions,
    ) -> Result<RunOutcome<S>, GraphError> {
        opts.max_steps = Some(1);
        self.resume_inner(run, opts, None).await
    }

    async fn resume_inner(
        &self,
        run: &RunId,
        opts: RunOptions,
        answer: Option<Value>,
    ) -> Result<RunOutcome<S>, GraphError> {
        let meta = self.meta(run)?;
        let latest = self
            .store
            .latest_checkpoint(run)?
            .ok_or(GraphError::CheckpointNotFound {
                run: run.clone(),
                checkpoint: CheckpointId(0),
            })?;
        let (head, state) = self.load(run, latest, true)?;
        self.drive(meta, head, state, &opts, answer).await
    }

    /// Re-runs the run from checkpoint `from` on a new branch (history is never overwritten). With
    /// [`ReplayMode::Reuse`] the steps after `from` get their journaled effects instead of paying again.
    pub async fn replay(
        &self,
        run: &RunId,
        from: CheckpointId,
        opts: RunOptions,
    ) -> Result<RunOutcome<S>, GraphError> {
        let (cp, state) = self.copy_to_branch(run, from, |_| {}, true)?;
        let meta = self.meta(run)?;
        self.drive(meta, cp, state, &opts, None).await
    }

    /// Copies checkpoint `from` to a new branch with `edit` applied to its state, without running
    /// anything; `resume` then continues from the copy. Effects of the origin branch are not reused (the
    /// state differs). Returns the new checkpoint.
    pub fn fork(
        &self,
        run: &RunId,
        from: CheckpointId,
        edit: impl FnOnce(&mut S),
    ) -> Result<CheckpointId, GraphError> {
        Ok(self.copy_to_branch(run, from, edit, false)?.0.id)
    }

    fn copy_to_branch(
        &self,
        run: &RunId,
        from: CheckpointId,
        edit: impl FnOnce(&mut S),
        inherits_effects: bool,
    ) -> Result<(Checkpoint, S), GraphError> {
        let mut meta = self.meta(run)?;
        let (origin, mut state) = self.load(run, from, true)?;
        edit(&mut state);
        let branch = meta.new_branch((origin.branch, origin.id), inherits_effects);
        meta.stopped = None;
        self.store.update_run(&meta)?;
        let id = self.next_id(run)?;
        let cp = Checkpoint {
            id,
            parent: Some(origin.id),
            branch,
            step: origin.step,
            fingerprint: self.graph.fingerprint().to_string(),
            next: origin.next.clone(),
            timings: Vec::new(),
            failures: Vec::new(),
            source: CheckpointSource::Fork,
            created_ms: now_ms(),
            state: StateRecord::Full(to_fields(run, &state)?),
        };
        self.store.put_checkpoint(run, &cp)?;
        self.emit(
            run,
            branch,
            cp.step,
            EventKind::CheckpointSaved { checkpoint: id },
        );
        Ok((cp, state))
    }

    /// Runs one node against the state saved at `at`. Writes nothing (no checkpoint, no journal) unless
    /// `opts.write`, which stores the result as a new branch.
    pub async fn run_node(
        &self,
        run: &RunId,
        at: CheckpointId,
        node: &str,
        opts: RunNodeOptions,
    ) -> Result<NodeRun<S>, GraphError> {
        let mut meta = self.meta(run)?;
        let (cp, state) = self.load(run, at, true)?;
        let compiled = self
            .graph
            .node(node)
            .ok_or_else(|| GraphError::NoSuchNode {
                run: run.clone(),
                node: node.into(),
            })?;
        let (branch, origin) = if opts.write {
            let b = meta.new_branch((cp.branch, cp.id), false);
            self.store.update_run(&meta)?;
            (b, Some(cp.branch))
        } else {
            (cp.branch, None)
        };
        let task = Task::single(node);
        let ctx = self.context(
            run,
            branch,
            cp.step + 1,
            task,
            opts.effects,
            origin,
            opts.write,
            &CancelToken::new(),
            None,
        );
        let result = compiled.task.run_task(Arc::new(state.clone()), ctx).await;
        let update = match result.outcome {
            Ok(u) => u,
            Err(TaskFailure::Error(message)) => {
                return Err(GraphError::NodeFailed {
                    run: run.clone(),
                    node: node.into(),
                    step: cp.step + 1,
                    attempts: result.attempts,
                    message,
                });
            }
            Err(TaskFailure::Interrupted(q)) => {
                return Err(GraphError::NodeFailed {
                    run: run.clone(),
                    node: node.into(),
                    step: cp.step + 1,
                    attempts: result.attempts,
                    message: format!("interrupted with {q}; use resume_with on the run instead"),
                });
            }
        };
        let json = S::update_to_json(&update).map_err(|e| ser_err(run, "node update", e))?;
        let mut new_state = state;
        new_state.apply(update);
        let checkpoint = if opts.write {
            let id = self.next_id(run)?;
            let cp = Checkpoint {
                id,
                parent: Some(cp.id),
                branch,
                step: cp.step + 1,
                fingerprint: self.graph.fingerprint().to_string(),
                next: self.graph.successors(node, &new_state)?,
                timings: Vec::new(),
                failures: Vec::new(),
                source: CheckpointSource::RunNode,
                created_ms: now_ms(),
                state: StateRecord::Full(to_fields(run, &new_state)?),
            };
            self.store.put_checkpoint(run, &cp)?;
            Some(id)
        } else {
            None
        };
        Ok(NodeRun {
            update: json,
            state: new_state,
            attempts: result.attempts,
            checkpoint,
        })
    }

    // ---------------------------------------------------------------- inspecting

    /// Every checkpoint of the run, all branches, in creation order.
    pub fn history(&self, run: &RunId) -> Result<Vec<Checkpoint>, GraphError> {
        self.meta(run)?;
        self.store.list_checkpoints(run)
    }

    pub fn checkpoint(&self, run: &RunId, id: CheckpointId) -> Result<Checkpoint, GraphError> {
        self.store
            .get_checkpoint(run, id)?
            .ok_or(GraphError::CheckpointNotFound {
                run: run.clone(),
                checkpoint: id,
            })
    }

    pub fn latest(&self, run: &RunId) -> Result<CheckpointId, GraphError> {
        self.store
            .latest_checkpoint(run)?
            .ok_or(GraphError::RunNotFound { run: run.clone() })
    }

    /// The typed state at a checkpoint (migrated if a migration for its fingerprint is registered).
    pub fn state_at(&self, run: &RunId, id: CheckpointId) -> Result<S, GraphError> {
        Ok(self.load(run, id, false)?.1)
    }

    /// The state at a checkpoint as JSON, field by field (works even if it no longer deserializes).
    pub fn fields_at(
        &self,
        run: &RunId,
        id: CheckpointId,
    ) -> Result<Map<String, Value>, GraphError> {
        Ok(self.fold(run, id)?.1)
    }

    /// The fields whose values differ between checkpoints `a` and `b` (any branches), in field order.
    pub fn diff(
        &self,
        run: &RunId,
        a: CheckpointId,
        b: CheckpointId,
    ) -> Result<Vec<FieldDiff>, GraphError> {
        let before = self.fields_at(run, a)?;
        let after = self.fields_at(run, b)?;
        let mut names: Vec<String> = S::fields().iter().map(|f| f.name.to_string()).collect();
        for k in before.keys().chain(after.keys()) {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
        Ok(names
            .into_iter()
            .filter_map(|field| {
                let (x, y) = (before.get(&field).cloned(), after.get(&field).cloned());
                (x != y).then_some(FieldDiff {
                    field,
                    before: x,
                    after: y,
                })
            })
            .collect())
    }

    /// Stores breakpoints with the run; they apply to every later call that runs it.
    pub fn set_breakpoints(&self, run: &RunId, breakpoints: Breakpoints) -> Result<(), GraphError> {
        for name in breakpoints.before.iter().chain(&breakpoints.after) {
            if self.graph.node(name).is_none() {
                return Err(GraphError::NoSuchNode {
                    run: run.clone(),
                    node: name.clone(),
                });
            }
        }
        let mut meta = self.meta(run)?;
        meta.breakpoints = breakpoints;
        self.store.update_run(&meta)
    }

    pub fn run_meta(&self, run: &RunId) -> Result<RunMeta, GraphError> {
        self.meta(run)
    }

    /// The checkpoints from the run's input to `to`, following parents (one line of history, across the
    /// branches it was copied from).
    pub fn lineage(&self, run: &RunId, to: CheckpointId) -> Result<Vec<Checkpoint>, GraphError> {
        let mut chain = Vec::new();
        let mut cur = Some(to);
        while let Some(id) = cur {
            let cp = self.checkpoint(run, id)?;
            cur = cp.parent;
            chain.push(cp);
        }
        chain.reverse();
        Ok(chain)
    }

    /// The nodes run and edges taken from the start of the run up to checkpoint `to` (following its
    /// parents, so on `to`'s branch), for [`ExportOptions::highlight`](crate::ExportOptions).
    pub fn path(&self, run: &RunId, to: CheckpointId) -> Result<RunPath, GraphError> {
        let chain: Vec<Checkpoint> = self
            .lineage(run, to)?
            .into_iter()
            .filter(|cp| cp.source != CheckpointSource::Fork)
            .collect();
        let mut path = RunPath::default();
        let mut prev: Vec<String> = vec![START.to_string()];
        for (i, cp) in chain.iter().enumerate() {
            // the tasks that ran to produce the next checkpoint of the chain
            if i + 1 >= chain.len() && !cp.is_finished() {
                break;
            }
            let ran: Vec<String> = if i + 1 < chain.len() {
                let mut seen = BTreeSet::new();
                cp.next
                    .iter()
                    .filter(|t| seen.insert(t.node.clone()))
                    .map(|t| t.node.clone())
                    .collect()
            } else {
                vec![crate::builder::END.to_string()]
            };
            for a in &prev {
                for b in &ran {
                    if self.graph.has_edge(a, b) && !path.edges.contains(&(a.clone(), b.clone())) {
                        path.edges.push((a.clone(), b.clone()));
                    }
                }
            }
            for b in &ran {
                if !path.nodes.contains(b) {
                    path.nodes.push(b.clone());
                }
            }
            prev = ran;
        }
        Ok(path)
    }

    // ---------------------------------------------------------------- internals

    fn meta(&self, run: &RunId) -> Result<RunMeta, GraphError> {
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

    /// Rebuilds the JSON fields at a checkpoint: the nearest full snapshot, then the deltas after it.
    fn fold(
        &self,
        run: &RunId,
        id: CheckpointId,
    ) -> Result<(Checkpoint, Map<String, Value>), GraphError> {
        let target = self.checkpoint(run, id)?;
        let mut deltas: Vec<(CheckpointId, Vec<FieldOp>)> = Vec::new();
        let mut cur = target.clone();
        let mut fields = loop {
            match cur.state {
                StateRecord::Full(map) => break map,
                StateRecord::Delta(ops) => {
                    deltas.push((cur.id, ops));
                    let parent = cur.parent.ok_or_else(|| GraphError::CorruptCheckpoint {
                        run: run.clone(),
                        checkpoint: cur.id,
                        reason: "a delta checkpoint has no parent".into(),
                    })?;
                    cur = self.store.get_checkpoint(run, parent)?.ok_or_else(|| {
                        GraphError::CorruptCheckpoint {
                            run: run.clone(),
                            checkpoint: cur.id,
                            reason: format!("its parent {parent} is missing"),
                        }
                    })?;
                }
            }
        };
        for (cid, ops) in deltas.iter().rev() {
            fold_ops(&mut fields, ops).map_err(|reason| GraphError::CorruptCheckpoint {
                run: run.clone(),
                checkpoint: *cid,
                reason,
            })?;
        }
        Ok((target, fields))
    }

    /// Loads a checkpoint and its typed state. `strict` refuses a foreign fingerprint without migration.
    fn load(
        &self,
        run: &RunId,
        id: CheckpointId,
        strict: bool,
    ) -> Result<(Checkpoint, S), GraphError> {
        let (cp, mut fields) = self.fold(run, id)?;
        if cp.fingerprint != self.graph.fingerprint() {
            match self.migrations.iter().find(|m| m.from == cp.fingerprint) {
                Some(m) => (m.apply)(&mut fields).map_err(|reason| GraphError::Migration {
                    run: run.clone(),
                    from: cp.fingerprint.clone(),
                    reason,
                })?,
                None if strict => {
                    return Err(GraphError::FingerprintMismatch {
                        run: run.clone(),
                        checkpoint: id,
                        stored: cp.fingerprint.clone(),
                        current: self.graph.fingerprint().to_string(),
                    });
                }
                None => {}
            }
        }
        let state =
            serde_json::from_value(Value::Object(fields)).map_err(|e| GraphError::StateDecode {
                run: run.clone(),
                checkpoint: id,
                reason: e.to_string(),
            })?;
        if strict {
            for t in &cp.next {
                if self.graph.node(&t.node).is_none() {
                    return Err(GraphError::NoSuchNode {
                        run: run.clone(),
                        node: t.node.clone(),
                    });
                }
            }
        }
        Ok((cp, state))
    }

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

    async fn drive(
        &self,
        mut meta: RunMeta,
        mut head: Checkpoint,
        state: S,
        opts: &RunOptions,
        mut answer: Option<Value>,
    ) -> Result<RunOutcome<S>, GraphError> {
        let run = meta.run.clone();
        let span = tracing::info_span!("run", run = %run, branch = %head.branch, from = %head.id);
        async move {
            let mut state = Arc::new(state);
            let branch = head.branch;
            let origin = meta
                .branch(branch)
                .filter(|b| b.inherits_effects)
                .and_then(|b| b.origin.map(|(o, _)| o));
            // Step over the breakpoint or interrupt the run stopped at, exactly once.
            let had_stop = meta.stopped.is_some();
            let mut stepping_over: Option<StopReason> = match meta.stopped.take() {
                Some((at, reason)) if at == head.id => Some(reason),
                _ => None,
            };
            if had_stop {
                self.store.update_run(&meta)?;
            }
            let interrupted_node = match &stepping_over {
                Some(StopReason::Interrupt { node, .. }) => Some(node.clone()),
                _ => None,
            };
            self.emit(
                &run,
                branch,
                head.step,
                EventKind::RunStarted { from: head.id },
            );
            let mut next_id = self.next_id(&run)?;
            let mut since_full = FULL_SNAPSHOT_EVERY; // the first checkpoint of a call is a full snapshot
            let mut steps_done = 0u64;
            loop {
                if head.is_finished() {
                    self.emit(
                        &run,
                        branch,
                        head.step,
                        EventKind::RunFinished {
                            checkpoint: head.id,
                        },
                    );
                    return Ok(RunOutcome::Finished {
                        state: unwrap_arc(state),
                        checkpoint: head.id,
                    });
                }
                if opts.max_steps.is_some_and(|m| steps_done >= m) {
                    return Ok(RunOutcome::Paused {
                        state: unwrap_arc(state),
                        checkpoint: head.id,
                    });
                }
                if head.step >= opts.step_limit {
                    let e = GraphError::StepLimit {
                        run: run.clone(),
                        limit: opts.step_limit,
                        checkpoint: head.id,
                    };
                    self.emit(
                        &run,
                        branch,
                        head.step,
                        EventKind::RunFailed {
                            error: e.to_string(),
                        },
                    );
                    return Err(e);
                }
                let skip_before = matches!(stepping_over, Some(StopReason::BeforeNode(_)));
                if !skip_before
                    && let Some(t) = head
                        .next
                        .iter()
                        .find(|t| meta.breakpoints.before.contains(&t.node))
                {
                    let reason = StopReason::BeforeNode(t.node.clone());
                    return self.stop(&mut meta, &head, state, reason);
                }
                if opts.cancel.is_cancelled() {
                    return Err(GraphError::Cancelled {
                        run: run.clone(),
                        checkpoint: head.id,
                    });
                }
                let step_answer = match (&interrupted_node, &stepping_over) {
                    (Some(node), Some(_)) => answer.take().map(|a| (node.clone(), a)),
                    _ => None,
                };
                stepping_over = None;
                let step_span = tracing::info_span!("step", step = head.step + 1);
                let end = self
                    .run_step(
                        &run,
                        &head,
                        &mut state,
                        opts,
                        origin,
                        step_answer,
                        next_id,
                        since_full >= FULL_SNAPSHOT_EVERY,
                    )
                    .instrument(step_span)
                    .await;
                let (cp, ran) = match end {
                    Ok(StepEnd::Committed(cp, ran)) => (cp, ran),
                    Ok(StepEnd::Interrupt { node, payload }) => {
                        let reason = StopReason::Interrupt { node, payload };
                        return self.stop(&mut meta, &head, state, reason);
                    }
                    Err(e) => {
                        self.emit(
                            &run,
                            branch,
                            head.step + 1,
                            EventKind::RunFailed {
                                error: e.to_string(),
                            },
                        );
                        return Err(e);
                    }
                };
                since_full = if matches!(cp.state, StateRecord::Full(_)) {
                    1
                } else {
                    since_full + 1
                };
                next_id = CheckpointId(cp.id.0 + 1);
                head = cp;
                steps_done += 1;
                if let Some(t) = ran
                    .iter()
                    .find(|t| meta.breakpoints.after.contains(&t.node))
                {
                    let reason = StopReason::AfterNode(t.node.clone());
                    return self.stop(&mut meta, &head, state, reason);
                }
            }
        }
        .instrument(span)
        .await
    }

    fn stop(
        &self,
        meta: &mut RunMeta,
        head: &Checkpoint,
        state: Arc<S>,
        reason: StopReason,
    ) -> Result<RunOutcome<S>, GraphError> {
        meta.stopped = Some((head.id, reason.clone()));
        self.store.update_run(meta)?;
        self.emit(
            &meta.run,
            head.branch,
            head.step,
            EventKind::Stopped {
                checkpoint: head.id,
                reason: reason.clone(),
            },
        );
        tracing::info!(checkpoint = %head.id, ?reason, "run stopped");
        Ok(RunOutcome::Stopped {
            state: unwrap_arc(state),
            checkpoint: head.id,
            reason,
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_step(
        &self,
        run: &RunId,
        head: &Checkpoint,
        state: &mut Arc<S>,
        opts: &RunOptions,
        origin: Option<BranchId>,
        answer: Option<(String, Value)>,
        id: CheckpointId,
        full: bool,
    ) -> Result<StepEnd, GraphError> {
        let branch = head.branch;
        let step = head.step + 1;
        let tasks = &head.next;
        self.emit(
            run,
            branch,
            step,
            EventKind::StepStarted {
                tasks: tasks.iter().map(Task::key).collect(),
            },
        );
        let multi = tasks.len() > 1;
        let mut done: Vec<Option<(Done<S>, NodeTiming)>> = tasks.iter().map(|_| None).collect();
        if multi {
            for (key, write) in self.store.task_writes(run, head.id)? {
                let Some(i) = tasks.iter().position(|t| t.key() == key) else {
                    continue;
                };
                let Value::Object(map) = write else { continue };
                let update =
                    S::update_from_json(map).map_err(|e| GraphError::CorruptCheckpoint {
                        run: run.clone(),
                        checkpoint: head.id,
                        reason: format!("saved write of task {key} does not decode: {e}"),
                    })?;
                let t = &tasks[i];
                tracing::debug!(task = %key, "reusing the saved write of a task finished before");
                done[i] = Some((
                    Done::Update(update),
                    NodeTiming {
                        node: t.node.clone(),
                        index: t.index,
                        micros: 0,
                        attempts: 0,
                    },
                ));
            }
        }
        let mut running = FuturesUnordered::new();
        for (i, task) in tasks.iter().enumerate() {
            if done[i].is_some() {
                continue;
            }
            let node = self
                .graph
                .node(&task.node)
                .ok_or_else(|| GraphError::NoSuchNode {
                    run: run.clone(),
                    node: task.node.clone(),
                })?;
            let task_answer = answer
                .as_ref()
                .filter(|(n, _)| *n == task.node)
                .map(|(_, v)| v.clone());
            let ctx = self.context(
                run,
                branch,
                step,
                task.clone(),
                opts.effects,
                origin,
                true,
                &opts.cancel,
                task_answer,
            );
            let fut = node.task.run_task(state.clone(), ctx);
            running.push(async move {
                let t0 = Instant::now();
                let r = fut.await;
                (i, r, t0.elapsed())
            });
        }
        let mut failure: Option<GraphError> = None;
        let mut interrupt: Option<(String, Value)> = None;
        loop {
            let next = tokio::select! {
                biased;
                _ = opts.cancel.cancelled() => {
                    return Err(GraphError::Cancelled { run: run.clone(), checkpoint: head.id });
                }
                next = running.next() => next,
            };
            let Some((i, result, elapsed)) = next else {
                break;
            };
            let task = &tasks[i];
            let timing = NodeTiming {
                node: task.node.clone(),
                index: task.index,
                micros: elapsed.as_micros() as u64,
                attempts: result.attempts,
            };
            match result.outcome {
                Ok(update) => {
                    if multi {
                        let map: Map<String, Value> = S::update_to_json(&update)
                            .map_err(|e| ser_err(run, "task write", e))?
                            .into_iter()
                            .map(|(k, v)| (k.to_string(), v))
                            .collect();
                        self.store.put_task_write(
                            run,
                            head.id,
                            &task.key(),
                            &Value::Object(map),
                        )?;
                    }
                    self.emit(
                        run,
                        branch,
                        step,
                        EventKind::NodeFinished {
                            node: task.node.clone(),
                            index: task.index,
                            micros: timing.micros,
                            fields: S::fields_written(&update),
                        },
                    );
                    done[i] = Some((Done::Update(update), timing));
                }
                Err(TaskFailure::Interrupted(payload)) => {
                    if interrupt.is_none() {
                        interrupt = Some((task.node.clone(), payload));
                    }
                }
                Err(TaskFailure::Error(message)) => {
                    let routed = self
                        .graph
                        .node(&task.node)
                        .and_then(|n| n.on_exhausted.clone());
                    match routed {
                        Some(to) => {
                            self.emit(
                                run,
                                branch,
                                step,
                                EventKind::NodeRouted {
                                    node: task.node.clone(),
                                    index: task.index,
                                    to: to.clone(),
                                },
                            );
                            done[i] = Some((Done::Routed { message, to }, timing));
                        }
                        None if failure.is_none() => {
                            failure = Some(GraphError::NodeFailed {
                                run: run.clone(),
                                node: task.node.clone(),
                                step,
                                attempts: result.attempts,
                                message,
                            });
                        }
                        None => {}
                    }
                }
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        if let Some((node, payload)) = interrupt {
            return Ok(StepEnd::Interrupt { node, payload });
        }

        // Merge in task order, whatever order the tasks finished in.
        let mut ops = Vec::new();
        let mut custom_written = BTreeSet::new();
        let mut overwritten_by: HashMap<&'static str, String> = HashMap::new();
        let mut merged = Vec::new();
        let mut timings = Vec::with_capacity(tasks.len());
        let mut failures = Vec::new();
        let mut routes = Vec::with_capacity(tasks.len());
        {
            let st = Arc::make_mut(state);
            for (task, slot) in tasks.iter().zip(done) {
                let Some((outcome, timing)) = slot else {
                    continue;
                };
                timings.push(timing);
                match outcome {
                    Done::Routed { message, to } => {
                        failures.push(RoutedFailure {
                            node: task.node.clone(),
                            index: task.index,
                            message,
                            routed_to: to.clone(),
                        });
                        routes.push(Some(to));
                    }
                    Done::Update(update) => {
                        let fields = S::fields_written(&update);
                        let declared = self.graph.node(&task.node).and_then(|n| n.writes.as_ref());
                        for f in &fields {
                            if declared.is_some_and(|d| !d.iter().any(|x| x == f)) {
                                return Err(GraphError::UndeclaredWrite {
                                    node: task.node.clone(),
                                    field: f.to_string(),
                                });
                            }
                            match merge_of::<S>(f) {
                                Some(Merge::Overwrite) => {
                                    if let Some(first) = overwritten_by.insert(f, task.node.clone())
                                    {
                                        return Err(GraphError::ConflictingWrites {
                                            field: f.to_string(),
                                            first,
                                            second: task.node.clone(),
                                        });
                                    }
                                }
                                Some(Merge::Custom) => {
                                    custom_written.insert(*f);
                                }
                                _ => {}
                            }
                        }
                        for (f, v) in S::update_to_json(&update)
                            .map_err(|e| ser_err(run, "node update", e))?
                        {
                            match merge_of::<S>(f) {
                                Some(Merge::Append) => ops.push(FieldOp::Extend(f.to_string(), v)),
                                Some(Merge::Custom) => {}
                                _ => ops.push(FieldOp::Set(f.to_string(), v)),
                            }
                        }
                        st.apply(update);
                        merged.extend(fields);
                        routes.push(None);
                    }
                }
            }
            for f in &custom_written {
                let v = st
                    .field_json(f)
                    .unwrap_or(Ok(Value::Null))
                    .map_err(|e| ser_err(run, &format!("field `{f}`"), e))?;
                ops.push(FieldOp::Set(f.to_string(), v));
            }
        }
        self.emit(run, branch, step, EventKind::StateMerged { fields: merged });

        // Route: dedupe so a node reached from several tasks runs once (the barrier).
        let mut next = Vec::new();
        let mut seen = HashSet::new();
        for (task, route) in tasks.iter().zip(&routes) {
            let succ = match route {
                Some(to) if to == crate::builder::END => Vec::new(),
                Some(to) => vec![Task::single(to.clone())],
                None => self.graph.successors(&task.node, state)?,
            };
            for t in succ {
                if seen.insert((t.node.clone(), t.index)) {
                    next.push(t);
                }
            }
        }
        let record = if full {
            StateRecord::Full(to_fields(run, state.as_ref())?)
        } else {
            StateRecord::Delta(ops)
        };
        let cp = Checkpoint {
            id,
            parent: Some(head.id),
            branch,
            step,
            fingerprint: self.graph.fingerprint().to_string(),
            next,
            timings,
            failures,
            source: CheckpointSource::Step,
            created_ms: now_ms(),
            state: record,
        };
        self.store.put_checkpoint(run, &cp)?;
        self.emit(
            run,
            branch,
            step,
            EventKind::CheckpointSaved { checkpoint: cp.id },
        );
        Ok(StepEnd::Committed(cp, tasks.clone()))
    }
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
