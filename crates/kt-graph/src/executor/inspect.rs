//! The read side over a run's stored checkpoints: its history, one checkpoint, the state at one
//! (typed, or as JSON fields), the difference between two, the line of checkpoints that led to one,
//! and the path through the graph that line took. Loading a checkpoint's state (folding its deltas,
//! migrating an older graph's fields) lives here too; the run loop and the debugging operations use it.

use super::Executor;
use crate::checkpoint::{
    Checkpoint, CheckpointSource, FieldOp, GraphRunMeta, StateRecord, fold_ops,
};
use crate::checkpoint_head::{CheckpointHead, lineage_of};
use crate::decl::{END, START};
use crate::error::GraphError;
use crate::ids::{CheckpointId, RunId};
use crate::state::State;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// One field that differs between two checkpoints (`None`: absent on that side).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldDiff {
    pub field: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// The nodes and edges a run took up to a checkpoint, for highlighting in an export.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunPath {
    pub nodes: Vec<String>,
    pub edges: Vec<(String, String)>,
}

impl<S: State> Executor<S> {
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

    pub fn run_meta(&self, run: &RunId) -> Result<GraphRunMeta, GraphError> {
        self.meta(run)
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
        // heads, not checkpoints: the states are not needed, and on a long run they are most of the store
        let heads = self.store.list_checkpoint_heads(run)?;
        let chain = lineage_of(&heads, to).map_err(|missing| GraphError::CheckpointNotFound {
            run: run.clone(),
            checkpoint: missing,
        })?;
        Ok(path_along(&chain, |a, b| self.graph.has_edge(a, b)))
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

    /// Loads a checkpoint and its typed state. `strict` refuses a foreign fingerprint without migration
    /// and pending tasks naming nodes the graph no longer has (what running from it needs).
    pub(super) fn load(
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
}

/// The nodes run and edges taken along `lineage` (a line of heads from the input, as
/// [`lineage_of`] gives it): the tasks each checkpoint schedules are the ones that ran to produce the next,
/// and a finished line ends at END. Forks copy a state and run nothing. Only edges `has_edge` admits (the
/// graph's own) are listed, so a caller holding the heads and the graph's edges draws a run's path without
/// reading the store again.
pub fn path_along(lineage: &[&CheckpointHead], has_edge: impl Fn(&str, &str) -> bool) -> RunPath {
    let chain: Vec<&CheckpointHead> = lineage
        .iter()
        .copied()
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
            vec![END.to_string()]
        };
        for a in &prev {
            for b in &ran {
                if has_edge(a, b) && !path.edges.contains(&(a.clone(), b.clone())) {
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
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::Task;
    use crate::ids::BranchId;

    fn head(id: u64, source: CheckpointSource, next: &[&str]) -> CheckpointHead {
        CheckpointHead {
            id: CheckpointId(id),
            parent: id.checked_sub(1).map(CheckpointId),
            branch: BranchId(0),
            step: id,
            fingerprint: String::new(),
            next: next.iter().map(|n| Task::single(*n)).collect(),
            timings: vec![],
            failures: vec![],
            source,
            created_ms: 0,
            snapshot: false,
        }
    }

    #[test]
    fn a_path_along_heads_keeps_the_graphs_edges_skips_forks_and_ends_a_finished_line() {
        let line = [
            head(0, CheckpointSource::Input, &["plan"]),
            head(1, CheckpointSource::Step, &["apply", "apply"]),
            head(2, CheckpointSource::Fork, &["apply"]),
            head(3, CheckpointSource::Step, &[]),
        ];
        let refs: Vec<&CheckpointHead> = line.iter().collect();
        let edges = [(START, "plan"), ("plan", "apply"), ("apply", END)];
        let all = |a: &str, b: &str| edges.contains(&(a, b));
        let path = path_along(&refs, all);
        assert_eq!(path.nodes, ["plan", "apply", END]);
        assert_eq!(path.edges.len(), 3, "{:?}", path.edges);
        let no_apply = path_along(&refs, |a, b| all(a, b) && b != "apply");
        assert_eq!(
            no_apply.nodes,
            ["plan", "apply", END],
            "nodes ran all the same"
        );
        assert_eq!(
            no_apply.edges.len(),
            2,
            "an edge the graph lacks is not drawn"
        );
        let unfinished = path_along(&refs[..2], all);
        assert_eq!(
            unfinished.nodes,
            ["plan"],
            "what the last checkpoint schedules has not run"
        );
    }
}
