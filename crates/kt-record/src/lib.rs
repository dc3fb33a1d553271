//! kt-record: a kt run's records as plain data. The run directory's layout ([`RunDir`]: which file is
//! where), `run.json` ([`RunMeta`]) and `result.json` ([`RunResult`]) with the GPU, sandbox and configuration
//! records inside them, and the tests format (`manifest.json`, `.npy` files, the dtype table) that the
//! generator harness writes, Stage 2 completes and the tuner reads.
//!
//! It deliberately does nothing but read and write these records: no CUDA, no LLM, no graph (a profile inside a
//! result is kt-profile's plain data type). Every crate that
//! writes or reads a run (kt-sandbox, kt-tuner, kt-pipeline, kt-runs, kt-experiments, the `kt` binary) uses
//! these types, so a record has one definition.
//!
//! Main types in reading order: [`RunDir`] and [`ResultFiles`] (`layout`), [`RunMeta`] with [`RunStatus`],
//! [`RunSettings`] (`run_meta`, `run_status`), [`RunLlm`] (`run_llm`), [`GpuRecord`] (`gpu`), [`Protections`] (`protections`),
//! [`ConfigRecord`] (`config`), [`RunResult`] (`result`, read leniently by every reader) with [`RunProfiles`] and
//! [`RunRoofline`] (`profiles`), [`KernelRecord`] (`kernel_record`: `kernels/NNN-<step>.json`), [`GraphOutline`] (`graph_outline`: `graph.json`,
//! the Stage 3 graph's shape), [`LlmCall`] (`llm_call`: a line of `llm.jsonl` as readers see it),
//! [`TuningLine`] (`tuning_line`: the tuner's results cache), and in
//! `tests_format`: [`TestManifest`], [`DType`], the .npy header.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod atomic_write;
pub mod config;
mod error;
pub mod gpu;
pub mod graph_outline;
pub mod kernel_record;
pub mod layout;
mod lenient;
pub mod llm_call;
pub mod profiles;
pub mod protections;
pub mod provenance;
pub mod result;
pub mod run_llm;
pub mod run_meta;
pub mod run_status;
pub mod terminal_text;
pub mod tests_format;
pub mod tuning_efficiency;
pub mod tuning_line;

pub use config::{ConfigRecord, FailedConfiguration};
pub use error::RecordError;
pub use gpu::GpuRecord;
pub use graph_outline::{GraphOutline, OutlineEdge};
pub use kernel_record::{KernelRecord, ORIGINAL_STEP, ParameterRecord};
pub use layout::{NewRun, RUNS_DIR_ENV, ResultFiles, RunDir};
pub use llm_call::{LlmCall, LlmMessage, LlmTokens};
pub use profiles::{ProfileRecord, RunProfiles, RunRoofline};
pub use protections::{ProtectionLine, Protections};
pub use provenance::Provenance;
pub use result::{
    FinalTiming, RESULT_SCHEMA_VERSION, ResultOutcome, RunResult, StepStatus, StepSummary,
    WallTimes,
};
pub use run_llm::RunLlm;
pub use run_meta::{RunMeta, RunSettings, WaitingAnswer};
pub use run_status::RunStatus;
pub use terminal_text::terminal_safe;
pub use tests_format::{DType, ManifestArg, ManifestConstant, TestManifest};
pub use tuning_efficiency::{GpuTime, TuningEfficiency};
pub use tuning_line::{MeasuredConfig, TuningLine, TuningScope, VerdictKind};
