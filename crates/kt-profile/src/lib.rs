//! kt-profile: why a kernel is slow, from Nsight Compute, in facts and in words.
//!
//! It finds `ncu`, builds the command line that profiles exactly one launch of one kernel in a child
//! process with a fixed metric set, parses ncu's raw CSV report (or takes the same metrics by name, as CUPTI in
//! kt-tuner's worker reports them: [`RawLaunch::from_metrics`]) into a typed [`KernelProfile`] (every
//! measured fact optional, so an older ncu or another GPU degrades instead of failing), renders a summary
//! of at most ten lines for a prompt, and draws a roofline. It deliberately knows nothing of LLMs, runs or
//! the pipeline, and never times kernels: the times kt reports come from its own launches. Without ncu,
//! [`ncu_availability`] says why and the caller goes on without profiles.
//!
//! Main types, in reading order:
//! - [`ncu_availability`] / [`ncu_once`] (`locate.rs`) → [`NcuPath`] or [`NcuMissing`] (a message a user
//!   can act on).
//! - [`ProfileCommand`] (`command.rs`): the ncu command line, and `run`, which yields a [`KernelProfile`];
//!   `spawn` starts it early and [`RunningProfile`] (`running.rs`) finishes it later.
//! - [`METRICS`] (`metrics.rs`): the fixed metric set, one group per fact.
//! - [`KernelProfile`] (`profile.rs`, parsed by `raw.rs`): throughput, occupancy and its limiter, memory
//!   traffic and hit rates, spills, bank conflicts, FP32 work and [`Stall`]s ([`StallReason`], `stall.rs`).
//! - [`summarize`] and [`Binding`] (`summary.rs`): the profile in a CUDA programmer's words.
//! - [`roofline_svg`] with [`DevicePeaks`] (from a [`DeviceSpec`]) and [`RooflinePoint`]s (`roofline.rs`).

// Tests may unwrap: a panic there is a failed test with its message.
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod command;
mod error;
mod locate;
pub mod metrics;
mod ncu_log;
mod profile;
mod raw;
mod roofline;
mod running;
mod stall;
mod summary;

pub use command::{ProfileCommand, RunningProfile};
pub use error::ProfileError;
pub use locate::{NcuMissing, NcuPath, SearchPlaces, find_ncu, ncu_availability, ncu_once};
pub use metrics::{METRICS, SUMMARY_METRICS};
pub use profile::{
    BankConflicts, KernelProfile, MemoryTraffic, Occupancy, OccupancyLimiter, Spills, Throughput,
};
pub use raw::{RawLaunch, parse_raw_csv};
pub use roofline::{DevicePeaks, DeviceSpec, RooflinePoint, roofline_svg};
pub use stall::{Stall, StallReason};
pub use summary::{Binding, MAX_LINES, summarize};
