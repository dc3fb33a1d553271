//! What Stage 3 runs with: the strategy, the LLM, the prompts and the tuning backend, built once the tests exist.

use std::sync::Arc;

use kt_graph::{CancelToken, Event};
use kt_llm::{LlmClient, StructuredMode};

use crate::kernel_info::KernelInfo;
use crate::prompt::PromptLibrary;
use crate::stage3::{
    EarlyTuner, TunableCode, TunerBackend, TunerBackendConfig, TuningBackend, TuningProgress,
};
use crate::strategy::Strategy;
use kt_record::RunDir;

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
    /// Whether the strategy may profile kernels (Nsight Compute is started ahead of time only then).
    pub takes_profiles: bool,
}

/// The real backend: kt-tuner on this machine's GPU, brute force over each candidate's space.
pub fn tuner_backend(inputs: &BackendInputs<'_>) -> Arc<dyn TuningBackend> {
    real_backend(inputs, EarlyTuner::default())
}

/// Starts the first profile's standby for `kernel` now, before the run directory exists, in kt's shared
/// tuner cache (nothing without one: the standby would then belong in the run's `tuning/`).
pub fn start_profile_standby(kernel: &str) -> EarlyTuner {
    match crate::stage3::default_tuner_cache() {
        Some(dir) => EarlyTuner::with_standby(dir, kernel),
        None => EarlyTuner::default(),
    }
}

/// Starts the tuner of `run`'s backend now, on a thread, in `early` (which may hold the first profile's
/// standby already; when the strategy `takes_profiles` one is started unless it does), for
/// [`tuner_backend_with`] to take over once Stages 1 and 2 are done.
pub fn start_early_tuner(
    run: &RunDir,
    early: EarlyTuner,
    kernel: &str,
    takes_profiles: bool,
) -> EarlyTuner {
    let tuner_cache = crate::stage3::default_tuner_cache();
    early.start(
        tuner_cache.unwrap_or_else(|| run.tuning_dir()),
        kernel,
        takes_profiles,
    )
}

/// The real backend, taking over `early` (a tuner started while Stages 1 and 2 ran) on its first call.
pub fn tuner_backend_with(early: EarlyTuner) -> BackendFactory {
    Arc::new(move |inputs: &BackendInputs<'_>| real_backend(inputs, early.clone()))
}

fn real_backend(inputs: &BackendInputs<'_>, early_tuner: EarlyTuner) -> Arc<dyn TuningBackend> {
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
        flops_exact: inputs.sidecar.is_some_and(|s| s.flops_exact),
        strategy: kt_tuner::Strategy::BruteForce,
        // Brute force ignores it; it is passed so a randomized strategy here stays reproducible per run.
        seed: settings.as_ref().and_then(|s| s.seed),
        max_evals: Some(400),
        time_limit: Some(std::time::Duration::from_secs(600)),
        original: inputs.original.clone(),
        include_dirs: settings.map(|s| s.include_paths()).unwrap_or_default(),
        profile_cache: crate::stage3::default_profile_cache(),
        early_tuner,
        tuner_cache: crate::stage3::default_tuner_cache(),
        takes_profiles: inputs.takes_profiles,
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
