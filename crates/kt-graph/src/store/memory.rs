//! In-memory store: for tests, subgraphs and dry runs. Lost when dropped.

use super::CheckpointStore;
use crate::checkpoint::{Checkpoint, GraphRunMeta};
use crate::error::GraphError;
use crate::ids::{BranchId, CheckpointId, RunId};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

#[derive(Default)]
struct RunData {
    meta: Option<GraphRunMeta>,
    checkpoints: BTreeMap<CheckpointId, Checkpoint>,
    writes: BTreeMap<(CheckpointId, String), Value>,
    effects: HashMap<(BranchId, String), Value>,
}

/// A [`CheckpointStore`] in memory.
#[derive(Default)]
pub struct MemoryStore {
    runs: Mutex<HashMap<RunId, RunData>>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<RunId, RunData>> {
        // A panic while holding the lock leaves plain data behind; it is still consistent per entry.
        self.runs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl CheckpointStore for MemoryStore {
    fn location(&self) -> String {
        "memory".into()
    }

    fn create_run(&self, meta: &GraphRunMeta) -> Result<(), GraphError> {
        let mut runs = self.lock();
        let data = runs.entry(meta.run.clone()).or_default();
        if data.meta.is_some() {
            return Err(GraphError::RunExists {
                run: meta.run.clone(),
            });
        }
        data.meta = Some(meta.clone());
        Ok(())
    }

    fn get_run(&self, run: &RunId) -> Result<Option<GraphRunMeta>, GraphError> {
        Ok(self.lock().get(run).and_then(|d| d.meta.clone()))
    }

    fn update_run(&self, meta: &GraphRunMeta) -> Result<(), GraphError> {
        let mut runs = self.lock();
        match runs.get_mut(&meta.run) {
            Some(data) if data.meta.is_some() => {
                data.meta = Some(meta.clone());
                Ok(())
            }
            _ => Err(GraphError::RunNotFound {
                run: meta.run.clone(),
            }),
        }
    }

    fn list_runs(&self) -> Result<Vec<RunId>, GraphError> {
        let mut ids: Vec<RunId> = self
            .lock()
            .iter()
            .filter(|(_, d)| d.meta.is_some())
            .map(|(k, _)| k.clone())
            .collect();
        ids.sort();
        Ok(ids)
    }

    fn put_checkpoint(&self, run: &RunId, checkpoint: &Checkpoint) -> Result<(), GraphError> {
        let mut runs = self.lock();
        let data = runs
            .get_mut(run)
            .ok_or_else(|| GraphError::RunNotFound { run: run.clone() })?;
        if let Some(parent) = checkpoint.parent {
            data.writes.retain(|(at, _), _| *at != parent);
        }
        data.checkpoints.insert(checkpoint.id, checkpoint.clone());
        Ok(())
    }

    fn get_checkpoint(
        &self,
        run: &RunId,
        id: CheckpointId,
    ) -> Result<Option<Checkpoint>, GraphError> {
        Ok(self
            .lock()
            .get(run)
            .and_then(|d| d.checkpoints.get(&id).cloned()))
    }

    fn latest_checkpoint(&self, run: &RunId) -> Result<Option<CheckpointId>, GraphError> {
        Ok(self
            .lock()
            .get(run)
            .and_then(|d| d.checkpoints.keys().next_back().copied()))
    }

    fn list_checkpoints(&self, run: &RunId) -> Result<Vec<Checkpoint>, GraphError> {
        Ok(self
            .lock()
            .get(run)
            .map(|d| d.checkpoints.values().cloned().collect())
            .unwrap_or_default())
    }

    fn put_task_write(
        &self,
        run: &RunId,
        at: CheckpointId,
        task: &str,
        write: &Value,
    ) -> Result<(), GraphError> {
        let mut runs = self.lock();
        let data = runs
            .get_mut(run)
            .ok_or_else(|| GraphError::RunNotFound { run: run.clone() })?;
        data.writes.insert((at, task.to_string()), write.clone());
        Ok(())
    }

    fn task_writes(
        &self,
        run: &RunId,
        at: CheckpointId,
    ) -> Result<Vec<(String, Value)>, GraphError> {
        Ok(self
            .lock()
            .get(run)
            .map(|d| {
                d.writes
                    .iter()
                    .filter(|((c, _), _)| *c == at)
                    .map(|((_, t), v)| (t.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default())
    }

    fn put_effect(
        &self,
        run: &RunId,
        branch: BranchId,
        key: &str,
        value: &Value,
    ) -> Result<(), GraphError> {
        let mut runs = self.lock();
        let data = runs
            .get_mut(run)
            .ok_or_else(|| GraphError::RunNotFound { run: run.clone() })?;
        data.effects
            .insert((branch, key.to_string()), value.clone());
        Ok(())
    }

    fn get_effect(
        &self,
        run: &RunId,
        branch: BranchId,
        key: &str,
    ) -> Result<Option<Value>, GraphError> {
        Ok(self
            .lock()
            .get(run)
            .and_then(|d| d.effects.get(&(branch, key.to_string())).cloned()))
    }

    fn count_effects(&self, run: &RunId) -> Result<u64, GraphError> {
        Ok(self
            .lock()
            .get(run)
            .map(|d| d.effects.len() as u64)
            .unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_store_passes_the_conformance_suite() {
        super::super::conformance::run_all(&MemoryStore::new());
    }
}
