//! Stage 2: tests. The LLM writes a numpy program (`def generate(seed: int) -> list`, arguments in parameter
//! order); kt-sandbox's harness runs it and writes content-addressed test directories (TESTS_FORMAT.md); the
//! original kernel runs on each to record expected outputs and its time, and the LLM resizes tests whose time
//! is outside the bounds. A kernel that reads `__constant__` symbols has their contents generated too (the
//! program then returns `{"args": [...], "constants": {name: array}}`, see `constants.rs`). With `--script`, a
//! hand-written program goes through exactly the same harness without any LLM.

pub mod answers;
pub mod constants;
pub(crate) mod expected_outputs;
mod generator_prompt;
pub mod graph;
pub mod make_test;
mod prefetch;
pub mod reference;
mod remake;
pub mod state;
pub mod tuner_reference;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kt_cuda::Kernel;
use kt_graph::{CheckpointStore, Executor, RunId, RunOptions, RunOutcome};
use kt_sandbox::generator::TestManifest;

pub use answers::GeneratorScript;
pub use make_test::{generator_spec, has_tail};
pub use reference::{
    OnGpuMachine, ReferenceJob, ReferenceRun, ReferenceRunner, Unavailable, record_in_manifest,
};
pub use remake::{EXPECTED_REMADE_MARK, Remade, data_missing, remake_missing_data};
pub use state::{Revision, Stage2Deps, Stage2Options, Stage2State, TestRecord, TimeBounds};
pub use tuner_reference::TunerReference;

use crate::error::PipelineError;
use crate::kernel_info::KernelInfo;
use prefetch::GeneratorPrefetch;

/// What Stage 2 produced.
#[derive(Debug, Clone)]
pub struct Stage2Outcome {
    pub tests_dir: PathBuf,
    pub tests: Vec<TestRecord>,
    /// The generator program of the last accepted test.
    pub script: String,
    /// Things the user should know (a test outside the time bounds, no tail test).
    pub warnings: Vec<String>,
    /// Why expected outputs are missing (no GPU); None when every test has them.
    pub expected_missing: Option<String>,
}

/// Runs the Stage 2 graph: makes `deps.options.tests` tests of `kernel` under `deps.tests_dir`. With
/// `script` set the program is used as given (and `deps.llm` may be None); otherwise the LLM writes it.
pub async fn make_tests(
    deps: Stage2Deps,
    source: &str,
    kernel: &Kernel,
    info: &KernelInfo,
    script: Option<String>,
    store: Arc<dyn CheckpointStore>,
    run: RunId,
) -> Result<Stage2Outcome, PipelineError> {
    if script.is_none() && deps.llm.is_none() {
        return Err(PipelineError::NoLlm);
    }
    std::fs::create_dir_all(&deps.tests_dir)
        .map_err(|e| PipelineError::io("creating the tests directory", &deps.tests_dir, e))?;
    let expected_missing = deps.reference.availability().err();
    let tests_dir = deps.tests_dir.clone();
    let prefetch = GeneratorPrefetch::new(GeneratorPrefetch::staging_for(&tests_dir));
    let graph = graph::build(deps, prefetch.clone())?;
    let executor = Executor::new(graph, store);
    let initial = Stage2State {
        source: source.to_string(),
        kernel: Some(kernel.clone()),
        info: Some(info.clone()),
        script,
        ..Stage2State::default()
    };
    let outcome =
        crate::graph_run::start_or_resume(&executor, run, initial, RunOptions::default()).await;
    // runs started ahead for a program that was revised, or a run that stopped, leave nothing behind
    prefetch.finish().await;
    let outcome = outcome.map_err(|e| PipelineError::graph("stage 2", e))?;
    let state = match outcome {
        RunOutcome::Finished { state, .. } => state,
        other => {
            if let Some(waiting) = crate::graph_run::waiting_of(&other) {
                return Err(PipelineError::AwaitingAnswer(waiting));
            }
            return Err(PipelineError::Graph {
                stage: "stage 2",
                message: format!("the run stopped before its end at {}", other.checkpoint()),
            });
        }
    };
    Ok(Stage2Outcome {
        tests_dir,
        tests: state.tests,
        script: state.script.unwrap_or_default(),
        warnings: state.warnings,
        expected_missing,
    })
}

/// One test directory as found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTest {
    pub id: String,
    pub dir: PathBuf,
    pub manifest: TestManifest,
}

impl StoredTest {
    /// Expected outputs exist for every output.
    pub fn has_expected(&self) -> bool {
        let expected = self.manifest.expected.as_ref();
        self.manifest.outputs.iter().all(|o| {
            expected
                .and_then(|e| e.get(o))
                .is_some_and(|f| self.dir.join(f).is_file())
        })
    }
}

/// Every test under `tests_dir` (sub-directories with a manifest.json), sorted by id. This is what
/// `kt tune --tests-dir DIR` and Stage 3 reuse.
pub fn list_tests(tests_dir: &Path) -> Result<Vec<StoredTest>, PipelineError> {
    let entries = match std::fs::read_dir(tests_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(PipelineError::io(
                "listing the tests directory",
                tests_dir,
                e,
            ));
        }
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| PipelineError::io("listing the tests directory", tests_dir, e))?;
        let dir = entry.path();
        let manifest_path = dir.join("manifest.json");
        if !manifest_path.is_file() {
            continue;
        }
        let manifest: TestManifest = kt_record::layout::read_json(&manifest_path, "test manifest")?;
        out.push(StoredTest {
            id: entry.file_name().to_string_lossy().to_string(),
            dir,
            manifest,
        });
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod constants_tests;
