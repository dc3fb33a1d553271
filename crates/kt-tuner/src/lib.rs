//! kt-tuner: kt's embedded auto-tuner. It takes a CUDA kernel with named tunable parameters, a search space
//! and a set of tests, and finds the fastest configuration that computes the right answer: NVRTC compiles
//! each configuration straight to a CUBIN on a pool of threads (cached in memory and on disk); a separate
//! worker process owns the GPU, so a kernel that hangs or faults costs one configuration, not the run; every
//! output of every test is verified on the GPU against poisoned buffers; times are medians of CUDA-event
//! samples; strategies range from brute force to a genetic algorithm; results go to an append-only cache
//! and export to Kernel Tuner's formats.
//!
//! It deliberately does not rewrite kernels or talk to an LLM (kt-pipeline does), and it does not parse
//! CUDA beyond asking kt-cuda for the kernel signature.
//!
//! Main types in reading order: [`TunableKernel`] and [`TuneOptions`] (what to tune, how) with the
//! [`SearchSpace`] of [`Config`]s and the [`TestSet`] it runs on; the [`Tuner`] (`session`), whose
//! operations each live in a file of their own (tuning loop, one configuration's evaluation, verification,
//! reference runs, peak); what comes back is in `model::outcome`: a [`Verdict`] and a [`Measurement`] per
//! configuration, a [`TuneResult`], a [`VerifyReport`].
//!
//! The crate stands in floors, each a folder whose `mod.rs` says what it holds. Bottom up: `model` (the
//! nouns: arguments and tests, the space, geometry, the tunable kernel, outcomes), `compile` (file to
//! module: NVRTC, nvcc, the module cache), `check` (timing, verification, guards, the physics floor),
//! `search` (one strategy a file), `worker` (the process that owns the GPU) and `session` (the `Tuner`).
//! Beside the tuning itself: `input` (what `kt tune` and `kt verify` read before a GPU is asked for),
//! `export` (the results cache and Kernel Tuner's formats) and `host` (the machine: probe, self command,
//! compute-sanitizer, selftest).

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod check;
pub mod compile;
pub mod error;
pub mod export;
pub mod host;
pub mod input;
pub mod model;
pub mod search;
pub mod session;
pub mod worker;

pub use check::measure::{Baseline, TimingPolicy, TimingStats};
pub use check::verify::OutputReport;
pub use compile::kernel_file::{KernelFile, KernelSource, kernel_source};
pub use error::TunerError;
pub use model::args::{
    ArrayArg, ArraySource, Distribution, KernelTest, ParamSpec, ScalarArg, SizeChoice, SuiteInputs,
    TestArg, TestSet,
};
pub use model::block_names::BlockNames;
pub use model::geometry::{Geometry, LaunchDims};
pub use model::param_value::ParamValue;
pub use model::space::{Config, Restriction, SearchSpace, TunableParam};
pub use model::tolerance::Tolerance;
pub use model::tunable_kernel::SourceGenerator;
pub use search::Strategy;
pub use session::{
    Measurement, Phases, Progress, ReferenceOutputs, TunableKernel, TuneOptions, TuneResult, Tuner,
    Verdict, VerifyReport,
};
pub use worker::protocol::RecordedOutput;
