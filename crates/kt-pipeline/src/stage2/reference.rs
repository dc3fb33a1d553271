//! Running the *original* kernel on a generated test: its outputs become the test's expected values and its
//! median time the test's `reference_time_ms`. This needs a GPU, so it sits behind a trait: kt-cli plugs in
//! the tuner's worker, CPU tests plug in a fake, and a machine without a GPU gets [`Unavailable`], with which
//! Stage 2 still writes every test's inputs and then stops with the reason.

use std::collections::BTreeMap;
use std::path::Path;

use async_trait::async_trait;
use kt_cuda::Kernel;
use kt_sandbox::generator::TestManifest;
use serde::{Deserialize, Serialize};

use crate::error::PipelineError;
use crate::kernel_info::KernelInfo;

/// One reference run to do.
#[derive(Debug, Clone, Copy)]
pub struct ReferenceJob<'a> {
    /// The whole source file the kernel comes from.
    pub source: &'a str,
    pub kernel: &'a Kernel,
    /// Its `default_block` is the launch to use; `problem_size` gives the grid.
    pub info: &'a KernelInfo,
    /// The test directory (manifest.json, args/); the runner writes `expected/<output>.npy` into it.
    pub test_dir: &'a Path,
    pub manifest: &'a TestManifest,
}

/// What a reference run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRun {
    /// Median time of the kernel at its default launch, in milliseconds.
    pub time_ms: f64,
    /// Output name → file written, relative to the test directory (`expected/C.npy`).
    pub expected: BTreeMap<String, String>,
}

/// Runs the original kernel on tests.
#[async_trait]
pub trait ReferenceRunner: Send + Sync {
    /// `Err(reason)` when this runner cannot run kernels here (no GPU, no driver); Stage 2 then writes the
    /// tests' inputs only and reports the reason.
    fn availability(&self) -> Result<(), String>;

    /// Runs the kernel on one test, writes its expected outputs, returns the time. A failure caused by the
    /// test's inputs (out-of-bounds access with the sizes given) should be [`PipelineError::Reference`] with
    /// `inputs_at_fault: true`, so the generator is asked to fix them.
    async fn run(&self, job: ReferenceJob<'_>) -> Result<ReferenceRun, PipelineError>;
}

/// The runner of a machine that cannot run kernels: every test gets inputs, none gets expected outputs.
#[derive(Debug, Clone)]
pub struct Unavailable {
    pub reason: String,
}

#[async_trait]
impl ReferenceRunner for Unavailable {
    fn availability(&self) -> Result<(), String> {
        Err(self.reason.clone())
    }

    async fn run(&self, _job: ReferenceJob<'_>) -> Result<ReferenceRun, PipelineError> {
        Err(PipelineError::NoGpu {
            reason: self.reason.clone(),
        })
    }
}

/// Records a reference run in the test's manifest.json (`expected` and `reference_time_ms`), keeping every
/// other field as it was.
pub fn record_in_manifest(
    test_dir: &Path,
    run: &ReferenceRun,
) -> Result<TestManifest, PipelineError> {
    let path = test_dir.join("manifest.json");
    let mut manifest: TestManifest = crate::run_dir::read_json(&path, "test manifest")?;
    // An empty map would claim "expected outputs recorded" for a runner that records none.
    manifest.expected = (!run.expected.is_empty()).then(|| run.expected.clone());
    manifest.reference_time_ms = Some(run.time_ms);
    crate::run_dir::write_json(&path, &manifest)?;
    Ok(manifest)
}
