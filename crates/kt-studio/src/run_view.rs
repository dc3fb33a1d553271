//! What the run page shows, gathered in one read of the run directory: the summary, the graph with the path
//! taken and the node(s) running now, the recent steps, LLM calls (tokens and time, prompts on demand),
//! kernel versions with their verdicts and tuning, tuning progress as it happens, charts and the roofline.
//! Built on kt-runs' report collection, so the studio and `kt runs report --html` read a run the same way.

use kt_runs::report::{KernelFile, TuningRow};
use kt_runs::{Breakpoints, PathStep, ReportInputs, RunRecord, RunSummary, WaitingAnswer};
use serde::Serialize;
use serde_json::Value;

use crate::charts::{tuning_distribution_svg, tuning_series};
use crate::error::StudioError;
use crate::redact::redact;
use crate::tuning_progress::{TuningProgress, tuning_progress};

/// The most recent steps sent with the page; the full history is its own request.
const RECENT_STEPS: usize = 200;
/// The page's other lists are bounded the same way on a long run: the newest LLM calls (any call's prompt
/// is still one request away, by its number), kernel versions and verdicts.
const RECENT_LLM_CALLS: usize = 200;
const RECENT_KERNELS: usize = 50;
const RECENT_VERDICTS: usize = 500;

/// One LLM call without its prompt and answer (those come with `/llm/N`).
#[derive(Debug, Clone, Serialize)]
pub struct LlmCallLine {
    pub index: usize,
    pub node: String,
    pub time: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub elapsed_ms: u64,
    pub error: Option<String>,
}

/// The run page's data.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    pub summary: RunSummary,
    pub result: Option<Value>,
    pub graph_run: String,
    pub graph_svg: String,
    /// Nodes scheduled at the head while the run is running: the ones running now.
    pub running: Vec<String>,
    /// The head checkpoint and how many checkpoints lie on its path.
    pub head: Option<u64>,
    pub steps_total: usize,
    /// The last [`RECENT_STEPS`] steps of the path to the head.
    pub steps: Vec<PathStep>,
    pub breakpoints: Breakpoints,
    pub waiting_for: Option<WaitingAnswer>,
    /// The last [`RECENT_VERDICTS`] of `verdicts_total`.
    pub verdicts: Vec<kt_runs::KernelVerdict>,
    pub verdicts_total: usize,
    /// The last [`RECENT_LLM_CALLS`] of `llm_total`.
    pub llm: Vec<LlmCallLine>,
    pub llm_total: usize,
    /// The last [`RECENT_KERNELS`] of `kernels_total`.
    pub kernels: Vec<KernelFile>,
    pub kernels_total: usize,
    pub tuning: Vec<TuningRow>,
    pub tuning_progress: Vec<TuningProgress>,
    pub speedup_svg: String,
    pub tuning_svg: String,
    pub roofline_svg: Option<String>,
    pub profile_lines: Vec<String>,
}

/// Reads the run page's data from `record`'s directory.
pub fn run_view(record: &RunRecord) -> Result<RunView, StudioError> {
    let dot = kt_runs::graph_dot(record);
    // only the steps the page shows are read in full: a long run's other states stay on disk
    let inputs = ReportInputs::collect_recent(record, dot.as_deref(), RECENT_STEPS)?;
    let meta = record.meta()?;
    let head = record.head().ok();
    let running = match (&inputs.summary.status[..], inputs.path.last()) {
        ("running", Some(last)) => last
            .next
            .iter()
            .map(|n| n.split('#').next().unwrap_or(n).to_string())
            .collect(),
        _ => Vec::new(),
    };
    let steps_total = inputs.steps_total;
    let steps = inputs.path[inputs.path.len().saturating_sub(RECENT_STEPS)..].to_vec();
    let roofline_svg = inputs.roofline.as_ref().and_then(|r| {
        r.svg(&format!("{} on {}", inputs.summary.kernel, r.device))
            .ok()
    });
    let profile_lines = kt_runs::profile_lines(&inputs.profiles, inputs.summary.duration_s);
    let llm_total = inputs.llm.len();
    let llm = inputs
        .llm
        .iter()
        .enumerate()
        .skip(llm_total.saturating_sub(RECENT_LLM_CALLS))
        .map(|(index, c)| LlmCallLine {
            index,
            node: c.node.clone(),
            time: c.time.clone(),
            tokens_in: c.tokens_in,
            tokens_out: c.tokens_out,
            elapsed_ms: c.elapsed_ms,
            error: c.error.clone(),
        })
        .collect();
    let mut result = inputs.result.clone();
    if let Some(r) = result.as_mut() {
        redact(r);
    }
    let tuning_progress = tuning_progress(&record.dir().tuning_dir());
    Ok(RunView {
        graph_svg: inputs.graph.to_svg(),
        speedup_svg: inputs.speedup_svg(),
        tuning_svg: tuning_distribution_svg(&tuning_series(&tuning_progress, &inputs.tuning)),
        tuning_progress,
        waiting_for: kt_runs::waiting_prompt(record.dir()).ok().flatten(),
        summary: inputs.summary,
        result,
        graph_run: inputs.graph_run,
        running,
        head: head.map(|h| h.0),
        steps_total,
        steps,
        breakpoints: meta.breakpoints,
        verdicts_total: inputs.verdicts.len(),
        verdicts: newest(inputs.verdicts, RECENT_VERDICTS),
        llm,
        llm_total,
        kernels_total: inputs.kernels.len(),
        kernels: newest(inputs.kernels, RECENT_KERNELS),
        tuning: inputs.tuning,
        roofline_svg,
        profile_lines,
    })
}

/// The last `n` items of `items`.
fn newest<T>(mut items: Vec<T>, n: usize) -> Vec<T> {
    let from = items.len().saturating_sub(n);
    items.split_off(from)
}

/// One LLM call in full: prompt and raw answer (API keys never reach llm.jsonl; redacted all the same).
pub fn llm_call(record: &RunRecord, index: usize) -> Result<Value, StudioError> {
    let records = kt_llm::read_records(&record.dir().llm_jsonl())
        .map_err(|e| StudioError::BadRequest(format!("llm.jsonl cannot be read: {e}")))?;
    let Some(call) = records.into_iter().nth(index) else {
        return Err(StudioError::BadRequest(format!(
            "the run has no LLM call #{index}"
        )));
    };
    let mut value = serde_json::to_value(call)
        .map_err(|e| StudioError::Task(format!("serializing an LLM call: {e}")))?;
    redact(&mut value);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_list_keeps_its_newest_items_in_order() {
        assert_eq!(newest((0..10).collect(), 3), [7, 8, 9]);
        assert_eq!(newest(vec![1, 2], 5), [1, 2]);
        assert_eq!(newest(Vec::<u8>::new(), 5), Vec::<u8>::new());
    }
    use kt_pipeline::job::recorded_run::record_matmul_run;

    #[tokio::test]
    async fn the_recorded_run_shows_its_graph_calls_kernels_and_charts() {
        let home = tempfile::tempdir().unwrap();
        let run = record_matmul_run(home.path()).await;
        let record = RunRecord::open(run).unwrap();
        let view = run_view(&record).unwrap();
        assert_eq!(view.summary.status, "finished");
        assert!(view.running.is_empty(), "a finished run runs nothing");
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
        assert_eq!(view.llm.len(), 8);
        assert_eq!(view.kernels.len(), 3);
        assert!(view.speedup_svg.contains("speedup-svg"));
        assert!(view.tuning_svg.contains("tuning-svg"));
        assert!(
            view.roofline_svg.is_some(),
            "the fixture has a device's peaks"
        );
        assert_eq!(view.steps_total, view.steps.len());
        assert_eq!((view.llm_total, view.kernels_total), (8, 3));
        assert_eq!(view.verdicts_total, view.verdicts.len());
        let call = llm_call(&record, 0).unwrap();
        assert!(call["messages"].as_array().is_some_and(|m| !m.is_empty()));
        assert!(llm_call(&record, 99).is_err());
    }
}
