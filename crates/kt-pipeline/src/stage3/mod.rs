//! Stage 3: a strategy changes the kernel step by step. After every change kt checks the rewrite (signature,
//! device code only, parameter names, restrictions asked with the new code), compiles it, verifies it on every
//! test and tunes it, and keeps it only if it is correct and faster than the best so far by more than the
//! measured noise. The result is always a verified kernel: the best one found, or the original.
//!
//! Each strategy is a kt-graph graph ([`build_graph`]); every LLM answer and tuning result is a journaled
//! effect, so a resumed or replayed run reuses them. All GPU work goes through [`TuningBackend`], so every
//! path of every graph runs in CPU tests with [`FakeBackend`] and scripted answers.
//!
//! It deliberately does not parse CUDA (kt-cuda), talk to LLM services (kt-llm), launch kernels (kt-tuner),
//! run Stage 1/2, or write a run's result files: the whole job, those files included, is the crate's job module.

mod answers;
mod ask;
pub(crate) mod backend;
pub(crate) mod config_record;
mod context;
mod early_tuner;
mod expected_outputs;
mod fake_backend;
pub(crate) mod feedback;
mod graph;
mod nodes;
mod profile_cache;
mod profile_launch;
mod profile_record;
mod profile_standby;
pub mod profiler_choice;
pub(crate) mod profiling;
mod prompt_vars;
mod rewrite_answer;
mod rewrite_check;
mod speedup_interval;
mod state;
pub(crate) mod tunable_code;
mod tuned_outcome;
mod tuner_backend;
mod tuner_profiling;
mod tuning_job;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod graph_tests;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod outcome_tests;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod profile_tests;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod strategy_tests;

pub use crate::error::FailureKind;
pub use answers::{
    Breakdown, CodeParameters, GridDivisors, KernelRewrite, ParameterRenames, Plan, Rename,
    Restrictions, StepValidation, TunableParameter, WorthIt,
};
pub use ask::SYSTEM_TEMPLATE;
pub use backend::{
    BackendError, Mismatch, NoProgress, Outcome, PairTimes, ProfileRun, Reference, TuningBackend,
    TuningProgress,
};
pub use config_record::{ConfigRecord, FailedConfiguration};
pub use context::{KernelFacts, Stage3Context};
pub use early_tuner::EarlyTuner;
pub use fake_backend::FakeBackend;
pub use feedback::failure_feedback;
pub use graph::{GraphFormat, build_graph, export_graph, node};
pub use profile_cache::{ProfileCache, default_profile_cache};
pub use profile_launch::{ProfileLaunch, run_standby};
pub use profile_standby::STANDBY_ENV;
pub use profiling::{ProfileRecord, RunProfiles, RunRoofline, run_profiles, run_roofline};
pub use rewrite_check::{
    MAX_SPACE_SIZE, check_restrictions, check_rewrite, code_of, normalize_names,
    valid_configurations,
};
pub use speedup_interval::{SpeedupEstimate, speedup_interval};
pub use state::{
    CandidateOutcome, CurrentStep, FinalTiming, LlmCallRecord, PlannedStep, Stage3State,
    Stage3Update, StepRecord, StepStatus, WorthItAnswer,
};
pub use tunable_code::{BLOCK_SIZE_NAMES, KernelVersion, TunableCode, default_grid_divisors};
pub use tuner_backend::{TunerBackend, TunerBackendConfig, default_tuner_cache};
