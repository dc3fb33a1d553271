//! What one step did, read from its checkpoint and the state before it: the fields it changed, the items it
//! appended, the tokens those items spent and how the step ended, in words (a step's verdict, a candidate's,
//! a routed failure, or what it set).

use kt_graph::{Checkpoint, CheckpointSource};
use serde_json::Value;

use crate::error::RunsError;
use crate::record::{Fields, RunRecord};

/// Items appended to each field by one checkpoint.
pub(crate) type Appended = Vec<(String, Vec<Value>)>;

/// The fields after `cp`, the names it changed and the items it appended (per field).
pub(crate) fn advance(
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

pub(crate) fn tokens(appended: &Appended) -> (u64, u64) {
    let mut t = (0, 0);
    for (_, items) in appended {
        for item in items {
            t.0 += item.get("tokens_in").and_then(Value::as_u64).unwrap_or(0);
            t.1 += item.get("tokens_out").and_then(Value::as_u64).unwrap_or(0);
        }
    }
    t
}

pub(crate) fn outcome_of(
    cp: &Checkpoint,
    changed: &[String],
    appended: &Appended,
    after: &Fields,
) -> String {
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
