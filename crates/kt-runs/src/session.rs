//! Running parts of a recorded run again: one node against a saved state (`kt debug node`), a replay from a
//! checkpoint (`kt replay`), a fork with edited fields (`kt fork`) and continuing the newest checkpoint.
//!
//! History is never overwritten: replays and forks open new branches. `debug node` without `--commit` works on
//! a scratch copy of `run.sqlite` (SQLite's `VACUUM INTO`), so it can use the engine's ordinary
//! run-node-and-write path (which is what yields the route taken) while the run's own history stays exactly
//! as it was.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kt_graph::{
    CheckpointId, CheckpointSource, CheckpointStore, Executor, FieldOp, RunNodeOptions, RunOptions,
    RunOutcome, SqliteStore, State, StateRecord,
};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::binding::{GraphBinding, Setup};
use crate::capture::CapturedCall;
use crate::error::RunsError;
use crate::record::RunRecord;
use crate::steps::{PathStep, describe_stop, run_path};

/// What `kt debug node` found.
#[derive(Debug, Clone, Serialize)]
pub struct NodeReport {
    pub node: String,
    pub at: u64,
    pub llm: crate::capture::LlmChoice,
    /// Every LLM call: sent now (`asked`), or the recording behind a replayed answer (`recorded`).
    pub calls: Vec<CapturedCall>,
    /// The update the node returned, field by field.
    pub update: Map<String, Value>,
    /// The nodes the graph routes to after this update.
    pub route: Vec<String>,
    pub attempts: u32,
    pub tuning: Vec<Value>,
    /// The update the recorded run got from this node at this checkpoint, when it ran it there.
    pub recorded_update: Option<Map<String, Value>>,
    /// Whether `update` equals `recorded_update`.
    pub matches_recorded: Option<bool>,
    /// With `--commit`: the new checkpoint (on a new branch).
    pub committed: Option<u64>,
}

/// Options of [`debug_node`].
#[derive(Debug, Clone)]
pub struct NodeDebug {
    pub node: String,
    pub at: CheckpointId,
    pub commit: bool,
}

fn executor<B: GraphBinding>(
    binding: &B,
    record: &RunRecord,
    store: Arc<dyn CheckpointStore>,
    setup: &Setup,
) -> Result<Executor<B::State>, RunsError> {
    let graph = binding.build(record.dir(), setup)?;
    Ok(Executor::new(graph, store))
}

/// A consistent copy of the run's store in `dir` (WAL content included).
fn scratch_store(record: &RunRecord, dir: &Path) -> Result<Arc<dyn CheckpointStore>, RunsError> {
    let target = dir.join("run.sqlite");
    let conn = rusqlite::Connection::open(record.dir().sqlite())
        .map_err(|e| RunsError::Scratch(e.to_string()))?;
    conn.execute("VACUUM INTO ?1", [target.to_string_lossy().as_ref()])
        .map_err(|e| RunsError::Scratch(e.to_string()))?;
    drop(conn);
    let store = SqliteStore::open(&target).map_err(|e| RunsError::graph(record.graph_run(), e))?;
    Ok(Arc::new(store))
}

/// A fresh directory for files nodes write during a debugging session of `record`.
pub fn session_dir(record: &RunRecord, kind: &str) -> PathBuf {
    let stamp = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    record.root().join("debug").join(format!("{kind}-{stamp}"))
}

/// Runs `opts.node` against the state saved at `opts.at` and reports prompt, answer, update, route and tuning.
/// Without `opts.commit` nothing of the run changes (the node's files go to `setup.output_dir`).
pub async fn debug_node<B: GraphBinding>(
    binding: &B,
    record: &RunRecord,
    setup: &Setup,
    opts: &NodeDebug,
) -> Result<NodeReport, RunsError> {
    let scratch = if opts.commit {
        None
    } else {
        Some(tempfile_dir()?)
    };
    let store = match &scratch {
        Some(dir) => scratch_store(record, dir.path())?,
        None => record.store(),
    };
    // A dry run's files (candidates) go to the scratch directory too, and vanish with it.
    let mut setup_here = setup.clone();
    if let Some(dir) = &scratch {
        setup_here.output_dir = dir.path().join("out");
    }
    let exec = executor(binding, record, store.clone(), &setup_here)?;
    let known = exec
        .graph()
        .node_names()
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>();
    if !known.contains(&opts.node) {
        return Err(RunsError::UnknownNode {
            node: opts.node.clone(),
            known: known.join(", "),
        });
    }
    let effects = setup.llm.replay_mode();
    let run = record.graph_run().clone();
    let result = exec
        .run_node(
            &run,
            opts.at,
            &opts.node,
            RunNodeOptions {
                write: true,
                effects,
            },
        )
        .await
        .map_err(|e| RunsError::graph(&run, e))?;
    let new_cp = result
        .checkpoint
        .ok_or_else(|| RunsError::Usage("the engine wrote no checkpoint".into()))?;
    let route = store
        .get_checkpoint(&run, new_cp)
        .map_err(|e| RunsError::graph(&run, e))?
        .map(|cp| cp.next.iter().map(|t| t.node.clone()).collect())
        .unwrap_or_default();
    let update: Map<String, Value> = result
        .update
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let recorded_update = recorded_update::<B::State>(record, opts.at, &opts.node)?;
    let mut calls = setup.calls.calls();
    if calls.is_empty() {
        calls = binding.recorded_calls(record.dir(), &result.update);
    }
    Ok(NodeReport {
        node: opts.node.clone(),
        at: opts.at.0,
        llm: setup.llm.clone(),
        calls,
        matches_recorded: recorded_update.as_ref().map(|r| *r == update),
        recorded_update,
        tuning: binding.tuning_results(&result.update),
        update,
        route,
        attempts: result.attempts,
        committed: opts.commit.then_some(new_cp.0),
    })
}

fn tempfile_dir() -> Result<tempfile::TempDir, RunsError> {
    tempfile::Builder::new()
        .prefix("kt-debug-")
        .tempdir()
        .map_err(|e| RunsError::io("creating a scratch directory in", std::env::temp_dir(), e))
}

/// The update the recorded run's step from `at` got from `node` alone (None when that step ran other nodes,
/// several tasks, or none).
fn recorded_update<S: State>(
    record: &RunRecord,
    at: CheckpointId,
    node: &str,
) -> Result<Option<Map<String, Value>>, RunsError> {
    let from = record.checkpoint(at)?;
    let child = record.checkpoints()?.into_iter().find(|c| {
        c.parent == Some(at)
            && c.branch == from.branch
            && c.source == CheckpointSource::Step
            && c.timings.len() == 1
            && c.timings[0].node == node
    });
    let Some(child) = child else { return Ok(None) };
    let ops = match &child.state {
        StateRecord::Delta(ops) => ops.clone(),
        StateRecord::Full(after) => {
            // A full snapshot: recover the step's writes by comparing with the parent.
            let before = record.fields_at(at)?;
            after
                .iter()
                .filter(|(k, v)| before.get(*k) != Some(v))
                .map(|(k, v)| match (before.get(k), v, merge_of::<S>(k)) {
                    (Some(Value::Array(old)), Value::Array(new), Some(kt_graph::Merge::Append))
                        if new.len() >= old.len() =>
                    {
                        FieldOp::Extend(k.clone(), Value::Array(new[old.len()..].to_vec()))
                    }
                    _ => FieldOp::Set(k.clone(), v.clone()),
                })
                .collect()
        }
    };
    Ok(Some(
        ops.into_iter()
            .map(|op| match op {
                FieldOp::Set(k, v) | FieldOp::Extend(k, v) => (k, v),
            })
            .collect(),
    ))
}

fn merge_of<S: State>(field: &str) -> Option<kt_graph::Merge> {
    S::fields()
        .iter()
        .find(|f| f.name == field)
        .map(|f| f.merge)
}

/// How a replay, resume or fork-and-run ended.
#[derive(Debug, Clone, Serialize)]
pub struct ContinueReport {
    /// finished | stopped | paused
    pub outcome: String,
    pub checkpoint: u64,
    pub branch: u32,
    pub stopped: Option<String>,
    /// The path from the run's input to where it ended.
    pub path: Vec<PathStep>,
}

fn continue_report<S>(
    record: &RunRecord,
    outcome: &RunOutcome<S>,
) -> Result<ContinueReport, RunsError> {
    let cp = record.checkpoint(outcome.checkpoint())?;
    let (name, stopped) = match outcome {
        RunOutcome::Finished { .. } => ("finished", None),
        RunOutcome::Stopped { reason, .. } => ("stopped", Some(describe_stop(reason))),
        RunOutcome::Paused { .. } => ("paused", None),
    };
    Ok(ContinueReport {
        outcome: name.into(),
        checkpoint: cp.id.0,
        branch: cp.branch.0,
        stopped,
        path: run_path(record, Some(cp.id))?,
    })
}

/// Replays the run from `from` on a new branch. With `LlmChoice::Replay` every recorded LLM answer and tuning
/// result is reused (no GPU, no LLM); otherwise they are asked anew. Stored breakpoints apply.
pub async fn replay<B: GraphBinding>(
    binding: &B,
    record: &RunRecord,
    setup: &Setup,
    from: CheckpointId,
    step_limit: u64,
) -> Result<ContinueReport, RunsError> {
    let exec = executor(binding, record, record.store(), setup)?;
    let opts = RunOptions {
        effects: setup.llm.replay_mode(),
        step_limit,
        ..RunOptions::default()
    };
    let out = exec
        .replay(record.graph_run(), from, opts)
        .await
        .map_err(|e| RunsError::graph(record.graph_run(), e))?;
    continue_report(record, &out)
}

/// Continues the run from its newest checkpoint (after a breakpoint, a fork or a crash), stepping over the
/// breakpoint it stopped at.
pub async fn continue_run<B: GraphBinding>(
    binding: &B,
    record: &RunRecord,
    setup: &Setup,
    step_limit: u64,
) -> Result<ContinueReport, RunsError> {
    let exec = executor(binding, record, record.store(), setup)?;
    let opts = RunOptions {
        effects: setup.llm.replay_mode(),
        step_limit,
        ..RunOptions::default()
    };
    let out = exec
        .resume(record.graph_run(), opts)
        .await
        .map_err(|e| RunsError::graph(record.graph_run(), e))?;
    continue_report(record, &out)
}

/// One edit of a fork: a field (or a path inside one, `best.kernel.code`) and its new value.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldSet {
    pub path: String,
    pub value: Value,
}

impl FieldSet {
    /// `field=value`: the value is JSON when it parses as JSON, else a string.
    pub fn parse(spec: &str) -> Result<Self, RunsError> {
        let (path, value) = spec.split_once('=').ok_or_else(|| RunsError::BadSetting {
            spec: spec.to_string(),
            reason: "expected FIELD=VALUE".into(),
        })?;
        let value =
            serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()));
        Ok(Self {
            path: path.trim().to_string(),
            value,
        })
    }

    /// `field=FILE`: the file's text as a string (a `.json` file is read as JSON).
    pub fn from_file(spec: &str) -> Result<Self, RunsError> {
        let (path, file) = spec.split_once('=').ok_or_else(|| RunsError::BadSetting {
            spec: spec.to_string(),
            reason: "expected FIELD=FILE".into(),
        })?;
        let text = std::fs::read_to_string(file).map_err(|e| RunsError::io("reading", file, e))?;
        let value = if file.ends_with(".json") {
            serde_json::from_str(&text).map_err(|e| RunsError::BadJson {
                path: PathBuf::from(file),
                reason: e.to_string(),
            })?
        } else {
            Value::String(text)
        };
        Ok(Self {
            path: path.trim().to_string(),
            value,
        })
    }

    fn apply(&self, state: &mut Value) -> Result<(), RunsError> {
        let bad = |reason: String| RunsError::BadSetting {
            spec: self.path.clone(),
            reason,
        };
        let mut slot = state;
        for part in self.path.split('.') {
            let known = match &*slot {
                Value::Object(m) => m.keys().cloned().collect::<Vec<_>>().join(", "),
                Value::Array(a) => format!("indices 0..{}", a.len()),
                _ => String::new(),
            };
            slot = match slot {
                Value::Object(m) => m.get_mut(part),
                Value::Array(a) => part.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
                _ => None,
            }
            .ok_or_else(|| bad(format!("no `{part}` here (there is: {known})")))?;
        }
        *slot = self.value.clone();
        Ok(())
    }
}

/// What `kt fork` made.
#[derive(Debug, Clone, Serialize)]
pub struct ForkReport {
    pub from: u64,
    pub checkpoint: u64,
    pub branch: u32,
    pub changed: Vec<crate::field_diff::FieldChange>,
}

/// Copies checkpoint `at` to a new branch with `sets` applied (checked against the state type first), without
/// running anything; `kt resume` / [`continue_run`] then continues from it.
pub fn fork<B: GraphBinding>(
    binding: &B,
    record: &RunRecord,
    setup: &Setup,
    at: CheckpointId,
    sets: &[FieldSet],
) -> Result<ForkReport, RunsError> {
    let exec = executor(binding, record, record.store(), setup)?;
    let run = record.graph_run().clone();
    let state = exec
        .state_at(&run, at)
        .map_err(|e| RunsError::graph(&run, e))?;
    let mut json = serde_json::to_value(&state)
        .map_err(|e| RunsError::Usage(format!("state does not serialize: {e}")))?;
    for set in sets {
        set.apply(&mut json)?;
    }
    let edited: B::State = serde_json::from_value(json).map_err(|e| RunsError::BadSetting {
        spec: sets
            .iter()
            .map(|s| s.path.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        reason: format!("the edited state is not valid: {e}"),
    })?;
    let id = exec
        .fork(&run, at, move |s| *s = edited)
        .map_err(|e| RunsError::graph(&run, e))?;
    let cp = record.checkpoint(id)?;
    Ok(ForkReport {
        from: at.0,
        checkpoint: id.0,
        branch: cp.branch.0,
        changed: crate::inspect::diff(record, at, id)?,
    })
}

/// The run's graph as mermaid or DOT, with the path to `highlight_to` (a checkpoint) highlighted.
pub fn export<B: GraphBinding>(
    binding: &B,
    record: &RunRecord,
    setup: &Setup,
    format: GraphFormat,
    highlight_to: Option<CheckpointId>,
) -> Result<String, RunsError> {
    let exec = executor(binding, record, record.store(), setup)?;
    let highlight = match highlight_to {
        Some(cp) => Some(
            exec.path(record.graph_run(), cp)
                .map_err(|e| RunsError::graph(record.graph_run(), e))?,
        ),
        None => None,
    };
    let opts = kt_graph::ExportOptions { highlight };
    Ok(match format {
        GraphFormat::Mermaid => exec.graph().to_mermaid(&opts),
        GraphFormat::Dot => exec.graph().to_dot(&opts),
    })
}

/// A diagram format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    Mermaid,
    Dot,
}

/// Node names of the run's graph as the binding builds it.
pub fn graph_nodes<B: GraphBinding>(
    binding: &B,
    record: &RunRecord,
    setup: &Setup,
) -> Result<Vec<String>, RunsError> {
    let graph = binding.build(record.dir(), setup)?;
    Ok(graph.node_names().iter().map(|s| s.to_string()).collect())
}

/// Node names a breakpoint may name: the run's Stage 3 graph's when it can be rebuilt, else those its history
/// mentions (other graphs, or a strategy that changed since).
pub fn breakpoint_nodes(record: &RunRecord) -> Result<Vec<String>, RunsError> {
    if record.graph_run().as_str().ends_with("stage3") {
        let setup = Setup::new(
            crate::capture::LlmChoice::Replay,
            session_dir(record, "break"),
        );
        if let Ok(names) = graph_nodes(&crate::stage3::Stage3Binding::default(), record, &setup) {
            return Ok(names);
        }
    }
    crate::inspect::nodes_seen(record)
}
