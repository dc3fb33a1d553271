//! kt-run-view: reading recorded kt runs — `kt runs list|show|report`, `kt debug history|state|diff`, answering
//! a waiting `manual:` prompt, and the pages of kt studio.
//!
//! Reading a run ([`RunRecord`], [`inspect`], [`steps`], [`report`]) needs only its directory: its records are
//! kt-record's types (the run directory's schema), its checkpoints per-field JSON in `run.sqlite` read through
//! kt-graph, and its graph the shape the run saved (`graph.json`), so that it works on any run without rebuilding
//! anything. Runs recorded before that shape existed draw the path their checkpoints show, and say so.
//!
//! It deliberately does not run anything again (kt-runs does: one node, a replay, a fork), start runs (`kt
//! transform` does), talk to an LLM or a GPU, or render with external tools: the HTML report is one
//! self-contained file with inline CSS and SVG. It depends on kt-record, kt-graph and kt-profile only.
//!
//! Main types in reading order: [`RunSummary`] (`catalog`), [`RunRecord`] (`record`), [`RunShow`] and
//! [`History`] (`inspect`), [`PathStep`] (`steps`), [`RunState`] (`run_state`), [`ReportInputs`] (`report`),
//! [`WaitingPrompt`] (`answer`), [`RunsError`] (`error`).

// Tests may unwrap: a panic there is a failed test with its message.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod answer;
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
mod step_outcome;
pub mod steps;

pub use answer::{WaitingAnswer, WaitingPrompt, answer_waiting_prompt, prompt_id, waiting_prompt};
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
pub use report::{ReportInputs, render_html};
pub use run_state::{RunState, run_state};
pub use steps::{NodeRan, PathStep, RecentPath, nodes_ran, recent_path, run_path};
