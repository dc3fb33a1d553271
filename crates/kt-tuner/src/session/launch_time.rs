//! One timed launch of a kernel on one test, outputs from their initial contents: what `kt verify` uses to
//! size its largest default tests by the reference's run time (see `crate::input::default_tests::TimeBudget`).

use crate::check::measure::TimingPolicy;
use crate::error::TunerError;
use crate::model::args::KernelTest;
use crate::model::space::Config;
use crate::model::tunable_kernel::TunableKernel;
use crate::session::engine::Engine;
use crate::session::run_request::{run_request, test_dtypes};
use crate::worker::protocol::RunRequest;

/// Uploads `test` alone and times one launch of `kernel` at `config` on it (as a reference run: a
/// failure is a reference error); milliseconds.
pub(crate) fn time_once(
    e: &mut Engine,
    kernel: &TunableKernel,
    config: &Config,
    test: &KernelTest,
) -> Result<f64, TunerError> {
    let samples = time_exactly(e, kernel, config, test, 1)?;
    let stats = crate::check::measure::TimingStats::from_samples(&samples);
    Ok(stats.map(|t| t.median_ms).unwrap_or(0.0))
}

/// Uploads `test` alone and profiles one launch of `kernel` at `config` on it, outputs from their initial
/// contents (see `Request::Counters`): `metrics` by Nsight Compute's names, with CUPTI from `cupti`.
pub(crate) fn count_once(
    e: &mut Engine,
    kernel: &TunableKernel,
    config: &Config,
    test: &KernelTest,
    metrics: &[&str],
    cupti: &std::path::Path,
) -> Result<crate::worker::protocol::CounterReport, TunerError> {
    let key = load_alone(e, kernel, config, test)?;
    let run = RunRequest {
        timing: None,
        ..run_request(&key, kernel, config, test)?
    };
    let metrics = metrics.iter().map(|m| m.to_string()).collect();
    e.link
        .counters(run, metrics, cupti.to_path_buf(), &mut e.queue)
}

/// Compiles `kernel` at `config`, uploads `test` alone and loads the module on the worker: its key.
pub(crate) fn load_alone(
    e: &mut Engine,
    kernel: &TunableKernel,
    config: &Config,
    test: &KernelTest,
) -> Result<String, TunerError> {
    // the test as a tuning uploads it (sums' tolerances), so a test already on the worker is not sent again
    let test = &crate::check::sum_floor::with_sum_lengths(
        std::slice::from_ref(test),
        kernel.flops.as_deref(),
    )[0];
    e.queue.submit_util(&test_dtypes(test));
    let submitted = e.queue.submit(kernel, config, &test.scalars(), false)?;
    e.link.device(&mut e.queue)?;
    e.queue.wait_required(
        &submitted,
        &kernel.kernel_name,
        &test.id,
        &format!("the kernel at {config}"),
    )?;
    e.link
        .prepare(std::slice::from_ref(test), None, &mut e.queue)?;
    e.link
        .load_required(&submitted.key, &test.id, &mut e.queue)?;
    Ok(submitted.key)
}

/// Uploads `test` alone and times `launches` separate launches of
/// `kernel` at `config` on it, outputs from their initial contents; their times in milliseconds. Nothing
/// is written: the samples behind a speedup's interval.
pub(crate) fn time_exactly(
    e: &mut Engine,
    kernel: &TunableKernel,
    config: &Config,
    test: &KernelTest,
    launches: u32,
) -> Result<Vec<f64>, TunerError> {
    let key = load_alone(e, kernel, config, test)?;
    let run = RunRequest {
        timing: Some(TimingPolicy::exactly(launches)),
        ..run_request(&key, kernel, config, test)?
    };
    let outcome = e.link.reference(run, &mut e.queue)?;
    Ok(outcome.timing.map(|t| t.samples_ms).unwrap_or_default())
}
