//! Profiling a kernel for the LLM and the report: which profiler (`profiler_choice`: CUPTI through the
//! tuner's worker, else Nsight Compute), ncu's launch program and its standby started ahead of need
//! (`profile_launch`, `profile_standby`), profiles kept across runs (`profile_cache`), the real backend's
//! profiling calls (`tuner_profiling`), and what a run keeps of them (`profile_record`, `run_profiles`).

pub(super) mod profile_cache;
pub(super) mod profile_launch;
pub(super) mod profile_record;
pub(super) mod profile_standby;
pub mod profiler_choice;
pub(crate) mod run_profiles;
pub(super) mod tuner_profiling;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod profile_tests;
