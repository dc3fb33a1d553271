//! kt-experiments turns an experiment design (a TOML file: kernels × strategies × settings grids × models ×
//! repeats, with per-cell budgets) into a deterministic list of *cells*, runs every cell as an ordinary
//! `kt transform` subprocess (one worker per GPU, or `--jobs` workers), resumes half-finished cells with
//! `kt resume`, records one JSON line per finished cell in `<out>/cells.jsonl`, and aggregates those lines
//! into tables (Markdown, CSV, JSON) and plots (PNG, SVG). It also writes a SLURM job-array script that runs
//! the same cells on a cluster.
//!
//! It deliberately knows nothing of how a kernel is transformed: it never links the pipeline, only spawns the
//! `kt` binary and reads the files a run leaves on disk (`result.json`, `llm.jsonl`; see RUN_FORMAT.md). So a
//! cell is exactly the run a user would get by typing the command by hand, checkpointed and debuggable with
//! the usual tools, and the coordinator can be tested with a fake `kt`.
//!
//! The design file format and the cell-id scheme are documented in [`design`] and [`cell`].

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod budget;
pub mod cell;
pub mod cell_run;
pub mod design;
pub mod error;
pub mod expand;
pub mod interrupt;
pub mod launch;
pub mod ledger;
pub mod necessity;
pub mod plot;
pub mod progress;
pub mod report;
pub mod roofline;
pub mod run_dir;
pub mod schedule;
pub mod settings;
pub mod slurm;
pub mod stats;

pub use budget::{Budget, BudgetKind, LlmTally};
pub use cell::{Cell, CellId};
pub use cell_run::{CellOutcome, CellRunner};
pub use design::{Design, KernelSpec, StrategySpec, Study};
pub use error::ExperimentError;
pub use expand::expand;
pub use interrupt::StopSignal;
pub use kt_record::RunResult;
pub use launch::KtBinary;
pub use ledger::{CellRecord, CellStatus, Ledger};
pub use plot::{Plot, write_plots};
pub use report::{CellPoint, Report, ReportFormat, Summary};
pub use run_dir::RunState;
pub use schedule::{Plan, RunOptions, RunSummary, prepare_out_dir, run_experiment, run_one_cell};
pub use settings::SettingValue;
pub use slurm::{GpuRequest, SlurmOptions, SlurmScripts, task_time, write_slurm};
