//! The GPU [`ReferenceRunner`]: kt-tuner runs the original kernel (its own unit: the job's source is the code
//! the run works on, see `prepare::KernelInput`) at its default launch (`default_block`,
//! grid from the problem size) on one test in its isolated worker; the worker writes every output to
//! `expected/<output>.npy` in the test directory (streamed from the GPU, never through the protocol pipe)
//! and times the launch. Output elements the kernel never writes keep the test's initial values in the
//! expected file; they are logged, since a candidate must then leave them alone too.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use kt_tuner::session::{TunableKernel, Tuner, TunerConfig, config_from_block};
use kt_tuner::{ParamSpec, ReferenceOutputs, TestSet, TimingPolicy, TunableParam, TunerError};

use super::reference::{ReferenceJob, ReferenceRun, ReferenceRunner};
use crate::error::PipelineError;

/// kt-tuner behind [`ReferenceRunner`]; the tuner (and its worker) starts on first use and is reused.
pub struct TunerReference {
    /// Module cache, and scratch directories that present one test to the tuner.
    cache_dir: PathBuf,
    tuner: Arc<Mutex<Option<Result<Tuner, String>>>>,
    /// Where NVRTC looks for the kernel's own headers (the kernel file's directory, `--include`).
    include_dirs: Vec<PathBuf>,
}

impl std::fmt::Debug for TunerReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TunerReference")
            .field("cache_dir", &self.cache_dir)
            .finish()
    }
}

impl TunerReference {
    /// `cache_dir`: the run's `tuning/` directory.
    pub fn new(cache_dir: PathBuf) -> Self {
        Self {
            cache_dir,
            tuner: Arc::new(Mutex::new(None)),
            include_dirs: Vec::new(),
        }
    }

    /// The runner with the directories NVRTC searches for the kernel's headers.
    pub fn with_include_dirs(mut self, include_dirs: Vec<PathBuf>) -> Self {
        self.include_dirs = include_dirs;
        self
    }

    fn with_tuner<T>(&self, f: impl FnOnce(&mut Tuner) -> T) -> Result<T, String> {
        let mut guard = self.tuner.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            let config = TunerConfig {
                cache_dir: Some(self.cache_dir.clone()),
                ..TunerConfig::default()
            };
            *guard = Some(Tuner::new(config).map_err(|e| e.to_string()));
        }
        match guard.as_mut() {
            Some(Ok(tuner)) => Ok(f(tuner)),
            Some(Err(reason)) => Err(reason.clone()),
            None => Err("the tuner was not started".into()),
        }
    }
}

#[async_trait]
impl ReferenceRunner for TunerReference {
    /// Starts the tuner (worker process, CUDA context): the honest answer to "can kernels run here".
    fn availability(&self) -> Result<(), String> {
        self.with_tuner(|_| ())
    }

    async fn run(&self, job: ReferenceJob<'_>) -> Result<ReferenceRun, PipelineError> {
        let test_id = job
            .test_dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let mut kernel = TunableKernel::new(
            job.source,
            job.kernel.name.clone(),
            job.info
                .problem_size
                .iter()
                .map(|d| d.expression.clone())
                .collect(),
        );
        let block = job.info.default_block.map(i64::from);
        let params: Vec<TunableParam> = ["block_size_x", "block_size_y", "block_size_z"]
            .iter()
            .zip(block)
            .take(job.info.dimensions().max(1))
            .map(|(name, v)| TunableParam::new(*name, [v]))
            .collect();
        let config = config_from_block(&params, block);
        kernel.reference = Some(config.clone());
        kernel.params = params;
        kernel.include_dirs = self.include_dirs.clone();
        let specs = ParamSpec::from_kernel(job.kernel);

        // The tuner reads tests from a directory of test directories: present this one alone.
        let scratch = self.cache_dir.join(format!("reference-{test_id}"));
        let _ = std::fs::remove_dir_all(&scratch);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| PipelineError::io("creating", &scratch, e))?;
        let link = scratch.join(&test_id);
        std::os::unix::fs::symlink(job.test_dir, &link)
            .map_err(|e| PipelineError::io("linking the test into", &link, e))?;
        let this = Self {
            cache_dir: self.cache_dir.clone(),
            tuner: self.tuner.clone(),
            include_dirs: self.include_dirs.clone(),
        };
        let dir = scratch.clone();
        let expected_dir = job.test_dir.join(EXPECTED_DIR);
        // The tuner blocks for as long as the kernel runs: keep it off the async workers. A failure is its
        // message and whether the reference faulted on the GPU.
        let outcome = tokio::task::spawn_blocking(move || {
            let as_failure = |e: TunerError| (e.to_string(), e.is_kernel_fault());
            let tests = TestSet::load_dir(&dir, &specs, &BTreeMap::new()).map_err(as_failure)?;
            this.with_tuner(|tuner| {
                tuner.run_reference(
                    &kernel,
                    &config,
                    &tests,
                    &[expected_dir],
                    Some(TimingPolicy::default()),
                )
            })
            .map_err(|message| (message, false))?
            .map_err(as_failure)
        })
        .await
        .unwrap_or_else(|join| Err((format!("the tuner thread failed: {join}"), false)));
        let _ = std::fs::remove_dir_all(&scratch);
        let result = outcome.map_err(|(message, faulted)| PipelineError::Reference {
            test: test_id.clone(),
            message,
            // A fault in the reference launch is most often an argument the generator sized wrong.
            inputs_at_fault: faulted,
        })?;
        reference_run(&test_id, result)
    }
}

/// Where expected outputs go, relative to the test directory (TESTS_FORMAT.md).
const EXPECTED_DIR: &str = "expected";

/// Turns the tuner's report for one test into the manifest's `expected` map and `reference_time_ms`.
pub(crate) fn reference_run(
    test_id: &str,
    runs: Vec<ReferenceOutputs>,
) -> Result<ReferenceRun, PipelineError> {
    let failed = |message: &str| PipelineError::Reference {
        test: test_id.to_string(),
        message: message.to_string(),
        inputs_at_fault: false,
    };
    let run = runs
        .into_iter()
        .next()
        .ok_or_else(|| failed("the tuner reported no run for the test"))?;
    let time_ms = run
        .timing
        .as_ref()
        .map(|t| t.median_ms)
        .ok_or_else(|| failed("the tuner measured no time for the default launch"))?;
    let mut expected = BTreeMap::new();
    for o in &run.outputs {
        if o.never_written > 0 || o.depends_on_initial > 0 {
            tracing::warn!(
                test = %test_id,
                output = %o.name,
                never_written = o.never_written,
                depends_on_initial = o.depends_on_initial,
                "the original kernel leaves part of this output to its initial contents; the expected file keeps them"
            );
        }
        expected.insert(o.name.clone(), format!("{EXPECTED_DIR}/{}.npy", o.name));
    }
    Ok(ReferenceRun { time_ms, expected })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kt_tuner::{RecordedOutput, TimingStats};

    fn output(name: &str, never_written: u64) -> RecordedOutput {
        RecordedOutput {
            name: name.into(),
            path: format!("/t/expected/{name}.npy").into(),
            dtype: kt_record::DType::Float32,
            shape: vec![4],
            never_written,
            depends_on_initial: never_written,
        }
    }

    #[test]
    fn recorded_outputs_become_expected_files_and_the_median_the_reference_time() {
        let runs = vec![ReferenceOutputs {
            test_id: "t0".into(),
            outputs: vec![output("C", 0), output("hist", 3)],
            timing: TimingStats::from_samples(&[2.0, 1.0, 3.0]),
        }];
        let run = reference_run("t0", runs).unwrap();
        assert_eq!(run.time_ms, 2.0);
        assert_eq!(
            run.expected,
            BTreeMap::from([
                ("C".to_string(), "expected/C.npy".to_string()),
                ("hist".to_string(), "expected/hist.npy".to_string()),
            ])
        );
    }

    #[test]
    fn a_run_without_timing_is_an_error_not_a_zero_time() {
        let runs = vec![ReferenceOutputs {
            test_id: "t0".into(),
            outputs: vec![output("C", 0)],
            timing: None,
        }];
        let err = reference_run("t0", runs).unwrap_err();
        assert!(err.to_string().contains("no time"), "{err}");
        assert!(reference_run("t0", vec![]).is_err());
    }
}
