//! [`TuningBackend`]: everything Stage 3 needs from a GPU, behind one trait — measure the original kernel, and
//! compile + verify on every test + tune a candidate. The real implementation drives kt-tuner; the fake one
//! ([`crate::stage3::backend::fake_backend`]) lets every graph path run in CPU tests. Results are plain data so they can be
//! recorded as graph effects and replayed without a GPU.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use crate::error::BackendError;
use crate::error::FailureKind;
use crate::stage3::tunable_code::TunableCode;

/// The first elements where a candidate's output differs from the expected output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    /// Flat element index.
    pub index: u64,
    pub expected: String,
    pub got: String,
}

/// What happened to a candidate. Only `Verified` may ever become the best kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Outcome {
    /// Correct on every test; timed at its best configuration.
    Verified {
        time_ms: f64,
        noise_ms: f64,
        best_params: BTreeMap<String, i64>,
        configs_tried: u32,
        configs_failed: u32,
        percent_of_peak: Option<f64>,
        /// Achieved GFLOP/s on the first test, when the kernel's FLOP count is known.
        #[serde(default)]
        gflops: Option<f64>,
        /// The GPU time this tuning's ranking needed beside its wall time; absent in recorded outcomes from
        /// before kt measured it (they replay unchanged).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        efficiency: Option<kt_record::TuningEfficiency>,
    },
    /// No configuration compiled; `log` is the compiler's output for a representative one.
    CompileError { config: String, log: String },
    /// Compiled and ran, but computed something else than the original kernel.
    WrongAnswer {
        config: String,
        /// Test id (directory name under tests/).
        test: String,
        output: String,
        mismatches: Vec<Mismatch>,
        /// How many elements differ in all.
        mismatched: u64,
        total: u64,
        /// The tuner's own description, when it says more than the fields above.
        #[serde(default)]
        detail: String,
    },
    /// A launch did not finish in time and was killed.
    Timeout { config: String, seconds: f64 },
    /// A launch faulted (illegal address, misaligned access, ...).
    Crashed { config: String, detail: String },
    /// No configuration could run: every one was excluded by restrictions or used too many resources.
    NoValidConfig { detail: String },
}

impl Outcome {
    pub fn is_verified(&self) -> bool {
        matches!(self, Outcome::Verified { .. })
    }

    /// Why this verdict is a failure, or None when it is [`Outcome::Verified`].
    pub fn failure_kind(&self) -> Option<FailureKind> {
        Some(match self {
            Outcome::Verified { .. } => return None,
            Outcome::CompileError { .. } => FailureKind::CompileError,
            Outcome::WrongAnswer { .. } => FailureKind::WrongAnswer,
            Outcome::Timeout { .. } => FailureKind::Timeout,
            Outcome::Crashed { .. } => FailureKind::Crashed,
            Outcome::NoValidConfig { .. } => FailureKind::NoValidConfig,
        })
    }

    /// Short name of the verdict, for reports and file names.
    pub fn verdict(&self) -> &'static str {
        match self {
            Outcome::Verified { .. } => "verified",
            Outcome::CompileError { .. } => "compile error",
            Outcome::WrongAnswer { .. } => "wrong answer",
            Outcome::Timeout { .. } => "timeout",
            Outcome::Crashed { .. } => "crashed",
            Outcome::NoValidConfig { .. } => "no valid configuration",
        }
    }
}

/// The original kernel at its default launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    pub time_ms: f64,
    pub noise_ms: f64,
    pub percent_of_peak: Option<f64>,
    #[serde(default)]
    pub gflops: Option<f64>,
    /// The device it ran on, for the report.
    pub device: String,
    /// The device's theoretical DRAM bandwidth and FP32 rate (the roofline's roof), when the driver tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theoretical_peaks: Option<kt_profile::DevicePeaks>,
    /// FLOPs per byte moved on the first test, from the kernel's work expressions (sidecar): the x of every
    /// version of the kernel on the roofline (the same problem, the same work).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arithmetic_intensity: Option<f64>,
}

/// One launch of a kernel at one configuration under Nsight Compute, or why there is none. Profiling never
/// fails a run: a missing ncu, restricted counters or an ncu error leave `skipped` saying so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileRun {
    pub profile: Option<kt_profile::KernelProfile>,
    pub skipped: Option<String>,
    /// Wall time of the profiling, seconds (ncu, the program it watched and its compile).
    pub seconds: f64,
    /// The profile came from the profile cache (an earlier run profiled the same kernel, configuration,
    /// test and GPU).
    #[serde(default)]
    pub cached: bool,
}

impl ProfileRun {
    /// No profile, for `reason`.
    pub fn skipped(reason: impl Into<String>) -> Self {
        ProfileRun {
            profile: None,
            skipped: Some(reason.into()),
            seconds: 0.0,
            cached: false,
        }
    }
}

/// Per-launch times of two kernels on one test, each in separate launches (the final timing and the acceptance
/// check of a step compare these, not the tuning objective).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairTimes {
    /// Test id (directory name under tests/) the launches ran on.
    pub test: String,
    /// Milliseconds of each launch of the first kernel.
    pub first_ms: Vec<f64>,
    /// Milliseconds of each launch of the second kernel.
    pub second_ms: Vec<f64>,
}

/// Progress of a tuning run, for the progress bar.
pub trait TuningProgress: Send + Sync {
    fn update(&self, label: &str, done: u64, total: u64);
}

/// A progress sink that ignores updates.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl TuningProgress for NoProgress {
    fn update(&self, _label: &str, _done: u64, _total: u64) {}
}

/// Compile, verify and tune; measure the reference. Implementations own the tests and the device.
#[async_trait]
pub trait TuningBackend: Send + Sync {
    /// Times the original kernel at its default launch (the baseline of every speedup).
    async fn reference(&self, original: &TunableCode) -> Result<Reference, BackendError>;

    /// Compiles every configuration of `kernel`, verifies it on every test, times it, and reports the best
    /// verified configuration, or why there is none. `label` names the candidate in logs and caches.
    async fn evaluate(
        &self,
        label: &str,
        kernel: &TunableCode,
        progress: &dyn TuningProgress,
    ) -> Result<Outcome, BackendError>;

    /// Times `first` at `first_params` and `second` at `second_params` in `launches` separate launches each on
    /// one test (the first), each launch timed on its own: the samples behind a speedup's interval.
    async fn time_pair(
        &self,
        first: (&TunableCode, &BTreeMap<String, i64>),
        second: (&TunableCode, &BTreeMap<String, i64>),
        launches: u32,
    ) -> Result<PairTimes, BackendError>;

    /// Profiles one launch of `kernel` at `params` on the first test with Nsight Compute. Backends that
    /// cannot profile say why in [`ProfileRun::skipped`].
    async fn profile(
        &self,
        _label: &str,
        _kernel: &TunableCode,
        _params: &BTreeMap<String, i64>,
    ) -> Result<ProfileRun, BackendError> {
        Ok(ProfileRun::skipped(
            "this tuning backend does not profile kernels",
        ))
    }

    /// Writes the Kernel Tuner export (cache JSON and a `tune_<kernel>.py`) of `kernel` into `dir`. Backends
    /// without tuning records write nothing.
    fn export_kernel_tuner(
        &self,
        _kernel: &TunableCode,
        _dir: &std::path::Path,
    ) -> Result<Vec<std::path::PathBuf>, BackendError> {
        Ok(Vec::new())
    }

    /// What the tuning of `kernel` in this process made of its configurations (best.cu's header lists the
    /// failed ones). None: no record (a backend without one, or a kernel tuned before a resume).
    fn configurations(
        &self,
        _kernel: &TunableCode,
    ) -> Option<crate::stage3::backend::config_record::ConfigRecord> {
        None
    }

    /// The GPU this backend's kernels ran on, once it has run one (run.json and result.json record it).
    fn gpu(&self) -> Option<crate::gpu_record::GpuRecord> {
        None
    }
}
