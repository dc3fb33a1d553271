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
}

/// The real backend: kt-tuner on this machine's GPU, brute force over each candidate's space.
pub fn tuner_backend(inputs: &BackendInputs<'_>) -> Arc<dyn TuningBackend> {
    real_backend(inputs, EarlyTuner::default())
}

/// Starts the tuner of `run`'s backend now, on a thread (and the first profile's standby for `kernel`), for
/// [`tuner_backend_with`] to take over once Stages 1 and 2 are done.
pub fn start_early_tuner(run: &RunDir, kernel: &str) -> EarlyTuner {
    let tuner_cache = crate::stage3::default_tuner_cache();
    EarlyTuner::start(tuner_cache.unwrap_or_else(|| run.tuning_dir()), kernel)
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
