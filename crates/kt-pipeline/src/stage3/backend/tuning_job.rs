//! One tuning job of the real backend, in an open session on the blocking pool, and what stands in for
//! expected outputs when the tests hold none (`stage2/expected_outputs.rs` writes them after the baseline; this is
//! the fallback): the fastest configurations checked, one by one, against the original kernel.

use kt_tuner::session::TuneOptions;
use kt_tuner::{Config, Measurement, TuneResult, TunerError};

use crate::stage3::backend::session::Session;
use crate::stage3::backend::tuned_outcome::Tuned;
use crate::stage3::tunable_code::TunableCode;

/// How many of a candidate's fastest configurations are checked against the original kernel, when the tests
/// hold no expected outputs, before the candidate counts as wrong.
const VERIFY_FASTEST: usize = 8;

/// The original kernel at its default configuration: what a candidate is checked against when the tests hold
/// no expected outputs.
pub(in crate::stage3) struct OriginalKernel {
    pub(in crate::stage3) kernel: kt_tuner::TunableKernel,
    pub(in crate::stage3) config: Config,
}

/// Every parameter of `code` at its first value.
pub(in crate::stage3) fn first_values(code: &TunableCode) -> Config {
    Config(
        code.parameters
            .iter()
            .filter_map(|p| p.values.first().map(|v| (p.name.clone(), (*v).into())))
            .collect(),
    )
}

/// One tuning job in an open session (on the blocking pool), progress as (done, total).
pub(in crate::stage3) fn tune_in_session(
    s: &mut Session,
    kernel: &kt_tuner::TunableKernel,
    mut options: TuneOptions,
    original: &OriginalKernel,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Tuned, TunerError> {
    let has_expected = crate::stage2::expected_outputs::tests_hold_expected(&s.tests);
    // Without expected outputs on disk, the tuner's own check would compare a candidate with itself:
    // time without it, then check the fastest configurations against the original kernel.
    options.verify &= has_expected;
    let result = s.tuner.tune(kernel, &s.tests, &options, &mut |p| {
        progress(p.done as u64, p.total as u64)
    })?;
    if has_expected {
        return Ok(Tuned {
            result,
            checked: None,
        });
    }
    let started = std::time::Instant::now();
    let checked = check_fastest_against_original(s, kernel, &result, original)?;
    tracing::debug!(
        ms = started.elapsed().as_secs_f64() * 1e3,
        "checked the fastest configurations against the original kernel (the tests hold no expected outputs)"
    );
    Ok(Tuned { result, checked })
}

/// The fastest [`VERIFY_FASTEST`] configurations of `result` checked against the original kernel: the first
/// that passes, else the first failure (with its verdict), else None (no configuration ran).
fn check_fastest_against_original(
    s: &mut Session,
    kernel: &kt_tuner::TunableKernel,
    result: &TuneResult,
    original: &OriginalKernel,
) -> Result<Option<Result<Measurement, Measurement>>, TunerError> {
    let mut ok: Vec<&Measurement> = result
        .measurements
        .iter()
        .filter(|m| m.objective_ms().is_some())
        .collect();
    ok.sort_by(|a, b| {
        a.objective
            .unwrap_or(f64::MAX)
            .total_cmp(&b.objective.unwrap_or(f64::MAX))
    });
    let mut first_failure = None;
    for m in ok.into_iter().take(VERIFY_FASTEST) {
        if kernel.source == original.kernel.source && m.config == original.config {
            // the original kernel at its own default launch (the baseline): it is what is checked against
            return Ok(Some(Ok(m.clone())));
        }
        let report = s.tuner.verify(
            &original.kernel,
            &original.config,
            kernel,
            &m.config,
            &s.tests,
        )?;
        if report.passed() {
            return Ok(Some(Ok(m.clone())));
        }
        if first_failure.is_none() {
            let bad = report.tests.into_iter().find(|t| !t.verdict.is_ok());
            first_failure = bad.map(|t| {
                let mut failed = m.clone();
                failed.verdict = t.verdict;
                failed
            });
        }
    }
    Ok(first_failure.map(Err))
}
