//! kt-runs: recorded kt runs, read and run again — `kt replay`, `kt fork`, `kt debug node|break`, the
//! run-highlighted `kt graph export`, on top of kt-run-view's reading (`kt runs list|show|report`, `kt debug
//! history|state|diff`, answering a waiting prompt), which it re-exports so that one crate serves the commands.
//!
//! Running something again ([`session`]: one node, a replay, a fork, continuing) goes through a
//! [`GraphBinding`], which rebuilds the run's graph with the dependencies a debugging session picks ([`Setup`]:
//! recorded, live or scripted LLM answers, a prompt override, a scratch output directory); [`Stage3Binding`] is
//! kt's. History is never rewritten: replays and forks open branches, and a `debug node` without `--commit`
//! runs on a scratch copy.
//!
//! It deliberately does not start runs (`kt transform` does) or talk to a GPU itself (recorded tuning results
//! are reused; anything new goes to kt-pipeline's backend). Reading a run needs none of this: kt-run-view
//! stands on the records alone.

// Tests may unwrap: a panic there is a failed test with its message.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod binding;
pub mod capture;
pub mod session;
pub mod stage3;

#[cfg(test)]
mod answer_tests;
#[cfg(test)]
mod session_tests;
#[cfg(test)]
mod view_tests;

pub use binding::{GraphBinding, Setup};
pub use capture::{CallLog, CapturedCall, LlmChoice, live_llm};
/// Reading runs: kt-run-view, whole.
pub use kt_run_view::{
    Breakpoints, CheckpointId, FieldChange, HISTORY_PAGE, History, HistoryEntry, HistoryPage,
    KernelRecord, KernelVerdict, LeafChange, LeafDiff, NodeRan, PathStep, ProfileRecord,
    RecentPath, ReportInputs, RunRecord, RunResult, RunRoofline, RunShow, RunState, RunStatus,
    RunSummary, RunsError, WaitingAnswer, WaitingPrompt, answer, answer_waiting_prompt, catalog,
    diff, diff_fields, error, field_diff, format_duration, history, history_page, inspect,
    list_runs, locate, nodes_ran, nodes_seen, profile_lines, profiles, prompt_id, recent_path,
    record, render_html, render_text, report, resolve_run, run_path, run_state, runs_base,
    set_breakpoints, show, show_dir, state_at, steps, summarize, waiting_prompt,
};
pub use session::{
    ContinueReport, FieldSet, ForkReport, GraphFormat, NodeDebug, NodeReport, breakpoint_nodes,
    continue_run, debug_node, export, fork, graph_nodes, replay, session_dir,
};
pub use stage3::{RecordedBackend, Stage3Binding};
