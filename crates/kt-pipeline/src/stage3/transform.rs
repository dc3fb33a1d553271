//! The whole `kt transform` job in one run directory: Stages 1 and 2 (through [`crate::prepare`]), then the
//! strategy's graph with checkpoints in the run's `run.sqlite`, then the result files. Whatever happens — a
//! missing GPU, Ctrl-C, an error — the result files say where the run stopped, and `kt resume` continues it
//! from its last checkpoint (recorded LLM answers and tuning results are reused, not paid for again).

use std::sync::Arc;
use std::time::Instant;

use kt_graph::{
    CancelToken, CheckpointStore, Event, Executor, GraphError, RunId, RunOptions, RunOutcome,
    SqliteStore, StopReason,
};
use kt_llm::{LlmClient, StructuredMode};

use super::backend::{BackendError, TuningBackend, TuningProgress};
use super::context::{KernelFacts, Stage3Context};
use super::graph::build_graph;
use super::result::{RunResult, WallTimes, write_result, write_result_waiting};
use super::state::Stage3State;
use super::tunable_code::TunableCode;
use super::tuner_backend::{TunerBackend, TunerBackendConfig};
use crate::error::PipelineError;
use crate::prepare::{KernelInput, Stage1Source, TestgenSettings, prepare};
use crate::run_dir::{ResultFiles, RunDir, RunStatus};
use crate::strategy::Strategy;
use crate::{KernelInfo, PromptLibrary};

/// Receives the graph's events (the live view).
pub type EventSink = Arc<dyn Fn(&Event) + Send + Sync>;

/// Builds the tuning backend once the tests exist. The default is [`TunerBackend`]; tests plug in a fake.
pub type BackendFactory = Arc<dyn Fn(&BackendInputs<'_>) -> Arc<dyn TuningBackend> + Send + Sync>;

/// What a backend needs to know about the run.
#[derive(Debug, Clone, Copy)]
pub struct BackendInputs<'a> {
    pub run: &'a RunDir,
    pub source: &'a str,
    pub kernel: &'a kt_cuda::Kernel,
    pub info: &'a KernelInfo,
    pub original: &'a TunableCode,
    /// The kernel file's sidecar, when there is one (tolerances, FLOPs and bytes for % of peak).
    pub sidecar: Option<&'a kt_cuda::Sidecar>,
}

/// The real backend: kt-tuner on this machine's GPU, brute force over each candidate's space.
pub fn tuner_backend(inputs: &BackendInputs<'_>) -> Arc<dyn TuningBackend> {
    let tolerances = inputs
        .sidecar
        .map(|s| kt_tuner::SuiteInputs::from_sidecar(s).tolerances())
        .unwrap_or_default();
    let settings = inputs.run.read_meta().ok().map(|m| m.settings);
    Arc::new(TunerBackend::new(TunerBackendConfig {
        tests_dir: inputs.run.tests_dir(),
        kernel: inputs.kernel.clone(),
        problem_size: inputs
            .info
            .problem_size
            .iter()
            .map(|d| d.expression.clone())
            .collect(),
        tolerances,
        cache_dir: inputs.run.tuning_dir(),
        flops: inputs.sidecar.map(|s| s.flops.text()),
        bytes: inputs.sidecar.map(|s| s.bytes.text()),
        strategy: kt_tuner::Strategy::BruteForce,
        // Brute force ignores it; it is passed so a randomized strategy here stays reproducible per run.
        seed: settings.as_ref().and_then(|s| s.seed),
        max_evals: Some(400),
        time_limit: Some(std::time::Duration::from_secs(600)),
        original: inputs.original.clone(),
        include_dirs: settings.map(|s| s.include_paths()).unwrap_or_default(),
    }))
}

/// Everything Stage 3 runs with.
#[derive(Clone)]
pub struct Stage3Settings {
    pub strategy: Strategy,
    pub llm: Arc<LlmClient>,
    pub prompts: Arc<PromptLibrary>,
    pub mode: StructuredMode,
    pub backend: BackendFactory,
    pub progress: Arc<dyn TuningProgress>,
    pub events: Option<EventSink>,
    pub cancel: CancelToken,
}

/// How a transform ended.
#[derive(Debug, Clone)]
pub struct TransformOutcome {
    pub result: RunResult,
    pub state: Option<Stage3State>,
    /// Set when the run stopped before its end without failing (a breakpoint, a node's interrupt, the step
    /// limit, Ctrl-C); `kt resume` continues it.
    pub stopped: Option<Stopped>,
    /// Where the result files went (the run's root, or `branches/b<N>/` for a side branch).
    pub results: ResultFiles,
}

/// Where and why a run stopped early. Not an error: the run is saved and resumable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// The checkpoint `kt resume` continues from; None when Stages 1-2 were interrupted before Stage 3 began.
    pub checkpoint: Option<u64>,
    /// `before apply`, `after select`, `at an interrupt of plan`, `at the step limit`, `during stages 1-2`.
    pub at: String,
    /// Ctrl-C (the run's cancel token), as opposed to a stop the run was set up for.
    pub cancelled: bool,
    /// The manual provider's question the run waits for, when that is why it stopped.
    pub waiting: Option<crate::run_dir::WaitingAnswer>,
}

impl Stopped {
    fn of<S>(outcome: &RunOutcome<S>) -> Stopped {
        let at = match outcome {
            RunOutcome::Stopped { reason, .. } => match reason {
                StopReason::BeforeNode(node) => format!("before {node}"),
                StopReason::AfterNode(node) => format!("after {node}"),
                StopReason::Interrupt { node, .. } => format!("at an interrupt of {node}"),
            },
            RunOutcome::Paused { .. } | RunOutcome::Finished { .. } => "at the step limit".into(),
        };
        Stopped {
            checkpoint: Some(outcome.checkpoint().0),
            at,
            cancelled: false,
            waiting: crate::graph_run::waiting_of(outcome),
        }
    }

    /// `stopped before apply at checkpoint 12; `kt resume RUN` continues` (Ctrl-C: `interrupted ...`).
    pub fn message(&self, run: &std::path::Path) -> String {
        if let Some(w) = &self.waiting {
            return format!(
                "waiting for an answer to `{}`: the prompt is {}; continue with `kt resume {} --answer FILE` (or \
                 write the answer to {} and run `kt resume {}`)",
                w.node,
                w.prompt_file.display(),
                run.display(),
                w.answer_file.display(),
                run.display()
            );
        }
        let verb = if self.cancelled {
            "interrupted"
        } else {
            "stopped"
        };
        let at = match self.checkpoint {
            Some(cp) => format!("{verb} {} at checkpoint {cp}", self.at),
            None => format!("{verb} {}", self.at),
        };
        format!("{at}; `kt resume {}` continues", run.display())
    }
}

fn stage3_run_id(run: &RunDir) -> RunId {
    RunId::new(format!("{}/stage3", run.run_id()))
}

fn open_store(run: &RunDir) -> Result<Arc<dyn CheckpointStore>, PipelineError> {
    let store = SqliteStore::open(run.sqlite()).map_err(|e| PipelineError::Graph {
        stage: "stage 3",
        message: e.to_string(),
    })?;
    Ok(Arc::new(store))
}

/// Seconds from a graph run's first checkpoint to its last, when the store has it.
fn graph_span_s(store: &dyn CheckpointStore, run: &str) -> Option<f64> {
    let checkpoints = store.list_checkpoints(&RunId::new(run)).ok()?;
    let first = checkpoints.iter().map(|c| c.created_ms).min()?;
    let last = checkpoints.iter().map(|c| c.created_ms).max()?;
    Some((last - first) as f64 / 1000.0)
}

/// The wall times recorded by an earlier part of this line of the run (a resumed run adds to them). A side
/// branch without results yet starts from the main branch's Stages 1-2.
fn earlier_wall(run: &RunDir, out: &ResultFiles) -> WallTimes {
    let read = |path: std::path::PathBuf| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str::<RunResult>(&t).ok())
            .map(|r| r.wall_time_s)
    };
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
fn resumed_branch(store: &dyn CheckpointStore, id: &RunId) -> u32 {
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
fn stopped_in_stages_1_2(
    run: &RunDir,
    started: Instant,
    stopped: Stopped,
) -> Result<TransformOutcome, PipelineError> {
    let total = started.elapsed().as_secs_f64();
    let wall = WallTimes {
        stage1: total,
        total,
        ..WallTimes::default()
    };
    let out = run.results(0);
    let result = write_result_waiting(
        run,
        &out,
        None,
        None,
        RunStatus::Interrupted,
        wall,
        Some(stopped.message(run.root())),
        stopped.waiting.clone(),
    )?;
    run.set_status(RunStatus::Interrupted)?;
    Ok(TransformOutcome {
        result,
        state: None,
        stopped: Some(stopped),
        results: out,
    })
}

/// Runs Stages 1, 2 and 3 into `run`.
pub async fn transform(
    run: &RunDir,
    source: &KernelInput,
    stage1: Stage1Source,
    testgen: TestgenSettings,
    stage3: Stage3Settings,
) -> Result<TransformOutcome, PipelineError> {
    let started = Instant::now();
    let mut wall = WallTimes::default();
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
            return stopped_in_stages_1_2(run, started, stopped);
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
            return stopped_in_stages_1_2(run, started, stopped);
        }
        Err(e) => {
            wall.total = started.elapsed().as_secs_f64();
            wall.stage1 = wall.total;
            return finish(run, &run.results(0), None, None, wall, Err(e));
        }
    };
    // prepare() runs both stages; their checkpoints say how its time split.
    let elapsed = started.elapsed().as_secs_f64();
    let store = open_store(run)?;
    let id = run.run_id();
    wall.stage1 = graph_span_s(store.as_ref(), &format!("{id}/stage1"))
        .unwrap_or(0.0)
        .min(elapsed);
    wall.stage2 = elapsed - wall.stage1;
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
    transform(run, source, stage1, testgen, stage3).await
}

/// Continues a run's Stage 3 from its last checkpoint (Stages 1 and 2 must have finished).
pub async fn resume(
    run: &RunDir,
    stage3: Stage3Settings,
) -> Result<TransformOutcome, PipelineError> {
    let source = run.kernel_code()?;
    let info = crate::KernelInfo::load(&run).map_err(|e| PipelineError::Graph {
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

#[allow(clippy::too_many_arguments)]
async fn run_stage3(
    run: &RunDir,
    source: &str,
    kernel: &kt_cuda::Kernel,
    info: &KernelInfo,
    sidecar_path: Option<std::path::PathBuf>,
    settings: Stage3Settings,
    mut wall: WallTimes,
    out: ResultFiles,
) -> Result<TransformOutcome, PipelineError> {
    let main = out.branch().is_none();
    let started = Instant::now();
    let sidecar = match &sidecar_path {
        Some(p) => Some(kt_cuda::Sidecar::load(p)?),
        None => None,
    };
    let original = TunableCode::original(source, info);
    let backend = (settings.backend)(&BackendInputs {
        run,
        source,
        kernel,
        info,
        original: &original,
        sidecar: sidecar.as_ref(),
    });
    let facts = KernelFacts {
        info: info.clone(),
        signature: kernel.clone(),
        source: source.to_string(),
    };
    let cx = Stage3Context::new(settings.strategy.clone(), facts, settings.prompts.clone())
        .with_llm(settings.llm.clone())
        .with_backend(backend.clone())
        .with_run_dir(out.root())
        .with_progress(settings.progress.clone())
        .with_structured_mode(settings.mode);
    let graph = build_graph(Arc::new(cx))?;
    let store = open_store(run)?;
    let executor = Executor::new(graph, store);
    let forward = settings.events.clone().map(|sink| {
        let mut rx = executor.subscribe();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                sink(&event);
            }
        })
    });
    let id = stage3_run_id(run);
    let opts = RunOptions {
        step_limit: settings.strategy.settings.max_graph_steps,
        cancel: settings.cancel.clone(),
        ..RunOptions::default()
    };
    let exists = executor.run_meta(&id).is_ok();
    let outcome = if exists {
        executor.resume(&id, opts).await
    } else {
        executor
            .start(id.clone(), Stage3State::new(original), opts)
            .await
    };
    if let Some(task) = forward {
        task.abort();
    }
    wall.stage3 += started.elapsed().as_secs_f64();
    wall.total = wall.stage1 + wall.stage2 + wall.stage3;
    // The state to report from: the final one, or the last checkpoint's when the run stopped early.
    let last_state = |exec: &Executor<Stage3State>| {
        exec.latest(&id)
            .ok()
            .and_then(|cp| exec.state_at(&id, cp).ok())
    };
    let set_status = |status: RunStatus| {
        if main { run.set_status(status) } else { Ok(()) }
    };
    let (stopped, state) = match outcome {
        Ok(RunOutcome::Finished { state, .. }) => {
            return finish(run, &out, Some(state), Some(backend.as_ref()), wall, Ok(()));
        }
        Ok(other) => (Stopped::of(&other), Some(other.into_state())),
        Err(GraphError::Cancelled { checkpoint, .. }) => (
            Stopped {
                checkpoint: Some(checkpoint.0),
                at: "in stage 3".into(),
                cancelled: true,
                waiting: None,
            },
            last_state(&executor),
        ),
        Err(e) => {
            let message = e.to_string();
            let gpu_missing = message.contains("CUDA GPU is needed");
            let status = if gpu_missing {
                RunStatus::Interrupted
            } else if message.contains(crate::error::LLM_UNAVAILABLE) {
                RunStatus::LlmUnavailable
            } else {
                RunStatus::Failed
            };
            let written = write_result(
                run,
                &out,
                last_state(&executor).as_ref(),
                Some(backend.as_ref()),
                status,
                wall,
                Some(message.clone()),
            );
            set_status(status)?;
            written?;
            if gpu_missing {
                return Err(PipelineError::Tuning(BackendError::GpuUnavailable {
                    detail: strip_gpu_prefix(&message),
                }));
            }
            return Err(PipelineError::Graph {
                stage: "stage 3",
                message,
            });
        }
    };
    let result = write_result_waiting(
        run,
        &out,
        state.as_ref(),
        Some(backend.as_ref()),
        RunStatus::Interrupted,
        wall,
        Some(stopped.message(run.root())),
        stopped.waiting.clone(),
    )?;
    set_status(RunStatus::Interrupted)?;
    Ok(TransformOutcome {
        result,
        state,
        stopped: Some(stopped),
        results: out,
    })
}

/// The reason inside a "a CUDA GPU is needed from here on: …" message, without the engine's wrapping.
fn strip_gpu_prefix(message: &str) -> String {
    match message.split_once("a CUDA GPU is needed from here on: ") {
        Some((_, rest)) => rest
            .split("; the run is saved")
            .next()
            .unwrap_or(rest)
            .to_string(),
        None => message.to_string(),
    }
}

fn finish(
    run: &RunDir,
    out: &ResultFiles,
    state: Option<Stage3State>,
    backend: Option<&dyn TuningBackend>,
    wall: WallTimes,
    outcome: Result<(), PipelineError>,
) -> Result<TransformOutcome, PipelineError> {
    match outcome {
        Ok(()) => {
            let result = write_result(
                run,
                out,
                state.as_ref(),
                backend,
                RunStatus::Finished,
                wall,
                None,
            )?;
            if out.branch().is_none() {
                run.set_status(RunStatus::Finished)?;
            }
            Ok(TransformOutcome {
                result,
                state,
                stopped: None,
                results: out.clone(),
            })
        }
        Err(e) => {
            let status = if e.is_llm_unavailable() {
                RunStatus::LlmUnavailable
            } else {
                RunStatus::Failed
            };
            let _ = write_result(
                run,
                out,
                state.as_ref(),
                backend,
                status,
                wall,
                Some(e.to_string()),
            );
            if out.branch().is_none() {
                run.set_status(status)?;
            }
            Err(e)
        }
    }
}
