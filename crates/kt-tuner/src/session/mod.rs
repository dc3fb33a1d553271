//! The tuning session: the API the pipeline and the CLI call. A `Tuner` owns one worker process (restarted
//! whenever a kernel hangs or faults) and one compiler pool; each public operation is a file of its own:
//! `tuning` (search a kernel's space on a set of tests; one configuration's evaluation is in `evaluate`),
//! `verification` (a candidate against a reference on the same inputs), `launch_time` (one timed launch,
//! to size tests), `reference_probe` (whether the reference gives expected values on a test), `reference_run` (expected outputs written to .npy files) and `peak` (the device's copy
//! bandwidth). Beneath them, `compile_queue` (tickets in front of the compiler pool, modules remembered
//! for reloads) and `worker_link` (the worker's lifecycle), held together in an `Engine`.
//!
//! Overlap is what makes a short run fast: the worker creates its context and generates the inputs while
//! the parent starts NVRTC and compiles the first batch of configurations on all cores.
//!
//! `tuner.rs` holds the `Tuner` itself and the device queries it makes before a worker is up.

mod back_to_back;
mod best_choice;
mod compile_queue;
mod default_launch;
mod determinism;
mod engine;
mod evaluate;
mod launch_time;
mod peak;
mod plan;
mod plausibility;
mod reference_probe;
mod reference_run;
mod run_request;
mod search_run;
pub mod setup;
mod tuner;
mod tuning;
mod verification;
mod worker_link;

pub use crate::model::outcome::{
    Measurement, Phases, Progress, ReferenceOutputs, TestVerdict, TuneResult, Verdict, VerifyReport,
};
pub use compile_queue::kernel_program;
#[cfg(test)]
pub(crate) use determinism::judge as judge_reruns;
pub use setup::{TunableKernel, TuneOptions, TunerConfig, config_from_block};
pub use tuner::{Tuner, device_scale, test_scalars};
