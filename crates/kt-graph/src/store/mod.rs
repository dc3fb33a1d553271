//! Where checkpoints, run records, saved task writes and the effect journal live.
//!
//! The trait is synchronous on purpose: both backends answer in microseconds (SQLite in WAL mode commits
//! without an fsync per checkpoint), so hopping to a blocking thread per call would cost more than it saves.

#[cfg(test)]
pub(crate) mod conformance;
mod memory;
mod sqlite;

pub use memory::MemoryStore;
pub use sqlite::SqliteStore;

use crate::checkpoint::{Checkpoint, GraphRunMeta};
use crate::checkpoint_head::CheckpointHead;
use crate::error::GraphError;
use crate::ids::{BranchId, CheckpointId, RunId};
use serde_json::Value;

/// Storage for runs. Implementations must keep every write atomic: a checkpoint is either fully stored or
/// absent, and a failed write must not damage anything already stored.
pub trait CheckpointStore: Send + Sync {
    /// Where the store lives (a path, or "memory"), for error messages.
    fn location(&self) -> String;
    /// Records a new run; [`GraphError::RunExists`] if the id is taken.
    fn create_run(&self, meta: &GraphRunMeta) -> Result<(), GraphError>;
    fn get_run(&self, run: &RunId) -> Result<Option<GraphRunMeta>, GraphError>;
    /// Replaces the run record (breakpoints, branches, stop reason).
    fn update_run(&self, meta: &GraphRunMeta) -> Result<(), GraphError>;
    fn list_runs(&self) -> Result<Vec<RunId>, GraphError>;
    /// Stores a checkpoint and, in the same transaction, drops the saved task writes of its parent
    /// (they are folded into this checkpoint).
    fn put_checkpoint(&self, run: &RunId, checkpoint: &Checkpoint) -> Result<(), GraphError>;
    fn get_checkpoint(
        &self,
        run: &RunId,
        id: CheckpointId,
    ) -> Result<Option<Checkpoint>, GraphError>;
    /// The highest checkpoint id of the run (the most recently written one).
    fn latest_checkpoint(&self, run: &RunId) -> Result<Option<CheckpointId>, GraphError>;
    /// The highest checkpoint id on `branch` (where the recorded run, branch 0, stands).
    fn latest_checkpoint_on_branch(
        &self,
        run: &RunId,
        branch: BranchId,
    ) -> Result<Option<CheckpointId>, GraphError> {
        Ok(self
            .list_checkpoint_heads(run)?
            .iter()
            .filter(|h| h.branch == branch)
            .map(|h| h.id)
            .max())
    }
    /// Every checkpoint of the run, in id order.
    fn list_checkpoints(&self, run: &RunId) -> Result<Vec<Checkpoint>, GraphError>;
    /// Every checkpoint of the run without its state, in id order: for timelines and paths, which would
    /// otherwise read (and a long run's snapshots make that most of the store) every state.
    fn list_checkpoint_heads(&self, run: &RunId) -> Result<Vec<CheckpointHead>, GraphError> {
        Ok(self
            .list_checkpoints(run)?
            .into_iter()
            .map(CheckpointHead::from)
            .collect())
    }
    /// The newest `limit` checkpoints older than `before` (of all when `None`), in id order: one page of a
    /// long history, read without the rest of it.
    fn list_checkpoints_before(
        &self,
        run: &RunId,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> Result<Vec<Checkpoint>, GraphError> {
        let mut older: Vec<Checkpoint> = self
            .list_checkpoints(run)?
            .into_iter()
            .filter(|c| before.is_none_or(|b| c.id < b))
            .collect();
        let skip = older.len().saturating_sub(limit);
        Ok(older.split_off(skip))
    }
    /// How many checkpoints the run has (all branches).
    fn count_checkpoints(&self, run: &RunId) -> Result<u64, GraphError> {
        Ok(self.list_checkpoints(run)?.len() as u64)
    }
    /// Saves the update of a task that finished in a step which has not been committed yet.
    fn put_task_write(
        &self,
        run: &RunId,
        at: CheckpointId,
        task: &str,
        write: &Value,
    ) -> Result<(), GraphError>;
    /// Saved task writes of the step that starts at checkpoint `at`.
    fn task_writes(
        &self,
        run: &RunId,
        at: CheckpointId,
    ) -> Result<Vec<(String, Value)>, GraphError>;
    /// Journals the result of a named side effect.
    fn put_effect(
        &self,
        run: &RunId,
        branch: BranchId,
        key: &str,
        value: &Value,
    ) -> Result<(), GraphError>;
    fn get_effect(
        &self,
        run: &RunId,
        branch: BranchId,
        key: &str,
    ) -> Result<Option<Value>, GraphError>;
    /// How many effects are journaled for the run (all branches).
    fn count_effects(&self, run: &RunId) -> Result<u64, GraphError>;
}
