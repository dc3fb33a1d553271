//! The whole `kt transform` job in one run directory, above the stage modules: Stages 1 and 2 (through
//! [`crate::prepare`]), then the strategy's Stage 3 graph (`crate::stage3`) with checkpoints in the run's
//! `run.sqlite`, then the result files. Whatever happens — a missing GPU, Ctrl-C, an error — the result files
//! say where the run stopped, and `kt resume` continues it from its last checkpoint (recorded LLM answers and
//! tuning results are reused, not paid for again).
//!
//! In reading order: [`Stage3Settings`] and the backend it builds (`settings.rs`), [`transform`], [`resume_run`]
//! and [`resume`] (`transform.rs`), what earlier parts of a run left (`earlier.rs`), Stage 3's graph run
//! (`stage3_run.rs`), how a run ended (`finish.rs`, with [`TransformOutcome`] and [`Stopped`] in
//! `outcome.rs`), and the files it leaves (`result.rs`: best.cu, result.json; `report.rs`: report.md; `run_record.rs`,
//! `best_program.rs`).

mod best_program;
mod earlier;
mod finish;
mod outcome;
mod report;
mod result;
mod run_record;
mod settings;
mod stage3_run;
mod test_data;
mod transform;

#[cfg(any(test, feature = "test-support"))]
pub mod recorded_run;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod cassette_tests;
#[cfg(test)]
mod program_input_tests;

pub use earlier::stages_1_2_finished;
pub use outcome::{Stopped, TransformOutcome};
pub use report::{gains_markdown, report_markdown};
pub use result::{
    LlmTotals, RESULT_SCHEMA_VERSION, ResultOutcome, RunResult, StepSummary, WallTimes,
    build_result, llm_totals, write_result,
};
pub use run_record::environment_markdown;
pub use settings::{
    BackendFactory, BackendInputs, EventSink, Stage3Settings, start_early_tuner,
    start_profile_standby, tuner_backend, tuner_backend_with,
};
pub use test_data::{remake_test_data, test_data_missing};
pub use transform::{resume, resume_run, transform};
