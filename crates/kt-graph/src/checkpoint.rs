//! What a checkpoint holds, and how a state is rebuilt from per-field deltas.
//!
//! A checkpoint stores only the fields its step changed (overwrite/custom: the new value; append: the items
//! appended). Every [`FULL_SNAPSHOT_EVERY`] checkpoints along a branch, and on the first checkpoint a run
//! writes after loading, a full snapshot bounds how far back a reconstruction has to fold.

use crate::ids::{BranchId, CheckpointId, RunId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Folding more than this many deltas to rebuild a state would make `state_at` slow on long runs.
pub const FULL_SNAPSHOT_EVERY: u32 = 128;

/// One task of a superstep: a node, and for fan-out its index among `count` parallel copies.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Task {
    pub node: String,
    pub index: u32,
    pub count: u32,
}

impl Task {
    pub fn single(node: impl Into<String>) -> Self {
        Self {
            node: node.into(),
            index: 0,
            count: 1,
        }
    }
    /// Stable key of this task within a step (used for saved writes and journal keys).
    pub fn key(&self) -> String {
        format!("{}#{}", self.node, self.index)
    }
}

/// How long one task took in the step that produced a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeTiming {
    pub node: String,
    pub index: u32,
    pub micros: u64,
    pub attempts: u32,
}

/// A change to one field: replace its value, or append items to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FieldOp {
    Set(String, Value),
    Extend(String, Value),
}

/// The state part of a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StateRecord {
    /// The whole state, field by field.
    Full(Map<String, Value>),
    /// Only what this step changed, relative to the parent checkpoint.
    Delta(Vec<FieldOp>),
}

/// Why a checkpoint exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CheckpointSource {
    /// The initial state of a run.
    Input,
    /// The result of a superstep.
    Step,
    /// The start of a new branch copied (and possibly edited) from another checkpoint.
    Fork,
    /// The result of `run_node` with writing requested.
    RunNode,
}

/// A node whose retries were exhausted and whose `on_exhausted` route was taken in this step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoutedFailure {
    pub node: String,
    pub index: u32,
    pub message: String,
    pub routed_to: String,
}

/// One saved point of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub id: CheckpointId,
    pub parent: Option<CheckpointId>,
    pub branch: BranchId,
    /// Supersteps executed to reach this checkpoint (0 for the input).
    pub step: u64,
    /// Fingerprint of the graph that wrote it.
    pub fingerprint: String,
    /// The tasks the next superstep runs; empty when the run is finished.
    pub next: Vec<Task>,
    pub timings: Vec<NodeTiming>,
    pub failures: Vec<RoutedFailure>,
    pub source: CheckpointSource,
    /// Milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// Last: the SQLite store reads a checkpoint's head from the JSON before it.
    pub state: StateRecord,
}

impl Checkpoint {
    pub fn is_finished(&self) -> bool {
        self.next.is_empty()
    }
}

/// Where a run stopped on purpose, so that `resume` knows to step over it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StopReason {
    /// A breakpoint before these nodes.
    BeforeNode(String),
    /// A breakpoint after this node.
    AfterNode(String),
    /// A node raised an interrupt with this payload (e.g. a question for a person).
    Interrupt { node: String, payload: Value },
}

/// Breakpoints stored with a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakpoints {
    pub before: Vec<String>,
    pub after: Vec<String>,
}

/// A branch and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BranchInfo {
    pub id: BranchId,
    /// The branch and checkpoint it was copied from (None for branch 0).
    pub origin: Option<(BranchId, CheckpointId)>,
    /// Whether effects journaled on the origin branch after the copy may be reused (true for replays,
    /// false for forks with an edited state, whose effects would see different inputs).
    pub inherits_effects: bool,
}

/// Per-run record kept beside the checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphRunMeta {
    pub run: RunId,
    pub fingerprint: String,
    pub breakpoints: Breakpoints,
    pub branches: Vec<BranchInfo>,
    /// Set when the run stopped at a breakpoint or interrupt; cleared when it continues.
    pub stopped: Option<(CheckpointId, StopReason)>,
}

impl GraphRunMeta {
    pub fn branch(&self, id: BranchId) -> Option<&BranchInfo> {
        self.branches.iter().find(|b| b.id == id)
    }
    pub(crate) fn new_branch(
        &mut self,
        origin: (BranchId, CheckpointId),
        inherits_effects: bool,
    ) -> BranchId {
        let id = BranchId(self.branches.iter().map(|b| b.id.0 + 1).max().unwrap_or(0));
        self.branches.push(BranchInfo {
            id,
            origin: Some(origin),
            inherits_effects,
        });
        id
    }
}

/// Applies field operations to a field map (the JSON form of a state).
pub fn fold_ops(fields: &mut Map<String, Value>, ops: &[FieldOp]) -> Result<(), String> {
    for op in ops {
        match op {
            FieldOp::Set(name, value) => {
                fields.insert(name.clone(), value.clone());
            }
            FieldOp::Extend(name, items) => {
                let slot = fields.entry(name.clone()).or_insert(Value::Null);
                match (slot, items) {
                    (Value::Array(have), Value::Array(new)) => have.extend(new.iter().cloned()),
                    (Value::Object(have), Value::Object(new)) => {
                        have.extend(new.iter().map(|(k, v)| (k.clone(), v.clone())))
                    }
                    (slot @ Value::Null, new) => *slot = new.clone(),
                    (have, new) => {
                        return Err(format!(
                            "cannot append to field `{name}`: stored {} and delta {} are not both arrays or maps",
                            kind(have),
                            kind(new)
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "a map",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn folding_deltas_sets_and_appends_fields() {
        let mut m = json!({"counter": 1, "log": [1], "tags": {"a": 1}})
            .as_object()
            .cloned()
            .unwrap();
        fold_ops(
            &mut m,
            &[
                FieldOp::Set("counter".into(), json!(2)),
                FieldOp::Extend("log".into(), json!([2, 3])),
                FieldOp::Extend("tags".into(), json!({"b": 2})),
            ],
        )
        .unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"counter": 2, "log": [1, 2, 3], "tags": {"a": 1, "b": 2}})
        );
    }

    #[test]
    fn appending_to_a_scalar_is_reported_with_the_field_name() {
        let mut m = json!({"counter": 1}).as_object().cloned().unwrap();
        let err = fold_ops(&mut m, &[FieldOp::Extend("counter".into(), json!([1]))]).unwrap_err();
        assert!(err.contains("counter"), "{err}");
    }

    #[test]
    fn new_branches_get_fresh_ids() {
        let mut meta = GraphRunMeta {
            run: RunId::new("r"),
            fingerprint: "f".into(),
            breakpoints: Breakpoints::default(),
            branches: vec![BranchInfo {
                id: BranchId(0),
                origin: None,
                inherits_effects: false,
            }],
            stopped: None,
        };
        let b1 = meta.new_branch((BranchId(0), CheckpointId(3)), true);
        let b2 = meta.new_branch((b1, CheckpointId(5)), false);
        assert_eq!((b1, b2), (BranchId(1), BranchId(2)));
        assert_eq!(meta.branch(b2).unwrap().origin, Some((b1, CheckpointId(5))));
    }
}
