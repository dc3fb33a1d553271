//! kt's domain types and the Stage 1 / 2 / 3 graphs.
//!
//! Stage 1 learns what a kernel means (static facts from kt-cuda, the rest from focused LLM questions checked
//! against the parsed signature) and produces a [`KernelInfo`]. Stage 2 has the LLM write input generators,
//! runs them in the sandbox and records the original kernel's outputs as expected results. Stage 3 runs a
//! strategy (one-prompt, explicit, autonomous) loaded from `strategies/` with prompts from `prompts/`.
//! The whole `kt transform` job (Stages 1-3 and the result files) is [`job`], above the stage modules.
//! This crate wires the leaf crates together; it does not talk HTTP, parse C, or launch kernels itself.

pub mod error;
pub mod gpu_record;
mod graph_run;
pub mod job;
pub mod kernel_info;
pub mod kernel_unit;
mod llm_call;
pub mod prepare;
pub mod problem_size;
pub mod prompt;
pub mod run_llm;
pub mod run_llm_file;
pub mod run_lock;
pub mod seed;
pub mod stage1;
pub mod stage2;
pub mod stage3;
pub mod strategy;

pub use error::PipelineError;
pub use kernel_info::{KernelInfo, ProblemDimension};
pub use kt_record::{
    GpuRecord, NewRun, ResultFiles, RunDir, RunLlm, RunMeta, RunSettings, RunStatus, WaitingAnswer,
};
pub use problem_size::SizeExpression;
pub use prompt::{PromptLibrary, PromptTemplate, RenderedPrompt};
