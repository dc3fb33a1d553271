//! The tuning loop: plan the space, compile ahead (kt's kernels, the default configuration, the strategy's
//! first batch) while the worker starts, upload the tests, measure the default launch (the reference for
//! expected outputs and for speed-ups), then batches from the search strategy → evaluate → record in the
//! results cache → progress, and last the best configuration and its share of the device's peak.

use std::collections::HashMap;
use std::time::Instant;

use crate::args::{KernelTest, TestSet};
use crate::cache::{CacheScope, ResultCache};
use crate::error::TunerError;
use crate::expr::Bindings;
use crate::floor::{Ceiling, Ceilings};
use crate::measure::{Baseline, TimingPolicy, TimingStats};
use crate::outcome::{Measurement, Phases, Progress, TuneResult, Verdict};
use crate::search::{History, drive};
use crate::session::{back_to_back, determinism};
use crate::session::engine::Engine;
use crate::session::evaluate::{Bench, fill_rates};
use crate::session::peak::{PeakCeilings, copy_bandwidth, fp32_rate, share_of_peak, theoretical};
use crate::session::plausibility::{self, Plausibility};
use crate::session::search_run::{Prefetched, SearchRun};
use crate::session::setup::TuneOptions;
use crate::session::worker_link::{run_request, test_dtypes};
use crate::space::{Config, SearchSpace};
use crate::tunable_kernel::TunableKernel;
use crate::worker::protocol::{DeviceInfo, RunRequest};

/// The space to search and how its modules are built.
pub(super) struct Plan {
    pub space: SearchSpace,
    /// The first test's scalars: what the restrictions and the compile-time defines see.
    pub scalars0: Bindings,
    /// `grid_size_*` defines only when every test has the same launch, else one module per test would be
    /// needed.
    pub grid_defines: bool,
    /// The default launch.
    pub reference: Config,
}

impl Plan {
    fn new(e: &Engine, kernel: &TunableKernel, tests: &[KernelTest]) -> Result<Self, TunerError> {
        let first = tests
            .first()
            .ok_or_else(|| TunerError::Arguments("no tests to tune on".into()))?;
        let scalars0 = first.scalars();
        let space = SearchSpace::build_for_blocks(
            &kernel.params,
            &kernel.restrictions,
            &scalars0,
            Some(e.max_threads),
            &kernel.geometry.block_names,
        )?;
        if space.is_empty() {
            return Err(TunerError::Space(
                "no configuration satisfies the restrictions and the device's thread limit".into(),
            ));
        }
        let grid_defines = tests.iter().all(|t| {
            kernel
                .geometry
                .problem(&space.configs[0], &t.scalars())
                .ok()
                == kernel.geometry.problem(&space.configs[0], &scalars0).ok()
        });
        let reference = kernel
            .reference
            .clone()
            .unwrap_or_else(|| space.configs[0].clone());
        Ok(Plan {
            space,
            scalars0,
            grid_defines,
            reference,
        })
    }
}

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
    let tests = &tests.tests;
    let plan = Plan::new(e, kernel, tests)?;

    // Compile kt's own kernels, the reference and the strategy's first batch now, before waiting for
    // the worker.
    for t in tests {
        e.queue.submit_util(&test_dtypes(t));
    }
    let ref_module = e
        .queue
        .submit(kernel, &plan.reference, &plan.scalars0, plan.grid_defines)?;
    let mut strategy = options.strategy.build(options.seed);
    let mut prefetched: Vec<usize> = strategy.next_batch(&plan.space, &History::default());
    if let Some(m) = options.limits.max_evals {
        prefetched.truncate(m);
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

    let device = e.link.device(&mut e.queue)?;
    phases.context_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut results = open_results(e, kernel, tests, options, &device)?;

    let t_up = Instant::now();
    // outputs that are sums get a tolerance for their length (flops per output element)
    let uploaded = crate::sum_floor::with_sum_lengths(tests, kernel.flops.as_deref());
    e.link.prepare(&uploaded, None, &mut e.queue)?;
    phases.upload_ms = t_up.elapsed().as_secs_f64() * 1e3;

    // the reference compiled meanwhile on the pool
    e.queue.wait_required(
        &ref_module,
        &kernel.kernel_name,
        &tests[0].id,
        &format!("the default configuration {}", plan.reference),
    )?;
    let t_ref = Instant::now();
    let (mut reference, refs) =
        measure_reference(e, kernel, &plan, tests, &ref_module.key, options.timing)?;
    phases.reference_ms = t_ref.elapsed().as_secs_f64() * 1e3;

    let t_bench = Instant::now();
    let mut measurements = if only_the_reference(&plan, options) {
        // The space is the default launch just measured on every test (the original kernel's baseline,
        // before it has expected outputs): a search would measure it again to the same end.
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
    } else {
        let total = options
            .limits
            .max_evals
            .unwrap_or(plan.space.len())
            .min(plan.space.len());
        let mut run = SearchRun {
            e: &mut *e,
            kernel,
            plan: &plan,
            tickets,
            results,
            bench: Bench {
                tests,
                timing: options.timing,
                verify: options.verify,
                refs,
                best_per_test: vec![None; tests.len()],
            },
            phases: &mut phases,
            progress,
            measurements: Vec::new(),
            total,
            setup_error: None,
        };
        let mut wrapper = Prefetched {
            first: Some(prefetched),
            inner: strategy.as_mut(),
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
        run.measurements
    };
    phases.benchmark_ms = t_bench.elapsed().as_secs_f64() * 1e3;

    let (peak, fp32_measured) = if options.measure_peak {
        (copy_bandwidth(e, &device).ok(), fp32_rate(e, &device).ok())
    } else {
        (None, None)
    };
    let (result_ordinal, device_cc) = (device.ordinal, device.compute_capability);
    let theoretical_peaks = theoretical(result_ordinal, device_cc);
    let ceilings = Ceilings::from_figures(
        theoretical_peaks.map(|p| p.bandwidth_gb_s),
        peak,
        device.l2_bytes.max(0) as u64,
    );
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
    tracing::debug!(
        kernel = %kernel.kernel_name,
        configurations = measurements.len(),
        context_ms = phases.context_ms as u64,
        upload_ms = phases.upload_ms as u64,
        reference_ms = phases.reference_ms as u64,
        compile_wait_ms = phases.compile_wait_ms as u64,
        benchmark_ms = phases.benchmark_ms as u64,
        after_search_ms = (t_bench.elapsed().as_secs_f64() * 1e3 - phases.benchmark_ms) as u64,
        total_ms = phases.total_ms as u64,
        "tuning finished"
    );

    let mut result = TuneResult {
        kernel_name: kernel.kernel_name.clone(),
        device,
        strategy: options.strategy,
        space_size: plan.space.len(),
        best,
        reference: Some(reference),
        measurements,
        phases,
        peak_gbps: peak,
        peak_fp32_gflops: fp32_measured,
        worker_restarts: e.link.restarts(),
        theoretical_peaks,
    };
    // each ceiling as checked against what kt measured: its copy, its FMA kernel
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
        bytes_per_test0: kernel
            .bytes
            .as_ref()
            .and_then(|b| crate::expr::eval_number(b, &plan.scalars0).ok()),
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
    Ok(result)
}

/// Whether the whole space is the default launch, measured without expected outputs to verify against: then
/// the reference measurement is the search's only result.
fn only_the_reference(plan: &Plan, options: &TuneOptions) -> bool {
    !options.verify
        && plan.space.len() == 1
        && plan.space.configs[0] == plan.reference
        && options.limits.max_evals != Some(0)
}

/// The fastest verified measurement.
fn fastest(measurements: &[Measurement]) -> Option<&Measurement> {
    measurements
        .iter()
        .filter(|m| m.objective_ms().is_some_and(f64::is_finite))
        .min_by(|a, b| {
            a.objective
                .unwrap_or(f64::INFINITY)
                .total_cmp(&b.objective.unwrap_or(f64::INFINITY))
        })
}

/// What the best configuration is checked against before it is delivered.
struct BestCheck<'a> {
    plan: &'a Plan,
    tests: &'a [KernelTest],
    ceilings: Ceilings,
    timing: TimingPolicy,
}

/// The fastest configuration whose reruns agree with each other and whose time is physically possible: a
/// faster one whose reruns differ gets the `Nondeterministic` verdict (or its rerun's failure), one below
/// its floor after a re-verification `ImpossibleTime`, and the next is tried, a few at most.
fn deterministic_best(
    e: &mut Engine,
    kernel: &TunableKernel,
    check: &BestCheck,
    measurements: &mut [Measurement],
) -> Result<Option<Measurement>, TunerError> {
    let (plan, tests) = (check.plan, check.tests);
    for _ in 0..3 {
        let Some(mut best) = fastest(measurements).cloned() else {
            return Ok(None);
        };
        let mut verdict = determinism::check(e, kernel, &best.config, tests, plan.grid_defines)?;
        if verdict.is_ok() {
            match hold_to_floor(e, kernel, check, &best)? {
                Plausibility::Plausible => return Ok(Some(best)),
                Plausibility::Retimed(stats) => {
                    retime(&mut best, stats);
                    fill_rates(kernel, &tests[0].scalars(), &mut best);
                    if let Some(m) = measurements.iter_mut().find(|m| m.config == best.config) {
                        *m = best.clone();
                    }
                    // a slower time may no longer be the fastest: the next round decides
                    continue;
                }
                Plausibility::Rejected(v) => verdict = v,
            }
        }
        tracing::warn!(config = %best.config, "{}", verdict.reason());
        if let Some(m) = measurements.iter_mut().find(|m| m.config == best.config) {
            m.verdict = verdict;
        }
    }
    Ok(None)
}

/// `m`'s time on the first test held against its floor (`plausibility`).
fn hold_to_floor(
    e: &mut Engine,
    kernel: &TunableKernel,
    check: &BestCheck,
    m: &Measurement,
) -> Result<Plausibility, TunerError> {
    plausibility::check(
        e,
        kernel,
        m,
        &check.tests[0],
        check.plan.grid_defines,
        &check.ceilings,
        check.timing,
    )
}

/// A measurement with its first test timed again (its objective follows).
fn retime(m: &mut Measurement, stats: crate::measure::TimingStats) {
    if let Some(first) = m.per_test_ms.first_mut() {
        *first = stats.median_ms;
    }
    m.objective = Some(m.per_test_ms.iter().sum());
    m.timing = Some(stats);
}

/// The configuration delivered: the fastest of the space that passed its checks, or the default launch when
/// nothing in the space passed or the default is faster (a space searched without it, every configuration
/// slower, e.g. stopped early as hopeless against it, is no reason to deliver a slower launch). A default
/// that fails its checks keeps that verdict, so the table says why a slower configuration is the best —
/// or why there is none: a default refused for state carried between inputs or an impossible time shows
/// what the kernel's code does (every configuration runs it), and the space's configurations were timed
/// against the default's gamed time (stopped early as hopeless, one honest launch each).
fn choose_best(
    e: &mut Engine,
    kernel: &TunableKernel,
    check: &BestCheck,
    measurements: &mut [Measurement],
    reference: &mut Measurement,
) -> Result<Option<Measurement>, TunerError> {
    let space_best = deterministic_best(e, kernel, check, measurements)?;
    if let Some(b) = &space_best
        && (b.config == reference.config || !slower_than(b, reference))
    {
        return Ok(space_best);
    }
    match default_as_best(e, kernel, check, reference)? {
        Ok(default) => Ok(Some(default)),
        Err(refused) => {
            let games = matches!(
                refused,
                Some(Verdict::ImpossibleTime { .. } | Verdict::CarriesState { .. })
            );
            if let Some(v) = refused {
                reference.verdict = v;
            }
            Ok(if games { None } else { space_best })
        }
    }
}

/// Whether `m`'s objective is above the default launch's (both measured on the same tests).
fn slower_than(m: &Measurement, default: &Measurement) -> bool {
    match (m.objective_ms(), default.objective_ms()) {
        (Some(t), Some(d)) => d.is_finite() && d < t,
        _ => false,
    }
}

/// The default launch as the verified result (nothing in the space verified: a kernel that works at one
/// launch only, a fixed block in `__launch_bounds__`, in tile arithmetic or in a macro; or nothing in the
/// space is faster) — if its reruns agree, a kernel with state gets every test right back to back in one
/// module as each configuration did (`back_to_back`), and its time is physically possible. `Err` with the
/// verdict that refused it (None: it never verified or has no time).
fn default_as_best(
    e: &mut Engine,
    kernel: &TunableKernel,
    check: &BestCheck,
    reference: &Measurement,
) -> Result<Result<Measurement, Option<Verdict>>, TunerError> {
    let (plan, tests) = (check.plan, check.tests);
    if !reference.verdict.is_ok() || !reference.objective_ms().is_some_and(f64::is_finite) {
        return Ok(Err(None));
    }
    let mut verdict = determinism::check(e, kernel, &plan.reference, tests, plan.grid_defines)?;
    if verdict.is_ok() && kernel.keeps_state() && tests.len() > 1 {
        verdict = back_to_back::check(e, kernel, &plan.reference, tests, plan.grid_defines)?;
    }
    if !verdict.is_ok() {
        tracing::warn!(config = %plan.reference, "the default launch: {}", verdict.reason());
        return Ok(Err(Some(verdict)));
    }
    let mut best = reference.clone();
    match hold_to_floor(e, kernel, check, &best)? {
        Plausibility::Plausible => {}
        Plausibility::Retimed(stats) => {
            retime(&mut best, stats);
            fill_rates(kernel, &tests[0].scalars(), &mut best);
        }
        Plausibility::Rejected(v) => {
            tracing::warn!(config = %plan.reference, "the default launch: {}", v.reason());
            return Ok(Err(Some(v)));
        }
    }
    Ok(Ok(best))
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

/// The default launch on every test: its outputs are checked against the tests' own expected values (or
/// become them), and its times are the baselines for the watchdog, the early stop and the speed-up.
fn measure_reference(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(block: i64, ms: Option<f64>) -> Measurement {
        Measurement::synthetic(Config::ints([("block_size_x", block)]), Verdict::Ok, ms)
    }

    #[test]
    fn a_best_slower_than_the_default_launch_gives_way_to_it() {
        let default = measured(256, Some(0.2268));
        assert!(slower_than(&measured(128, Some(0.7878)), &default));
        assert!(!slower_than(&measured(64, Some(0.2)), &default));
        // a default without a time (never measured) is no reason to set a configuration aside
        assert!(!slower_than(&measured(64, Some(0.2)), &measured(256, None)));
        assert!(!slower_than(&measured(64, None), &default));
    }
}
