//! The tuning loop, in its phases: plan the space (`plan`), compile ahead (kt's kernels, the default
//! configuration, the strategy's first batch) while the worker starts, open the device and the results cache
//! and upload the tests, measure the default launch (`default_launch`: the reference for expected outputs and
//! for speed-ups), search (batches from the strategy → evaluate → record in the results cache → progress,
//! `search_run`), choose the best (`best_choice`), and last the result with its share of the device's peak.
//! [`tune`] calls the phases in that order; each is a function below.

use std::collections::HashMap;
use std::time::Instant;

use crate::check::floor::{Ceiling, Ceilings};
use crate::check::measure::Baseline;
use crate::error::TunerError;
use crate::export::cache::{CacheScope, ResultCache};
use crate::model::args::{KernelTest, TestSet};
use crate::model::outcome::{Measurement, Phases, Progress, TuneResult};
use crate::model::tunable_kernel::TunableKernel;
use crate::search::{History, SearchStrategy, drive};
use crate::session::best_choice::{BestCheck, choose_best, fastest};
use crate::session::compile_queue::Submitted;
use crate::session::default_launch::measure_reference;
use crate::session::engine::Engine;
use crate::session::evaluate::Bench;
use crate::session::peak::{PeakCeilings, copy_bandwidth, fp32_rate, share_of_peak, theoretical};
use crate::session::plan::{Plan, only_the_reference};
use crate::session::run_request::test_dtypes;
use crate::session::search_run::{Prefetched, SearchRun};
use crate::session::setup::TuneOptions;
use crate::worker::protocol::DeviceInfo;

/// Tunes `kernel` on `tests`. Per-config failures become verdicts; only set-up failures are errors.
pub(crate) fn tune(
    e: &mut Engine,
    kernel: &TunableKernel,
    tests: &TestSet,
    options: &TuneOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<TuneResult, TunerError> {
    let start = Instant::now();
    let options = &options.for_kernel(kernel);
    let mut phases = Phases::default();
    let turns_before = e.link.waited_for_turns();
    let tests = &tests.tests;
    let plan = Plan::new(e, kernel, tests)?;
    let ahead = compile_ahead(e, kernel, tests, &plan, options)?;
    let device = e.link.device(&mut e.queue)?;
    phases.context_ms = start.elapsed().as_secs_f64() * 1e3;
    let results = open_results(e, kernel, tests, options, &device)?;
    upload(e, kernel, tests, &mut phases)?;
    let (mut reference, refs) =
        reference_phase(e, kernel, &plan, tests, &ahead, options, &mut phases)?;

    let t_bench = Instant::now();
    let job = Job {
        kernel,
        plan: &plan,
        tests,
        options,
    };
    let mut measurements = if only_the_reference(&plan, options) {
        reference_as_search(&reference, results, progress)
    } else {
        search(e, &job, ahead, results, refs, &mut phases, progress)?
    };
    phases.benchmark_ms = t_bench.elapsed().as_secs_f64() * 1e3;

    let peaks = measure_peaks(e, &device, options);
    let ceilings = Ceilings::from_figures(
        peaks.theoretical.map(|p| p.bandwidth_gb_s),
        peaks.copy_gbps,
        device.l2_bytes.max(0) as u64,
    )
    .with_fp32(Ceiling::confirm(
        peaks
            .theoretical
            .map(|p| p.fp32_gflop_s)
            .or_else(|| device.fp32_peak_gflops()),
        peaks.fp32_gflops,
        "GFLOP/s",
        "kt's FMA kernel",
    ));
    let best = if options.verify {
        let check = BestCheck {
            plan: &plan,
            tests,
            ceilings: ceilings.clone(),
            timing: options.timing,
        };
        choose_best(e, kernel, &check, &mut measurements, &mut reference)?
    } else {
        fastest(&measurements).cloned()
    };
    phases.total_ms = start.elapsed().as_secs_f64() * 1e3;
    phases.gpu_turns_ms = e
        .link
        .waited_for_turns()
        .saturating_sub(turns_before)
        .as_secs_f64()
        * 1e3;
    log_phases(kernel, measurements.len(), &phases, &t_bench);
    // what this tuning measured: results read from a cache cost it no GPU time
    let efficiency = kt_record::TuningEfficiency::new(
        measurements
            .iter()
            .filter(|m| !m.from_cache)
            .filter_map(|m| m.gpu),
        phases.total_ms,
    );

    let result = TuneResult {
        kernel_name: kernel.kernel_name.clone(),
        device,
        strategy: options.strategy,
        space_size: plan.space.len(),
        best,
        reference: Some(reference),
        measurements,
        phases,
        peak_gbps: peaks.copy_gbps,
        peak_fp32_gflops: peaks.fp32_gflops,
        worker_restarts: e.link.restarts(),
        theoretical_peaks: peaks.theoretical,
        efficiency: Some(efficiency),
    };
    Ok(with_shares_of_peak(
        result,
        &job,
        ceilings,
        peaks.fp32_gflops,
    ))
}

/// What every phase after the plan reads: the kernel, its plan, the tests and the options.
struct Job<'a> {
    kernel: &'a TunableKernel,
    plan: &'a Plan,
    tests: &'a [KernelTest],
    options: &'a TuneOptions,
}

/// What was submitted to the compiler pool before the worker was waited for.
struct Ahead {
    /// The default configuration's module.
    reference: Submitted,
    strategy: Box<dyn SearchStrategy>,
    /// The strategy's first batch, its modules submitted in `tickets`.
    prefetched: Vec<usize>,
    tickets: HashMap<usize, Submitted>,
}

/// Compiles kt's own kernels, the reference and the strategy's first batch now, before waiting for the
/// worker.
fn compile_ahead(
    e: &mut Engine,
    kernel: &TunableKernel,
    tests: &[KernelTest],
    plan: &Plan,
    options: &TuneOptions,
) -> Result<Ahead, TunerError> {
    for t in tests {
        e.queue.submit_util(&test_dtypes(t));
    }
    let reference = e
        .queue
        .submit(kernel, &plan.reference, &plan.scalars0, plan.grid_defines)?;
    let mut strategy = crate::search::seeded::Seeded::wrap(
        options.seeds.clone(),
        options.strategy.build(options.seed),
    );
    let mut prefetched: Vec<usize> = strategy.next_batch(&plan.space, &History::default());
    if let Some(m) = options.limits.max_evals {
        prefetched.truncate(m);
    }
    // under a time limit the search goes a chunk at a time: compiling the whole space ahead would spend
    // the CPU (and, at the end, the wait) on configurations the limit never reaches
    if options.limits.time_limit.is_some() {
        prefetched.truncate(2 * crate::search::TIME_LIMITED_CHUNK);
    }
    let mut tickets = HashMap::new();
    for &i in &prefetched {
        let s = e.queue.submit(
            kernel,
            &plan.space.configs[i],
            &plan.scalars0,
            plan.grid_defines,
        )?;
        tickets.insert(i, s);
    }
    Ok(Ahead {
        reference,
        strategy,
        prefetched,
        tickets,
    })
}

/// Uploads the tests; outputs that are sums get a tolerance for their length (flops per output element).
fn upload(
    e: &mut Engine,
    kernel: &TunableKernel,
    tests: &[KernelTest],
    phases: &mut Phases,
) -> Result<(), TunerError> {
    let t_up = Instant::now();
    let uploaded = crate::check::sum_floor::with_sum_lengths(tests, kernel.flops.as_deref());
    e.link.prepare(&uploaded, None, &mut e.queue)?;
    phases.upload_ms = t_up.elapsed().as_secs_f64() * 1e3;
    Ok(())
}

/// Waits for the reference's module (compiled meanwhile on the pool) and measures the default launch.
fn reference_phase(
    e: &mut Engine,
    kernel: &TunableKernel,
    plan: &Plan,
    tests: &[KernelTest],
    ahead: &Ahead,
    options: &TuneOptions,
    phases: &mut Phases,
) -> Result<(Measurement, Vec<Baseline>), TunerError> {
    e.queue.wait_required(
        &ahead.reference,
        &kernel.kernel_name,
        &tests[0].id,
        &format!("the default configuration {}", plan.reference),
    )?;
    let t_ref = Instant::now();
    let measured = measure_reference(e, kernel, plan, tests, &ahead.reference.key, options.timing)?;
    phases.reference_ms = t_ref.elapsed().as_secs_f64() * 1e3;
    Ok(measured)
}

/// The space is the default launch just measured on every test (the original kernel's baseline, before it
/// has expected outputs): a search would measure it again to the same end.
fn reference_as_search(
    reference: &Measurement,
    mut results: Option<ResultCache>,
    progress: &mut dyn FnMut(&Progress),
) -> Vec<Measurement> {
    let mut m = reference.clone();
    m.compile_ms = 0.0;
    if let Some(r) = results.as_mut()
        && let Err(err) = r.append(&m)
    {
        tracing::warn!("results cache: {err}");
    }
    progress(&Progress {
        done: 1,
        total: 1,
        config: m.config.clone(),
        verdict: m.verdict.short().to_string(),
        time_ms: m.objective_ms(),
        best_ms: m.objective_ms(),
    });
    vec![m]
}

/// Batches from the strategy (its first one already compiling) until the limits or the strategy stop.
fn search(
    e: &mut Engine,
    job: &Job,
    mut ahead: Ahead,
    results: Option<ResultCache>,
    refs: Vec<Baseline>,
    phases: &mut Phases,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Vec<Measurement>, TunerError> {
    let (plan, tests, options) = (job.plan, job.tests, job.options);
    let total = options
        .limits
        .max_evals
        .unwrap_or(plan.space.len())
        .min(plan.space.len());
    let mut run = SearchRun {
        e,
        kernel: job.kernel,
        plan,
        tickets: ahead.tickets,
        results,
        bench: Bench {
            tests,
            timing: options.timing,
            verify: options.verify,
            refs,
            best_per_test: vec![None; tests.len()],
        },
        phases,
        progress,
        measurements: Vec::new(),
        total,
        setup_error: None,
    };
    let mut wrapper = Prefetched {
        first: Some(ahead.prefetched),
        inner: ahead.strategy.as_mut(),
    };
    drive(
        &mut wrapper,
        &plan.space,
        options.limits,
        &mut History::default(),
        |batch| run.evaluate_batch(batch),
    );
    if let Some(err) = run.setup_error {
        return Err(err);
    }
    Ok(run.measurements)
}

/// The device's peaks: kt's own copy and FMA measurements (when asked for) and the datasheet's.
struct Peaks {
    copy_gbps: Option<f64>,
    fp32_gflops: Option<f64>,
    theoretical: Option<kt_profile::DevicePeaks>,
}

fn measure_peaks(e: &mut Engine, device: &DeviceInfo, options: &TuneOptions) -> Peaks {
    let (copy_gbps, fp32_gflops) = if options.measure_peak {
        (copy_bandwidth(e, device).ok(), fp32_rate(e, device).ok())
    } else {
        (None, None)
    };
    Peaks {
        copy_gbps,
        fp32_gflops,
        theoretical: theoretical(device.ordinal, device.compute_capability),
    }
}

/// Where the tuning's time went, for `--verbose` runs.
fn log_phases(kernel: &TunableKernel, configurations: usize, phases: &Phases, t_bench: &Instant) {
    tracing::debug!(
        kernel = %kernel.kernel_name,
        configurations,
        context_ms = phases.context_ms as u64,
        upload_ms = phases.upload_ms as u64,
        reference_ms = phases.reference_ms as u64,
        compile_wait_ms = phases.compile_wait_ms as u64,
        benchmark_ms = phases.benchmark_ms as u64,
        after_search_ms = (t_bench.elapsed().as_secs_f64() * 1e3 - phases.benchmark_ms) as u64,
        total_ms = phases.total_ms as u64,
        gpu_turns_ms = phases.gpu_turns_ms as u64,
        "tuning finished"
    );
}

/// Each measurement's share of the device's peak, each ceiling as checked against what kt measured: its
/// copy, its FMA kernel.
fn with_shares_of_peak(
    mut result: TuneResult,
    job: &Job,
    ceilings: Ceilings,
    fp32_measured: Option<f64>,
) -> TuneResult {
    let peaks = PeakCeilings {
        memory: ceilings,
        fp32: Ceiling::confirm(
            result
                .theoretical_peaks
                .map(|p| p.fp32_gflop_s)
                .or_else(|| result.device.fp32_peak_gflops()),
            fp32_measured,
            "GFLOP/s",
            "kt's FMA kernel",
        ),
        bytes_per_test0: job
            .kernel
            .bytes
            .as_ref()
            .and_then(|b| crate::model::expr::eval_number(b, &job.plan.scalars0).ok()),
    };
    for m in result
        .measurements
        .iter_mut()
        .chain(result.best.iter_mut())
        .chain(result.reference.iter_mut())
    {
        let share = share_of_peak(m, &peaks);
        m.percent_of_peak = share.as_ref().map(|s| s.percent);
        m.peak_note = share.and_then(|s| s.note);
    }
    result
}

/// The results cache of this kernel, device, tests and timing policy, when the options name one (or a
/// Kernel Tuner cache to reuse).
fn open_results(
    e: &Engine,
    kernel: &TunableKernel,
    tests: &[KernelTest],
    options: &TuneOptions,
    device: &DeviceInfo,
) -> Result<Option<ResultCache>, TunerError> {
    // `kt tune --kt-cache` (export::import): Kernel Tuner's results on this GPU are reused like kt's own.
    let imported = crate::export::import::reusable(
        options.kernel_tuner_cache.as_deref(),
        kernel,
        tests,
        &device.name,
    )?;
    if options.results_cache.is_none() && imported.is_empty() {
        return Ok(None);
    }
    let problem: Vec<String> = tests.iter().map(|t| t.fingerprint()).collect();
    let scope = CacheScope::new(
        &device.uuid,
        &kernel.source,
        &kernel.kernel_name,
        &e.queue.options_for(kernel),
        &format!("{}|{:?}", problem.join(","), options.timing),
    );
    let mut cache = match &options.results_cache {
        Some(path) => ResultCache::open(path, scope)?,
        None => ResultCache::in_memory(scope),
    };
    cache.absorb(imported);
    Ok(Some(cache))
}
