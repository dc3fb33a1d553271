//! kt-runs: looking inside recorded kt runs and re-running parts of them — `kt runs list|show|report`,
//! `kt debug history|state|diff|node|break`, `kt replay`, `kt fork`, answering a waiting `manual:` prompt and the run-highlighted `kt graph export`.
//!
//! Reading a run ([`RunRecord`], [`inspect`], [`steps`], [`report`]) needs only its directory: checkpoints are
//! per-field JSON in `run.sqlite`, so it works on any run without rebuilding its graph. Running something
//! again ([`session`]: one node, a replay, a fork, continuing) goes through a [`GraphBinding`], which rebuilds
//! the run's graph with the dependencies a debugging session picks ([`Setup`]: recorded, live or scripted LLM
//! answers, a prompt override, a scratch output directory); [`Stage3Binding`] is kt's. History is never
//! rewritten: replays and forks open branches, and a `debug node` without `--commit` runs on a scratch copy.
//!
//! It deliberately does not start runs (`kt transform` does), talk to a GPU itself (recorded tuning results
//! are reused; anything new goes to kt-pipeline's backend), or render with external tools: the HTML report is
//! one self-contained file with inline CSS and SVG.

// Tests may unwrap: a panic there is a failed test with its message.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod answer;
pub mod binding;
pub mod capture;
pub mod catalog;
pub mod error;
pub mod field_diff;
pub mod history_page;
pub mod inspect;
pub mod locate;
pub mod profiles;
pub mod record;
pub mod report;
pub mod run_state;
pub mod session;
pub mod stage3;
mod step_outcome;
pub mod steps;

#[cfg(test)]
mod session_tests;

pub use answer::{WaitingAnswer, WaitingPrompt, answer_waiting_prompt, prompt_id, waiting_prompt};
pub use binding::{GraphBinding, Setup};
pub use capture::{CallLog, CapturedCall, LlmChoice, live_llm};
pub use catalog::{RunSummary, format_duration, list_runs, summarize};
pub use error::RunsError;
pub use field_diff::{FieldChange, LeafChange, LeafDiff, diff_fields, render_text};
pub use history_page::{HISTORY_PAGE, HistoryPage, history_page};
pub use inspect::{
    History, HistoryEntry, KernelVerdict, RunShow, diff, history, nodes_seen, set_breakpoints,
    show, show_dir, state_at,
};
/// The engine's types that appear in this crate's API.
pub use kt_graph::{Breakpoints, CheckpointId};
/// The records a run directory holds (kt-record, the run directory's schema) that appear in this crate's API.
pub use kt_record::{KernelRecord, ProfileRecord, RunResult, RunRoofline, RunStatus};
pub use locate::{resolve_run, runs_base};
pub use profiles::profile_lines;
pub use record::RunRecord;
pub use report::{ReportInputs, graph_dot, render_html};
pub use run_state::{RunState, run_state};
pub use session::{
    ContinueReport, FieldSet, ForkReport, GraphFormat, NodeDebug, NodeReport, breakpoint_nodes,
    continue_run, debug_node, export, fork, graph_nodes, replay, session_dir,
};
pub use stage3::{RecordedBackend, Stage3Binding};
pub use steps::{NodeRan, PathStep, RecentPath, nodes_ran, recent_path, run_path};
