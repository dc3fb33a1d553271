//! [`RunRecord`]: a run directory's graph history read straight from its `run.sqlite`, as JSON.
//!
//! Reading needs neither the graph nor the state type: checkpoints are per-field JSON, so history, state,
//! diffs, the path a run took and breakpoints work on any run, even one whose strategy has changed since (or
//! one written by a newer kt). Only running something (a node, a replay) needs the graph; see
//! [`crate::binding`].

use std::path::Path;
use std::sync::Arc;

use kt_graph::{
    BranchId, Checkpoint, CheckpointHead, CheckpointId, CheckpointStore, FieldOp, GraphError,
    GraphRunMeta, RunId, SqliteStore, StateRecord, fold_ops, lineage_of,
};
use kt_record::RunDir;
use serde_json::{Map, Value};

use crate::error::RunsError;

/// The state of a checkpoint, field by field.
pub type Fields = Map<String, Value>;

/// The graph history of one run directory.
#[derive(Clone)]
pub struct RunRecord {
    dir: RunDir,
    store: Arc<dyn CheckpointStore>,
    graph_run: RunId,
}

impl std::fmt::Debug for RunRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunRecord")
            .field("dir", &self.dir.root())
            .field("graph_run", &self.graph_run)
            .finish()
    }
}

/// Which graph of a run directory to read when it holds several (Stage 1, 2 and 3 each record one).
pub const DEFAULT_GRAPH: &str = "stage3";

impl RunRecord {
    /// Opens the Stage 3 graph of `dir` (or the run's only graph when it has no Stage 3 yet).
    pub fn open(dir: RunDir) -> Result<Self, RunsError> {
        Self::open_graph(dir, None)
    }

    /// Opens graph `graph` (`stage1`, `stage2`, `stage3`, or a full graph run id) of `dir`.
    pub fn open_graph(dir: RunDir, graph: Option<&str>) -> Result<Self, RunsError> {
        let path = dir.sqlite();
        if !path.is_file() {
            return Err(RunsError::NoHistory {
                run: dir.root().to_path_buf(),
                detail: ": the run stopped before its first graph step".into(),
            });
        }
        // Opening would create an empty database for a missing file; checked above.
        let store = SqliteStore::open(&path).map_err(|e| RunsError::Graph {
            run: dir.run_id(),
            source: Box::new(e),
        })?;
        let runs = store.list_runs().map_err(|e| RunsError::Graph {
            run: dir.run_id(),
            source: Box::new(e),
        })?;
        let wanted = graph.unwrap_or(DEFAULT_GRAPH);
        let pick = runs
            .iter()
            .find(|r| r.as_str() == wanted || r.as_str().ends_with(&format!("/{wanted}")))
            .or_else(|| if graph.is_none() { runs.last() } else { None })
            .cloned();
        let Some(graph_run) = pick else {
            return Err(missing_graph(&dir, wanted, &runs));
        };
        Ok(Self {
            dir,
            store: Arc::new(store),
            graph_run,
        })
    }

    /// A record over an already opened store (tests, and callers that share one store with an executor).
    pub fn with_store(dir: RunDir, store: Arc<dyn CheckpointStore>, graph_run: RunId) -> Self {
        Self {
            dir,
            store,
            graph_run,
        }
    }

    pub fn dir(&self) -> &RunDir {
        &self.dir
    }
    pub fn root(&self) -> &Path {
        self.dir.root()
    }
    pub fn store(&self) -> Arc<dyn CheckpointStore> {
        self.store.clone()
    }
    /// The graph run's id inside `run.sqlite` (e.g. `<run-id>/stage3`).
    pub fn graph_run(&self) -> &RunId {
        &self.graph_run
    }

    fn graph_err(&self, e: kt_graph::GraphError) -> RunsError {
        RunsError::graph(&self.graph_run, e)
    }

    /// Breakpoints, branches and where the run stopped.
    pub fn meta(&self) -> Result<GraphRunMeta, RunsError> {
        self.store
            .get_run(&self.graph_run)
            .map_err(|e| self.graph_err(e))?
            .ok_or_else(|| {
                self.graph_err(kt_graph::GraphError::RunNotFound {
                    run: self.graph_run.clone(),
                })
            })
    }

    /// Every checkpoint, all branches, in creation order.
    pub fn checkpoints(&self) -> Result<Vec<Checkpoint>, RunsError> {
        self.store
            .list_checkpoints(&self.graph_run)
            .map_err(|e| self.graph_err(e))
    }

    /// The newest `limit` checkpoints older than `before` (the newest of all when `None`), in creation
    /// order: one page of a long history.
    pub fn checkpoints_before(
        &self,
        before: Option<CheckpointId>,
        limit: usize,
    ) -> Result<Vec<Checkpoint>, RunsError> {
        self.store
            .list_checkpoints_before(&self.graph_run, before, limit)
            .map_err(|e| self.graph_err(e))
    }

    /// How many checkpoints the run has, all branches.
    pub fn count_checkpoints(&self) -> Result<u64, RunsError> {
        self.store
            .count_checkpoints(&self.graph_run)
            .map_err(|e| self.graph_err(e))
    }

    pub fn checkpoint(&self, id: CheckpointId) -> Result<Checkpoint, RunsError> {
        self.store
            .get_checkpoint(&self.graph_run, id)
            .map_err(|e| self.graph_err(e))?
            .ok_or_else(|| RunsError::NoCheckpoint {
                run: self.graph_run.to_string(),
                checkpoint: id.0,
            })
    }

    /// The most recently written checkpoint (any branch): where `resume` continues.
    pub fn latest(&self) -> Result<CheckpointId, RunsError> {
        self.store
            .latest_checkpoint(&self.graph_run)
            .map_err(|e| self.graph_err(e))?
            .ok_or_else(|| RunsError::NoCheckpoint {
                run: self.graph_run.to_string(),
                checkpoint: 0,
            })
    }

    /// Every checkpoint without its state, all branches, in creation order: for timelines and paths.
    pub fn heads(&self) -> Result<Vec<CheckpointHead>, RunsError> {
        self.store
            .list_checkpoint_heads(&self.graph_run)
            .map_err(|e| self.graph_err(e))
    }

    /// The last checkpoint of branch 0: the run as it was recorded, whatever was replayed or forked since.
    pub fn head(&self) -> Result<CheckpointId, RunsError> {
        self.store
            .latest_checkpoint_on_branch(&self.graph_run, BranchId(0))
            .map_err(|e| self.graph_err(e))?
            .ok_or_else(|| RunsError::NoCheckpoint {
                run: self.graph_run.to_string(),
                checkpoint: 0,
            })
    }

    /// `7`, `#7`, `input` (checkpoint 0), `latest` (newest, any branch) or `head` (newest of branch 0).
    pub fn resolve(&self, spec: &str) -> Result<CheckpointId, RunsError> {
        let s = spec.trim();
        match s {
            "input" => Ok(CheckpointId(0)),
            "latest" => self.latest(),
            "head" => self.head(),
            _ => {
                let n: u64 =
                    s.trim_start_matches('#')
                        .parse()
                        .map_err(|_| RunsError::BadCheckpoint {
                            spec: spec.to_string(),
                        })?;
                self.checkpoint(CheckpointId(n)).map(|c| c.id)
            }
        }
    }

    /// The heads from the input to `to`, following parents (across the branches it was copied from).
    pub fn lineage(&self, to: CheckpointId) -> Result<Vec<CheckpointHead>, RunsError> {
        let heads = self.heads()?;
        let chain = lineage_of(&heads, to).map_err(|missing| RunsError::NoCheckpoint {
            run: self.graph_run.to_string(),
            checkpoint: missing.0,
        })?;
        Ok(chain.into_iter().cloned().collect())
    }

    /// The state at `id` as JSON fields: the nearest full snapshot, then the deltas after it.
    pub fn fields_at(&self, id: CheckpointId) -> Result<Fields, RunsError> {
        let mut deltas = Vec::new();
        let mut cur = self.checkpoint(id)?;
        let mut fields = loop {
            match cur.state {
                StateRecord::Full(map) => break map,
                StateRecord::Delta(ops) => {
                    deltas.push((cur.id, ops));
                    let parent = cur.parent.ok_or_else(|| RunsError::NoCheckpoint {
                        run: self.graph_run.to_string(),
                        checkpoint: cur.id.0,
                    })?;
                    cur = self.checkpoint(parent)?;
                }
            }
        };
        for (checkpoint, ops) in deltas.iter().rev() {
            self.apply_ops(&mut fields, *checkpoint, ops)?;
        }
        Ok(fields)
    }

    /// Applies checkpoint `checkpoint`'s field operations with the engine's own folding rule, so that a state
    /// shown here is the state the engine would resume from.
    pub(crate) fn apply_ops(
        &self,
        fields: &mut Fields,
        checkpoint: CheckpointId,
        ops: &[FieldOp],
    ) -> Result<(), RunsError> {
        fold_ops(fields, ops).map_err(|reason| RunsError::Graph {
            run: self.graph_run.to_string(),
            source: Box::new(GraphError::CorruptCheckpoint {
                run: self.graph_run.clone(),
                checkpoint,
                reason,
            }),
        })
    }
}

/// Why graph `wanted` is not in the run: the run has not reached it yet (name the graph it has, and the flag
/// that reads it), or its store holds no graph at all.
fn missing_graph(dir: &RunDir, wanted: &str, runs: &[RunId]) -> RunsError {
    let short = |r: &RunId| {
        let s = r.as_str();
        s.rsplit('/').next().unwrap_or(s).to_string()
    };
    match runs.last() {
        Some(last) => RunsError::NoGraph {
            run: dir.root().to_path_buf(),
            wanted: wanted.to_string(),
            has: runs.iter().map(short).collect::<Vec<_>>().join(", "),
            newest: short(last),
        },
        None => RunsError::NoHistory {
            run: dir.root().to_path_buf(),
            detail: String::new(),
        },
    }
}
