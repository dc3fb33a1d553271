//! The default launch delivered as a tuning's best must have passed what every configuration passed. A
//! configuration runs the tests back to back in one loaded module; the default launch, for a kernel with
//! state, gives each test's expected values from a freshly loaded module (`default_launch::measure_reference`), so it
//! never ran one input after another. Before it is delivered it does: its module is loaded afresh and every
//! test verified in turn, and a test wrong after others is `CarriesState` (an earlier input cached in a
//! `__device__` variable), as `kt verify` names it.

use crate::error::TunerError;
use crate::model::args::KernelTest;
use crate::model::outcome::Verdict;
use crate::model::space::Config;
use crate::model::tunable_kernel::TunableKernel;
use crate::session::engine::Engine;
use crate::session::verification::{carried_state, run_candidate};

/// `kernel` at `config` verified on `tests` back to back in one freshly loaded module: the first failure's
/// verdict (`CarriesState` when an earlier test ran before it), or `Verdict::Ok`.
pub(crate) fn check(
    e: &mut Engine,
    kernel: &TunableKernel,
    config: &Config,
    tests: &[KernelTest],
    grid_defines: bool,
) -> Result<Verdict, TunerError> {
    let key = match e.module_for_check(kernel, config, tests, grid_defines)? {
        Ok(key) => key,
        Err(before_running) => return Ok(before_running),
    };
    // the state a program's first call finds; the run loads the module again
    e.link.unload(&key, &mut e.queue)?;
    for (i, t) in tests.iter().enumerate() {
        let tv = run_candidate(e, &key, kernel, config, t, None)?;
        if !tv.verdict.is_ok() {
            return Ok(carried_state(tv, &tests[..i]).verdict);
        }
    }
    Ok(Verdict::Ok)
}
