//! The path a run took, step by step: which node(s) ran to produce each checkpoint, how long they took, what
//! they changed, the tokens they spent and how a step ended. Built from checkpoints alone (JSON), so it works
//! for any graph; fields that follow kt's conventions (appended items with `tokens_in`/`tokens_out`, history
//! items with `step`/`status`/`reason`) are summarised, everything else is listed by name.

use kt_graph::{CheckpointHead, CheckpointId, CheckpointSource, StopReason};
use serde::Serialize;

use crate::error::RunsError;
use crate::record::{Fields, RunRecord};
use crate::step_outcome::{advance, outcome_of, tokens};

/// One node that ran in a step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRan {
    pub node: String,
    /// Index among fan-out copies (0 when not fanned out).
    pub index: u32,
    pub seconds: f64,
    pub attempts: u32,
}

/// One checkpoint on the path, with the step that produced it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathStep {
    pub checkpoint: u64,
    pub parent: Option<u64>,
    pub branch: u32,
    pub step: u64,
    /// input | step | fork | run_node
    pub source: &'static str,
    pub nodes: Vec<NodeRan>,
    /// Fields this checkpoint changed.
    pub changed: Vec<String>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// How the step ended, in words.
    pub outcome: String,
    /// The nodes the next step runs (empty: finished).
    pub next: Vec<String>,
    pub created_ms: u64,
}

impl NodeRan {
    /// `node`, or `node#index` for a fan-out copy: how `kt runs show` and the report name it.
    pub fn label(&self) -> String {
        if self.index > 0 {
            format!("{}#{}", self.node, self.index)
        } else {
            self.node.clone()
        }
    }
}

impl PathStep {
    /// The labels ([`NodeRan::label`]) of the nodes that ran in this step.
    pub fn node_labels(&self) -> Vec<String> {
        self.nodes.iter().map(NodeRan::label).collect()
    }

    /// How long the step took: its nodes ran in parallel, so the longest of them (0 when none ran).
    pub fn seconds(&self) -> f64 {
        self.nodes.iter().map(|n| n.seconds).fold(0.0, f64::max)
    }
}

/// The path to a checkpoint with only its last steps described in full: what a page showing the recent
/// steps of a long run needs, without reading every state on the way.
#[derive(Debug, Clone)]
pub struct RecentPath {
    /// Every checkpoint on the path (without states), from the input.
    pub lineage: Vec<CheckpointHead>,
    /// The nodes that ran to produce each checkpoint of `lineage` (same indices).
    pub ran: Vec<Vec<NodeRan>>,
    /// The last steps of the path in full, oldest first.
    pub steps: Vec<PathStep>,
    /// The state at the path's end, rebuilt while its last steps were described (none when no step was):
    /// a caller that needs it too need not rebuild it.
    pub state: Option<Fields>,
}

/// The path from the run's input to `to` (default: the recorded run's head), one entry per checkpoint.
pub fn run_path(record: &RunRecord, to: Option<CheckpointId>) -> Result<Vec<PathStep>, RunsError> {
    Ok(recent_path(record, to, usize::MAX)?.steps)
}

/// The path to `to` (default: the head) with its last `keep` steps in full.
pub fn recent_path(
    record: &RunRecord,
    to: Option<CheckpointId>,
    keep: usize,
) -> Result<RecentPath, RunsError> {
    let to = match to {
        Some(id) => id,
        None => record.head()?,
    };
    let lineage = record.lineage(to)?;
    let ran = nodes_ran(&lineage);
    let first = lineage.len().saturating_sub(keep);
    let (steps, state) = describe_steps(record, &lineage, &ran, first..lineage.len())?;
    Ok(RecentPath {
        lineage,
        ran,
        steps,
        state,
    })
}

/// The nodes that ran to produce each checkpoint of `lineage`: its recorded timings, or for a step recorded
/// without them, what the checkpoint before it scheduled.
pub fn nodes_ran(lineage: &[CheckpointHead]) -> Vec<Vec<NodeRan>> {
    let mut prev_next: Vec<String> = Vec::new();
    lineage
        .iter()
        .map(|cp| {
            let mut nodes: Vec<NodeRan> = cp
                .timings
                .iter()
                .map(|t| NodeRan {
                    node: t.node.clone(),
                    index: t.index,
                    seconds: t.micros as f64 / 1e6,
                    attempts: t.attempts,
                })
                .collect();
            if nodes.is_empty() && cp.source == CheckpointSource::Step {
                nodes = prev_next
                    .iter()
                    .map(|n| NodeRan {
                        node: n.clone(),
                        index: 0,
                        seconds: 0.0,
                        attempts: 0,
                    })
                    .collect();
            }
            prev_next = dedup(cp.next.iter().map(|t| t.node.clone()));
            nodes
        })
        .collect()
}

/// The steps at `range` of `lineage` in full: what each changed, its tokens and how it ended, and the state
/// after the last of them. Reads the state before the range once, then one checkpoint per step.
pub(crate) fn describe_steps(
    record: &RunRecord,
    lineage: &[CheckpointHead],
    ran: &[Vec<NodeRan>],
    range: std::ops::Range<usize>,
) -> Result<(Vec<PathStep>, Option<Fields>), RunsError> {
    let stopped = record.meta()?.stopped;
    let mut out = Vec::with_capacity(range.len());
    let mut fields: Option<Fields> = None;
    for i in range {
        let cp = record.checkpoint(lineage[i].id)?;
        let (after, changed, appended) = advance(record, fields.take(), &cp)?;
        let (tokens_in, tokens_out) = tokens(&appended);
        let mut outcome = outcome_of(&cp, &changed, &appended, &after);
        if let Some((at, reason)) = &stopped
            && *at == cp.id
        {
            outcome.push_str(&format!("; stopped here ({})", describe_stop(reason)));
        }
        out.push(PathStep {
            checkpoint: cp.id.0,
            parent: cp.parent.map(|p| p.0),
            branch: cp.branch.0,
            step: cp.step,
            source: source_name(cp.source),
            nodes: ran.get(i).cloned().unwrap_or_default(),
            changed,
            tokens_in,
            tokens_out,
            outcome,
            next: dedup(cp.next.iter().map(|t| t.node.clone())),
            created_ms: cp.created_ms,
        });
        fields = Some(after);
    }
    Ok((out, fields))
}

pub(crate) fn source_name(s: CheckpointSource) -> &'static str {
    match s {
        CheckpointSource::Input => "input",
        CheckpointSource::Step => "step",
        CheckpointSource::Fork => "fork",
        CheckpointSource::RunNode => "run_node",
    }
}

pub fn describe_stop(reason: &StopReason) -> String {
    match reason {
        StopReason::BeforeNode(n) => format!("breakpoint before `{n}`"),
        StopReason::AfterNode(n) => format!("breakpoint after `{n}`"),
        StopReason::Interrupt { node, .. } => format!("`{node}` is waiting for an answer"),
    }
}

fn dedup(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(node: &str, index: u32, seconds: f64) -> NodeRan {
        NodeRan {
            node: node.into(),
            index,
            seconds,
            attempts: 1,
        }
    }

    #[test]
    fn fan_out_copies_are_labelled_by_index_and_a_step_lasts_as_long_as_its_slowest_node() {
        let step = PathStep {
            checkpoint: 3,
            parent: Some(2),
            branch: 0,
            step: 3,
            source: "step",
            nodes: vec![
                ran("apply", 0, 1.5),
                ran("apply", 1, 4.0),
                ran("apply", 2, 2.0),
            ],
            changed: vec![],
            tokens_in: 0,
            tokens_out: 0,
            outcome: String::new(),
            next: vec![],
            created_ms: 0,
        };
        assert_eq!(step.node_labels(), ["apply", "apply#1", "apply#2"]);
        assert_eq!(step.seconds(), 4.0);
        let idle = PathStep {
            nodes: vec![],
            ..step
        };
        assert_eq!(idle.seconds(), 0.0);
    }

    fn head(id: u64, source: CheckpointSource, timed: &[&str], next: &[&str]) -> CheckpointHead {
        CheckpointHead {
            id: CheckpointId(id),
            parent: id.checked_sub(1).map(CheckpointId),
            branch: kt_graph::BranchId(0),
            step: id,
            fingerprint: String::new(),
            next: next.iter().map(|n| kt_graph::Task::single(*n)).collect(),
            timings: timed
                .iter()
                .map(|n| kt_graph::NodeTiming {
                    node: n.to_string(),
                    index: 0,
                    micros: 2_000_000,
                    attempts: 1,
                })
                .collect(),
            failures: vec![],
            source,
            created_ms: 0,
            snapshot: id == 0,
        }
    }

    #[test]
    fn a_step_recorded_without_timings_ran_what_the_checkpoint_before_it_scheduled() {
        let lineage = [
            head(0, CheckpointSource::Input, &[], &["plan"]),
            head(1, CheckpointSource::Step, &["plan"], &["apply", "apply"]),
            head(2, CheckpointSource::Step, &[], &[]),
        ];
        let ran = nodes_ran(&lineage);
        assert!(ran[0].is_empty(), "the input ran nothing");
        assert_eq!((ran[1][0].node.as_str(), ran[1][0].seconds), ("plan", 2.0));
        let names: Vec<&str> = ran[2].iter().map(|n| n.node.as_str()).collect();
        assert_eq!(
            names,
            ["apply"],
            "scheduled copies of one node are one node"
        );
        assert_eq!(ran[2][0].attempts, 0, "not timed: no attempts known");
    }
}
