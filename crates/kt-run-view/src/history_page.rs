//! One page of a run's history, newest first: what a timeline of a long run loads before the user asks for
//! more. [`crate::history`] lists every checkpoint, which on a run of 10,000 reads (and holds) every one of
//! them; a page reads only its own checkpoints, plus the state before each full snapshot in it (to name what
//! the snapshot changed).

use kt_graph::{CheckpointId, StateRecord};
use serde::Serialize;

use crate::error::RunsError;
use crate::inspect::{BranchEntry, HistoryEntry, branch_entries, history_entry};
use crate::record::{Fields, RunRecord};

/// The checkpoints a page shows when the caller names no size.
pub const HISTORY_PAGE: usize = 500;

/// A page of `kt debug history`: the newest checkpoints older than a point, in creation order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryPage {
    pub graph_run: String,
    pub checkpoints: Vec<HistoryEntry>,
    pub branches: Vec<BranchEntry>,
    pub breakpoints: kt_graph::Breakpoints,
    /// Checkpoints of the whole history, all branches.
    pub total: u64,
    /// Whether older checkpoints than this page's first exist (ask again with `before` = its id).
    pub more: bool,
}

/// The newest `limit` checkpoints older than `before` (the newest of all when `None`).
pub fn history_page(
    record: &RunRecord,
    before: Option<CheckpointId>,
    limit: usize,
) -> Result<HistoryPage, RunsError> {
    let meta = record.meta()?;
    let page = record.checkpoints_before(before, limit.max(1))?;
    let more = match page.first() {
        Some(first) => !record.checkpoints_before(Some(first.id), 1)?.is_empty(),
        None => false,
    };
    // A snapshot's entry names what it changed, which needs the state before it: fold the page's own deltas
    // from the first snapshot on, rather than reading back to the previous snapshot for each one.
    let mut fold: Option<(CheckpointId, Fields)> = None;
    let mut checkpoints = Vec::with_capacity(page.len());
    for cp in &page {
        let before = fold
            .as_ref()
            .filter(|(at, _)| Some(*at) == cp.parent)
            .map(|(_, fields)| fields);
        checkpoints.push(history_entry(record, &meta, cp, before)?);
        fold = match (fold.take(), &cp.state) {
            (_, StateRecord::Full(fields)) => Some((cp.id, fields.clone())),
            (Some((at, mut fields)), StateRecord::Delta(ops)) if Some(at) == cp.parent => {
                record.apply_ops(&mut fields, cp.id, ops)?;
                Some((cp.id, fields))
            }
            // another branch, or no snapshot yet on this one
            _ => None,
        };
    }
    Ok(HistoryPage {
        graph_run: record.graph_run().to_string(),
        checkpoints,
        branches: branch_entries(&meta),
        breakpoints: meta.breakpoints,
        total: record.count_checkpoints()?,
        more,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history;

    fn checkpoint(id: u64, state: StateRecord) -> kt_graph::Checkpoint {
        kt_graph::Checkpoint {
            id: CheckpointId(id),
            parent: id.checked_sub(1).map(CheckpointId),
            branch: kt_graph::BranchId(0),
            step: id,
            fingerprint: "fp".into(),
            next: vec![kt_graph::Task::single("a")],
            timings: vec![],
            failures: vec![],
            source: kt_graph::CheckpointSource::Step,
            created_ms: id,
            state,
        }
    }

    #[test]
    fn a_snapshot_in_a_page_names_what_it_changed_as_the_whole_list_does() {
        use kt_graph::{CheckpointStore, FieldOp, GraphRunMeta, MemoryStore, RunId};
        use serde_json::json;
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("run.json"), "{}").unwrap();
        let store = std::sync::Arc::new(MemoryStore::new());
        let run = RunId::new("r/stage3");
        store
            .create_run(&GraphRunMeta {
                run: run.clone(),
                fingerprint: "fp".into(),
                breakpoints: Default::default(),
                branches: vec![kt_graph::BranchInfo {
                    id: kt_graph::BranchId(0),
                    origin: None,
                    inherits_effects: false,
                }],
                stopped: None,
            })
            .unwrap();
        let full = |n: u64, log: &[u64]| {
            StateRecord::Full(
                json!({"n": n, "log": log, "same": "x"})
                    .as_object()
                    .cloned()
                    .unwrap(),
            )
        };
        let step = |n: u64| {
            StateRecord::Delta(vec![
                FieldOp::Set("n".into(), json!(n)),
                FieldOp::Extend("log".into(), json!([n])),
            ])
        };
        // snapshots at 0, 5 (the page's first: read back) and 7 (folded from 5 and 6)
        let states = [
            full(0, &[]),
            step(1),
            step(2),
            step(3),
            step(4),
            full(5, &[1, 2, 3, 4, 5]),
            step(6),
            // a snapshot that changed only `n`
            full(70, &[1, 2, 3, 4, 5, 6]),
        ];
        for (id, state) in states.into_iter().enumerate() {
            store
                .put_checkpoint(&run, &checkpoint(id as u64, state))
                .unwrap();
        }
        let dir = kt_record::RunDir::open(home.path()).unwrap();
        let record = RunRecord::with_store(dir, store, run);
        let page = history_page(&record, None, 6).unwrap();
        let all = history(&record).unwrap();
        assert_eq!(page.checkpoints, all.checkpoints[2..]);
        assert_eq!(page.checkpoints[5].changed, ["n"]);
        assert_eq!(page.checkpoints[3].changed, ["log", "n"]);
        assert!(page.more);
    }
}
