//! kt's domain types and the Stage 1 / 2 / 3 graphs.
//!
//! Stage 1 learns what a kernel means (static facts from kt-cuda, the rest from focused LLM questions checked
//! against the parsed signature) and produces a [`KernelInfo`]. Stage 2 has the LLM write input generators,
//! runs them in the sandbox and records the original kernel's outputs as expected results. Stage 3 runs a
//! strategy (one-prompt, explicit, autonomous) loaded from `strategies/` with prompts from `prompts/`.
//! This crate wires the leaf crates together; it does not talk HTTP, parse C, or launch kernels itself.

pub mod kernel_info;

pub use kernel_info::{KernelInfo, ProblemDimension};
