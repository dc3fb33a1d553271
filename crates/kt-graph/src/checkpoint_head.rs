//! [`CheckpointHead`]: a checkpoint without its state. A timeline, a run's path or the newest checkpoint of a
//! branch need only ids, parents, branches, timings and next tasks; reading every state for them costs what
//! the states weigh, and a long run's full snapshots weigh most of its store.

use serde::{Deserialize, Serialize};

use crate::checkpoint::{
    Checkpoint, CheckpointSource, NodeTiming, RoutedFailure, StateRecord, Task,
};
use crate::ids::{BranchId, CheckpointId};

/// Everything of a [`Checkpoint`] but its state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointHead {
    pub id: CheckpointId,
    pub parent: Option<CheckpointId>,
    pub branch: BranchId,
    pub step: u64,
    pub fingerprint: String,
    pub next: Vec<Task>,
    pub timings: Vec<NodeTiming>,
    pub failures: Vec<RoutedFailure>,
    pub source: CheckpointSource,
    pub created_ms: u64,
    /// The state is stored whole (a snapshot), not as changes to the parent's.
    #[serde(default)]
    pub snapshot: bool,
}

impl CheckpointHead {
    pub fn is_finished(&self) -> bool {
        self.next.is_empty()
    }
}

/// The heads from the run's input to `to`, following parents (one line of history, across the branches it
/// was copied from). `heads` are a run's heads in id order, as the store lists them; `Err` names a
/// checkpoint that is missing from them.
pub fn lineage_of(
    heads: &[CheckpointHead],
    to: CheckpointId,
) -> Result<Vec<&CheckpointHead>, CheckpointId> {
    let mut chain = Vec::new();
    let mut cur = Some(to);
    while let Some(id) = cur {
        let head = heads
            .binary_search_by_key(&id, |h| h.id)
            .map(|i| &heads[i])
            .map_err(|_| id)?;
        // a parent is always older; anything else is a damaged store, not a reason to loop forever
        cur = head.parent.filter(|p| *p < id);
        chain.push(head);
    }
    chain.reverse();
    Ok(chain)
}

/// Where a checkpoint's state begins in its JSON encoding (`serde_json` writes a struct's fields in order,
/// and [`Checkpoint::state`] is the last): everything before it is the head. In compact JSON these bytes
/// cannot occur inside a string (a quote there is escaped), and no field of a head has a key named
/// `state`, so their first occurrence is the state's.
pub(crate) const STATE_KEY: &[u8] = b",\"state\":";
/// How a full snapshot's state begins, after [`STATE_KEY`].
pub(crate) const SNAPSHOT_TAG: &[u8] = b"{\"Full\"";

/// The head of a checkpoint from its JSON encoding up to [`STATE_KEY`] (`None` if that is not a head).
pub(crate) fn head_from_json(before_state: &[u8], snapshot: bool) -> Option<CheckpointHead> {
    let mut json = before_state.to_vec();
    json.push(b'}');
    let mut head: CheckpointHead = serde_json::from_slice(&json).ok()?;
    head.snapshot = snapshot;
    Some(head)
}

impl From<Checkpoint> for CheckpointHead {
    fn from(cp: Checkpoint) -> Self {
        Self {
            snapshot: matches!(cp.state, StateRecord::Full(_)),
            id: cp.id,
            parent: cp.parent,
            branch: cp.branch,
            step: cp.step,
            fingerprint: cp.fingerprint,
            next: cp.next,
            timings: cp.timings,
            failures: cp.failures,
            source: cp.source,
            created_ms: cp.created_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_head_keeps_everything_but_the_state_and_says_whether_it_was_a_snapshot() {
        let cp = Checkpoint {
            id: CheckpointId(3),
            parent: Some(CheckpointId(2)),
            branch: BranchId(1),
            step: 3,
            fingerprint: "fp".into(),
            next: vec![Task::single("b")],
            timings: vec![],
            failures: vec![],
            source: CheckpointSource::Step,
            created_ms: 7,
            state: StateRecord::Full(json!({"n": 1}).as_object().cloned().unwrap()),
        };
        let head = CheckpointHead::from(cp.clone());
        assert!(head.snapshot);
        assert_eq!(
            (head.id, head.parent, head.branch),
            (cp.id, cp.parent, cp.branch)
        );
        assert!(!head.is_finished());
        let delta = CheckpointHead::from(Checkpoint {
            state: StateRecord::Delta(vec![]),
            next: vec![],
            ..cp
        });
        assert!(!delta.snapshot);
        assert!(delta.is_finished());
    }

    #[test]
    fn a_head_is_the_encoding_before_the_first_state_key() {
        let failure = RoutedFailure {
            node: "apply".into(),
            index: 0,
            // a quoted key inside a string is escaped, so it is not mistaken for the state
            message: r#"bad {"state": 1}"#.into(),
            routed_to: "plan".into(),
        };
        let cp = Checkpoint {
            id: CheckpointId(5),
            parent: Some(CheckpointId(4)),
            branch: BranchId(0),
            step: 5,
            fingerprint: "fp".into(),
            next: vec![Task::single("plan")],
            timings: vec![],
            failures: vec![failure],
            source: CheckpointSource::Step,
            created_ms: 9,
            state: StateRecord::Full(json!({"state": "x"}).as_object().cloned().unwrap()),
        };
        let split = |cp: &Checkpoint| {
            let body = serde_json::to_vec(cp).unwrap();
            let at = body
                .windows(STATE_KEY.len())
                .position(|w| w == STATE_KEY)
                .unwrap();
            let snapshot = body[at + STATE_KEY.len()..].starts_with(SNAPSHOT_TAG);
            (body[..at].to_vec(), snapshot)
        };
        let (before, snapshot) = split(&cp);
        assert!(snapshot);
        assert_eq!(
            head_from_json(&before, snapshot),
            Some(CheckpointHead::from(cp.clone()))
        );
        assert_eq!(head_from_json(&before[..before.len() - 3], true), None);
        let delta = Checkpoint {
            state: StateRecord::Delta(vec![]),
            ..cp
        };
        let (before, snapshot) = split(&delta);
        assert!(!snapshot);
        assert_eq!(
            head_from_json(&before, snapshot),
            Some(CheckpointHead::from(delta))
        );
    }

    fn head(id: u64, parent: Option<u64>, branch: u32) -> CheckpointHead {
        CheckpointHead {
            id: CheckpointId(id),
            parent: parent.map(CheckpointId),
            branch: BranchId(branch),
            step: id,
            fingerprint: String::new(),
            next: vec![],
            timings: vec![],
            failures: vec![],
            source: CheckpointSource::Step,
            created_ms: 0,
            snapshot: false,
        }
    }

    #[test]
    fn a_lineage_follows_parents_across_branches_and_names_a_missing_checkpoint() {
        // 0 - 1 - 2 on branch 0; 3 forked from 1 on branch 1, 4 after it
        let heads = vec![
            head(0, None, 0),
            head(1, Some(0), 0),
            head(2, Some(1), 0),
            head(3, Some(1), 1),
            head(4, Some(3), 1),
        ];
        let ids = |to| -> Vec<u64> {
            lineage_of(&heads, CheckpointId(to))
                .unwrap()
                .iter()
                .map(|h| h.id.0)
                .collect()
        };
        assert_eq!(ids(4), [0, 1, 3, 4]);
        assert_eq!(ids(2), [0, 1, 2]);
        assert_eq!(ids(0), [0]);
        assert_eq!(lineage_of(&heads, CheckpointId(9)), Err(CheckpointId(9)));
        let gap = vec![head(0, None, 0), head(2, Some(1), 0)];
        assert_eq!(lineage_of(&gap, CheckpointId(2)), Err(CheckpointId(1)));
    }
}
