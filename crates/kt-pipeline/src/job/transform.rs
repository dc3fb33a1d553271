//! The job's entry points: a new run through Stages 1, 2 and 3, and the continuation of one that stopped.

use std::time::Instant;

use super::earlier::{
    earlier_wall, graph_span_s, open_store, resumed_branch, stage3_run_id, stages_1_2_finished,
    stopped_in_stages_1_2,
};
use super::finish::{finish, stopped_for_gpu};
use super::outcome::{Stopped, TransformOutcome};
use super::result::WallTimes;
use super::settings::Stage3Settings;
use super::stage3_run::run_stage3;
use crate::error::PipelineError;
use crate::kernel_info::KernelInfo;
use crate::prepare::{KernelInput, Stage1Source, TestgenSettings, prepare};
use crate::strategy::snapshot_strategy;
use kt_record::{RunDir, RunStatus};

/// Runs Stages 1, 2 and 3 into `run`.
pub async fn transform(
    run: &RunDir,
    source: &KernelInput,
    stage1: Stage1Source,
    testgen: TestgenSettings,
    stage3: Stage3Settings,
) -> Result<TransformOutcome, PipelineError> {
    all_stages(run, source, stage1, testgen, stage3, WallTimes::default()).await
}

/// Stages 1, 2 and 3 after `earlier` seconds spent in earlier attempts of the run: the recorded times are
/// active time, summed over attempts, never the idle time between them.
async fn all_stages(
    run: &RunDir,
    source: &KernelInput,
    stage1: Stage1Source,
    testgen: TestgenSettings,
    stage3: Stage3Settings,
    earlier: WallTimes,
) -> Result<TransformOutcome, PipelineError> {
    let started = Instant::now();
    // The run keeps the strategy it was made with: resume, replay and debug read this snapshot.
    snapshot_strategy(run, &stage3.strategy, &stage3.prompts)?;
    let mut wall = earlier;
    // Stages 1-2 take no cancel token of their own: dropping their future at Ctrl-C abandons the step in
    // flight (an LLM call, a generator), and their graphs keep every committed checkpoint for `kt resume`.
    let cancel = stage3.cancel.clone();
    let prepared = tokio::select! {
        biased;
        () = cancel.cancelled() => {
            let stopped = Stopped {
                checkpoint: None,
                at: "during stages 1-2".into(),
                cancelled: true,
                waiting: None,
            };
            return stopped_in_stages_1_2(run, started, earlier, stopped);
        }
        prepared = prepare(run, source, stage1, testgen) => prepared,
    };
    let prepared = match prepared {
        Ok(p) => p,
        Err(PipelineError::AwaitingAnswer(waiting)) => {
            let stopped = Stopped {
                checkpoint: None,
                at: "in stages 1-2".into(),
                cancelled: false,
                waiting: Some(waiting),
            };
            return stopped_in_stages_1_2(run, started, earlier, stopped);
        }
        Err(e) => {
            wall.stage1 += started.elapsed().as_secs_f64();
            wall.total = wall.stage1 + wall.stage2 + wall.stage3;
            if let Some(reason) = e.gpu_unavailable() {
                // Stage 2 checked its program here and kept no data: no empty tests directory either
                let _ = std::fs::remove_dir(run.tests_dir());
                return Err(stopped_for_gpu(run, wall, reason));
            }
            return finish(run, &run.results(0), None, None, wall, Err(e));
        }
    };
    // prepare() runs both stages; their checkpoints say how its time split.
    let elapsed = started.elapsed().as_secs_f64();
    let store = open_store(run)?;
    let id = run.run_id();
    let stage1_now = graph_span_s(store.as_ref(), &format!("{id}/stage1"))
        .unwrap_or(0.0)
        .min(elapsed);
    wall.stage1 += stage1_now;
    wall.stage2 += elapsed - stage1_now;
    let stage1 = prepared.understood.stage1;
    run_stage3(
        run,
        &source.text,
        &stage1.kernel,
        &stage1.info,
        source.sidecar.as_ref().map(|s| s.path.clone()),
        stage3,
        wall,
        run.results(0),
    )
    .await
}

/// Continues a run from wherever it stopped: what is left of Stages 1 and 2 first when they did not finish
/// (their graphs resume from their checkpoints, reusing recorded answers), then Stage 3 as [`resume`] does.
/// `source` is the run's kernel (its `input.cu`, or the original file when it still exists, for its sidecar).
pub async fn resume_run(
    run: &RunDir,
    source: &KernelInput,
    stage1: Stage1Source,
    testgen: TestgenSettings,
    stage3: Stage3Settings,
) -> Result<TransformOutcome, PipelineError> {
    if stages_1_2_finished(run) {
        return resume(run, stage3).await;
    }
    run.set_status(RunStatus::Running)?;
    let earlier = earlier_wall(run, &run.results(0));
    all_stages(run, source, stage1, testgen, stage3, earlier).await
}

/// Continues a run's Stage 3 from its last checkpoint (Stages 1 and 2 must have finished).
pub async fn resume(
    run: &RunDir,
    stage3: Stage3Settings,
) -> Result<TransformOutcome, PipelineError> {
    let source = run.kernel_code()?;
    let info = KernelInfo::load(run).map_err(|e| PipelineError::Graph {
        stage: "stage 1",
        message: format!(
            "this run has no finished Stage 1 ({e}); start a new run with `kt transform`"
        ),
    })?;
    if !run.tests_dir().is_dir() {
        return Err(PipelineError::Graph {
            stage: "stage 2",
            message:
                "this run has no tests: Stage 2 did not finish; start a new run with `kt transform`"
                    .into(),
        });
    }
    let parsed = kt_cuda::parse(&source)?;
    let kernel = parsed.select_kernel(Some(&info.name))?.clone();
    let meta = run.read_meta()?;
    let sidecar = kt_cuda::Sidecar::path_for(std::path::Path::new(&meta.kernel_file));
    let sidecar = sidecar.is_file().then_some(sidecar);
    let branch = resumed_branch(open_store(run)?.as_ref(), &stage3_run_id(run));
    let out = run.results(branch);
    // run.json describes the main branch: continuing a side branch leaves it as it is.
    if out.branch().is_none() {
        run.set_status(RunStatus::Running)?;
    }
    let wall = earlier_wall(run, &out);
    run_stage3(run, &source, &kernel, &info, sidecar, stage3, wall, out).await
}
