//! How the real backend is set up: the run's tests, the kernel's signature and sidecar facts, the tuner's
//! caches and the bounds of each tuning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::stage2::expected_outputs::RunTests;
use crate::stage3::backend::early_tuner::EarlyTuner;
use crate::stage3::tunable_code::TunableCode;

/// How the real backend is set up.
#[derive(Debug, Clone)]
pub struct TunerBackendConfig {
    /// The tests directory (TESTS_FORMAT.md), with expected outputs.
    pub tests_dir: PathBuf,
    /// The original kernel's parsed signature (argument order and types).
    pub kernel: kt_cuda::Kernel,
    /// Problem size per dimension, x first.
    pub problem_size: Vec<String>,
    /// Per-output tolerances (sidecar); missing outputs get the dtype default.
    pub tolerances: BTreeMap<String, kt_tuner::check::verify::Tolerance>,
    /// Tuner caches (compiled modules, results): the run's `tuning/` directory.
    pub cache_dir: PathBuf,
    /// FLOPs and bytes per launch, as expressions over scalar arguments (sidecar), for % of peak.
    pub flops: Option<String>,
    pub bytes: Option<String>,
    /// The sidecar's `flops_exact`: every flop is done whatever the data (see `kt_cuda::Sidecar`).
    pub flops_exact: bool,
    pub strategy: kt_tuner::Strategy,
    /// The search seed of a randomized strategy (the run's `--seed`); kt-tuner's default when absent.
    pub seed: Option<u64>,
    /// Bounds per candidate.
    pub max_evals: Option<usize>,
    pub time_limit: Option<Duration>,
    /// The user's kernel at its default launch: the ground truth when the tests hold no expected outputs.
    pub original: TunableCode,
    /// Where NVRTC looks for the kernel's own headers (run.json's `include_dirs`).
    pub include_dirs: Vec<PathBuf>,
    /// Profiles kept across runs ([`ProfileCache`]); None profiles every kernel afresh.
    pub profile_cache: Option<PathBuf>,
    /// A tuner started while Stages 1 and 2 ran, taken over by the first call (else one starts then).
    pub early_tuner: EarlyTuner,
    /// The tuner's own cache (compiled modules, device facts such as the measured copy bandwidth), shared
    /// with `kt tune` and across runs ([`default_tuner_cache`]); None keeps them in `cache_dir`. Results stay in
    /// `cache_dir`: every run measures afresh.
    pub tuner_cache: Option<PathBuf>,
    /// Whether the strategy may profile kernels: a standby ncu is started during tunings only then.
    pub takes_profiles: bool,
}

impl TunerBackendConfig {
    /// Where the tuner keeps compiled modules and device facts.
    pub fn tuner_dir(&self) -> &Path {
        self.tuner_cache.as_deref().unwrap_or(&self.cache_dir)
    }
}

/// kt's tuner cache, as `kt tune` uses it: `$XDG_CACHE_HOME/kt/tuner` (default `~/.cache/kt/tuner`);
/// `KT_TUNER_CACHE` names another directory, `off` keeps each run's modules in its own `tuning/`.
pub fn default_tuner_cache() -> Option<PathBuf> {
    kt_sandbox::kt_cache_dir("KT_TUNER_CACHE", "tuner")
}

impl TunerBackendConfig {
    /// The run's tests as Stage 2's expected outputs read them again.
    pub(crate) fn run_tests(&self) -> RunTests<'_> {
        RunTests {
            dir: &self.tests_dir,
            kernel: &self.kernel,
            tolerances: &self.tolerances,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::stage3::backend::tuner_backend::tests::small_backend;

    #[test]
    fn the_tuner_keeps_its_modules_in_the_shared_cache_or_else_in_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let (backend, _) = small_backend(dir.path());
        let mut config = backend.config.clone();
        config.tuner_cache = None;
        assert_eq!(config.tuner_dir(), config.cache_dir.as_path());
        config.tuner_cache = Some(dir.path().join("shared"));
        assert_eq!(config.tuner_dir(), dir.path().join("shared").as_path());
        // Stage 2's late reference run reads the run's own tests
        assert_eq!(config.run_tests().dir, config.tests_dir.as_path());
    }
}
