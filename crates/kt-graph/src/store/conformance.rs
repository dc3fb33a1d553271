//! One behaviour suite every [`CheckpointStore`] backend must pass.

use super::CheckpointStore;
use crate::checkpoint::{
    BranchInfo, Breakpoints, Checkpoint, CheckpointSource, FieldOp, GraphRunMeta, StateRecord, Task,
};
use crate::checkpoint_head::CheckpointHead;
use crate::error::GraphError;
use crate::ids::{BranchId, CheckpointId, RunId};
use serde_json::json;

fn meta(run: &str) -> GraphRunMeta {
    GraphRunMeta {
        run: RunId::new(run),
        fingerprint: "fp".into(),
        breakpoints: Breakpoints::default(),
        branches: vec![BranchInfo {
            id: BranchId(0),
            origin: None,
            inherits_effects: false,
        }],
        stopped: None,
    }
}

fn checkpoint(id: u64, parent: Option<u64>) -> Checkpoint {
    Checkpoint {
        id: CheckpointId(id),
        parent: parent.map(CheckpointId),
        branch: BranchId(0),
        step: id,
        fingerprint: "fp".into(),
        next: vec![Task::single("a")],
        timings: vec![],
        failures: vec![],
        source: CheckpointSource::Step,
        created_ms: 1,
        state: if parent.is_none() {
            StateRecord::Full(json!({"n": 0}).as_object().cloned().unwrap_or_default())
        } else {
            StateRecord::Delta(vec![FieldOp::Set("n".into(), json!(id))])
        },
    }
}

/// A run with checkpoints 0 and 1.
pub(crate) fn seed(store: &dyn CheckpointStore, run: &str) {
    store.create_run(&meta(run)).unwrap();
    let id = RunId::new(run);
    store.put_checkpoint(&id, &checkpoint(0, None)).unwrap();
    store.put_checkpoint(&id, &checkpoint(1, Some(0))).unwrap();
}

pub(crate) fn run_all(store: &dyn CheckpointStore) {
    runs_are_created_once_and_updated(store);
    checkpoints_round_trip_in_id_order(store);
    a_page_of_checkpoints_is_the_newest_before_a_point(store);
    task_writes_are_cleared_when_the_step_commits(store);
    effects_are_kept_per_branch(store);
    missing_things_are_none_not_errors(store);
}

fn runs_are_created_once_and_updated(store: &dyn CheckpointStore) {
    let mut m = meta("runs");
    store.create_run(&m).unwrap();
    assert!(matches!(
        store.create_run(&m),
        Err(GraphError::RunExists { .. })
    ));
    m.breakpoints.before.push("x".into());
    store.update_run(&m).unwrap();
    assert_eq!(store.get_run(&m.run).unwrap(), Some(m.clone()));
    assert!(store.list_runs().unwrap().contains(&m.run));
    assert!(matches!(
        store.update_run(&meta("never-created")),
        Err(GraphError::RunNotFound { .. })
    ));
}

fn checkpoints_round_trip_in_id_order(store: &dyn CheckpointStore) {
    seed(store, "cps");
    let run = RunId::new("cps");
    store.put_checkpoint(&run, &checkpoint(2, Some(1))).unwrap();
    assert_eq!(
        store.get_checkpoint(&run, CheckpointId(2)).unwrap(),
        Some(checkpoint(2, Some(1)))
    );
    assert_eq!(
        store.latest_checkpoint(&run).unwrap(),
        Some(CheckpointId(2))
    );
    let ids: Vec<u64> = store
        .list_checkpoints(&run)
        .unwrap()
        .iter()
        .map(|c| c.id.0)
        .collect();
    assert_eq!(ids, vec![0, 1, 2]);
    // heads: the same checkpoints without their states, snapshots told apart from deltas
    let heads = store.list_checkpoint_heads(&run).unwrap();
    let expected: Vec<CheckpointHead> = store
        .list_checkpoints(&run)
        .unwrap()
        .into_iter()
        .map(CheckpointHead::from)
        .collect();
    assert_eq!(heads, expected);
    assert_eq!(
        heads.iter().map(|h| h.snapshot).collect::<Vec<_>>(),
        vec![true, false, false]
    );
    assert_eq!(
        store
            .latest_checkpoint_on_branch(&run, BranchId(0))
            .unwrap(),
        Some(CheckpointId(2))
    );
    let mut forked = checkpoint(4, Some(1));
    forked.branch = BranchId(1);
    store.put_checkpoint(&run, &forked).unwrap();
    assert_eq!(
        store
            .latest_checkpoint_on_branch(&run, BranchId(0))
            .unwrap(),
        Some(CheckpointId(2)),
        "a newer checkpoint on another branch"
    );
    assert_eq!(
        store
            .latest_checkpoint_on_branch(&run, BranchId(1))
            .unwrap(),
        Some(CheckpointId(4))
    );
    assert_eq!(
        store
            .latest_checkpoint_on_branch(&run, BranchId(7))
            .unwrap(),
        None
    );
    // a head longer than what a store may read of it at first (long failure messages) comes whole
    let mut long = checkpoint(5, Some(2));
    long.failures.push(crate::checkpoint::RoutedFailure {
        node: "a".into(),
        index: 0,
        message: "x".repeat(10_000),
        routed_to: "b".into(),
    });
    store.put_checkpoint(&run, &long).unwrap();
    let heads = store.list_checkpoint_heads(&run).unwrap();
    assert_eq!(heads.last(), Some(&CheckpointHead::from(long)));
    assert!(
        store
            .list_checkpoint_heads(&RunId::new("none"))
            .unwrap()
            .is_empty()
    );
}

fn a_page_of_checkpoints_is_the_newest_before_a_point(store: &dyn CheckpointStore) {
    seed(store, "pages");
    let run = RunId::new("pages");
    for id in 2..6 {
        store
            .put_checkpoint(&run, &checkpoint(id, Some(id - 1)))
            .unwrap();
    }
    let ids = |before: Option<u64>, limit: usize| -> Vec<u64> {
        store
            .list_checkpoints_before(&run, before.map(CheckpointId), limit)
            .unwrap()
            .iter()
            .map(|c| c.id.0)
            .collect()
    };
    assert_eq!(ids(None, 2), vec![4, 5], "the newest page first");
    assert_eq!(ids(Some(4), 3), vec![1, 2, 3], "then the page before it");
    assert_eq!(ids(Some(1), 3), vec![0], "the oldest page is short");
    assert_eq!(ids(Some(0), 3), Vec::<u64>::new());
    assert_eq!(ids(None, usize::MAX), vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(
        store.list_checkpoints_before(&run, None, 3).unwrap()[0],
        checkpoint(3, Some(2)),
        "whole checkpoints, states included"
    );
    assert_eq!(store.count_checkpoints(&run).unwrap(), 6);
    assert_eq!(store.count_checkpoints(&RunId::new("none")).unwrap(), 0);
}

fn task_writes_are_cleared_when_the_step_commits(store: &dyn CheckpointStore) {
    seed(store, "writes");
    let run = RunId::new("writes");
    store
        .put_task_write(&run, CheckpointId(1), "b#1", &json!({"x": 1}))
        .unwrap();
    store
        .put_task_write(&run, CheckpointId(1), "b#0", &json!({"x": 0}))
        .unwrap();
    let w = store.task_writes(&run, CheckpointId(1)).unwrap();
    assert_eq!(
        w,
        vec![
            ("b#0".to_string(), json!({"x": 0})),
            ("b#1".to_string(), json!({"x": 1}))
        ]
    );
    store.put_checkpoint(&run, &checkpoint(2, Some(1))).unwrap();
    assert!(store.task_writes(&run, CheckpointId(1)).unwrap().is_empty());
}

fn effects_are_kept_per_branch(store: &dyn CheckpointStore) {
    seed(store, "effects");
    let run = RunId::new("effects");
    store
        .put_effect(&run, BranchId(0), "1/a#0/0/llm/0", &json!("answer"))
        .unwrap();
    assert_eq!(
        store
            .get_effect(&run, BranchId(0), "1/a#0/0/llm/0")
            .unwrap(),
        Some(json!("answer"))
    );
    assert_eq!(
        store
            .get_effect(&run, BranchId(1), "1/a#0/0/llm/0")
            .unwrap(),
        None
    );
    assert_eq!(store.count_effects(&run).unwrap(), 1);
}

fn missing_things_are_none_not_errors(store: &dyn CheckpointStore) {
    let run = RunId::new("nothing-here");
    assert_eq!(store.get_run(&run).unwrap(), None);
    assert_eq!(store.get_checkpoint(&run, CheckpointId(7)).unwrap(), None);
    assert_eq!(store.latest_checkpoint(&run).unwrap(), None);
    assert!(store.list_checkpoints(&run).unwrap().is_empty());
}
