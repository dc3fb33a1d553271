//! Stage 3's graph run inside the job: the backend and context built, the graph started or resumed.

use std::sync::Arc;
use std::time::Instant;

use kt_graph::{CompiledGraph, Executor, RunOptions};

use super::earlier::{open_store, stage3_run_id};
use super::finish::end_stage3;
use super::outcome::TransformOutcome;
use super::result::WallTimes;
use super::settings::{BackendInputs, Stage3Settings};
use crate::error::PipelineError;
use crate::kernel_info::KernelInfo;
use crate::stage3::{KernelFacts, Stage3Context, Stage3State, TunableCode, build_graph};
use kt_record::{GraphOutline, OutlineEdge, ResultFiles, RunDir};

/// Runs (or resumes) the strategy's graph of `run` with checkpoints in its `run.sqlite`, then records how it
/// ended ([`super::finish::end_stage3`]).
#[allow(clippy::too_many_arguments)]
pub(super) async fn run_stage3(
    run: &RunDir,
    source: &str,
    kernel: &kt_cuda::Kernel,
    info: &KernelInfo,
    sidecar_path: Option<std::path::PathBuf>,
    settings: Stage3Settings,
    mut wall: WallTimes,
    out: ResultFiles,
) -> Result<TransformOutcome, PipelineError> {
    let _main = out.branch().is_none();
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
        takes_profiles: settings.strategy.settings.takes_profiles(),
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
    save_outline(run, &graph);
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
    end_stage3(run, &out, &executor, &id, backend.as_ref(), wall, outcome)
}

/// Saves the shape of the Stage 3 graph into the run (`graph.json`) the first time it starts, so that pages
/// draw the run without rebuilding its graph. A run that cannot save it still runs: its pages draw the path.
fn save_outline(run: &RunDir, graph: &CompiledGraph<Stage3State>) {
    let path = run.graph_json();
    if path.is_file() {
        return;
    }
    let (nodes, edges) = graph.outline();
    let outline = GraphOutline {
        stage: "stage3".into(),
        nodes,
        edges: edges
            .into_iter()
            .map(|(from, to, label)| OutlineEdge { from, to, label })
            .collect(),
    };
    if let Err(e) = outline.write(&path) {
        tracing::warn!(error = %e, "the graph's shape was not saved; pages of this run draw its path only");
    }
}
