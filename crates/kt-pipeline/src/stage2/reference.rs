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
    /// The code the run works on: the kernel file, or the kernel's unit when the file is a whole program.
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

    /// `Some(reason)` when the original kernel will run on another machine (one with a GPU) and Stage 2 is to
    /// stop there instead of writing tests without it: the program is asked for and checked here, where the
    /// LLM is, and its tests are made where they are used.
    fn runs_elsewhere(&self) -> Option<&str> {
        None
    }
}

/// The runner of a machine without a GPU in a run that continues on one (`kt transform`): Stage 2 gets its
/// generator program and checks it in the sandbox here, leaves no data, and stops for the GPU.
#[derive(Debug, Clone)]
pub struct OnGpuMachine {
    pub reason: String,
}

#[async_trait]
impl ReferenceRunner for OnGpuMachine {
    fn availability(&self) -> Result<(), String> {
        Err(self.reason.clone())
    }

    async fn run(&self, _job: ReferenceJob<'_>) -> Result<ReferenceRun, PipelineError> {
        Err(PipelineError::TestsNeedGpu {
            reason: self.reason.clone(),
        })
    }

    fn runs_elsewhere(&self) -> Option<&str> {
        Some(&self.reason)
    }
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
    let mut manifest: TestManifest = kt_record::layout::read_json(&path, "test manifest")?;
    // An empty map would claim "expected outputs recorded" for a runner that records none.
    manifest.expected = (!run.expected.is_empty()).then(|| run.expected.clone());
    manifest.reference_time_ms = Some(run.time_ms);
    kt_record::layout::write_json(&path, &manifest)?;
    Ok(manifest)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kt_sandbox::generator::ManifestArg;

    fn manifest() -> TestManifest {
        TestManifest {
            format: 1,
            kernel: "vectorAdd".into(),
            seed: 3,
            args: vec![ManifestArg::Array {
                name: "c".into(),
                dtype: "float32".into(),
                shape: Some(vec![4]),
                file: "args/c.npy".into(),
                struct_name: None,
            }],
            constants: Vec::new(),
            outputs: vec!["c".into()],
            problem_size: Some([4, 1, 1]),
            expected: None,
            reference_time_ms: None,
        }
    }

    #[test]
    fn reference_run_fills_expected_and_time_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        kt_record::layout::write_json(&dir.path().join("manifest.json"), &manifest()).unwrap();
        let run = ReferenceRun {
            time_ms: 12.5,
            expected: BTreeMap::from([("c".to_string(), "expected/c.npy".to_string())]),
        };
        let m = record_in_manifest(dir.path(), &run).unwrap();
        let back: TestManifest =
            kt_record::layout::read_json(&dir.path().join("manifest.json"), "test manifest")
                .unwrap();
        assert_eq!(m, back);
        assert_eq!(back.expected, Some(run.expected.clone()));
        assert_eq!(back.reference_time_ms, Some(12.5));
        assert_eq!((back.seed, back.problem_size), (3, Some([4, 1, 1])));
    }

    #[test]
    fn a_run_without_outputs_leaves_expected_absent() {
        let dir = tempfile::tempdir().unwrap();
        kt_record::layout::write_json(&dir.path().join("manifest.json"), &manifest()).unwrap();
        let run = ReferenceRun {
            time_ms: 1.0,
            expected: BTreeMap::new(),
        };
        let m = record_in_manifest(dir.path(), &run).unwrap();
        assert_eq!(m.expected, None);
        assert_eq!(m.reference_time_ms, Some(1.0));
    }
}
