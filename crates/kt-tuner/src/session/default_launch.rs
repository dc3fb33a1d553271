//! The default launch measured on every test before the search: its outputs checked against the tests'
//! expected values (or becoming them), its times the baselines of the watchdog, the early stop and the
//! speed-up.

use crate::check::measure::{Baseline, TimingPolicy, TimingStats};
use crate::error::TunerError;
use crate::model::args::KernelTest;
use crate::model::outcome::{Measurement, Verdict};
use crate::model::tunable_kernel::TunableKernel;
use crate::session::engine::Engine;
use crate::session::evaluate::fill_rates;
use crate::session::plan::Plan;
use crate::session::run_request::run_request;
use crate::worker::protocol::RunRequest;

/// The default launch on every test: its outputs are checked against the tests' own expected values (or
/// become them), and its times are the baselines for the watchdog, the early stop and the speed-up.
pub(super) fn measure_reference(
    e: &mut Engine,
    kernel: &TunableKernel,
    plan: &Plan,
    tests: &[KernelTest],
    key: &str,
    timing: TimingPolicy,
) -> Result<(Measurement, Vec<Baseline>), TunerError> {
    let info = e.link.load_required(key, &tests[0].id, &mut e.queue)?;
    let mut times = Vec::new();
    let mut baselines = Vec::new();
    let mut first_timing = None;
    let mut first_dims = None;
    // a kernel with state gives each test's expected values from a freshly loaded module, as a program's
    // first call would: configurations run the tests back to back in one module, so state carried from
    // one input to the next fails there instead of being baked into the expected values
    let reload = kernel.keeps_state();
    for (i, t) in tests.iter().enumerate() {
        if i > 0 && reload {
            e.link.unload(key, &mut e.queue)?;
            e.link.load_required(key, &t.id, &mut e.queue)?;
        }
        let run = RunRequest {
            timing: Some(timing),
            ..run_request(key, kernel, &plan.reference, t)?
        };
        first_dims.get_or_insert(run.dims);
        let outcome = e.link.reference(run.clone(), &mut e.queue)?;
        if let Some(bad) = outcome.outputs.iter().find(|o| !o.passed()) {
            return Err(TunerError::Reference {
                test: t.id.clone(),
                reason: format!(
                    "the reference launch disagrees with the test's expected values: {}",
                    bad.describe()
                ),
            });
        }
        let ms = outcome.timing.as_ref().map(|s| s.median_ms).unwrap_or(0.0);
        if first_timing.is_none() {
            first_timing = outcome.timing.clone();
        }
        times.push(ms);
        baselines.push(Baseline {
            ms,
            noise: outcome.timing.as_ref().map(TimingStats::sample_noise),
        });
        e.link.set_reference(i, run);
    }
    let total: f64 = times.iter().sum();
    let mut m = Measurement::synthetic(plan.reference.clone(), Verdict::Ok, Some(total));
    m.timing = first_timing;
    m.per_test_ms = times;
    m.launch = first_dims;
    m.registers = Some(info.registers);
    m.local_bytes = Some(info.local_bytes);
    m.static_shared_bytes = Some(info.static_shared_bytes);
    fill_rates(kernel, &plan.scalars0, &mut m);
    Ok((m, baselines))
}
