//! The GPU [`ReferenceRunner`]: kt-tuner runs the original kernel at its default launch (`default_block`,
//! grid from the problem size) on one test in its isolated worker and reports the median time.
//!
//! What it deliberately does not do: write `expected/<output>.npy`. kt-tuner's worker keeps the reference
//! launch's outputs on the GPU and verifies candidates against them there (a test without stored expected
//! values gets them from the original kernel at tuning time), and it has no way to hand them back; so tests
//! made with this runner carry `reference_time_ms` and leave `expected` absent, as TESTS_FORMAT.md allows.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use kt_tuner::session::{TunableKernel, TuneOptions, Tuner, TunerConfig, config_from_block};
use kt_tuner::{ParamSpec, TestSet, TunableParam, TunerError};

use super::reference::{ReferenceJob, ReferenceRun, ReferenceRunner};
use crate::error::PipelineError;

/// kt-tuner behind [`ReferenceRunner`]; the tuner (and its worker) starts on first use and is reused.
pub struct TunerReference {
    /// Module cache, and scratch directories that present one test to the tuner.
    cache_dir: PathBuf,
    tuner: Arc<Mutex<Option<Result<Tuner, String>>>>,
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
        }
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
        kernel.reference = Some(config_from_block(&params, block));
        kernel.params = params;
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
        };
        let dir = scratch.clone();
        // The tuner blocks for as long as the kernel runs: keep it off the async workers.
        let outcome = tokio::task::spawn_blocking(move || {
            let tests =
                TestSet::load_dir(&dir, &specs, &BTreeMap::new()).map_err(|e| e.to_string())?;
            let options = TuneOptions {
                verify: false,
                measure_peak: false,
                ..TuneOptions::default()
            };
            this.with_tuner(|tuner| tuner.tune(&kernel, &tests, &options, &mut |_| {}))?
                .map_err(|e: TunerError| e.to_string())
        })
        .await
        .unwrap_or_else(|join| Err(format!("the tuner thread failed: {join}")));
        let _ = std::fs::remove_dir_all(&scratch);
        let result = outcome.map_err(|message| {
            // A fault in the reference launch is most often an argument the generator sized wrong.
            let inputs_at_fault = message.contains("illegal")
                || message.contains("fault")
                || message.contains("out of range");
            PipelineError::Reference {
                test: test_id.clone(),
                message,
                inputs_at_fault,
            }
        })?;
        let time_ms = result
            .reference
            .as_ref()
            .or(result.best.as_ref())
            .and_then(|m| m.objective_ms())
            .ok_or_else(|| PipelineError::Reference {
                test: test_id.clone(),
                message: "the tuner measured no time for the default launch".into(),
                inputs_at_fault: false,
            })?;
        Ok(ReferenceRun {
            time_ms,
            expected: BTreeMap::new(),
        })
    }
}
