//! The run page's sections, fetched by the page once its graph and steps are drawn ([`crate::run_view`]):
//! LLM calls (tokens and time, prompts on demand), kernel versions with their verdicts and tuning, tuning
//! progress as it happens, charts and the roofline. Read from the state at the head and the run's files.

use kt_runs::report::{KernelFile, TuningRow};
use kt_runs::{ReportInputs, RunRecord};
use serde::Serialize;
use serde_json::Value;

use crate::charts::{tuning_distribution_svg, tuning_series};
use crate::error::StudioError;
use crate::redact::redact;
use crate::timing::timed;
use crate::tuning_progress::{TuningProgress, tuning_progress};

/// A long run's lists are bounded to their newest items: the LLM calls (any call's prompt is still one
/// request away, by its number), kernel versions and verdicts.
pub const RECENT_LLM_CALLS: usize = 200;
pub const RECENT_KERNELS: usize = 50;
pub const RECENT_VERDICTS: usize = 500;

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

/// The run page's sections.
#[derive(Debug, Clone, Serialize)]
pub struct RunSections {
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
    /// The best accepted step's speedup over the original so far, from the times measured while tuning (the
    /// run's own speedup is measured apart at its end): none before a step is accepted.
    pub speedup_so_far: Option<f64>,
}

/// Reads the run page's sections from `record`'s directory.
pub fn run_sections(record: &RunRecord) -> Result<RunSections, StudioError> {
    let id = record.dir().run_id();
    let inputs = timed(
        "the state at the head and the run's files read",
        &id,
        || ReportInputs::collect_state(record),
    )?;
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
    let tuning_progress = tuning_progress(&record.dir().tuning_dir());
    let accepted = inputs.points.iter().any(|p| p.status == "accepted");
    Ok(RunSections {
        speedup_so_far: inputs
            .points
            .last()
            .map(|p| p.best_speedup)
            .filter(|_| accepted),
        speedup_svg: inputs.speedup_svg(),
        tuning_svg: tuning_distribution_svg(&tuning_series(&tuning_progress, &inputs.tuning)),
        tuning_progress,
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
    use kt_pipeline::job::recorded_run::record_matmul_run;

    #[test]
    fn a_long_list_keeps_its_newest_items_in_order() {
        assert_eq!(newest((0..10).collect(), 3), [7, 8, 9]);
        assert_eq!(newest(vec![1, 2], 5), [1, 2]);
        assert_eq!(newest(Vec::<u8>::new(), 5), Vec::<u8>::new());
    }

    #[tokio::test]
    async fn the_recorded_run_shows_its_calls_kernels_and_charts() {
        let home = tempfile::tempdir().unwrap();
        let run = record_matmul_run(home.path()).await;
        let record = RunRecord::open(run).unwrap();
        let s = run_sections(&record).unwrap();
        assert_eq!(s.llm.len(), 8);
        assert_eq!(s.kernels.len(), 3);
        assert!(s.speedup_svg.contains("speedup-svg"));
        assert!(s.tuning_svg.contains("tuning-svg"));
        assert!(s.roofline_svg.is_some(), "the fixture has a device's peaks");
        assert_eq!((s.llm_total, s.kernels_total), (8, 3));
        assert_eq!(s.verdicts_total, s.verdicts.len());
        assert!(
            s.speedup_so_far.is_some_and(|x| x > 1.0),
            "the fixture accepts a faster step: {:?}",
            s.speedup_so_far
        );
        assert!(!s.verdicts.is_empty(), "the fixture's steps have verdicts");
        let call = llm_call(&record, 0).unwrap();
        assert!(call["messages"].as_array().is_some_and(|m| !m.is_empty()));
        assert!(llm_call(&record, 99).is_err());
    }
}
