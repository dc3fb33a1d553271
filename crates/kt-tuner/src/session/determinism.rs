//! Races and nondeterminism: a configuration that verified is run twice more on the same inputs, its
//! outputs poisoned before the first and reset to their initial contents before the second (a kernel that
//! skips work where its output already holds a number shows itself), and the runs are compared with each
//! other (bitwise for integers, under the output's tolerance for floats). A kernel with a missing barrier or an unordered
//! reduction can pass one verifying run by luck; differing reruns are the `Nondeterministic` verdict, with
//! the first differing index.

use std::time::Duration;

use crate::check::verify::OutputReport;
use crate::error::TunerError;
use crate::model::outcome::Verdict;
use crate::session::engine::{CheckTarget, Engine};
use crate::session::run_request::run_request;
use crate::worker::protocol::{Request, RunStatus};

/// Reruns after the verifying one.
pub(crate) const RERUNS: u32 = 2;

/// Runs `target` [`RERUNS`] times on every test (already uploaded, with expected values); `Verdict::Ok`
/// when every rerun agrees with the first.
pub(crate) fn check(e: &mut Engine, target: &CheckTarget) -> Result<Verdict, TunerError> {
    e.check_tests(target, |e, key, i| {
        let t = &target.tests[i];
        let run = run_request(key, target.kernel, target.config, t)?;
        let timeout = e.config.timeout_floor.max(Duration::from_secs(60));
        let o = match e.link.run(
            key,
            Request::Repeat { run, runs: RERUNS },
            timeout,
            &mut e.queue,
        )? {
            Ok(o) => o,
            Err(v) => return Ok(Some(v)),
        };
        if let RunStatus::Invalid(reason) | RunStatus::Crashed(reason) = o.status {
            return Ok(Some(Verdict::Invalid { reason }));
        }
        if let Some(v) = Verdict::from_breaches(&o.guard_breaches, Some(&t.id)) {
            return Ok(Some(v));
        }
        Ok(judge(&t.id, &o.outputs))
    })
}

/// The verdict on reruns compared with the first run: `None` when all agree.
pub(crate) fn judge(test: &str, reruns: &[OutputReport]) -> Option<Verdict> {
    let details: Vec<String> = reruns
        .iter()
        .filter(|r| !r.passed())
        .map(|r| format!("test {test}: {}", r.describe()))
        .collect();
    (!details.is_empty()).then_some(Verdict::Nondeterministic { details })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::verify::{Tolerance, compare_host};
    use kt_record::DType;

    #[test]
    fn reruns_that_differ_name_the_first_differing_index() {
        let same = compare_host(
            "out (run 2 against run 1)",
            DType::Int32,
            Tolerance::default(),
            &[1.0, 2.0, 3.0],
            &[false; 3],
            &[1.0, 2.0, 3.0],
        );
        assert_eq!(judge("t0", std::slice::from_ref(&same)), None);
        let differs = compare_host(
            "out (run 3 against run 1)",
            DType::Int32,
            Tolerance::default(),
            &[1.0, 2.0, 4.0],
            &[false; 3],
            &[1.0, 2.0, 3.0],
        );
        let Some(Verdict::Nondeterministic { details }) = judge("t0", &[same, differs]) else {
            panic!("differing reruns are nondeterministic");
        };
        assert_eq!(details.len(), 1);
        assert!(
            details[0].starts_with("test t0: output out (run 3 against run 1)")
                && details[0].contains("first at index 2"),
            "{details:?}"
        );
    }

    #[test]
    fn float_reruns_within_tolerance_agree() {
        let r = compare_host(
            "sum (run 2 against run 1)",
            DType::Float32,
            Tolerance::default(),
            &[1.000_000_1],
            &[false],
            &[1.0],
        );
        assert_eq!(judge("t", &[r]), None);
    }
}
