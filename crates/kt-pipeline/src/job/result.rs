//! What a finished (or stopped) transform leaves behind (RUN_FORMAT.md): `best.cu` with its tunable parameters
//! and best values in a header comment, `best_params.json`, the Kernel Tuner export, `result.json` and
//! `report.md` with the accepted and rejected steps. The best kernel is always a verified one, or the
//! original.

use std::path::Path;

use super::report::report_markdown;
use crate::error::PipelineError;
use crate::stage3::TuningBackend;
use crate::stage3::backend::config_record::{self, ConfigRecord};
use crate::stage3::tunable_code::ORIGINAL_STEP;
use crate::stage3::{KernelVersion, Stage3State, StepStatus};
pub use kt_record::{RESULT_SCHEMA_VERSION, ResultOutcome, RunResult, StepSummary, WallTimes};
use kt_record::{ResultFiles, RunDir, RunStatus, WaitingAnswer};

/// Token and cost totals of a run, read from its `llm.jsonl` (every call of every stage, resumed runs included).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LlmTotals {
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// `None` when some call had no known price.
    pub cost_usd: Option<f64>,
}

/// Sums `llm.jsonl`; a missing file means no calls.
pub fn llm_totals(llm_jsonl: &Path) -> Result<LlmTotals, PipelineError> {
    if !llm_jsonl.is_file() {
        return Ok(LlmTotals {
            cost_usd: Some(0.0),
            ..LlmTotals::default()
        });
    }
    let records = kt_llm::read_records(llm_jsonl).map_err(|e| PipelineError::BadFile {
        path: llm_jsonl.to_path_buf(),
        what: "LLM record",
        message: e.to_string(),
    })?;
    let mut t = LlmTotals {
        cost_usd: Some(0.0),
        ..LlmTotals::default()
    };
    for r in records {
        if let Some(u) = r.usage {
            t.tokens_in += u.input_tokens;
            t.tokens_out += u.output_tokens;
        }
        t.cost_usd = match (t.cost_usd, r.cost_usd) {
            (Some(sum), Some(c)) => Some(sum + c),
            // Replayed and scripted answers cost nothing; a real call without a price makes the total unknown.
            (Some(sum), None)
                if matches!(r.provider.as_str(), "scripted" | "replay" | "manual") =>
            {
                Some(sum)
            }
            _ => None,
        };
    }
    Ok(t)
}

/// The header comment of `best.cu`: how to use the kernel, the values kt found best, and the configurations that
/// failed (`configs`, when the tuning records are at hand).
fn best_cu_text(state: &Stage3State, configs: Option<&ConfigRecord>) -> Option<String> {
    let best = state.best.as_ref()?;
    let mut head = String::new();
    head.push_str(&format!(
        "// kt: best verified kernel (from step: {})\n",
        best.step
    ));
    head.push_str("// Tunable parameters: define each before compiling (e.g. -Dname=value, or #define lines as kt does).\n");
    for p in &best.kernel.parameters {
        let value = best
            .best_params
            .get(&p.name)
            .map(|v| v.to_string())
            .unwrap_or_else(|| "?".into());
        let tried: Vec<String> = p.values.iter().map(|v| v.to_string()).collect();
        head.push_str(&format!(
            "//   {} = {value}   (tried: {})\n",
            p.name,
            tried.join(", ")
        ));
    }
    for line in config_record::header_lines(configs, &best.kernel) {
        head.push_str(&line);
        head.push('\n');
    }
    if !best.kernel.restrictions.is_empty() {
        head.push_str(&format!(
            "// Restrictions: {}\n",
            best.kernel.restrictions.join("; ")
        ));
    }
    let dims = ["x", "y", "z"];
    let divs: Vec<String> = best
        .kernel
        .grid_divisors
        .iter()
        .enumerate()
        .map(|(d, l)| {
            format!(
                "{}: ceil(problem / ({}))",
                dims[d],
                if l.is_empty() {
                    "1".into()
                } else {
                    l.join(" * ")
                }
            )
        })
        .collect();
    head.push_str(&format!(
        "// Launch: block = (block_size_x, block_size_y, block_size_z); grid {}\n",
        divs.join(", ")
    ));
    head.push_str(&format!(
        "// Time at the best values: {:.4} ms (sum of per-test medians over the run's tests)\n\n",
        best.time_ms
    ));
    Some(head + &best.kernel.code)
}

/// How many tests the run has (its `tests/` subdirectories).
fn test_count(dir: &RunDir) -> usize {
    std::fs::read_dir(dir.tests_dir())
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().is_dir())
                .count()
        })
        .unwrap_or(0)
}

/// Builds the result of a run from Stage 3's final state (or what there is of it).
#[allow(clippy::too_many_arguments)]
pub fn build_result(
    dir: &RunDir,
    state: Option<&Stage3State>,
    status: RunStatus,
    wall: WallTimes,
    error: Option<String>,
) -> Result<RunResult, PipelineError> {
    let meta = dir.read_meta()?;
    let totals = llm_totals(&dir.llm_jsonl())?;
    let naive = state.and_then(|s| s.reference.as_ref()).map(|r| r.time_ms);
    let best = state.and_then(|s| s.best.as_ref());
    let best_time = best.map(|b| b.time_ms);
    let steps = state.map(step_summaries).unwrap_or_default();
    let finished = status == RunStatus::Finished && state.is_some_and(|s| s.finished);
    let (speedup, gain) = speedup_and_gain(naive, best_time);
    let final_timing = state.and_then(|s| s.final_timing.clone());
    let interval = final_timing.as_ref().and_then(|f| f.speedup_ci95);
    let outcome = finished.then(|| delivered_outcome(best, speedup, interval));
    Ok(RunResult {
        schema_version: RESULT_SCHEMA_VERSION,
        run_id: meta.run_id,
        kernel: meta.kernel,
        kernel_file: meta.kernel_file,
        strategy: meta.strategy,
        settings: meta.settings,
        llm: meta.llm,
        status,
        // `correct` describes the delivered kernel. Only verified kernels ever become `best`; the original is
        // `best` until a step is accepted, and a finished run that keeps it delivers the reference itself.
        correct: best.is_some_and(|b| b.step != ORIGINAL_STEP || finished),
        outcome,
        naive_time_ms: naive,
        best_time_ms: best_time,
        time_basis: naive.map(|_| format!("sum over {} tests", test_count(dir))),
        speedup,
        speedup_ci95: final_timing.as_ref().and_then(|f| f.speedup_ci95),
        gain,
        final_timing,
        best_params: best.map(|b| b.best_params.clone()).unwrap_or_default(),
        percent_of_peak: best.and_then(|b| b.percent_of_peak),
        naive_gflops: state
            .and_then(|s| s.reference.as_ref())
            .and_then(|r| r.gflops),
        best_gflops: best.and_then(|b| b.gflops),
        steps,
        test_warnings: dir.test_warnings(),
        tokens_in: totals.tokens_in,
        tokens_out: totals.tokens_out,
        cost_usd: totals.cost_usd,
        profiles: state.and_then(|s| crate::stage3::run_profiles(s, wall.total)),
        roofline: state.and_then(crate::stage3::run_roofline),
        wall_time_s: wall,
        error,
        needs_gpu: false,
        branch: None,
        waiting_for: None,
        gpu: meta.gpu,
        sandbox: meta.sandbox,
        best_program: None,
    })
}

/// One summary per step of the run's history, for result.json.
fn step_summaries(s: &Stage3State) -> Vec<StepSummary> {
    s.history
        .iter()
        .map(|r| StepSummary {
            name: r.step.clone(),
            accepted: r.status == StepStatus::Accepted,
            status: r.status,
            reason: r.reason.clone(),
            time_ms: r.time_ms,
            speedup_ci95: r.speedup_ci95,
            worth_it: s.worth_it_answer(r).flatten(),
            worth_it_asked: s.worth_it_answer(r).is_some(),
        })
        .collect()
}

/// What a finished run delivered: an accepted step faster than the original (its speedup above 1, and the
/// final timing's 95 % interval too where there is one), no improvement (the original kept, or a step kept
/// as a base that is no faster beyond noise: a tunable version of the same kernel), or no verified kernel.
fn delivered_outcome(
    best: Option<&KernelVersion>,
    speedup: Option<f64>,
    interval: Option<[f64; 2]>,
) -> ResultOutcome {
    let faster = speedup.is_none_or(|s| s > 1.0) && interval.is_none_or(|[low, _]| low > 1.0);
    match best {
        Some(b) if b.step != ORIGINAL_STEP && faster => ResultOutcome::Improved,
        Some(_) => ResultOutcome::NoImprovement,
        None => ResultOutcome::NotVerified,
    }
}

/// The speedup (naive / best) and the gain ((naive - best) / naive), where both times are known.
fn speedup_and_gain(naive: Option<f64>, best: Option<f64>) -> (Option<f64>, Option<f64>) {
    match (naive, best) {
        (Some(n), Some(b)) => ((b > 0.0).then(|| n / b), (n > 0.0).then(|| (n - b) / n)),
        _ => (None, None),
    }
}

/// Writes best.cu, best_params.json, the Kernel Tuner export, result.json and report.md into `out` (the
/// run's root for the main branch, `branches/b<N>/` for another: [`RunDir::results`]).
pub fn write_result(
    dir: &RunDir,
    out: &ResultFiles,
    state: Option<&Stage3State>,
    backend: Option<&dyn TuningBackend>,
    status: RunStatus,
    wall: WallTimes,
    error: Option<String>,
) -> Result<RunResult, PipelineError> {
    let ending = Ending {
        error,
        ..Ending::default()
    };
    write_result_ending(dir, out, state, backend, status, wall, ending)
}

/// How a run that did not finish ended, as result.json says it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ending {
    /// In words.
    pub error: Option<String>,
    /// It stopped where it needs a CUDA GPU it could not get.
    pub needs_gpu: bool,
    /// The manual provider's question it is paused at.
    pub waiting: Option<WaitingAnswer>,
}

/// [`write_result`] of a run that ended as `ending` says (paused at a question, stopped for a GPU).
pub(crate) fn write_result_ending(
    dir: &RunDir,
    out: &ResultFiles,
    state: Option<&Stage3State>,
    backend: Option<&dyn TuningBackend>,
    status: RunStatus,
    wall: WallTimes,
    ending: Ending,
) -> Result<RunResult, PipelineError> {
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|e| PipelineError::io("writing", path, e))
    };
    std::fs::create_dir_all(out.root())
        .map_err(|e| PipelineError::io("creating", out.root(), e))?;
    if let Some(gpu) = backend.and_then(|b| b.gpu()) {
        dir.record_gpu(&gpu)?;
    }
    let mut best_program = None;
    let configs = state
        .and_then(|s| s.best.as_ref())
        .and_then(|b| backend.and_then(|be| be.configurations(&b.kernel)));
    if let Some(s) = state
        && let Some(text) = best_cu_text(s, configs.as_ref())
    {
        write(&out.best_cu(), &text)?;
        best_program = super::run_record::write_best_program(dir, out, s)?;
        let best = s
            .best
            .as_ref()
            .map(|b| b.best_params.clone())
            .unwrap_or_default();
        write(
            &out.best_params_json(),
            &serde_json::to_string_pretty(&best).unwrap_or_default(),
        )?;
        if let (Some(backend), Some(b)) = (backend, s.best.as_ref()) {
            let kt_dir = out.kernel_tuner_dir();
            std::fs::create_dir_all(&kt_dir)
                .map_err(|e| PipelineError::io("creating", &kt_dir, e))?;
            if let Err(e) = backend.export_kernel_tuner(&b.kernel, &kt_dir) {
                tracing::warn!("Kernel Tuner export failed: {e}");
            }
        }
    }
    let mut result = build_result(dir, state, status, wall, ending.error)?;
    result.branch = out.branch().map(str::to_string);
    result.waiting_for = ending.waiting;
    result.needs_gpu = ending.needs_gpu;
    result.best_program = best_program;
    // Atomically: `kt runs`, kt studio and experiment runners read it while a run goes on.
    result.write(&out.result_json())?;
    write(&out.report_md(), &report_markdown(&result, state))?;
    Ok(result)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::stage3::{KernelVersion, Reference, StepRecord, TunableCode, TunableParameter};
    use kt_record::{NewRun, RunLlm, RunSettings};

    #[test]
    fn result_files_hold_the_best_verified_kernel_its_params_and_every_step() {
        let tmp = tempfile::tempdir().unwrap();
        let run = run_dir(tmp.path());
        let kernel = TunableCode {
            code: "extern \"C\" __global__ void k(float* a, int n) { /* tiled */ }\n".into(),
            parameters: vec![TunableParameter {
                name: "block_size_x".into(),
                values: vec![64, 128],
            }],
            restrictions: vec!["block_size_x <= 128".into()],
            grid_divisors: crate::stage3::default_grid_divisors(),
            dynamic_shared_memory: None,
            seeds: Vec::new(),
        };
        let state = Stage3State {
            reference: Some(Reference {
                time_ms: 8.0,
                noise_ms: 0.1,
                percent_of_peak: None,
                gflops: None,
                device: "x".into(),
                theoretical_peaks: None,
                arithmetic_intensity: None,
            }),
            best: Some(KernelVersion {
                kernel,
                time_ms: 2.0,
                noise_ms: 0.02,
                best_params: [("block_size_x".to_string(), 128)].into(),
                step: "tile".into(),
                file: Some("kernels/001-tile.cu".into()),
                percent_of_peak: Some(40.0),
                gflops: None,
            }),
            history: vec![StepRecord {
                step: "tile".into(),
                id: None,
                status: StepStatus::Accepted,
                reason: "faster".into(),
                time_ms: Some(2.0),
                best_before_ms: Some(8.0),
                kernel_file: Some("kernels/001-tile.cu".into()),
                attempts: 1,
                speedup_ci95: Some([3.9, 4.1]),
            }],
            ..Stage3State::default()
        };
        let r = write_result(
            &run,
            &run.results(0),
            Some(&state),
            None,
            RunStatus::Finished,
            WallTimes::default(),
            None,
        )
        .unwrap();
        assert_eq!(r.speedup, Some(4.0));
        assert_eq!(r.gain, Some(0.75), "the thesis's gain (8 - 2) / 8");
        assert_eq!(r.schema_version, 2);
        assert_eq!(r.time_basis.as_deref(), Some("sum over 0 tests"));
        assert!(r.correct && r.steps[0].accepted);
        assert_eq!(r.outcome, None, "the state is not finished");
        let best = std::fs::read_to_string(run.best_cu()).unwrap();
        assert!(
            best.contains("block_size_x = 128   (tried: 64, 128)") && best.contains("/* tiled */"),
            "{best}"
        );
        let params: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.best_params_json()).unwrap())
                .unwrap();
        assert_eq!(params["block_size_x"], 128);
        let json: RunResult =
            serde_json::from_str(&std::fs::read_to_string(run.result_json()).unwrap()).unwrap();
        assert_eq!(json.best_time_ms, Some(2.0));
        let report = std::fs::read_to_string(run.report_md()).unwrap();
        assert!(
            report.contains("4.00x") && report.contains("| 1 | tile | accepted |"),
            "{report}"
        );
    }

    fn run_dir(tmp: &Path) -> RunDir {
        let cu = tmp.join("k.cu");
        std::fs::write(&cu, "__global__ void k(float* a, int n) {}\n").unwrap();
        RunDir::create(
            &tmp.join("runs"),
            NewRun {
                kernel_file: &cu,
                kernel: "k",
                strategy: "autonomous",
                settings: RunSettings::default(),
                llm: RunLlm {
                    provider: "scripted".into(),
                    model: "scripted".into(),
                    ..RunLlm::default()
                },
            },
        )
        .unwrap()
    }

    fn version(step: &str, time_ms: f64) -> KernelVersion {
        KernelVersion {
            kernel: TunableCode {
                code: "__global__ void k(float* a, int n) {}\n".into(),
                parameters: vec![],
                restrictions: vec![],
                grid_divisors: crate::stage3::default_grid_divisors(),
                dynamic_shared_memory: None,
                seeds: Vec::new(),
            },
            time_ms,
            noise_ms: 0.01,
            best_params: Default::default(),
            step: step.into(),
            file: None,
            percent_of_peak: None,
            gflops: None,
        }
    }

    fn finished(best: KernelVersion) -> Stage3State {
        Stage3State {
            reference: Some(Reference {
                time_ms: 8.0,
                noise_ms: 0.1,
                percent_of_peak: None,
                gflops: None,
                device: "x".into(),
                theoretical_peaks: None,
                arithmetic_intensity: None,
            }),
            best: Some(best),
            final_timing: Some(crate::stage3::FinalTiming {
                test: "t1".into(),
                naive_ms: vec![8.0; 10],
                best_ms: vec![2.0; 10],
                speedup: Some(4.0),
                speedup_ci95: Some([3.9, 4.1]),
                method: "m".into(),
            }),
            finished: true,
            ..Stage3State::default()
        }
    }

    #[test]
    fn keeping_the_original_is_no_improvement_and_delivers_a_correct_kernel() {
        let tmp = tempfile::tempdir().unwrap();
        let run = run_dir(tmp.path());
        let kept = finished(version("original", 8.0));
        let r = build_result(
            &run,
            Some(&kept),
            RunStatus::Finished,
            WallTimes::default(),
            None,
        )
        .unwrap();
        assert_eq!(r.outcome, Some(ResultOutcome::NoImprovement));
        assert!(
            r.correct,
            "the delivered kernel is the original, which is correct"
        );
        let stopped = build_result(
            &run,
            Some(&kept),
            RunStatus::Interrupted,
            WallTimes::default(),
            None,
        )
        .unwrap();
        assert!(!stopped.correct, "a stopped run delivers nothing yet");
        assert_eq!((r.speedup, r.gain), (Some(1.0), Some(0.0)));

        // a step kept as the base of others but no faster (a tunable block size) is no improvement
        let as_fast = finished(version("tunable-block", 8.1));
        let r = build_result(
            &run,
            Some(&as_fast),
            RunStatus::Finished,
            WallTimes::default(),
            None,
        )
        .unwrap();
        assert_eq!(r.outcome, Some(ResultOutcome::NoImprovement));
        // nor is one a hair faster whose final timing's interval holds 1
        let mut within_noise = finished(version("tunable-block", 7.99));
        if let Some(f) = within_noise.final_timing.as_mut() {
            f.speedup_ci95 = Some([0.98, 1.02]);
        }
        let r = build_result(
            &run,
            Some(&within_noise),
            RunStatus::Finished,
            WallTimes::default(),
            None,
        )
        .unwrap();
        assert_eq!(r.outcome, Some(ResultOutcome::NoImprovement));

        let improved = finished(version("tile", 2.0));
        let r = build_result(
            &run,
            Some(&improved),
            RunStatus::Finished,
            WallTimes::default(),
            None,
        )
        .unwrap();
        assert_eq!(r.outcome, Some(ResultOutcome::Improved));
        assert!(r.correct);
        assert_eq!(r.speedup_ci95, Some([3.9, 4.1]));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["outcome"], "improved");
        assert_eq!(
            json["final_timing"]["naive_ms"].as_array().unwrap().len(),
            10
        );
        let report = report_markdown(&r, Some(&improved));
        assert!(
            report.contains("speedup t_naive / t_best: **4.00x** (sum over")
                && report.contains("(95% interval 3.90x to 4.10x)")
                && report.contains("the thesis's measure: **75.0%**")
                && report.contains("each time one launch"),
            "{report}"
        );

        let none = Stage3State {
            finished: true,
            ..Stage3State::default()
        };
        let r = build_result(
            &run,
            Some(&none),
            RunStatus::Finished,
            WallTimes::default(),
            None,
        )
        .unwrap();
        assert_eq!(r.outcome, Some(ResultOutcome::NotVerified));
        let r = build_result(
            &run,
            Some(&improved),
            RunStatus::LlmUnavailable,
            WallTimes::default(),
            None,
        )
        .unwrap();
        assert_eq!(r.outcome, None, "not finished");
        assert_eq!(serde_json::to_value(r.status).unwrap(), "llm_unavailable");
    }
}
