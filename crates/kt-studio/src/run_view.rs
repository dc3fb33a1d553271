//! What the run page shows first: the summary, the graph with the path taken and the node(s) running now,
//! and the recent steps. Read from the checkpoints' heads and the last steps' states alone, so that a long
//! run's page is drawn before anything else is read; LLM calls, kernels, tuning and charts follow as the
//! page's sections ([`crate::sections`]). Built on kt-runs' report collection, so the studio and
//! `kt runs report --html` read a run the same way.

use kt_record::{RunResult, RunStatus};
use kt_runs::report::{PathGraph, is_stage3, path_graph};
use kt_runs::{Breakpoints, PathStep, RunRecord, RunState, RunSummary, WaitingPrompt};
use serde::Serialize;
use serde_json::Value;

use crate::error::StudioError;
use crate::redact::redact;
use crate::timing::timed;

/// The most recent steps sent with the page; the full history is its own request.
pub const RECENT_STEPS: usize = 50;

/// The run page's first data.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    pub summary: RunSummary,
    pub result: Option<Value>,
    pub graph_run: String,
    pub graph_svg: String,
    /// Why the graph drawn is the path alone (a run recorded before its graph's shape was saved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_note: Option<String>,
    /// Nodes scheduled at the head while the run is running: the ones running now.
    pub running: Vec<String>,
    /// The head checkpoint and how many checkpoints lie on its path.
    pub head: Option<u64>,
    pub steps_total: usize,
    /// The last [`RECENT_STEPS`] steps of the path to the head.
    pub steps: Vec<PathStep>,
    pub breakpoints: Breakpoints,
    /// The prompt a `manual:` run waits for, with its id and text.
    pub waiting_for: Option<WaitingPrompt>,
    /// What happened and what to do next, for a run without a final result (the command line's words).
    pub state: Option<RunState>,
    /// The graph drawn is Stage 3's (the strategy's); otherwise the stage the run stopped in.
    pub stage3: bool,
    /// What a `kt resume` started from the page would use as its LLM (or why it could not start).
    pub resume_llm: String,
}

/// Reads the run page's first data from `record`'s directory.
pub fn run_view(record: &RunRecord) -> Result<RunView, StudioError> {
    let id = record.dir().run_id();
    let head = record.head()?;
    // The graph is the one the run saved (no graph is rebuilt); only the steps the page shows are read in
    // full: a long run's other states stay on disk.
    let PathGraph { graph, recent } = timed("the path and its recent steps read", &id, || {
        path_graph(record, head, None, RECENT_STEPS)
    })?;
    let summary = kt_runs::summarize(record.root());
    // the nodes scheduled at the head: running now while the run runs, where it stopped or failed otherwise
    let scheduled: Vec<String> = recent
        .steps
        .last()
        .map(|last| {
            last.next
                .iter()
                .map(|n| n.split('#').next().unwrap_or(n).to_string())
                .collect()
        })
        .unwrap_or_default();
    let running = if summary.status.is_some_and(RunStatus::is_running) {
        scheduled.clone()
    } else {
        Vec::new()
    };
    let stage3 = is_stage3(record);
    let mut graph = graph;
    if !summary.status.is_some_and(RunStatus::is_finished) || !stage3 {
        graph.end_not_reached();
    }
    graph.add_running(&running);
    let typed = RunResult::read(&record.dir().result_json()).ok().flatten();
    // the page gets the result as JSON, with anything shaped like a secret blanked
    let mut result = typed.as_ref().and_then(|r| serde_json::to_value(r).ok());
    if let Some(r) = result.as_mut() {
        redact(r);
    }
    let at = (!scheduled.is_empty()).then(|| scheduled.join(", "));
    Ok(RunView {
        graph_svg: timed("the graph drawn", &id, || graph.to_svg()),
        graph_note: graph.note.clone(),
        waiting_for: kt_runs::waiting_prompt(record.dir())
            .ok()
            .flatten()
            .map(|w| WaitingPrompt::read(&w)),
        state: kt_runs::run_state(&summary, typed.as_ref(), at.as_deref()),
        resume_llm: crate::steer::resume_llm(record),
        summary,
        result,
        graph_run: record.graph_run().to_string(),
        stage3,
        running,
        head: Some(head.0),
        steps_total: recent.lineage.len(),
        steps: recent.steps,
        breakpoints: record.meta()?.breakpoints,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kt_pipeline::job::recorded_run::record_matmul_run;

    #[tokio::test]
    async fn the_recorded_run_shows_its_graph_path_and_steps() {
        let home = tempfile::tempdir().unwrap();
        let run = record_matmul_run(home.path()).await;
        let record = RunRecord::open(run).unwrap();
        let view = run_view(&record).unwrap();
        assert_eq!(view.summary.status_text(), "finished");
        assert!(view.running.is_empty(), "a finished run runs nothing");
        assert!(view.stage3 && view.state.is_none());
        assert!(view.resume_llm.contains("LLM"), "{}", view.resume_llm);
        assert!(
            view.graph_svg.contains("data-node=\"apply\""),
            "{}",
            view.graph_svg
        );
        assert!(
            view.graph_svg.contains(">planned</text>"),
            "routes are labelled with the outcomes the strategy graph declares: {}",
            view.graph_svg
        );
        assert_eq!(view.steps_total, view.steps.len());
        assert_eq!(view.head, view.steps.last().map(|s| s.checkpoint));
    }
}
