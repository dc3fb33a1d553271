//! Verification of a candidate against a reference: the reference's launch gives each test's expected
//! outputs, then the candidate runs on the same inputs with its outputs poisoned, and every output of every
//! test is compared (inputs and the guard bytes around every array must come out unchanged). Both modules
//! are loaded afresh for every test after the first: a kernel that keeps state in `__device__` or
//! `__managed__` globals starts every test from the globals' initial values, as a program would.

use std::time::Duration;

use crate::args::TestSet;
use crate::error::TunerError;
use crate::module_cache::ModuleOutcome;
use crate::outcome::{TestVerdict, Verdict, VerifyReport};
use crate::session::engine::Engine;
use crate::session::worker_link::{run_request, test_dtypes};
use crate::space::Config;
use crate::sum_floor::with_sum_lengths;
use crate::tunable_kernel::TunableKernel;
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
        let run = RunRequest {
            verify: true,
            ..run_request(&c.key, candidate, candidate_config, t)?
        };
        let timeout = e.config.timeout_floor.max(Duration::from_secs(30));
        let tv = match e
            .link
            .run(&c.key, Request::Run { run }, timeout, &mut e.queue)?
        {
            Err(v) => failed_test(&t.id, v),
            Ok(o) => judged_test(&t.id, o),
        };
        report.tests.push(tv);
    }
    Ok(report)
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
fn judged_test(test: &str, o: RunOutcome) -> TestVerdict {
    let verdict = match &o.status {
        RunStatus::Ok => Verdict::from_outcome(&o, None).unwrap_or(Verdict::Ok),
        RunStatus::Invalid(r) | RunStatus::Crashed(r) => Verdict::Invalid { reason: r.clone() },
    };
    TestVerdict {
        test: test.to_string(),
        verdict,
        outputs: o.outputs,
        inputs_modified: o.inputs_modified,
    }
}
