//! Physically impossible times: the configuration about to be delivered as the best is held against the
//! floor its bytes and the device's bandwidth set (`crate::check::floor`). Below it, it is verified and timed once
//! more; still below, it is rejected with the `ImpossibleTime` verdict and both times, never accepted
//! silently.

use std::time::Duration;

use crate::check::floor::{Ceilings, impossible};
use crate::check::measure::{TimingPolicy, TimingStats};
use crate::compile::module_cache::ModuleOutcome;
use crate::error::TunerError;
use crate::model::args::KernelTest;
use crate::model::expr::eval_number;
use crate::model::outcome::{Measurement, Verdict};
use crate::model::tunable_kernel::TunableKernel;
use crate::session::engine::Engine;
use crate::session::run_request::run_request;
use crate::worker::protocol::{Request, RunRequest, RunStatus};

/// What holding a time against its floor found.
#[derive(Debug)]
pub(crate) enum Plausibility {
    /// At or above its floor (or no floor is known).
    Plausible,
    /// Below it, but verified and timed again above it: the new timing replaces the old.
    Retimed(TimingStats),
    /// Below it again, or the re-verification failed.
    Rejected(Verdict),
}

/// The floor of one launch of `kernel` on `test`: its `bytes` from memory, and its `flops` on the FP32 units
/// when the sidecar says they are exact.
pub(crate) fn launch_floor(
    ceilings: &Ceilings,
    kernel: &TunableKernel,
    test: &KernelTest,
) -> Option<crate::check::floor::Floor> {
    let eval = |e: &Option<String>| {
        e.as_ref()
            .and_then(|x| eval_number(x, &test.scalars()).ok())
    };
    let exact_flops = kernel.flops_exact.then(|| eval(&kernel.flops)).flatten();
    ceilings.launch_floor(eval(&kernel.bytes), exact_flops, kernel.uses_tensor_cores())
}

/// Holds `best`'s time on `test` (the first test) against its floor; below it, verifies and times it again.
pub(crate) fn check(
    e: &mut Engine,
    kernel: &TunableKernel,
    best: &Measurement,
    test: &KernelTest,
    grid_defines: bool,
    ceilings: &Ceilings,
    timing: TimingPolicy,
) -> Result<Plausibility, TunerError> {
    use Plausibility::{Plausible, Rejected, Retimed};
    let Some(ms) = best.per_test_ms.first().copied() else {
        return Ok(Plausible);
    };
    let Some(floor) = launch_floor(ceilings, kernel, test) else {
        return Ok(Plausible);
    };
    let Some(first) = impossible(ms, &floor) else {
        return Ok(Plausible);
    };
    tracing::warn!(config = %best.config, "{first}; verifying and timing it again");
    let submitted = e
        .queue
        .submit(kernel, &best.config, &test.scalars(), grid_defines)?;
    let outcome = e.queue.wait(submitted.ticket)?;
    if let ModuleOutcome::Failed { log, .. } = &*outcome {
        return Ok(Rejected(Verdict::from_compile_log(
            log,
            &kernel.kernel_name,
        )));
    }
    e.queue.remember(
        &submitted.key,
        outcome.clone(),
        &kernel.kernel_name,
        submitted.shared,
    );
    let run = RunRequest {
        verify: true,
        timing: Some(timing),
        ..run_request(&submitted.key, kernel, &best.config, test)?
    };
    let timeout = e.config.timeout_floor.max(Duration::from_secs(60));
    let o = match e
        .link
        .run(&submitted.key, Request::Run { run }, timeout, &mut e.queue)?
    {
        Ok(o) => o,
        Err(v) => return Ok(Rejected(v)),
    };
    if let RunStatus::Invalid(reason) | RunStatus::Crashed(reason) = o.status {
        return Ok(Rejected(Verdict::Invalid { reason }));
    }
    if let Some(v) = Verdict::from_outcome(&o, Some(&test.id)) {
        return Ok(Rejected(v));
    }
    let Some(stats) = o.timing else {
        return Ok(Plausible);
    };
    Ok(match impossible(stats.median_ms, &floor) {
        Some(second) => Rejected(Verdict::ImpossibleTime {
            details: vec![
                format!("test {}: {first}", test.id),
                format!("re-verified: its outputs are right, and again {second}"),
            ],
        }),
        None => {
            tracing::warn!(
                config = %best.config,
                "re-timed at {:.4} ms, above the floor of {:.4} ms: kept at the new time",
                stats.median_ms,
                floor.ms
            );
            Retimed(stats)
        }
    })
}
