//! What the page says where a run has nothing to show: at the top, how the run stands when it has no result
//! (still running, stopped for a GPU or a manual answer, interrupted, the LLM service down, failed), why, and
//! the command that continues it; in a section without content, one line saying why it is empty.

use kt_record::RunStatus;

use super::collect::ReportInputs;
use super::graph_svg::esc;

/// The block under the title for a run without a final result (the words of [`crate::run_state`]);
/// `None` for a finished run.
pub(super) fn run_state(r: &ReportInputs) -> Option<String> {
    let state = crate::run_state::run_state(&r.summary, r.result.as_ref(), None)?;
    let reload = if r.summary.status.is_some_and(RunStatus::is_running) {
        " Reload the page to see more."
    } else {
        ""
    };
    Some(format!(
        "<div id=\"state\" class=\"state\"><strong>{}</strong> {}{reload}</div>",
        code_spans(&state.headline),
        code_spans(&state.detail)
    ))
}

/// `text`, escaped, with its `backticked` parts as `<code>`.
fn code_spans(text: &str) -> String {
    esc(text)
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{part}</code>")
            } else {
                part.to_string()
            }
        })
        .collect()
}

/// One line in place of an empty section: what is missing and why, for this run's status.
pub(super) fn nothing(id: &str, what: &str, r: &ReportInputs) -> String {
    let why = match r.summary.status {
        Some(RunStatus::Finished) => "",
        Some(RunStatus::Running) => " yet: the run is still running",
        _ if r.path.is_empty() => " yet: the run stopped before its strategy's first step",
        _ => " yet: the run stopped before this",
    };
    format!("<p id=\"{id}\" class=\"muted empty\">{what}{why}.</p>")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::RunSummary;
    use crate::report::graph_svg::GraphShape;
    use serde_json::Value;

    pub(crate) fn inputs(status: &str, result: Option<Value>) -> ReportInputs {
        ReportInputs {
            summary: RunSummary {
                id: "20261125-200801-mm-autonomous-abcd".into(),
                recorded_id: None,
                path: "/runs/x".into(),
                kernel: "matrixMultiply".into(),
                strategy: "autonomous".into(),
                model: "scripted".into(),
                status: serde_json::from_value(serde_json::json!(status)).ok(),
                speedup: None,
                speedup_ci95: None,
                gain: None,
                outcome: None,
                waiting_for: None,
                needs_gpu: false,
                started: "2026-11-25T20:08:01Z".into(),
                duration_s: Some(1.5),
                problem: None,
            },
            result: result.map(|v| kt_record::RunResult::from_value(&v)),
            graph_run: "x/stage3".into(),
            graph: GraphShape::default(),
            path: Vec::new(),
            steps_total: 0,
            verdicts: Vec::new(),
            llm: Vec::new(),
            kernels: Vec::new(),
            tuning: Vec::new(),
            points: Vec::new(),
            naive_time_ms: None,
            profiles: Vec::new(),
            roofline: None,
        }
    }

    #[test]
    fn a_run_stopped_for_a_gpu_says_so_and_what_to_run() {
        let r = inputs(
            "interrupted",
            Some(
                serde_json::json!({"needs_gpu": true, "error": "a CUDA GPU is needed from here on: no driver"}),
            ),
        );
        let block = run_state(&r).unwrap();
        assert!(block.contains("needs a CUDA GPU"), "{block}");
        assert!(
            block.contains("kt resume 20261125-200801-mm-autonomous-abcd"),
            "{block}"
        );
        assert!(block.contains("no driver"), "{block}");
    }

    #[test]
    fn each_status_without_a_result_says_what_happened_and_a_finished_run_says_nothing() {
        let waiting = inputs(
            "interrupted",
            Some(
                serde_json::json!({"waiting_for": {"node": "n", "prompt_file": "p/001.prompt.md", "answer_file": "p/001.answer.md"}}),
            ),
        );
        assert!(run_state(&waiting).unwrap().contains("--answer FILE"));
        let failed = inputs(
            "failed",
            Some(serde_json::json!({"error": "boom", "kernel_file": "k.cu"})),
        );
        let block = run_state(&failed).unwrap();
        assert!(
            block.contains("boom") && block.contains("kt transform k.cu"),
            "{block}"
        );
        assert!(
            run_state(&inputs("llm_unavailable", None))
                .unwrap()
                .contains("kt resume")
        );
        assert!(
            run_state(&inputs("running", None))
                .unwrap()
                .contains("Still running")
        );
        assert_eq!(run_state(&inputs("finished", None)), None);
        let empty = nothing("steps", "No steps", &inputs("interrupted", None));
        assert!(
            empty.contains("before its strategy's first step"),
            "{empty}"
        );
    }

    #[test]
    fn the_page_of_a_stopped_run_says_what_happened_instead_of_empty_tables_and_fits_700_px() {
        let r = inputs(
            "interrupted",
            Some(serde_json::json!({"needs_gpu": true, "error": "no GPU"})),
        );
        let html = crate::report::render_html(&r);
        assert!(html.contains("id=\"state\""), "{html}");
        for empty in [
            "steps",
            "tuning",
            "verdicts",
            "kernels-empty",
            "timeline-empty",
        ] {
            assert!(
                html.contains(&format!("id=\"{empty}\" class=\"muted empty\"")),
                "{empty}: {html}"
            );
        }
        assert!(!html.contains("<table id=\"steps\""), "no empty table");
        assert!(!html.contains("<td></td>"), "no blank summary cell: {html}");
        // 700 px: drawings scale down, tables and code scroll inside themselves, the viewport is the device's.
        for rule in [
            "svg { max-width: 100%; height: auto; }",
            "overflow-x: auto",
            "name=\"viewport\"",
        ] {
            assert!(html.contains(rule), "{rule}");
        }
        for tag in html.split("<svg").skip(1) {
            let open = &tag[..tag.find('>').unwrap_or(tag.len())];
            assert!(
                open.contains("viewBox="),
                "every drawing scales: <svg{open}>"
            );
        }
    }
}
