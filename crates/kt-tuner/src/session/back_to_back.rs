//! The default launch delivered as a tuning's best must have passed what every configuration passed. A
//! configuration runs the tests back to back in one loaded module; the default launch, for a kernel with
//! state, gives each test's expected values from a freshly loaded module (`default_launch::measure_reference`), so it
//! never ran one input after another. Before it is delivered it does: its module is loaded afresh and every
//! test verified in turn, and a test wrong after others is `CarriesState` (an earlier input cached in a
//! `__device__` variable), as `kt verify` names it.

use crate::error::TunerError;
use crate::model::outcome::Verdict;
use crate::session::engine::{CheckTarget, Engine};
use crate::session::verification::{carried_state, run_candidate};

/// `target` verified on its tests back to back in one freshly loaded module: the first failure's verdict
/// (`CarriesState` when an earlier test ran before it), or `Verdict::Ok`.
pub(crate) fn check(e: &mut Engine, target: &CheckTarget) -> Result<Verdict, TunerError> {
    let tests = target.tests;
    e.check_tests(target, |e, key, i| {
        if i == 0 {
            // the state a program's first call finds; the run loads the module again
            e.link.unload(key, &mut e.queue)?;
        }
        let tv = run_candidate(e, key, target.kernel, target.config, &tests[i], None, None)?;
        Ok((!tv.verdict.is_ok()).then(|| carried_state(tv, &tests[..i]).verdict))
    })
}
