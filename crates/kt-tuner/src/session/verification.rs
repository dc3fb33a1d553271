//! Verification of a candidate against a reference: the reference's launch gives each test's expected
//! outputs, then the candidate runs on the same inputs with its outputs poisoned, and every output of every
//! test is compared (inputs and the guard bytes around every array must come out unchanged). Both modules
//! are loaded afresh for every test after the first: a kernel that keeps state in `__device__` or
//! `__managed__` globals starts every test from the globals' initial values, as a program would.
//!
//! That pass alone would hide what a user meets when calling the kernel twice with different inputs: state
//! carried from one call to the next (a kernel caching its first input in a `__device__` array). So when
//! every test passed, the candidate's module is loaded once more and the tests run back to back in it, no
//! reload between them; a test right from a fresh module and wrong there is `CarriesState`, named with the
//! tests that ran before it. A candidate that keeps state is also timed on every test like a tuned
//! configuration of such a kernel: its last timed launch and one after many more launches checked
//! (`crate::check::late_check`), so a launch counter that waits past the verifying launch is caught here too,
//! and its median time is held to the physical floor of the bytes it claims (`crate::check::floor`, the
//! bandwidth confirmed by kt's copy): a memoised or batched kernel right on every checked launch is
//! `ImpossibleTime` there.

use std::time::Duration;

use crate::check::floor::{Ceiling, Ceilings, Floor, impossible};
use crate::check::measure::TimingPolicy;
use crate::check::sum_floor::with_sum_lengths;
use crate::compile::module_cache::ModuleOutcome;
use crate::error::TunerError;
use crate::model::args::{KernelTest, TestSet};
use crate::model::outcome::{TestVerdict, Verdict, VerifyReport};
use crate::model::space::Config;
use crate::model::tunable_kernel::TunableKernel;
use crate::session::engine::Engine;
use crate::session::run_request::{run_request, test_dtypes};
use crate::worker::protocol::{Request, RunOutcome, RunRequest, RunStatus};

/// Runs `reference` (its configuration's launch) to get expected outputs, then `candidate`, on the same
/// inputs; reports every output of every test.
pub(crate) fn verify(
    e: &mut Engine,
    reference: &TunableKernel,
    reference_config: &Config,
    candidate: &TunableKernel,
    candidate_config: &Config,
    tests: &TestSet,
) -> Result<VerifyReport, TunerError> {
    let tests = &tests.tests;
    let first = tests
        .first()
        .ok_or_else(|| TunerError::Arguments("no tests to verify on".into()))?;
    let s0 = first.scalars();
    for t in tests {
        e.queue.submit_util(&test_dtypes(t));
    }
    let r = e.queue.submit(reference, reference_config, &s0, false)?;
    let c = e.queue.submit(candidate, candidate_config, &s0, false)?;
    e.link.device(&mut e.queue)?;
    e.queue
        .wait_required(&r, &reference.kernel_name, &first.id, "the reference")?;
    let co = e.queue.wait(c.ticket)?;
    let compile_failure = match &*co {
        ModuleOutcome::Failed { log, .. } => {
            Some(Verdict::from_compile_log(log, &candidate.kernel_name))
        }
        _ => None,
    };
    e.queue
        .remember(&c.key, co, &candidate.kernel_name, c.shared);
    let refs = tests
        .iter()
        .map(|t| run_request(&r.key, reference, reference_config, t))
        .collect::<Result<Vec<_>, _>>()?;
    // outputs that are sums get a tolerance for their length (the reference's flops per output element)
    let uploaded = with_sum_lengths(tests, reference.flops.as_deref());
    e.link
        .prepare(&uploaded, Some(refs.clone()), &mut e.queue)?;
    e.link.load_required(&r.key, &first.id, &mut e.queue)?;
    let mut report = VerifyReport {
        tests: Vec::new(),
        modules_reloaded: false,
        back_to_back: false,
    };
    let timing = candidate
        .keeps_state()
        .then(|| TimingPolicy::default().for_stateful_kernel());
    let ceilings = match timing {
        Some(_) => memory_ceilings(e)?,
        None => None,
    };
    for (i, t) in tests.iter().enumerate() {
        if i > 0 {
            e.link.unload(&r.key, &mut e.queue)?;
            e.link.unload(&c.key, &mut e.queue)?;
            e.link.load_required(&r.key, &t.id, &mut e.queue)?;
            report.modules_reloaded = true;
        }
        e.link.reference(refs[i].clone(), &mut e.queue)?;
        if let Some(v) = &compile_failure {
            report.tests.push(failed_test(&t.id, v.clone()));
            continue;
        }
        let floor = ceilings.as_ref().and_then(|c| floor_of(c, candidate, t));
        let tv = run_candidate(
            e,
            &c.key,
            candidate,
            candidate_config,
            t,
            timing,
            floor.as_ref(),
        )?;
        report.tests.push(tv);
    }
    if report.passed() && tests.len() > 1 {
        e.link.unload(&c.key, &mut e.queue)?;
        for (i, t) in tests.iter().enumerate() {
            let tv = run_candidate(e, &c.key, candidate, candidate_config, t, None, None)?;
            if !tv.verdict.is_ok() {
                report.tests[i] = carried_state(tv, &tests[..i]);
            }
        }
        report.back_to_back = true;
    }
    Ok(report)
}

/// The device's ceilings, the theoretical bandwidth confirmed by kt's copy and the FP32 rate by its FMA
/// kernel (what `kt tune` holds its best to); `None` where the device's figures are unknown.
fn memory_ceilings(e: &mut Engine) -> Result<Option<Ceilings>, TunerError> {
    let device = e.link.device(&mut e.queue)?;
    let Some(peaks) = crate::session::peak::theoretical(device.ordinal, device.compute_capability)
    else {
        return Ok(None);
    };
    let copy = crate::session::peak::copy_bandwidth(e, &device).ok();
    let fma = crate::session::peak::fp32_rate(e, &device).ok();
    Ok(Some(
        Ceilings::from_figures(
            Some(peaks.bandwidth_gb_s),
            copy,
            device.l2_bytes.max(0) as u64,
        )
        .with_fp32(Ceiling::confirm(
            Some(peaks.fp32_gflop_s),
            fma,
            "GFLOP/s",
            "kt's FMA kernel",
        )),
    ))
}

/// The least time `candidate` can take on `t` for the bytes its sidecar says it moves (and the flops, when
/// they are exact).
fn floor_of(ceilings: &Ceilings, candidate: &TunableKernel, t: &KernelTest) -> Option<Floor> {
    crate::session::plausibility::launch_floor(ceilings, candidate, t)
}

/// One verifying run of the candidate on `t` (timed under `timing`, when given, and its median held to
/// `floor`), judged.
pub(crate) fn run_candidate(
    e: &mut Engine,
    key: &str,
    candidate: &TunableKernel,
    config: &Config,
    t: &KernelTest,
    timing: Option<TimingPolicy>,
    floor: Option<&Floor>,
) -> Result<TestVerdict, TunerError> {
    let run = RunRequest {
        verify: true,
        timing,
        ..run_request(key, candidate, config, t)?
    };
    let timeout = e.config.timeout_floor.max(Duration::from_secs(30))
        + Duration::from_secs(if timing.is_some() { 30 } else { 0 });
    Ok(
        match e
            .link
            .run(key, Request::Run { run }, timeout, &mut e.queue)?
        {
            Err(v) => failed_test(&t.id, v),
            Ok(o) => below_floor(judged_test(&t.id, &o), &o, floor),
        },
    )
}

/// A verified test whose timed median is below `floor` becomes `ImpossibleTime`, with the figures.
fn below_floor(tv: TestVerdict, o: &RunOutcome, floor: Option<&Floor>) -> TestVerdict {
    let (Some(floor), Some(stats)) = (floor, o.timing.as_ref()) else {
        return tv;
    };
    match impossible(stats.median_ms, floor) {
        Some(why) if tv.verdict.is_ok() => TestVerdict {
            verdict: Verdict::ImpossibleTime {
                details: vec![format!(
                    "test {}: right on every checked launch, but {why}",
                    tv.test
                )],
            },
            ..tv
        },
        _ => tv,
    }
}

/// A test right from a freshly loaded module and `wrong` after `before` ran in the same module.
pub(crate) fn carried_state(wrong: TestVerdict, before: &[KernelTest]) -> TestVerdict {
    // the pass's first test follows no other input in its module: a failure there is the kernel's own
    // (nondeterminism), kept as its verdict says
    if before.is_empty() {
        return wrong;
    }
    let ids: Vec<&str> = before.iter().map(|t| t.id.as_str()).collect();
    let what = format!(
        "test {}: right from a freshly loaded module, wrong when it follows test{} {} in the same module \
         with no reload between them: the kernel carries state from one call to the next (an earlier \
         input cached in a `__device__` variable?); {}",
        wrong.test,
        if ids.len() > 1 { "s" } else { "" },
        ids.join(", "),
        wrong.verdict.reason()
    );
    TestVerdict {
        verdict: Verdict::CarriesState {
            details: vec![what],
        },
        ..wrong
    }
}

fn failed_test(test: &str, verdict: Verdict) -> TestVerdict {
    TestVerdict {
        test: test.to_string(),
        verdict,
        outputs: vec![],
        inputs_modified: vec![],
    }
}

/// The verdict on a candidate's verifying run.
fn judged_test(test: &str, o: &RunOutcome) -> TestVerdict {
    let verdict = match &o.status {
        RunStatus::Ok => Verdict::from_outcome(o, None).unwrap_or(Verdict::Ok),
        RunStatus::Invalid(r) | RunStatus::Crashed(r) => Verdict::Invalid { reason: r.clone() },
    };
    TestVerdict {
        test: test.to_string(),
        verdict,
        outputs: o.outputs.clone(),
        inputs_modified: o.inputs_modified.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(id: &str) -> KernelTest {
        KernelTest {
            id: id.into(),
            args: vec![],
            tolerances: Default::default(),
            constants: Vec::new(),
        }
    }

    fn wrong(id: &str) -> TestVerdict {
        failed_test(
            id,
            Verdict::WrongAnswer {
                details: vec![format!("test {id}: c: 4096 of 4096 elements wrong")],
                reports: vec![],
            },
        )
    }

    #[test]
    fn a_test_wrong_only_after_others_in_one_module_names_the_state_and_those_tests() {
        let v = carried_state(wrong("gen2"), &[test("gen0"), test("gen1")]);
        assert_eq!(v.verdict.short(), "state carried between inputs");
        let r = v.verdict.reason();
        assert!(
            r.contains("test gen2: right from a freshly loaded module")
                && r.contains("follows tests gen0, gen1 in the same module")
                && r.contains("4096 of 4096 elements wrong"),
            "{r}"
        );
    }

    #[test]
    fn the_first_test_of_the_pass_keeps_its_own_verdict() {
        let v = carried_state(wrong("gen0"), &[]);
        assert_eq!(v.verdict.short(), "wrong answer");
    }
}

#[cfg(test)]
mod floor_tests {
    use super::*;
    use crate::check::measure::TimingStats;

    fn passed(ms: f64) -> (TestVerdict, RunOutcome) {
        let mut o = RunOutcome::empty(RunStatus::Ok);
        o.timing = TimingStats::from_samples(&[ms; 10]);
        (judged_test("gen1", &o), o)
    }

    #[test]
    fn a_right_candidate_timed_below_its_floor_is_impossibly_fast_with_the_figures() {
        // an H200's figures; 1 GB claimed, at twice the confirmed bandwidth
        let c = Ceilings::from_figures(Some(4814.0), Some(4269.0), 60 << 20);
        let floor = c.floor(1e9).unwrap();
        let (tv, o) = passed(floor.ms / 2.0);
        let v = below_floor(tv, &o, Some(&floor)).verdict;
        assert!(matches!(v, Verdict::ImpossibleTime { .. }), "{v:?}");
        let r = v.reason();
        assert!(
            r.contains("right on every checked launch") && r.contains("below the physical floor"),
            "{r}"
        );
        // at the floor or above, or with no floor known, the verdict stands
        let (tv, o) = passed(floor.ms * 1.01);
        assert_eq!(below_floor(tv, &o, Some(&floor)).verdict, Verdict::Ok);
        let (tv, o) = passed(floor.ms / 2.0);
        assert_eq!(below_floor(tv, &o, None).verdict, Verdict::Ok);
    }

    #[test]
    fn a_wrong_candidate_keeps_its_own_verdict_whatever_its_time() {
        let c = Ceilings::from_figures(Some(4814.0), Some(4269.0), 60 << 20);
        let floor = c.floor(1e9).unwrap();
        let (mut tv, o) = passed(floor.ms / 2.0);
        tv.verdict = Verdict::Invalid {
            reason: "crashed".into(),
        };
        let v = below_floor(tv, &o, Some(&floor)).verdict;
        assert!(matches!(v, Verdict::Invalid { .. }), "{v:?}");
    }
}
