//! Stage 3: a strategy changes the kernel step by step. After every change kt checks the rewrite (signature,
//! device code only, parameter names, restrictions asked with the new code), compiles it, verifies it on every
//! test and tunes it, and keeps it only if it is correct and faster than the best so far by more than the
//! measured noise. The result is always a verified kernel: the best one found, or the original.
//!
//! Each strategy is a kt-graph graph ([`build_graph`]); every LLM answer and tuning result is a journaled
//! effect, so a resumed or replayed run reuses them. All GPU work goes through [`TuningBackend`], so every
//! path of every graph runs in CPU tests with [`FakeBackend`] and scripted answers.
//!
//! Three faces, each a folder: `steps/` (the LLM step loop: the graph, its nodes, the questions and the
//! checks of a rewrite), `backend/` (the GPU behind [`TuningBackend`]: kt-tuner, or the fake) and
//! `profiling/` (CUPTI or Nsight Compute profiles and what a run keeps of them). Beneath them the stage's
//! nouns: its state, context, the LLM's answers and the tunable code.
//!
//! It deliberately does not parse CUDA (kt-cuda), talk to LLM services (kt-llm), launch kernels (kt-tuner),
//! run Stage 1/2 (the original kernel's expected outputs are `stage2::expected_outputs`), or write a run's result files: the whole job, those files included, is the crate's job module.

mod answers;
pub(crate) mod backend;
mod context;
pub mod profiling;
mod state;
pub(crate) mod steps;
pub(crate) mod tunable_code;

pub use crate::error::FailureKind;
pub use answers::{
    Breakdown, CodeParameters, GridDivisors, KernelRewrite, ParameterRenames, Plan, Rename,
    Restrictions, StepValidation, TunableParameter, WorthIt,
};
pub use backend::backend_config::{TunerBackendConfig, default_tuner_cache};
pub use backend::config_record::{ConfigRecord, FailedConfiguration};
pub use backend::early_tuner::EarlyTuner;
pub use backend::fake_backend::FakeBackend;
pub use backend::tuner_backend::TunerBackend;
pub use backend::tuning_backend::{
    BackendError, Mismatch, NoProgress, Outcome, PairTimes, ProfileRun, Reference, TuningBackend,
    TuningProgress,
};
pub use context::{KernelFacts, Stage3Context};
pub use profiling::profile_cache::{ProfileCache, default_profile_cache};
pub use profiling::profile_launch::{ProfileLaunch, run_standby};
pub use profiling::profile_standby::STANDBY_ENV;
pub use profiling::run_profiles::{
    ProfileRecord, RunProfiles, RunRoofline, run_profiles, run_roofline,
};
pub use state::{
    CandidateOutcome, CurrentStep, FinalTiming, LlmCallRecord, PlannedStep, Stage3State,
    Stage3Update, StepRecord, StepStatus, WorthItAnswer,
};
pub use steps::ask::SYSTEM_TEMPLATE;
pub use steps::feedback::failure_feedback;
pub use steps::graph::{GraphFormat, build_graph, export_graph, node};
pub use steps::rewrite_check::{
    MAX_SPACE_SIZE, check_restrictions, check_rewrite, code_of, normalize_names,
    valid_configurations,
};
pub use steps::speedup_interval::{SpeedupEstimate, speedup_interval};
pub use tunable_code::{BLOCK_SIZE_NAMES, KernelVersion, TunableCode, default_grid_divisors};
