//! What earlier parts of a run left in its directory: the Stage 3 graph's id and store, the wall times
//! already spent, the branch a resume continues, whether Stages 1 and 2 finished.

use std::sync::Arc;
use std::time::Instant;

use kt_graph::{CheckpointStore, RunId, SqliteStore};

use super::outcome::{Stopped, TransformOutcome};
use super::result::{Ending, RunResult, WallTimes, write_result_ending};
use crate::error::PipelineError;
use kt_record::{ResultFiles, RunDir, RunStatus};

pub(super) fn stage3_run_id(run: &RunDir) -> RunId {
    RunId::new(format!("{}/stage3", run.run_id()))
}

pub(super) fn open_store(run: &RunDir) -> Result<Arc<dyn CheckpointStore>, PipelineError> {
    let store = SqliteStore::open(run.sqlite()).map_err(|e| PipelineError::Graph {
        stage: "stage 3",
        message: e.to_string(),
    })?;
    Ok(Arc::new(store))
}

/// Seconds from a graph run's first checkpoint to its last, when the store has it.
pub(super) fn graph_span_s(store: &dyn CheckpointStore, run: &str) -> Option<f64> {
    let checkpoints = store.list_checkpoints(&RunId::new(run)).ok()?;
    let first = checkpoints.iter().map(|c| c.created_ms).min()?;
    let last = checkpoints.iter().map(|c| c.created_ms).max()?;
    Some((last - first) as f64 / 1000.0)
}

/// The wall times recorded by an earlier part of this line of the run (a resumed run adds to them). A side
/// branch without results yet starts from the main branch's Stages 1-2.
pub(super) fn earlier_wall(run: &RunDir, out: &ResultFiles) -> WallTimes {
    let read =
        |path: std::path::PathBuf| RunResult::read(&path).ok().flatten().map(|r| r.wall_time_s);
    if let Some(w) = read(out.result_json()) {
        return w;
    }
    let main = read(run.result_json()).unwrap_or_default();
    WallTimes {
        stage3: 0.0,
        total: main.stage1 + main.stage2,
        ..main
    }
}

/// The branch `kt resume` continues: that of the Stage 3 graph's latest checkpoint (0 when there is none).
pub(super) fn resumed_branch(store: &dyn CheckpointStore, id: &RunId) -> u32 {
    store
        .latest_checkpoint(id)
        .ok()
        .flatten()
        .and_then(|cp| store.get_checkpoint(id, cp).ok().flatten())
        .map_or(0, |cp| cp.branch.0)
}

/// Whether Stages 1 and 2 of `run` finished: its `kernel_info.json` and `tests/` exist and its Stage 2 graph,
/// when it has one (runs assembled by hand have none), reached its end. When not, [`resume_run`] runs what is
/// left of them before Stage 3.
pub fn stages_1_2_finished(run: &RunDir) -> bool {
    if !run.kernel_info_json().is_file() || !run.tests_dir().is_dir() {
        return false;
    }
    let Ok(store) = open_store(run) else {
        return false;
    };
    let id = RunId::new(format!("{}/stage2", run.run_id()));
    match store.latest_checkpoint(&id) {
        Ok(Some(cp)) => store
            .get_checkpoint(&id, cp)
            .ok()
            .flatten()
            .is_some_and(|cp| cp.is_finished()),
        Ok(None) => true,
        Err(_) => false,
    }
}

/// The result of a run that stopped in Stages 1-2 without failing (Ctrl-C, a manual prompt): interrupted.
pub(super) fn stopped_in_stages_1_2(
    run: &RunDir,
    started: Instant,
    earlier: WallTimes,
    stopped: Stopped,
) -> Result<TransformOutcome, PipelineError> {
    let mut wall = earlier;
    wall.stage1 += started.elapsed().as_secs_f64();
    wall.total = wall.stage1 + wall.stage2 + wall.stage3;
    let out = run.results(0);
    let result = write_result_ending(
        run,
        &out,
        None,
        None,
        RunStatus::Interrupted,
        wall,
        Ending {
            error: Some(stopped.message(run.root())),
            needs_gpu: false,
            waiting: stopped.waiting.clone(),
        },
    )?;
    run.set_status(RunStatus::Interrupted)?;
    Ok(TransformOutcome {
        result,
        state: None,
        stopped: Some(stopped),
        results: out,
    })
}
