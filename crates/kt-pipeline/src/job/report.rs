//! `report.md`: what a transform tried, what it kept and why, in words, with the gains named as what they
//! are (the tuning objective's speedup, the thesis's gain, the final timing's interval).

use kt_record::{ResultOutcome, RunResult};

use crate::stage3::Stage3State;

fn outcome_words(o: ResultOutcome) -> &'static str {
    match o {
        ResultOutcome::Improved => "improved",
        ResultOutcome::NoImprovement => {
            "no improvement (nothing faster than the original kernel was found)"
        }
        ResultOutcome::NotVerified => "not verified",
    }
}

/// The speedup and the thesis's gain, each named as what it is, with the interval from separate launches.
/// `speedup` is the tuning objective's (per-test medians summed over every test); the interval belongs to the
/// final timing's speedup on one test (separate launches), so the two are given side by side, never mixed.
pub fn gains_markdown(result: &RunResult) -> String {
    let mut md = String::new();
    if let Some(s) = result.speedup {
        md.push_str(&format!(
            "- speedup t_naive / t_best: **{s:.2}x** ({})\n",
            result.time_basis.as_deref().unwrap_or("sum over the tests")
        ));
    }
    if let Some(g) = result.gain {
        md.push_str(&format!(
            "- gain (t_naive − t_best) / t_naive, the thesis's measure: **{:.1}%**\n",
            g * 100.0
        ));
    }
    if let Some(f) = &result.final_timing {
        let median = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
        };
        md.push_str(&format!(
            "- final timing on test `{}`, each time one launch: naive {} launches (median {:.4} ms), best {} \
             launches (median {:.4} ms){}{}; interval: {}\n",
            f.test,
            f.naive_ms.len(),
            median(&f.naive_ms),
            f.best_ms.len(),
            median(&f.best_ms),
            f.speedup
                .map(|s| format!(", speedup on this test **{s:.2}x**"))
                .unwrap_or_default(),
            f.speedup_ci95
                .map(|[lo, hi]| format!(" (95% interval {lo:.2}x to {hi:.2}x)"))
                .unwrap_or_default(),
            f.method
        ));
    }
    md
}

/// The report: what was tried, what was kept, and why.
pub fn report_markdown(result: &RunResult, state: Option<&Stage3State>) -> String {
    let mut md = String::new();
    run_lines(&mut md, result);
    measure_lines(&mut md, result);
    state_lines(&mut md, result);
    md.push_str("\n## Steps\n\nTimes are the tuning objective: the sum of per-test medians over every test. The interval \
                 is the step's speedup over the kernel before it, from separate launches of both on one test.\n\n\
                 | # | step | outcome | time (ms) | speedup 95% interval | kernel | why |\n|---|---|---|---|---|---|---|\n");
    if let Some(s) = state {
        steps_table(&mut md, s);
    }
    md
}

/// The title and what the run was: id, strategy, status, branch, LLM, machine and sandbox.
fn run_lines(md: &mut String, result: &RunResult) {
    md.push_str(&format!(
        "# kt transform: `{}` ({})\n\n",
        result.kernel, result.kernel_file
    ));
    md.push_str(&format!(
        "- run: `{}`, strategy **{}**, status **{:?}**\n",
        result.run_id, result.strategy, result.status
    ));
    if let Some(branch) = &result.branch {
        md.push_str(&format!(
            "- branch **{branch}** (continued from `kt replay` or `kt fork`; the main branch's results are in the run's root)\n"
        ));
    }
    md.push_str(&format!(
        "- LLM: {} {}\n",
        result.llm.provider, result.llm.model
    ));
    md.push_str(&super::run_record::environment_markdown(
        result.best_program.as_deref(),
        result.gpu.as_ref(),
        result.sandbox.as_ref(),
    ));
}

/// The outcome and its measures: times, gains, throughput, peak, parameters, tokens and wall time.
fn measure_lines(md: &mut String, result: &RunResult) {
    let ms = |v: Option<f64>| {
        v.map(|t| format!("{t:.4} ms"))
            .unwrap_or_else(|| "not measured".into())
    };
    if let Some(o) = result.outcome {
        md.push_str(&format!(
            "- outcome: **{}** (correct: {})\n",
            outcome_words(o),
            result.correct
        ));
    }
    let basis = result.time_basis.as_deref().unwrap_or("sum over the tests");
    md.push_str(&format!(
        "- naive kernel at its default launch: {} ({basis})\n",
        ms(result.naive_time_ms)
    ));
    md.push_str(&format!(
        "- best verified kernel: {} ({basis})\n",
        ms(result.best_time_ms)
    ));
    md.push_str(&gains_markdown(result));
    if let (Some(n), Some(b)) = (result.naive_gflops, result.best_gflops) {
        md.push_str(&format!(
            "- throughput on the first test: {n:.0} GFLOP/s naive, {b:.0} GFLOP/s best\n"
        ));
    }
    md.push_str(&format!(
        "- percent of peak (measured copy bandwidth, or the FP32 rate when compute binds): {}\n",
        result
            .percent_of_peak
            .map(|p| format!("{p:.1}%"))
            .unwrap_or_else(|| "unknown".into())
    ));
    if !result.best_params.is_empty() {
        let params: Vec<String> = result
            .best_params
            .iter()
            .map(|(k, v)| format!("`{k}={v}`"))
            .collect();
        md.push_str(&format!("- best parameters: {}\n", params.join(", ")));
    }
    md.push_str(&format!(
        "- LLM tokens: {} in, {} out; cost {}\n",
        result.tokens_in,
        result.tokens_out,
        result
            .cost_usd
            .map(|c| format!("${c:.4}"))
            .unwrap_or_else(|| "unknown".into())
    ));
    let w = result.wall_time_s;
    md.push_str(&format!(
        "- wall time (active, summed over the run's attempts; idle time between them not counted): stage 1 {:.1} s, stage 2 {:.1} s, stage 3 {:.1} s, total {:.1} s\n",
        w.stage1, w.stage2, w.stage3, w.total
    ));
}

/// Warnings about the tests, an answer the run waits for, and why it stopped.
fn state_lines(md: &mut String, result: &RunResult) {
    for w in &result.test_warnings {
        md.push_str(&format!("- warning about the tests: {w}\n"));
    }
    if let Some(w) = &result.waiting_for {
        md.push_str(&format!(
            "- waiting for an answer to `{}`: prompt {}, answer to {}\n",
            w.node,
            w.prompt_file.display(),
            w.answer_file.display()
        ));
    }
    if let Some(e) = &result.error {
        md.push_str(&format!("\n**Stopped:** {e}\n"));
    }
}

/// One row per step, then the planner's failures and what the LLM was told of failed attempts.
fn steps_table(md: &mut String, s: &Stage3State) {
    for (i, r) in s.history.iter().enumerate() {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            i + 1,
            r.step.replace('|', "\\|"),
            r.status,
            r.time_ms.map(|t| format!("{t:.4}")).unwrap_or_default(),
            r.speedup_ci95
                .map(|[lo, hi]| format!("{lo:.3}x to {hi:.3}x"))
                .unwrap_or_default(),
            r.kernel_file.clone().unwrap_or_default(),
            r.reason.replace('|', "\\|").replace('\n', " ")
        ));
    }
    if s.planner_failures > 0 {
        md.push_str(&format!(
            "\nThe planner gave no usable plan {} time(s).\n",
            s.planner_failures
        ));
    }
    let failed: Vec<String> = s
        .candidates
        .iter()
        .flat_map(|c| c.feedback.iter().chain(c.failure.iter()))
        .map(|f| {
            format!(
                "- {}",
                crate::stage3::steps::feedback::cut(f, 400).replace('\n', " ")
            )
        })
        .collect();
    if !failed.is_empty() {
        md.push_str("\n## Failed attempts (what the LLM was told)\n\n");
        md.push_str(&failed.join("\n"));
        md.push('\n');
    }
}
