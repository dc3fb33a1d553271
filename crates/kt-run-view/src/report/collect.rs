//! Gathering what the report shows from a run directory.

use std::path::Path;

use kt_graph::{CheckpointHead, CheckpointId};
use kt_record::{
    GraphOutline, KernelRecord, LlmCall, ProfileRecord, RunResult, RunRoofline, RunStatus,
};
use serde::Serialize;
use serde_json::Value;

use super::chart::StepPoint;
use super::graph_svg::{GraphShape, parse_dot};
use crate::catalog::{RunSummary, summarize};
use crate::error::RunsError;
use crate::field_diff::unified;
use crate::inspect::{KernelVerdict, verdicts};
use crate::record::{Fields, RunRecord};
use crate::steps::{PathStep, RecentPath, recent_path};

/// One recorded LLM call.
#[derive(Debug, Clone, Serialize)]
pub struct LlmExchange {
    pub node: String,
    pub time: String,
    pub prompt: String,
    pub answer: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// How long the call took, retries included.
    pub elapsed_ms: u64,
    pub error: Option<String>,
}

/// One file of `kernels/`, with its diff against the previous one.
#[derive(Debug, Clone, Serialize)]
pub struct KernelFile {
    pub name: String,
    pub code: String,
    /// The kernel's record beside it (`NNN-<step>.json`: verdict, tuning summary), when there is one.
    pub meta: Option<KernelRecord>,
    /// Unified diff against the previous file (none for the first).
    pub diff: Option<String>,
}

/// One measured candidate.
#[derive(Debug, Clone, Serialize)]
pub struct TuningRow {
    pub round: u64,
    pub index: u64,
    pub verdict: String,
    pub time_ms: Option<f64>,
    pub noise_ms: Option<f64>,
    pub best_params: String,
    pub configs_tried: Option<u64>,
    pub configs_failed: Option<u64>,
    pub detail: String,
}

/// Everything the page shows.
#[derive(Debug, Clone, Serialize)]
pub struct ReportInputs {
    pub summary: RunSummary,
    pub result: Option<RunResult>,
    pub graph_run: String,
    /// Nodes and edges to draw; from the run's graph (DOT) when it could be rebuilt, else from the path.
    pub graph: GraphShape,
    /// The path to the head, step by step: all of it, or its last steps ([`ReportInputs::collect_recent`]).
    pub path: Vec<PathStep>,
    /// How many checkpoints the whole path has.
    pub steps_total: usize,
    pub verdicts: Vec<KernelVerdict>,
    pub llm: Vec<LlmExchange>,
    pub kernels: Vec<KernelFile>,
    pub tuning: Vec<TuningRow>,
    pub points: Vec<StepPoint>,
    pub naive_time_ms: Option<f64>,
    /// Nsight Compute profiles of the naive kernel and each accepted step's kernel.
    pub profiles: Vec<ProfileRecord>,
    /// The naive and the best kernel on the device's roofline.
    pub roofline: Option<RunRoofline>,
}

impl ReportInputs {
    /// Reads the run; `graph_dot` is the run's graph as DOT when the caller drew it (else the shape the run saved
    /// is drawn, see [`path_graph`]): the path to
    /// the head is marked on it here (a highlight the DOT carries is kept).
    pub fn collect(record: &RunRecord, graph_dot: Option<&str>) -> Result<Self, RunsError> {
        Self::collect_recent(record, graph_dot, usize::MAX)
    }

    /// As [`ReportInputs::collect`], with only the last `keep` steps of the path in full: a long run's
    /// page then reads the states of those steps, not of every step.
    pub fn collect_recent(
        record: &RunRecord,
        graph_dot: Option<&str>,
        keep: usize,
    ) -> Result<Self, RunsError> {
        let head = record.head()?;
        let PathGraph { graph, mut recent } = path_graph(record, head, graph_dot, keep)?;
        let fields = match recent.state.take() {
            Some(state) => state,
            None => record.fields_at(head)?,
        };
        let mut inputs = Self::from_state(record, &fields)?;
        inputs.graph = graph;
        // END is the run's end: a stage the run went on from (or stopped in) did not reach it
        if !inputs.summary.status.is_some_and(RunStatus::is_finished) || !is_stage3(record) {
            inputs.graph.end_not_reached();
        }
        inputs.steps_total = recent.lineage.len();
        inputs.path = recent.steps;
        Ok(inputs)
    }

    /// What the state at the head and the run's files give (LLM calls, kernels, verdicts, tuning, the
    /// speedup points, profiles and roofline), without the path: the graph is empty and no step is listed.
    /// For a page that shows the path first ([`path_graph`]) and these after, without reading every
    /// checkpoint's head again.
    pub fn collect_state(record: &RunRecord) -> Result<Self, RunsError> {
        Self::from_state(record, &record.fields_at(record.head()?)?)
    }

    fn from_state(record: &RunRecord, fields: &Fields) -> Result<Self, RunsError> {
        let naive_time_ms = fields
            .get("reference")
            .and_then(|r| r.get("time_ms"))
            .and_then(Value::as_f64);
        let verdicts = verdicts(fields.get("history"));
        Ok(Self {
            summary: summarize(record.root()),
            result: RunResult::read(&record.dir().result_json()).ok().flatten(),
            graph_run: record.graph_run().to_string(),
            graph: GraphShape::default(),
            points: points(fields.get("history"), naive_time_ms),
            tuning: tuning_rows(fields.get("candidates")),
            verdicts,
            llm: llm_exchanges(&record.dir().llm_jsonl()),
            kernels: kernel_files(&record.dir().kernels_dir())?,
            steps_total: 0,
            path: Vec::new(),
            naive_time_ms,
            profiles: crate::inspect::profiles(fields.get("profiles")),
            roofline: super::roofline::roofline_of(fields),
        })
    }
}

impl ReportInputs {
    /// The speedup-per-step chart (`<svg id="speedup-svg">`).
    pub fn speedup_svg(&self) -> String {
        super::chart::speedup_svg(&self.points)
    }
}

/// The path to a checkpoint drawn on the run's graph: what a page shows first, read without the state at
/// the head unless its last steps are described ([`RecentPath::state`] then has it).
#[derive(Debug, Clone)]
pub struct PathGraph {
    /// The run's graph (from `graph_dot` when given, else from the path) with the path marked on it.
    pub graph: GraphShape,
    pub recent: RecentPath,
}

/// The path to `to` with its last `keep` steps in full, marked on the run's graph: `graph_dot` when the caller
/// drew it, else the shape the run saved (`graph.json`); a Stage 3 run recorded before shapes were saved draws
/// its path alone and says so. Nothing is rebuilt.
pub fn path_graph(
    record: &RunRecord,
    to: CheckpointId,
    graph_dot: Option<&str>,
    keep: usize,
) -> Result<PathGraph, RunsError> {
    let recent = recent_path(record, Some(to), keep)?;
    let saved = || {
        is_stage3(record)
            .then(|| GraphOutline::read(&record.dir().graph_json()))
            .flatten()
            .map(|o| GraphShape::from_outline(&o))
    };
    let mut graph = match graph_dot.map(parse_dot).or_else(saved) {
        Some(mut graph) => {
            mark_path(&mut graph, &recent.lineage);
            graph
        }
        None => {
            let mut graph = GraphShape::from_lineage(&recent.lineage, &recent.ran);
            if is_stage3(record) {
                graph.note = Some(UNSAVED_GRAPH.into());
            }
            graph
        }
    };
    // Draw visited nodes in the order the run first reached them (DOT lists them in declaration order).
    let first_visit = |n: &String| {
        recent
            .ran
            .iter()
            .position(|nodes| nodes.iter().any(|r| &r.node == n))
            .unwrap_or(usize::MAX)
    };
    graph.visited.sort_by_key(first_visit);
    Ok(PathGraph { graph, recent })
}

/// What a page says under a Stage 3 graph drawn from the path alone.
const UNSAVED_GRAPH: &str = "This run was recorded before kt saved its graph's shape (graph.json): the drawing \
                             shows only the nodes and edges its checkpoints record.";

/// The record is of the run's Stage 3 graph (`RUN/stage3`).
pub fn is_stage3(record: &RunRecord) -> bool {
    let run = record.graph_run().as_str();
    run == crate::record::DEFAULT_GRAPH
        || run.ends_with(&format!("/{}", crate::record::DEFAULT_GRAPH))
}

/// Marks on `graph` the nodes `lineage` ran and the graph's edges it took.
fn mark_path(graph: &mut GraphShape, lineage: &[CheckpointHead]) {
    let line: Vec<&CheckpointHead> = lineage.iter().collect();
    let edges = &graph.edges;
    let path = kt_graph::path_along(&line, |a, b| {
        edges.iter().any(|(from, to, _)| from == a && to == b)
    });
    for n in path.nodes {
        if !graph.visited.contains(&n) {
            graph.visited.push(n);
        }
    }
    for e in path.edges {
        if !graph.taken.contains(&e) {
            graph.taken.push(e);
        }
    }
}

fn llm_exchanges(path: &Path) -> Vec<LlmExchange> {
    let Ok(records) = LlmCall::read_all(path) else {
        return Vec::new();
    };
    records
        .into_iter()
        .map(|r| LlmExchange {
            node: r.node,
            time: r.time,
            prompt: r
                .messages
                .iter()
                .map(|m| format!("[{}]\n{}", m.role, m.content))
                .collect::<Vec<_>>()
                .join("\n\n"),
            answer: r.answer.unwrap_or_default(),
            tokens_in: r.usage.as_ref().map_or(0, |u| u.input_tokens),
            tokens_out: r.usage.as_ref().map_or(0, |u| u.output_tokens),
            elapsed_ms: r.elapsed_ms,
            error: r.error,
        })
        .collect()
}

fn kernel_files(dir: &Path) -> Result<Vec<KernelFile>, RunsError> {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(".cu"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(RunsError::io("listing", dir, e)),
    };
    names.sort();
    let mut out: Vec<KernelFile> = Vec::new();
    for name in names {
        let path = dir.join(&name);
        let code =
            std::fs::read_to_string(&path).map_err(|e| RunsError::io("reading", &path, e))?;
        let meta = KernelRecord::read(&path.with_extension("json"));
        let diff = out
            .last()
            .map(|prev: &KernelFile| kernel_diff(&prev.code, &code, &prev.name, &name));
        out.push(KernelFile {
            name,
            code,
            meta,
            diff,
        });
    }
    Ok(out)
}

/// Unified diff of two kernel files, headed with their names.
fn kernel_diff(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    unified("kernel", old, new)
        .replacen("--- a/kernel", &format!("--- {old_name}"), 1)
        .replacen("+++ b/kernel", &format!("+++ {new_name}"), 1)
}

fn tuning_rows(candidates: Option<&Value>) -> Vec<TuningRow> {
    let Some(Value::Array(items)) = candidates else {
        return Vec::new();
    };
    items
        .iter()
        .map(|c| {
            let o = c.get("outcome");
            let num = |k: &str| o.and_then(|o| o.get(k)).and_then(Value::as_f64);
            let int = |k: &str| o.and_then(|o| o.get(k)).and_then(Value::as_u64);
            let verdict = o
                .and_then(|o| o.get("verdict"))
                .and_then(Value::as_str)
                .map(|v| v.replace('_', " "))
                .unwrap_or_else(|| "not measured".into());
            let detail = c
                .get("failure")
                .and_then(Value::as_str)
                .or_else(|| o.and_then(|o| o.get("detail")).and_then(Value::as_str))
                .unwrap_or_default()
                .to_string();
            let best_params = o
                .and_then(|o| o.get("best_params"))
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            TuningRow {
                round: c.get("round").and_then(Value::as_u64).unwrap_or(0),
                index: c.get("index").and_then(Value::as_u64).unwrap_or(0),
                verdict,
                time_ms: num("time_ms"),
                noise_ms: num("noise_ms"),
                best_params,
                configs_tried: int("configs_tried"),
                configs_failed: int("configs_failed"),
                detail,
            }
        })
        .collect()
}

fn points(history: Option<&Value>, naive: Option<f64>) -> Vec<StepPoint> {
    let (Some(Value::Array(items)), Some(naive)) = (history, naive) else {
        return Vec::new();
    };
    let mut best = 1.0f64;
    items
        .iter()
        .map(|i| {
            let status = i
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("")
                .replace('_', " ");
            let step_speedup = i
                .get("time_ms")
                .and_then(Value::as_f64)
                .filter(|t| *t > 0.0)
                .map(|t| naive / t);
            if status == "accepted"
                && let Some(s) = step_speedup
            {
                best = best.max(s);
            }
            StepPoint {
                label: i
                    .get("step")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string(),
                status,
                step_speedup,
                best_speedup: best,
            }
        })
        .collect()
}
