//! What one tuning run tells Stage 3: the verified best configuration with its time and noise, or, when no
//! configuration verified, the most telling failure (wrong answers first, then crashes, hangs, compile
//! errors), so the LLM fixes the real problem.

use kt_tuner::{Measurement, TuneResult, Verdict};

use crate::stage3::backend::tuning_backend::{Mismatch, Outcome};

/// A tuning run and, when the tests hold no expected outputs, the outcome of checking its fastest
/// configurations against the original kernel (the first that passed, or the first failure).
pub(in crate::stage3) struct Tuned {
    pub(in crate::stage3) result: TuneResult,
    pub(in crate::stage3) checked: Option<Result<Measurement, Measurement>>,
}

/// Robust noise of a measurement's objective: the interquartile range of the first test's samples (half the
/// full range when too few), relative to that test's median and scaled to the objective (which sums the
/// medians of every test).
pub(in crate::stage3) fn noise_ms(m: &Measurement) -> f64 {
    let Some(t) = &m.timing else { return 0.0 };
    let mut s = t.samples_ms.clone();
    s.sort_by(f64::total_cmp);
    let spread = if s.len() >= 4 {
        s[(3 * s.len()) / 4] - s[s.len() / 4]
    } else {
        (t.max_ms - t.min_ms) / 2.0
    };
    let objective = m.objective.unwrap_or(t.median_ms);
    if t.median_ms > 0.0 {
        spread / t.median_ms * objective
    } else {
        spread
    }
}

/// What a tuning run tells Stage 3: the verified best with its time and noise, or the most telling failure.
pub(in crate::stage3) fn outcome(tuned: &Tuned) -> Outcome {
    let result = &tuned.result;
    let failed = result
        .measurements
        .iter()
        .filter(|m| !m.verdict.is_ok())
        .count() as u32;
    let best = match &tuned.checked {
        None => result.best.as_ref().filter(|b| b.verdict.is_ok()),
        Some(Ok(m)) => Some(m),
        Some(Err(_)) => None,
    };
    if let Some(best) = best
        && let Some(time_ms) = best.objective_ms()
    {
        return Outcome::Verified {
            time_ms,
            noise_ms: noise_ms(best),
            // the pipeline tunes integer parameters only (the LLM's rewrites declare them so)
            best_params: best
                .config
                .0
                .iter()
                .filter_map(|(n, v)| v.as_int().map(|i| (n.clone(), i)))
                .collect(),
            configs_tried: result.measurements.len() as u32,
            configs_failed: failed,
            percent_of_peak: best.percent_of_peak,
            gflops: best.gflops,
            efficiency: result.efficiency,
        };
    }
    // No configuration verified: report the most telling failure (wrong answers first, then crashes,
    // hangs, compile errors), so the LLM fixes the real problem.
    let rank = |v: &Verdict| match v {
        Verdict::WrongAnswer { .. }
        | Verdict::Nondeterministic { .. }
        | Verdict::OutOfBounds { .. }
        | Verdict::TimedRunDiffers { .. }
        | Verdict::ImpossibleTime { .. }
        | Verdict::CarriesState { .. } => 0,
        Verdict::Crashed { .. } => 1,
        Verdict::Timeout { .. } => 2,
        Verdict::CompileError { .. } | Verdict::KernelNotFound { .. } => 3,
        Verdict::Invalid { .. } => 4,
        Verdict::Ok => 5,
    };
    let checked_failure = match &tuned.checked {
        Some(Err(m)) => Some(m),
        _ => None,
    };
    let worst = result
        .measurements
        .iter()
        .filter(|m| !m.verdict.is_ok())
        .min_by_key(|m| rank(&m.verdict));
    let Some(m) = checked_failure.or(worst) else {
        return Outcome::NoValidConfig {
            detail: "no configuration was measured".into(),
        };
    };
    failed_outcome(m)
}

/// A configuration's failure in the words Stage 3 passes on.
fn failed_outcome(m: &Measurement) -> Outcome {
    let config = m.config.to_string();
    match &m.verdict {
        Verdict::WrongAnswer { details, reports } => {
            let test = details
                .first()
                .and_then(|d| d.strip_prefix("test "))
                .and_then(|d| d.split(':').next())
                .unwrap_or("?")
                .to_string();
            let report = reports.first();
            Outcome::WrongAnswer {
                config,
                test,
                output: report.map(|r| r.name.clone()).unwrap_or_default(),
                mismatches: report
                    .and_then(|r| r.first_mismatch.as_ref())
                    .map(|f| Mismatch {
                        index: f.index,
                        expected: f.expected.to_string(),
                        got: if f.never_written {
                            "nothing (never written)".into()
                        } else {
                            f.got.to_string()
                        },
                    })
                    .into_iter()
                    .collect(),
                mismatched: report.map(|r| r.mismatches).unwrap_or_default(),
                total: report.map(|r| r.elements).unwrap_or_default(),
                detail: details.join("; "),
            }
        }
        Verdict::CompileError { log } => Outcome::CompileError {
            config,
            log: log.clone(),
        },
        Verdict::Timeout { after_s } => Outcome::Timeout {
            config,
            seconds: *after_s,
        },
        Verdict::Crashed { reason } => Outcome::Crashed {
            config,
            detail: reason.clone(),
        },
        Verdict::Invalid { reason } => Outcome::NoValidConfig {
            detail: reason.clone(),
        },
        // the tuner's own words name the failure ("kernel not found: …", "nondeterministic: …")
        v @ Verdict::KernelNotFound { .. } => Outcome::CompileError {
            config,
            log: v.reason(),
        },
        v @ (Verdict::Nondeterministic { .. }
        | Verdict::OutOfBounds { .. }
        | Verdict::TimedRunDiffers { .. }
        | Verdict::ImpossibleTime { .. }
        | Verdict::CarriesState { .. }) => Outcome::NoValidConfig { detail: v.reason() },
        Verdict::Ok => Outcome::NoValidConfig {
            detail: "no configuration verified".into(),
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use kt_tuner::check::verify::{Mismatch as TunerMismatch, OutputReport};
    use kt_tuner::model::space::Config;

    pub(crate) fn result(measurements: Vec<Measurement>, best: Option<Measurement>) -> TuneResult {
        TuneResult {
            kernel_name: "matrixMultiply".into(),
            device: kt_tuner::worker::protocol::DeviceInfo {
                ordinal: 0,
                name: "test".into(),
                uuid: String::new(),
                pci_bus_id: String::new(),
                compute_capability: (9, 0),
                sm_count: 1,
                max_threads_per_block: 1024,
                max_threads_per_sm: 2048,
                max_shared_per_block: 48 << 10,
                max_shared_per_block_optin: 48 << 10,
                registers_per_block: 65536,
                l2_bytes: 0,
                total_memory: 0,
                driver_version: 0,
                clock_khz: 0,
                context_ms: 0.0,
            },
            strategy: kt_tuner::Strategy::BruteForce,
            space_size: measurements.len(),
            best,
            reference: None,
            measurements,
            phases: Default::default(),
            peak_gbps: None,
            peak_fp32_gflops: None,
            worker_restarts: 0,
            theoretical_peaks: None,
            efficiency: None,
        }
    }

    pub(crate) fn config(v: i64) -> Config {
        Config::ints([("block_size_x", v)])
    }

    fn wrong() -> Verdict {
        Verdict::WrongAnswer {
            details: vec!["test 3fa2: output C: 12 of 4096 elements wrong".into()],
            reports: vec![OutputReport {
                name: "C".into(),
                elements: 4096,
                mismatches: 12,
                mismatches_above: 0,
                never_written: 12,
                max_abs_error: 1.0,
                max_rel_error: 1.0,
                first_mismatch: Some(TunerMismatch {
                    index: 4095,
                    expected: 1.25,
                    got: f64::NAN,
                    never_written: true,
                }),
                allowed_mismatches: 0,
                sum_floor: None,
                totals: None,
            }],
        }
    }

    #[test]
    fn without_a_verified_configuration_the_wrong_answer_is_reported_before_compile_errors() {
        let tuned = Tuned {
            result: result(
                vec![
                    Measurement::synthetic(
                        config(16),
                        Verdict::CompileError {
                            log: "error: x".into(),
                        },
                        None,
                    ),
                    Measurement::synthetic(config(32), wrong(), None),
                ],
                None,
            ),
            checked: None,
        };
        match outcome(&tuned) {
            Outcome::WrongAnswer {
                test,
                output,
                mismatches,
                config,
                ..
            } => {
                assert_eq!((test.as_str(), output.as_str()), ("3fa2", "C"));
                assert_eq!(mismatches[0].index, 4095);
                assert!(mismatches[0].got.contains("never written"));
                assert!(config.contains("32"), "{config}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_candidate_checked_against_the_original_counts_only_if_it_passed() {
        let fast = Measurement::synthetic(config(64), Verdict::Ok, Some(1.0));
        let passed = Tuned {
            result: result(vec![fast.clone()], Some(fast.clone())),
            checked: Some(Ok(fast.clone())),
        };
        assert!(matches!(outcome(&passed), Outcome::Verified { time_ms, .. } if time_ms == 1.0));
        let mut failed_check = fast.clone();
        failed_check.verdict = wrong();
        let failed = Tuned {
            result: result(vec![fast.clone()], Some(fast)),
            checked: Some(Err(failed_check)),
        };
        assert!(
            matches!(outcome(&failed), Outcome::WrongAnswer { .. }),
            "the tuner's own best is not enough"
        );
    }
}
