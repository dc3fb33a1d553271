//! The configuration a tuning delivers: the fastest of the space whose reruns agree and whose time is
//! physically possible, or the default launch when nothing in the space passed or the default is faster.

use crate::check::floor::Ceilings;
use crate::check::measure::TimingPolicy;
use crate::error::TunerError;
use crate::model::args::KernelTest;
use crate::model::outcome::{Measurement, Verdict};
use crate::model::tunable_kernel::TunableKernel;
use crate::session::engine::{CheckTarget, Engine};
use crate::session::evaluate::fill_rates;
use crate::session::plan::Plan;
use crate::session::plausibility::{self, Plausibility};
use crate::session::{back_to_back, determinism};

/// The fastest verified measurement.
pub(super) fn fastest(measurements: &[Measurement]) -> Option<&Measurement> {
    measurements
        .iter()
        .filter(|m| m.objective_ms().is_some_and(f64::is_finite))
        .min_by(|a, b| {
            a.objective
                .unwrap_or(f64::INFINITY)
                .total_cmp(&b.objective.unwrap_or(f64::INFINITY))
        })
}

/// What the best configuration is checked against before it is delivered.
pub(super) struct BestCheck<'a> {
    pub plan: &'a Plan,
    pub tests: &'a [KernelTest],
    pub ceilings: Ceilings,
    pub timing: TimingPolicy,
}

/// The fastest configuration whose reruns agree with each other and whose time is physically possible: a
/// faster one whose reruns differ gets the `Nondeterministic` verdict (or its rerun's failure), one below
/// its floor after a re-verification `ImpossibleTime`, and the next is tried, a few at most.
fn deterministic_best(
    e: &mut Engine,
    kernel: &TunableKernel,
    check: &BestCheck,
    measurements: &mut [Measurement],
) -> Result<Option<Measurement>, TunerError> {
    let (plan, tests) = (check.plan, check.tests);
    for _ in 0..3 {
        let Some(mut best) = fastest(measurements).cloned() else {
            return Ok(None);
        };
        let target = CheckTarget {
            kernel,
            config: &best.config,
            tests,
            grid_defines: plan.grid_defines,
        };
        let mut verdict = determinism::check(e, &target)?;
        if verdict.is_ok() {
            match hold_to_floor(e, kernel, check, &best)? {
                Plausibility::Plausible => return Ok(Some(best)),
                Plausibility::Retimed(stats) => {
                    retime(&mut best, stats);
                    fill_rates(kernel, &tests[0].scalars(), &mut best);
                    if let Some(m) = measurements.iter_mut().find(|m| m.config == best.config) {
                        *m = best.clone();
                    }
                    // a slower time may no longer be the fastest: the next round decides
                    continue;
                }
                Plausibility::Rejected(v) => verdict = v,
            }
        }
        tracing::warn!(config = %best.config, "{}", verdict.reason());
        if let Some(m) = measurements.iter_mut().find(|m| m.config == best.config) {
            m.verdict = verdict;
        }
    }
    Ok(None)
}

/// `m`'s time on the first test held against its floor (`plausibility`).
fn hold_to_floor(
    e: &mut Engine,
    kernel: &TunableKernel,
    check: &BestCheck,
    m: &Measurement,
) -> Result<Plausibility, TunerError> {
    plausibility::check(
        e,
        kernel,
        m,
        &check.tests[0],
        check.plan.grid_defines,
        &check.ceilings,
        check.timing,
    )
}

/// A measurement with its first test timed again (its objective follows).
fn retime(m: &mut Measurement, stats: crate::check::measure::TimingStats) {
    if let Some(first) = m.per_test_ms.first_mut() {
        *first = stats.median_ms;
    }
    m.objective = Some(m.per_test_ms.iter().sum());
    m.timing = Some(stats);
}

/// The configuration delivered: the fastest of the space that passed its checks, or the default launch when
/// nothing in the space passed or the default is faster (a space searched without it, every configuration
/// slower, e.g. stopped early as hopeless against it, is no reason to deliver a slower launch). A default
/// that fails its checks keeps that verdict, so the table says why a slower configuration is the best —
/// or why there is none: a default refused for state carried between inputs or an impossible time shows
/// what the kernel's code does (every configuration runs it), and the space's configurations were timed
/// against the default's gamed time (stopped early as hopeless, one honest launch each).
pub(super) fn choose_best(
    e: &mut Engine,
    kernel: &TunableKernel,
    check: &BestCheck,
    measurements: &mut [Measurement],
    reference: &mut Measurement,
) -> Result<Option<Measurement>, TunerError> {
    let space_best = deterministic_best(e, kernel, check, measurements)?;
    if let Some(b) = &space_best
        && (b.config == reference.config || !slower_than(b, reference))
    {
        return Ok(space_best);
    }
    match default_as_best(e, kernel, check, reference)? {
        Ok(default) => Ok(Some(default)),
        Err(refused) => {
            let games = matches!(
                refused,
                Some(Verdict::ImpossibleTime { .. } | Verdict::CarriesState { .. })
            );
            if let Some(v) = refused {
                reference.verdict = v;
            }
            Ok(if games { None } else { space_best })
        }
    }
}

/// Whether `m`'s objective is above the default launch's (both measured on the same tests).
fn slower_than(m: &Measurement, default: &Measurement) -> bool {
    match (m.objective_ms(), default.objective_ms()) {
        (Some(t), Some(d)) => d.is_finite() && d < t,
        _ => false,
    }
}

/// The default launch as the verified result (nothing in the space verified: a kernel that works at one
/// launch only, a fixed block in `__launch_bounds__`, in tile arithmetic or in a macro; or nothing in the
/// space is faster) — if its reruns agree, a kernel with state gets every test right back to back in one
/// module as each configuration did (`back_to_back`), and its time is physically possible. `Err` with the
/// verdict that refused it (None: it never verified or has no time).
fn default_as_best(
    e: &mut Engine,
    kernel: &TunableKernel,
    check: &BestCheck,
    reference: &Measurement,
) -> Result<Result<Measurement, Option<Verdict>>, TunerError> {
    let (plan, tests) = (check.plan, check.tests);
    if !reference.verdict.is_ok() || !reference.objective_ms().is_some_and(f64::is_finite) {
        return Ok(Err(None));
    }
    let target = CheckTarget {
        kernel,
        config: &plan.reference,
        tests,
        grid_defines: plan.grid_defines,
    };
    let mut verdict = determinism::check(e, &target)?;
    if verdict.is_ok() && kernel.keeps_state() && tests.len() > 1 {
        verdict = back_to_back::check(e, &target)?;
    }
    if !verdict.is_ok() {
        tracing::warn!(config = %plan.reference, "the default launch: {}", verdict.reason());
        return Ok(Err(Some(verdict)));
    }
    let mut best = reference.clone();
    match hold_to_floor(e, kernel, check, &best)? {
        Plausibility::Plausible => {}
        Plausibility::Retimed(stats) => {
            retime(&mut best, stats);
            fill_rates(kernel, &tests[0].scalars(), &mut best);
        }
        Plausibility::Rejected(v) => {
            tracing::warn!(config = %plan.reference, "the default launch: {}", v.reason());
            return Ok(Err(Some(v)));
        }
    }
    Ok(Ok(best))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::space::Config;

    fn measured(block: i64, ms: Option<f64>) -> Measurement {
        Measurement::synthetic(Config::ints([("block_size_x", block)]), Verdict::Ok, ms)
    }

    #[test]
    fn a_best_slower_than_the_default_launch_gives_way_to_it() {
        let default = measured(256, Some(0.2268));
        assert!(slower_than(&measured(128, Some(0.7878)), &default));
        assert!(!slower_than(&measured(64, Some(0.2)), &default));
        // a default without a time (never measured) is no reason to set a configuration aside
        assert!(!slower_than(&measured(64, Some(0.2)), &measured(256, None)));
        assert!(!slower_than(&measured(64, None), &default));
    }
}
