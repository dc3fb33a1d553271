//! Folding a superstep's updates into the state, in task order (deterministic whatever finished first),
//! and into the per-field operations its checkpoint stores. Declared writes and overwrite conflicts are
//! enforced here.

use super::ser_err;
use crate::checkpoint::{FieldOp, NodeTiming, RoutedFailure, Task};
use crate::error::GraphError;
use crate::graph::CompiledGraph;
use crate::ids::RunId;
use crate::state::{Merge, State, merge_of};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// What a finished task produced.
pub(super) enum Done<S: State> {
    Update(S::Update),
    /// It failed for good and its `on_exhausted` route takes over.
    Routed {
        message: String,
        to: String,
    },
}

/// One slot per task of a step: filled when the task finished (or its saved write was reused).
pub(super) type Slot<S> = Option<(Done<S>, NodeTiming)>;

/// A step's updates, folded.
pub(super) struct Merged {
    /// The checkpoint's delta: the new value of each overwrite/custom field, the items appended.
    pub ops: Vec<FieldOp>,
    /// The fields written, in task order (for the `StateMerged` event).
    pub fields: Vec<&'static str>,
    pub timings: Vec<NodeTiming>,
    pub failures: Vec<RoutedFailure>,
    /// Per finished task in task order: the `on_exhausted` target that replaces its routes, if any.
    pub routes: Vec<Option<String>>,
}

/// Applies the finished tasks' updates to `state` in task order.
pub(super) fn merge_updates<S: State>(
    graph: &CompiledGraph<S>,
    run: &RunId,
    tasks: &[Task],
    state: &mut Arc<S>,
    done: Vec<Slot<S>>,
) -> Result<Merged, GraphError> {
    let mut merged = Merged {
        ops: Vec::new(),
        fields: Vec::new(),
        timings: Vec::with_capacity(tasks.len()),
        failures: Vec::new(),
        routes: Vec::with_capacity(tasks.len()),
    };
    let mut writers = Writers::default();
    let st = Arc::make_mut(state);
    for (task, slot) in tasks.iter().zip(done) {
        let Some((outcome, timing)) = slot else {
            continue;
        };
        merged.timings.push(timing);
        match outcome {
            Done::Routed { message, to } => {
                merged.failures.push(RoutedFailure {
                    node: task.node.clone(),
                    index: task.index,
                    message,
                    routed_to: to.clone(),
                });
                merged.routes.push(Some(to));
            }
            Done::Update(update) => {
                let fields = S::fields_written(&update);
                let declared = graph.node(&task.node).and_then(|n| n.writes.as_deref());
                writers.check::<S>(&task.node, declared, &fields)?;
                for (f, v) in
                    S::update_to_json(&update).map_err(|e| ser_err(run, "node update", e))?
                {
                    match merge_of::<S>(f) {
                        Some(Merge::Append) => merged.ops.push(FieldOp::Extend(f.to_string(), v)),
                        Some(Merge::Custom) => {}
                        _ => merged.ops.push(FieldOp::Set(f.to_string(), v)),
                    }
                }
                st.apply(update);
                merged.fields.extend(fields);
                merged.routes.push(None);
            }
        }
    }
    // A custom merge's result is known only after all updates are applied: store the merged value.
    for f in &writers.custom {
        let v = st
            .field_json(f)
            .unwrap_or(Ok(Value::Null))
            .map_err(|e| ser_err(run, &format!("field `{f}`"), e))?;
        merged.ops.push(FieldOp::Set(f.to_string(), v));
    }
    Ok(merged)
}

/// Who wrote what so far in a step.
#[derive(Default)]
struct Writers {
    overwritten_by: HashMap<&'static str, String>,
    custom: BTreeSet<&'static str>,
}

impl Writers {
    /// Refuses a write the node did not declare, and a second write of an overwrite field in one step.
    fn check<S: State>(
        &mut self,
        node: &str,
        declared: Option<&[String]>,
        fields: &[&'static str],
    ) -> Result<(), GraphError> {
        for f in fields {
            if declared.is_some_and(|d| !d.iter().any(|x| x == f)) {
                return Err(GraphError::UndeclaredWrite {
                    node: node.to_string(),
                    field: f.to_string(),
                });
            }
            match merge_of::<S>(f) {
                Some(Merge::Overwrite) => {
                    if let Some(first) = self.overwritten_by.insert(f, node.to_string()) {
                        return Err(GraphError::ConflictingWrites {
                            field: f.to_string(),
                            first,
                            second: node.to_string(),
                        });
                    }
                }
                Some(Merge::Custom) => {
                    self.custom.insert(*f);
                }
                _ => {}
            }
        }
        Ok(())
    }
}
