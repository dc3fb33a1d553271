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
//! reference runs, peak) over a compile queue (`module_cache`, `nvrtc`) and the worker's lifecycle
//! (`worker`: protocol, client, the GPU side split into memory, launching and dispatch); what comes back
//! is in `outcome`: a [`Verdict`] and a [`Measurement`] per configuration, a [`TuneResult`], a
//! [`VerifyReport`]. Search strategies are in `search`, the results cache in `cache`, Kernel Tuner
//! interop in `export`; a candidate's arguments matched to a reference's tests by name in `arg_map`, and
//! compute-sanitizer runs in `sanitize`.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod arg_map;
pub mod args;
pub mod block_names;
pub mod cache;
pub mod compile_check;
pub mod cuda_probe;
pub mod default_tests;
pub mod derived;
pub mod device_kernels;

pub mod error;
pub mod export;
pub mod expr;
pub mod floor;
pub mod geometry;
pub mod guard;
pub mod headers;
pub mod input;
pub mod kernel_file;
pub mod late_check;
pub mod measure;
pub mod module_cache;
pub mod nvcc;
pub mod nvrtc;
pub mod outcome;
pub mod param_value;
pub mod sampling;
pub mod sanitize;
pub mod search;
pub mod self_command;
pub mod selftest;
pub mod session;
pub mod source_stamp;
pub mod space;
pub mod suite;
pub mod sum_floor;
pub mod tolerance;
pub mod tunable_kernel;
pub mod tune_call;
pub mod verify;
pub mod worker;

pub use args::{
    ArrayArg, ArraySource, Distribution, KernelTest, ParamSpec, ScalarArg, SizeChoice, SuiteInputs,
    TestArg, TestSet,
};
pub use block_names::BlockNames;
pub use error::TunerError;
pub use geometry::{Geometry, LaunchDims};
pub use kernel_file::{KernelFile, KernelSource, kernel_source};
pub use measure::{Baseline, TimingPolicy, TimingStats};
pub use param_value::ParamValue;
pub use search::Strategy;
pub use session::{
    Measurement, Phases, Progress, ReferenceOutputs, TunableKernel, TuneOptions, TuneResult, Tuner,
    Verdict, VerifyReport,
};
pub use space::{Config, Restriction, SearchSpace, TunableParam};
pub use tolerance::Tolerance;
pub use verify::OutputReport;
pub use worker::protocol::RecordedOutput;
