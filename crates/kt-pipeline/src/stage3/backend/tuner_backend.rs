//! The real [`TuningBackend`]: kt-tuner on the GPU. The tuner (and its worker process) starts on the first
//! call, not when the backend is made, so a run on a machine without a GPU gets as far as Stage 3's first GPU
//! step and stops there with the tuner's own reason. The tuner is synchronous and owns the device; calls run
//! on a blocking thread, one at a time.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use kt_tuner::search::Limits;
use kt_tuner::session::{TuneOptions, TuneResult};
use kt_tuner::{Config, Restriction, TunableParam, TunerError};

use crate::stage3::backend::backend_config::TunerBackendConfig;
use crate::stage3::backend::session::{Session, backend_error, open_session};
use crate::stage3::backend::tuning_backend::{
    BackendError, Outcome, PairTimes, ProfileRun, Reference, TuningBackend, TuningProgress,
};
use crate::stage3::profiling::profile_standby::ProfileStandby;

use crate::stage3::backend::tuned_outcome::{self, Tuned, noise_ms};
use crate::stage3::backend::tuning_job::{OriginalKernel, first_values, tune_in_session};
use crate::stage3::tunable_code::TunableCode;

/// The longest the baseline waits for a starting profile standby (see [`ProfileStandby::wait_until_ready`]).
const STANDBY_START_LIMIT: Duration = Duration::from_secs(10);

/// kt-tuner behind [`TuningBackend`].
pub struct TunerBackend {
    pub(in crate::stage3) config: TunerBackendConfig,
    pub(in crate::stage3) session: Arc<Mutex<Option<Session>>>,
    /// The tuning result of every kernel tuned in this process, by content hash, for the Kernel Tuner export.
    results: Mutex<HashMap<String, (kt_tuner::TunableKernel, TuneResult)>>,
    device: Mutex<String>,
    /// The GPU of the latest tuning job (run.json's `gpu`).
    pub(in crate::stage3) gpu: Mutex<Option<crate::gpu_record::GpuRecord>>,
    /// A profile started while a kernel is tuned, ready for the next profile (shared with the early tuner,
    /// which starts the first).
    pub(in crate::stage3) standby: Arc<ProfileStandby>,
}

impl std::fmt::Debug for TunerBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TunerBackend")
            .field("tests_dir", &self.config.tests_dir)
            .finish()
    }
}

/// `launches` separate timed launches of `kernel` at `config` on `test` (nothing written).
fn time_launches(
    s: &mut Session,
    kernel: &kt_tuner::TunableKernel,
    config: &Config,
    test: &kt_tuner::KernelTest,
    launches: u32,
) -> Result<Vec<f64>, BackendError> {
    let samples = s
        .tuner
        .time_launches(kernel, config, test, launches)
        .map_err(backend_error)?;
    if samples.is_empty() {
        return Err(BackendError::Failed {
            detail: format!("the tuner returned no timing for {}", kernel.kernel_name),
        });
    }
    Ok(samples)
}

impl TunerBackend {
    /// The backend; nothing starts until the first call.
    pub fn new(config: TunerBackendConfig) -> Self {
        Self {
            session: Arc::new(Mutex::new(None)),
            results: Mutex::new(HashMap::new()),
            device: Mutex::new(String::new()),
            gpu: Mutex::new(None),
            standby: config.early_tuner.standby.clone(),
            config,
        }
    }

    pub(in crate::stage3) fn to_tuner_kernel(
        &self,
        kernel: &TunableCode,
    ) -> kt_tuner::TunableKernel {
        let mut k = kt_tuner::TunableKernel::new(
            kernel.code.clone(),
            self.config.kernel.name.clone(),
            self.config.problem_size.clone(),
        );
        k.params = kernel
            .parameters
            .iter()
            .map(|p| TunableParam::new(p.name.clone(), p.values.clone()))
            .collect();
        k.restrictions = kernel
            .restrictions
            .iter()
            .cloned()
            .map(Restriction::Expr)
            .collect();
        k.geometry.grid_div = kernel.grid_divisors.clone();
        k.geometry.shared_mem = kernel.dynamic_shared_memory.clone();
        k.flops = self.config.flops.clone();
        k.bytes = self.config.bytes.clone();
        k.flops_exact = self.config.flops_exact;
        k.include_dirs = self.config.include_dirs.clone();
        k
    }

    /// FLOPs per byte on the first test, from the sidecar's work expressions.
    fn arithmetic_intensity(&self) -> Option<f64> {
        let (flops, bytes) = (self.config.flops.as_ref()?, self.config.bytes.as_ref()?);
        let guard = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let scalars = guard.as_ref()?.tests.tests.first()?.scalars();
        let f = kt_tuner::model::expr::eval_number(flops, &scalars).ok()?;
        let b = kt_tuner::model::expr::eval_number(bytes, &scalars).ok()?;
        (f > 0.0 && b > 0.0).then(|| f / b)
    }

    fn options(&self, kernel_hash: &str) -> TuneOptions {
        let defaults = TuneOptions::default();
        TuneOptions {
            strategy: self.config.strategy,
            seed: self.config.seed.unwrap_or(defaults.seed),
            limits: Limits {
                max_evals: self.config.max_evals,
                time_limit: self.config.time_limit,
            },
            results_cache: Some(
                self.config
                    .cache_dir
                    .join(format!("results-{kernel_hash}.jsonl")),
            ),
            ..defaults
        }
    }

    /// Runs one tuning job on the blocking pool, starting the tuner first if needed.
    async fn tune(
        &self,
        label: &str,
        kernel: kt_tuner::TunableKernel,
        options: TuneOptions,
        progress: &dyn TuningProgress,
    ) -> Result<Result<Tuned, TunerError>, BackendError> {
        // ncu's start-up for the next profile overlaps this tuning
        if self.config.takes_profiles
            && crate::stage3::profiling::profiler_choice::profiles_with_ncu()
            && let Some(ncu) = kt_profile::ncu_once()
            && std::fs::create_dir_all(self.config.tuner_dir()).is_ok()
        {
            self.standby
                .ensure(ncu, &self.config.kernel.name, self.config.tuner_dir());
        }
        let session = self.session.clone();
        let config = self.config.clone();
        // Progress crosses to the blocking thread through a channel; the bar is updated here.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u64, u64)>();
        let original = OriginalKernel {
            kernel: self.to_tuner_kernel(&self.config.original),
            config: first_values(&self.config.original),
        };
        let job = tokio::task::spawn_blocking(
            move || -> Result<Result<Tuned, TunerError>, BackendError> {
                let started = std::time::Instant::now();
                let mut guard = session.lock().unwrap_or_else(|p| p.into_inner());
                let s = open_session(&mut guard, &config)?;
                crate::stage2::expected_outputs::remake_marked_expected(
                    &mut s.tuner,
                    &mut s.tests,
                    &config.run_tests(),
                    &original.kernel,
                    &original.config,
                );
                let opened_ms = started.elapsed().as_secs_f64() * 1e3;
                let tuned = tune_in_session(s, &kernel, options, &original, &mut |done, total| {
                    let _ = tx.send((done, total));
                });
                tracing::debug!(
                    opened_ms,
                    ms = started.elapsed().as_secs_f64() * 1e3,
                    "the tuning job ended"
                );
                Ok(tuned)
            },
        );
        let mut job = std::pin::pin!(job);
        let tuned = loop {
            tokio::select! {
                update = rx.recv() => {
                    if let Some((done, total)) = update {
                        progress.update(label, done, total);
                    }
                }
                joined = &mut job => {
                    break joined.map_err(|e| BackendError::Failed { detail: format!("the tuning thread failed: {e}") })?;
                }
            }
        };
        if let Ok(Ok(t)) = &tuned {
            *self.gpu.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(crate::gpu_record::gpu_record(&t.result.device));
        }
        tuned
    }
}

#[async_trait]
impl TuningBackend for TunerBackend {
    async fn reference(&self, original: &TunableCode) -> Result<Reference, BackendError> {
        // The first standby started with the run; the original kernel's time is the denominator of every
        // speedup and is not measured while that standby's worker is still starting. A standby whose
        // profile is already cached is not waited for: it will not be used.
        if !self.original_profile_cached(original).await {
            let waited = self.standby.wait_until_ready(STANDBY_START_LIMIT).await;
            if waited.as_millis() > 0 {
                tracing::info!(
                    seconds = waited.as_secs_f64(),
                    "waited for the profiler's standby to start before timing the original kernel"
                );
            }
        }
        let kernel = self.to_tuner_kernel(original);
        let options = self.options(&original.content_hash());
        let result = self
            .tune(
                "original",
                kernel,
                options,
                &crate::stage3::backend::tuning_backend::NoProgress,
            )
            .await?
            .map_err(backend_error)?
            .result;
        let m = result
            .reference
            .as_ref()
            .or(result.best.as_ref())
            .ok_or_else(|| BackendError::Failed {
                detail: "the original kernel produced no measurement at its default launch".into(),
            })?;
        let time_ms = m
            .objective_ms()
            .or(m.timing.as_ref().map(|t| t.median_ms))
            .ok_or_else(|| BackendError::Failed {
                detail: format!(
                    "the original kernel failed at its default launch: {}",
                    m.verdict.short()
                ),
            })?;
        *self.device.lock().unwrap_or_else(|p| p.into_inner()) = result.device.name.clone();
        self.keep_expected_outputs(original, m.per_test_ms.clone())
            .await;
        Ok(Reference {
            time_ms,
            noise_ms: noise_ms(m),
            percent_of_peak: m.percent_of_peak,
            gflops: m.gflops,
            device: result.device.name,
            theoretical_peaks: result.theoretical_peaks,
            arithmetic_intensity: self.arithmetic_intensity(),
        })
    }

    async fn profile(
        &self,
        label: &str,
        kernel: &TunableCode,
        params: &BTreeMap<String, i64>,
    ) -> Result<ProfileRun, BackendError> {
        Ok(self.profile_kernel(label, kernel, params).await)
    }

    async fn evaluate(
        &self,
        label: &str,
        kernel: &TunableCode,
        progress: &dyn TuningProgress,
    ) -> Result<Outcome, BackendError> {
        let tk = self.to_tuner_kernel(kernel);
        let hash = kernel.content_hash();
        let options = TuneOptions {
            // the configurations the rewrite expects to win are measured first
            seeds: kernel
                .seeds
                .iter()
                .map(|s| kt_tuner::Config::ints(s.iter().map(|(n, v)| (n.as_str(), *v))))
                .collect(),
            ..self.options(&hash)
        };
        match self.tune(label, tk.clone(), options, progress).await? {
            Ok(tuned) => {
                let outcome = tuned_outcome::outcome(&tuned);
                self.results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(hash, (tk, tuned.result));
                Ok(outcome)
            }
            // The candidate's own reference launch disagreed with the tests' expected outputs: a wrong answer.
            Err(
                TunerError::Reference { test, reason }
                | TunerError::ReferenceFault { test, reason },
            ) => Ok(Outcome::WrongAnswer {
                config: "the first configuration".into(),
                test,
                output: String::new(),
                mismatches: Vec::new(),
                mismatched: 0,
                total: 0,
                detail: reason,
            }),
            Err(TunerError::Space(detail)) => Ok(Outcome::NoValidConfig { detail }),
            Err(TunerError::Source(detail)) => Ok(Outcome::CompileError {
                config: "all".into(),
                log: detail,
            }),
            Err(e) => Err(backend_error(e)),
        }
    }

    async fn time_pair(
        &self,
        first: (&TunableCode, &BTreeMap<String, i64>),
        second: (&TunableCode, &BTreeMap<String, i64>),
        launches: u32,
    ) -> Result<PairTimes, BackendError> {
        let session = self.session.clone();
        let config = self.config.clone();
        let config_of =
            |p: &BTreeMap<String, i64>| Config::ints(p.iter().map(|(k, v)| (k.as_str(), *v)));
        let (a, ca) = (self.to_tuner_kernel(first.0), config_of(first.1));
        let (b, cb) = (self.to_tuner_kernel(second.0), config_of(second.1));
        let job = tokio::task::spawn_blocking(move || -> Result<PairTimes, BackendError> {
            let started = std::time::Instant::now();
            let mut guard = session.lock().unwrap_or_else(|p| p.into_inner());
            let s = open_session(&mut guard, &config)?;
            let test = s
                .tests
                .tests
                .first()
                .cloned()
                .ok_or_else(|| BackendError::Failed {
                    detail: format!("no tests in {}", config.tests_dir.display()),
                })?;
            let id = test.id.clone();
            let first_ms = time_launches(s, &a, &ca, &test, launches)?;
            let second_ms = time_launches(s, &b, &cb, &test, launches)?;
            tracing::debug!(
                launches,
                ms = started.elapsed().as_secs_f64() * 1e3,
                "timed the pair's separate launches"
            );
            Ok(PairTimes {
                test: id,
                first_ms,
                second_ms,
            })
        });
        job.await.map_err(|e| BackendError::Failed {
            detail: format!("the timing thread failed: {e}"),
        })?
    }

    fn export_kernel_tuner(
        &self,
        kernel: &TunableCode,
        dir: &Path,
    ) -> Result<Vec<PathBuf>, BackendError> {
        let results = self.results.lock().unwrap_or_else(|p| p.into_inner());
        let Some((tk, result)) = results.get(&kernel.content_hash()) else {
            return Ok(Vec::new());
        };
        // A tuning job abandoned at Ctrl-C keeps the session until it ends; waiting for it here would hold
        // the interrupted run's exit for as long as that job runs. The export is made again when the run ends.
        let session = match self.session.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                tracing::info!("Kernel Tuner export skipped: a tuning job is still running");
                return Ok(Vec::new());
            }
        };
        let Some(tests) = session.as_ref().map(|s| &s.tests) else {
            return Ok(Vec::new());
        };
        if tests.tests.is_empty() {
            return Ok(Vec::new());
        }
        // cache, script, kernel source and the first test's arrays, side by side: the directory runs anywhere
        kt_tuner::export::KernelTunerExport::new(tk, tests, result)
            .and_then(|e| e.write(dir, None))
            .map_err(|e| BackendError::Failed {
                detail: format!("Kernel Tuner export: {e}"),
            })
    }

    fn configurations(
        &self,
        kernel: &TunableCode,
    ) -> Option<crate::stage3::backend::config_record::ConfigRecord> {
        let results = self.results.lock().unwrap_or_else(|p| p.into_inner());
        results
            .get(&kernel.content_hash())
            .map(|(_, result)| crate::stage3::backend::config_record::config_record(result))
    }

    fn gpu(&self) -> Option<crate::gpu_record::GpuRecord> {
        self.gpu.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use crate::stage3::backend::early_tuner::EarlyTuner;
    use crate::stage3::backend::tuned_outcome::tests::{config, result};
    use kt_tuner::Verdict;

    /// A backend of a one-line kernel with its caches under `dir`, nothing started; and the kernel.
    pub(crate) fn small_backend(dir: &std::path::Path) -> (Arc<TunerBackend>, TunableCode) {
        let source = "extern \"C\" __global__ void k(float* a, int n) { a[0] = n; }\n";
        let kernel = kt_cuda::parse(source)
            .unwrap()
            .select_kernel(None)
            .unwrap()
            .clone();
        let info = crate::KernelInfo {
            name: "k".into(),
            parameters: vec!["a".into(), "n".into()],
            description: "writes".into(),
            problem_size: vec![crate::ProblemDimension {
                expression: "n".into(),
            }],
            outputs: vec!["a".into()],
            inputs_and_outputs: vec![],
            default_block: [256, 1, 1],
        };
        let original = TunableCode::original(source, &info);
        let backend = Arc::new(TunerBackend::new(TunerBackendConfig {
            tests_dir: dir.join("tests"),
            kernel,
            problem_size: vec!["n".into()],
            tolerances: BTreeMap::new(),
            cache_dir: dir.join("tuning"),
            flops: None,
            bytes: None,
            flops_exact: false,
            strategy: kt_tuner::Strategy::BruteForce,
            seed: None,
            max_evals: None,
            time_limit: None,
            original: original.clone(),
            include_dirs: Vec::new(),
            profile_cache: None,
            early_tuner: EarlyTuner::default(),
            tuner_cache: None,
            takes_profiles: true,
        }));
        (backend, original)
    }

    #[test]
    fn the_kernel_tuner_export_does_not_wait_for_a_tuning_job_still_running() {
        let dir = tempfile::tempdir().unwrap();
        let (backend, original) = small_backend(dir.path());
        let fast = kt_tuner::Measurement::synthetic(config(64), Verdict::Ok, Some(1.0));
        backend.results.lock().unwrap().insert(
            original.content_hash(),
            (
                backend.to_tuner_kernel(&original),
                result(vec![fast.clone()], Some(fast)),
            ),
        );
        // The abandoned job: it holds the session for as long as it runs.
        let session = backend.session.clone();
        let job = session.lock().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let exporter = backend.clone();
        let out = dir.path().join("kernel_tuner");
        std::thread::spawn(move || {
            let _ = tx.send(
                exporter
                    .export_kernel_tuner(&original, &out)
                    .map(|f| f.len()),
            );
        });
        let written = rx
            .recv_timeout(std::time::Duration::from_secs(2))
            .expect("the export waited for the tuning job");
        assert_eq!(written.unwrap(), 0);
        drop(job);
    }
}
