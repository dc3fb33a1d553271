//! The default launch delivered as a tuning's best must have passed what every configuration passed. A
//! configuration runs the tests back to back in one loaded module; the default launch, for a kernel with
//! state, gives each test's expected values from a freshly loaded module (`tuning::measure_reference`), so it
//! never ran one input after another. Before it is delivered it does: its module is loaded afresh and every
//! test verified in turn, and a test wrong after others is `CarriesState` (an earlier input cached in a
//! `__device__` variable), as `kt verify` names it.

use crate::args::KernelTest;
use crate::error::TunerError;
use crate::outcome::Verdict;
use crate::session::engine::Engine;
use crate::session::verification::{carried_state, run_candidate};
use crate::space::Config;
use crate::tunable_kernel::TunableKernel;

/// `kernel` at `config` verified on `tests` back to back in one freshly loaded module: the first failure's
/// verdict (`CarriesState` when an earlier test ran before it), or `Verdict::Ok`.
pub(crate) fn check(
    e: &mut Engine,
    kernel: &TunableKernel,
    config: &Config,
    tests: &[KernelTest],
    grid_defines: bool,
) -> Result<Verdict, TunerError> {
    let Some(first) = tests.first() else {
        return Ok(Verdict::Ok);
    };
    let key = match e
        .queue
        .compiled(kernel, config, &first.scalars(), grid_defines)?
    {
        Ok(key) => key,
        Err(failed) => return Ok(failed),
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
