//! Debugging and time travel: `replay` from a checkpoint on a new branch, `fork` with an edited state,
//! `run_node` against any saved state, and breakpoints. History is never overwritten: every operation that
//! writes makes a new branch.

use super::run::{RunOptions, RunOutcome};
use super::{Executor, now_ms, ser_err, to_fields};
use crate::cancel::CancelToken;
use crate::checkpoint::{Breakpoints, Checkpoint, CheckpointSource, StateRecord, Task};
use crate::context::ReplayMode;
use crate::error::GraphError;
use crate::events::EventKind;
use crate::ids::{BranchId, CheckpointId, RunId};
use crate::node::TaskFailure;
use crate::state::State;
use serde_json::Value;
use std::sync::Arc;

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

impl<S: State> Executor<S> {
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
        let ctx = self.context(
            run,
            branch,
            cp.step + 1,
            Task::single(node),
            opts.effects,
            origin,
            opts.write,
            &CancelToken::new(),
            None,
        );
        let result = compiled.task.run_task(Arc::new(state.clone()), ctx).await;
        let failed = |message, cause| GraphError::NodeFailed {
            run: run.clone(),
            node: node.into(),
            step: cp.step + 1,
            attempts: result.attempts,
            message,
            cause,
        };
        let update = match result.outcome {
            Ok(u) => u,
            Err(TaskFailure::Error { message, cause }) => return Err(failed(message, cause)),
            Err(TaskFailure::Interrupted(q)) => {
                return Err(failed(
                    format!("interrupted with {q}; use resume_with on the run instead"),
                    None,
                ));
            }
        };
        let json = S::update_to_json(&update).map_err(|e| ser_err(run, "node update", e))?;
        let mut new_state = state;
        new_state.apply(update);
        let checkpoint = if opts.write {
            Some(self.write_node_result(run, &cp, branch, node, &new_state)?)
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

    /// Stores what `run_node` computed as a checkpoint after `parent` on `branch`.
    fn write_node_result(
        &self,
        run: &RunId,
        parent: &Checkpoint,
        branch: BranchId,
        node: &str,
        state: &S,
    ) -> Result<CheckpointId, GraphError> {
        let id = self.next_id(run)?;
        let cp = Checkpoint {
            id,
            parent: Some(parent.id),
            branch,
            step: parent.step + 1,
            fingerprint: self.graph.fingerprint().to_string(),
            next: self.graph.successors(node, state)?,
            timings: Vec::new(),
            failures: Vec::new(),
            source: CheckpointSource::RunNode,
            created_ms: now_ms(),
            state: StateRecord::Full(to_fields(run, state)?),
        };
        self.store.put_checkpoint(run, &cp)?;
        Ok(id)
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
}
