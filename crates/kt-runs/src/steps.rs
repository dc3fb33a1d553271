//! The path a run took, step by step: which node(s) ran to produce each checkpoint, how long they took, what
//! they changed, the tokens they spent and how a step ended. Built from checkpoints alone (JSON), so it works
//! for any graph; fields that follow kt's conventions (appended items with `tokens_in`/`tokens_out`, history
//! items with `step`/`status`/`reason`) are summarised, everything else is listed by name.

use kt_graph::{Checkpoint, CheckpointId, CheckpointSource, StopReason};
use serde::Serialize;
use serde_json::Value;

use crate::error::RunsError;
use crate::record::{Fields, RunRecord};

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

/// The path from the run's input to `to` (default: the recorded run's head), one entry per checkpoint.
pub fn run_path(record: &RunRecord, to: Option<CheckpointId>) -> Result<Vec<PathStep>, RunsError> {
    let to = match to {
        Some(id) => id,
        None => record.head()?,
    };
    let chain = record.lineage(to)?;
    let stopped = record.meta()?.stopped;
    let mut out = Vec::with_capacity(chain.len());
    let mut fields: Option<Fields> = None;
    let mut prev_next: Vec<String> = Vec::new();
    for cp in &chain {
        let (after, changed, appended) = advance(record, fields.take(), cp)?;
        let (tokens_in, tokens_out) = tokens(&appended);
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
        let mut outcome = outcome_of(cp, &changed, &appended, &after);
        if let Some((at, reason)) = &stopped
            && *at == cp.id
        {
            outcome.push_str(&format!("; stopped here ({})", describe_stop(reason)));
        }
        let next: Vec<String> = dedup(cp.next.iter().map(|t| t.node.clone()));
        prev_next = next.clone();
        out.push(PathStep {
            checkpoint: cp.id.0,
            parent: cp.parent.map(|p| p.0),
            branch: cp.branch.0,
            step: cp.step,
            source: source_name(cp.source),
            nodes,
            changed,
            tokens_in,
            tokens_out,
            outcome,
            next,
            created_ms: cp.created_ms,
        });
        fields = Some(after);
    }
    Ok(out)
}

pub(crate) fn source_name(s: CheckpointSource) -> &'static str {
    match s {
        CheckpointSource::Input => "input",
        CheckpointSource::Step => "step",
        CheckpointSource::Fork => "fork",
        CheckpointSource::RunNode => "run_node",
    }
}

pub(crate) fn describe_stop(reason: &StopReason) -> String {
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

/// Items appended to each field by one checkpoint.
type Appended = Vec<(String, Vec<Value>)>;

/// The fields after `cp`, the names it changed and the items it appended (per field).
fn advance(
    record: &RunRecord,
    before: Option<Fields>,
    cp: &Checkpoint,
) -> Result<(Fields, Vec<String>, Appended), RunsError> {
    let before = match (before, cp.parent) {
        (Some(f), _) => Some(f),
        (None, Some(p)) => Some(record.fields_at(p)?),
        (None, None) => None,
    };
    match (&cp.state, before) {
        (kt_graph::StateRecord::Delta(ops), Some(mut fields)) => {
            record.apply_ops(&mut fields, cp.id, ops)?;
            let mut changed = Vec::new();
            let mut appended = Vec::new();
            for op in ops {
                if matches!(op, kt_graph::FieldOp::Extend(_, Value::Array(items)) if items.is_empty())
                {
                    continue; // appending nothing is no change
                }
                let (kt_graph::FieldOp::Set(name, _) | kt_graph::FieldOp::Extend(name, _)) = op;
                if !changed.contains(name) {
                    changed.push(name.clone());
                }
                if let kt_graph::FieldOp::Extend(name, Value::Array(items)) = op {
                    appended.push((name.clone(), items.clone()));
                }
            }
            Ok((fields, changed, appended))
        }
        (kt_graph::StateRecord::Full(after), Some(before)) => {
            let mut changed = Vec::new();
            let mut appended = Vec::new();
            for (name, value) in after {
                let old = before.get(name);
                if old == Some(value) {
                    continue;
                }
                changed.push(name.clone());
                if let (Some(Value::Array(old)), Value::Array(new)) = (old, value)
                    && new.len() > old.len()
                    && new[..old.len()] == old[..]
                {
                    appended.push((name.clone(), new[old.len()..].to_vec()));
                }
            }
            Ok((after.clone(), changed, appended))
        }
        (kt_graph::StateRecord::Full(after), None) => Ok((after.clone(), Vec::new(), Vec::new())),
        (kt_graph::StateRecord::Delta(_), None) => Err(RunsError::NoCheckpoint {
            run: record.graph_run().to_string(),
            checkpoint: cp.parent.map_or(0, |p| p.0),
        }),
    }
}

fn tokens(appended: &Appended) -> (u64, u64) {
    let mut t = (0, 0);
    for (_, items) in appended {
        for item in items {
            t.0 += item.get("tokens_in").and_then(Value::as_u64).unwrap_or(0);
            t.1 += item.get("tokens_out").and_then(Value::as_u64).unwrap_or(0);
        }
    }
    t
}

fn outcome_of(cp: &Checkpoint, changed: &[String], appended: &Appended, after: &Fields) -> String {
    match cp.source {
        CheckpointSource::Input => return "input state".into(),
        CheckpointSource::Fork => {
            return format!(
                "copied from #{} to a new branch",
                cp.parent.map_or(0, |p| p.0)
            );
        }
        _ => {}
    }
    let mut parts: Vec<String> = cp
        .failures
        .iter()
        .map(|f| {
            format!(
                "`{}` failed ({}) and routed to `{}`",
                f.node,
                first_line(&f.message),
                f.routed_to
            )
        })
        .collect();
    // Step-history items (`step` + `status`) say how an optimisation step ended.
    for (_, items) in appended {
        for item in items {
            if let (Some(step), Some(status)) = (
                item.get("step").and_then(Value::as_str),
                item.get("status").and_then(Value::as_str),
            ) {
                let mut s = format!("{step}: {}", status.replace('_', " "));
                if let Some(t) = item.get("time_ms").and_then(Value::as_f64) {
                    s.push_str(&format!(" ({t:.3} ms)"));
                }
                parts.push(s);
            }
        }
    }
    // Candidates (items with an `outcome` verdict or a `failure`) say what the tuner made of a rewrite.
    for (_, items) in appended {
        for item in items {
            let index = item.get("index").and_then(Value::as_u64).unwrap_or(0);
            let verdict = item.pointer("/outcome/verdict").and_then(Value::as_str);
            match (verdict, item.get("failure").and_then(Value::as_str)) {
                (Some(v), _) => {
                    let mut s = format!("candidate {index}: {}", v.replace('_', " "));
                    if let Some(t) = item.pointer("/outcome/time_ms").and_then(Value::as_f64) {
                        s.push_str(&format!(" ({t:.3} ms)"));
                    }
                    parts.push(s);
                }
                (None, Some(f)) => {
                    parts.push(format!("candidate {index}: failed ({})", first_line(f)))
                }
                _ => {}
            }
        }
    }
    if parts.is_empty() {
        // What the step set, described where the value says something by itself (a step, a plan).
        let described: Vec<String> = changed
            .iter()
            .filter_map(|f| describe_set(f, after.get(f)?))
            .collect();
        if !described.is_empty() {
            parts.extend(described);
        } else if changed.is_empty() {
            parts.push("no change".into());
        } else {
            parts.push(format!("set {}", changed.join(", ")));
        }
    }
    if cp.is_finished() {
        parts.push("finished".into());
    }
    parts.join("; ")
}

/// `current: tile the loop`, `plan: 2 step(s) (a; b)`, `best: 4.000 ms`, `current cleared`: fields whose
/// value says something by itself.
fn describe_set(field: &str, value: &Value) -> Option<String> {
    let desc = |v: &Value| {
        v.get("description")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    match value {
        Value::Null => Some(format!("{field} cleared")),
        Value::Object(_) => desc(value).map(|d| format!("{field}: {d}")).or_else(|| {
            let t = value.get("time_ms").and_then(Value::as_f64)?;
            Some(format!("{field}: {t:.3} ms"))
        }),
        Value::Array(items) if items.is_empty() => Some(format!("{field}: empty")),
        Value::Array(items) => {
            let all: Option<Vec<String>> = items.iter().map(desc).collect();
            all.map(|d| format!("{field}: {} step(s) ({})", d.len(), d.join("; ")))
        }
        _ => None,
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
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
}
