//! The read-only questions about a recorded run: its history (every checkpoint of every branch), the state at
//! a checkpoint, the per-field diff of two checkpoints, the step-by-step summary `kt runs show` prints, and the
//! breakpoints stored with the run (the one thing here that writes, to the run record only).

use kt_graph::{Breakpoints, Checkpoint, CheckpointId, GraphRunMeta, StateRecord};
use kt_record::ProfileRecord;
use serde::Serialize;
use serde_json::Value;

use crate::catalog::{RunSummary, summarize};
use crate::error::RunsError;
use crate::field_diff::{FieldChange, diff_fields};
use crate::record::{Fields, RunRecord};
use crate::steps::{PathStep, describe_stop, run_path, source_name};

/// One checkpoint in `kt debug history`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryEntry {
    pub checkpoint: u64,
    pub parent: Option<u64>,
    pub branch: u32,
    pub step: u64,
    pub source: &'static str,
    /// Nodes whose run produced this checkpoint.
    pub ran: Vec<String>,
    /// Fields stored as changed (all of them for a full snapshot).
    pub changed: Vec<String>,
    pub next: Vec<String>,
    pub created_ms: u64,
    /// Set when the run is stopped at this checkpoint.
    pub stopped: Option<String>,
}

/// A branch of the run's history and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BranchEntry {
    pub branch: u32,
    /// `(branch, checkpoint)` it was copied from; none for the original run.
    pub origin: Option<(u32, u64)>,
    /// Replays reuse recorded LLM answers and tuning results; forks with an edited state do not.
    pub reuses_effects: bool,
}

/// `kt debug history`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct History {
    pub graph_run: String,
    pub checkpoints: Vec<HistoryEntry>,
    pub branches: Vec<BranchEntry>,
    pub breakpoints: Breakpoints,
}

pub fn history(record: &RunRecord) -> Result<History, RunsError> {
    let meta = record.meta()?;
    let checkpoints = record
        .checkpoints()?
        .iter()
        .map(|cp| history_entry(record, &meta, cp, None))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(History {
        graph_run: record.graph_run().to_string(),
        checkpoints,
        branches: branch_entries(&meta),
        breakpoints: meta.breakpoints,
    })
}

/// The branches of the run's record, with where each came from.
pub(crate) fn branch_entries(meta: &GraphRunMeta) -> Vec<BranchEntry> {
    meta.branches
        .iter()
        .map(|b| BranchEntry {
            branch: b.id.0,
            origin: b.origin.map(|(br, cp)| (br.0, cp.0)),
            reuses_effects: b.inherits_effects,
        })
        .collect()
}

/// One checkpoint as `kt debug history` and the studio's timeline list it. `before` is the state at its
/// parent when the caller has it (else a snapshot reads it, to name what it changed).
pub(crate) fn history_entry(
    record: &RunRecord,
    meta: &GraphRunMeta,
    cp: &Checkpoint,
    before: Option<&Fields>,
) -> Result<HistoryEntry, RunsError> {
    Ok(HistoryEntry {
        checkpoint: cp.id.0,
        parent: cp.parent.map(|p| p.0),
        branch: cp.branch.0,
        step: cp.step,
        source: source_name(cp.source),
        ran: cp.timings.iter().map(|t| t.node.clone()).collect(),
        changed: changed_fields(record, cp, before)?,
        next: cp.next.iter().map(|t| t.key()).collect(),
        created_ms: cp.created_ms,
        stopped: meta
            .stopped
            .as_ref()
            .filter(|(at, _)| *at == cp.id)
            .map(|(_, r)| describe_stop(r)),
    })
}

/// The fields `cp` changed: a snapshot stores every field, so name only those that differ from the parent.
fn changed_fields(
    record: &RunRecord,
    cp: &Checkpoint,
    before: Option<&Fields>,
) -> Result<Vec<String>, RunsError> {
    let read;
    let before = match (before, cp.parent, &cp.state) {
        (Some(b), _, _) => Some(b),
        (None, Some(p), StateRecord::Full(_)) => {
            read = record.fields_at(p)?;
            Some(&read)
        }
        _ => None,
    };
    Ok(match &cp.state {
        StateRecord::Full(m) => match before {
            Some(before) => m
                .iter()
                .filter(|(k, v)| before.get(*k) != Some(*v))
                .map(|(k, _)| k.clone())
                .collect(),
            None => m.keys().cloned().collect(),
        },
        StateRecord::Delta(ops) => {
            let mut names: Vec<String> = Vec::new();
            for op in ops {
                if matches!(op, kt_graph::FieldOp::Extend(_, Value::Array(a)) if a.is_empty()) {
                    continue;
                }
                let (kt_graph::FieldOp::Set(n, _) | kt_graph::FieldOp::Extend(n, _)) = op;
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
            names
        }
    })
}

/// The state at `at`, or one field of it.
pub fn state_at(
    record: &RunRecord,
    at: CheckpointId,
    field: Option<&str>,
) -> Result<Value, RunsError> {
    let fields = record.fields_at(at)?;
    match field {
        None => Ok(Value::Object(fields)),
        Some(name) => {
            // `best.kernel.code` reaches inside a field.
            let mut parts = name.split('.');
            let head = parts.next().unwrap_or(name);
            let mut value = fields.get(head).ok_or_else(|| RunsError::UnknownField {
                field: head.to_string(),
                known: fields.keys().cloned().collect::<Vec<_>>().join(", "),
            })?;
            for part in parts {
                let next = match value {
                    Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
                    Value::Object(map) => map.get(part),
                    _ => None,
                };
                value = next.ok_or_else(|| RunsError::UnknownField {
                    field: name.to_string(),
                    known: match value {
                        Value::Object(m) => m.keys().cloned().collect::<Vec<_>>().join(", "),
                        Value::Array(a) => format!("indices 0..{}", a.len()),
                        _ => "(a plain value has no parts)".into(),
                    },
                })?;
            }
            Ok(value.clone())
        }
    }
}

/// Per-field differences between checkpoints `a` and `b` (any branches).
pub fn diff(
    record: &RunRecord,
    a: CheckpointId,
    b: CheckpointId,
) -> Result<Vec<FieldChange>, RunsError> {
    let before = record.fields_at(a)?;
    let after = record.fields_at(b)?;
    Ok(diff_fields(&before, &after, &[]))
}

/// Stores breakpoints with the run (they apply to `kt resume` and `kt replay`). `known` lists valid node
/// names; an unknown name is refused rather than silently never firing.
pub fn set_breakpoints(
    record: &RunRecord,
    breakpoints: Breakpoints,
    known: &[String],
) -> Result<Breakpoints, RunsError> {
    for name in breakpoints.before.iter().chain(&breakpoints.after) {
        if !known.is_empty() && !known.contains(name) {
            return Err(RunsError::UnknownNode {
                node: name.clone(),
                known: known.join(", "),
            });
        }
    }
    let mut meta = record.meta()?;
    meta.breakpoints = breakpoints;
    record
        .store()
        .update_run(&meta)
        .map_err(|e| RunsError::graph(record.graph_run(), e))?;
    Ok(meta.breakpoints)
}

/// Node names the recorded history mentions (ran, or scheduled next): a fallback list of valid names when the
/// graph cannot be rebuilt.
pub fn nodes_seen(record: &RunRecord) -> Result<Vec<String>, RunsError> {
    let mut names: Vec<String> = Vec::new();
    for cp in record.checkpoints()? {
        for n in cp
            .timings
            .iter()
            .map(|t| &t.node)
            .chain(cp.next.iter().map(|t| &t.node))
        {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    Ok(names)
}

/// How one optimisation step ended (from the state's `history` field).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelVerdict {
    pub step: String,
    pub status: String,
    pub reason: String,
    pub time_ms: Option<f64>,
    pub kernel_file: Option<String>,
}

/// `kt runs show`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunShow {
    pub summary: RunSummary,
    pub graph_run: String,
    pub path: Vec<PathStep>,
    pub kernels: Vec<KernelVerdict>,
    pub breakpoints: Breakpoints,
    pub stopped: Option<String>,
    pub branches: usize,
    /// Why the run did not finish (result.json's `error`).
    pub error: Option<String>,
    /// Nsight Compute profiles of the naive kernel and each accepted step's kernel (the state's `profiles`).
    pub profiles: Vec<ProfileRecord>,
}

/// The profile records of a state's `profiles` field (none when the field is absent or unreadable).
pub fn profiles(field: Option<&Value>) -> Vec<ProfileRecord> {
    field
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// `kt runs show` of a run directory; a run that stopped before its first graph step shows its summary alone.
pub fn show_dir(dir: kt_record::RunDir) -> Result<RunShow, RunsError> {
    match RunRecord::open(dir.clone()) {
        Ok(record) => show(&record),
        Err(RunsError::NoHistory { .. }) => Ok(RunShow {
            summary: summarize(dir.root()),
            graph_run: String::new(),
            path: Vec::new(),
            kernels: Vec::new(),
            breakpoints: Breakpoints::default(),
            stopped: None,
            branches: 0,
            error: run_error(&dir),
            profiles: Vec::new(),
        }),
        Err(e) => Err(e),
    }
}

fn run_error(dir: &kt_record::RunDir) -> Option<String> {
    kt_record::RunResult::read(&dir.result_json())
        .ok()
        .flatten()
        .and_then(|r| r.error)
}

pub fn show(record: &RunRecord) -> Result<RunShow, RunsError> {
    let meta = record.meta()?;
    let head = record.head()?;
    let path = run_path(record, Some(head))?;
    let fields = record.fields_at(head)?;
    Ok(RunShow {
        summary: summarize(record.root()),
        graph_run: record.graph_run().to_string(),
        path,
        kernels: verdicts(fields.get("history")),
        breakpoints: meta.breakpoints,
        stopped: meta
            .stopped
            .as_ref()
            .map(|(at, r)| format!("{} at {at}", describe_stop(r))),
        branches: meta.branches.len(),
        error: run_error(record.dir()),
        profiles: profiles(fields.get("profiles")),
    })
}

/// Step records (`step`, `status`, `reason`, `time_ms`, `kernel_file`) of a history field.
pub fn verdicts(history: Option<&Value>) -> Vec<KernelVerdict> {
    let Some(Value::Array(items)) = history else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|i| {
            Some(KernelVerdict {
                step: i.get("step")?.as_str()?.to_string(),
                status: i.get("status")?.as_str()?.replace('_', " "),
                reason: i
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                time_ms: i.get("time_ms").and_then(Value::as_f64),
                kernel_file: i
                    .get("kernel_file")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
        })
        .collect()
}

/// Which checkpoint ids the history of `record` has (for messages).
pub fn checkpoint_ids(record: &RunRecord) -> Result<Vec<CheckpointId>, RunsError> {
    Ok(record.checkpoints()?.into_iter().map(|c| c.id).collect())
}
