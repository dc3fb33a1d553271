//! How one configuration is evaluated: wait for its module, load it (registers, local and shared memory),
//! then on every test one verifying run under a watchdog and, if it verifies, timed samples until the
//! timing policy is satisfied or the configuration is hopelessly slower than the best so far. The first
//! failure (compile error, refused launch, hang, fault, wrong answer) is its verdict.

use std::time::Instant;

use crate::check::measure::{Baseline, TimingPolicy};
use crate::compile::module_cache::ModuleOutcome;
use crate::error::TunerError;
use crate::model::args::KernelTest;
use crate::model::expr::{Bindings, eval_number};
use crate::model::outcome::{Measurement, Phases, Verdict};
use crate::model::space::Config;
use crate::model::tunable_kernel::TunableKernel;
use crate::session::compile_queue::Submitted;
use crate::session::engine::Engine;
use crate::session::run_request::run_request;
use crate::worker::protocol::{Request, RunRequest, RunStatus};

/// What the evaluations of one tuning run share.
pub(crate) struct Bench<'a> {
    pub tests: &'a [KernelTest],
    pub timing: TimingPolicy,
    pub verify: bool,
    /// The default launch's time per test: it bounds the watchdog and the early stop.
    pub refs: Vec<Baseline>,
    /// The fastest verified median per test so far.
    pub best_per_test: Vec<Option<Baseline>>,
}

/// Evaluates `config` (compiled under `submitted`). Per-configuration failures are its verdict; errors
/// are what stops the run.
pub(crate) fn evaluate(
    e: &mut Engine,
    kernel: &TunableKernel,
    config: &Config,
    submitted: Option<Submitted>,
    bench: &mut Bench,
    phases: &mut Phases,
) -> Result<Measurement, TunerError> {
    let mut m = Measurement::synthetic(config.clone(), Verdict::Ok, None);
    m.timing = None;
    let Some(submitted) = submitted else {
        return Err(TunerError::Worker(format!(
            "configuration {config} was never submitted for compilation"
        )));
    };
    let Some(key) = wait_for_module(e, kernel, submitted, phases, &mut m)? else {
        return Ok(m);
    };
    let t_bench = Instant::now();
    let loaded = load_in_worker(e, kernel, &key, &mut m)?;
    let load_ms = t_bench.elapsed().as_secs_f64() * 1e3;
    if !loaded {
        return Ok(m);
    }
    let mut per_test = Vec::new();
    let tests = bench.tests;
    for (i, t) in tests.iter().enumerate() {
        match run_on_test(e, &key, kernel, config, (i, t), bench, &mut m)? {
            Some(median) => per_test.push(median),
            None => break,
        }
    }
    m.benchmark_ms = t_bench.elapsed().as_secs_f64() * 1e3;
    if m.verdict.is_ok() {
        m.objective = Some(per_test.iter().sum());
        m.per_test_ms = per_test;
        fill_rates(kernel, &bench.tests[0].scalars(), &mut m);
    }
    // where a search's time goes, configuration by configuration (`KT_LOG=kt_tuner=trace`)
    tracing::trace!(
        %config,
        compile_ms = m.compile_ms,
        load_ms,
        benchmark_ms = m.benchmark_ms,
        objective_ms = ?m.objective,
        verdict = m.verdict.short(),
        "configuration measured"
    );
    Ok(m)
}

/// Waits for the configuration's module; returns its key, or None when it did not compile (then that is `m`'s
/// verdict).
fn wait_for_module(
    e: &mut Engine,
    kernel: &TunableKernel,
    submitted: Submitted,
    phases: &mut Phases,
    m: &mut Measurement,
) -> Result<Option<String>, TunerError> {
    let t_wait = Instant::now();
    let outcome = e.queue.wait(submitted.ticket)?;
    phases.compile_wait_ms += t_wait.elapsed().as_secs_f64() * 1e3;
    match &*outcome {
        ModuleOutcome::Failed { log, .. } => {
            m.verdict = Verdict::from_compile_log(log, &kernel.kernel_name);
            return Ok(None);
        }
        ModuleOutcome::Compiled { ms, .. } => {
            m.compile_ms = *ms;
            phases.compile_cpu_ms += ms;
        }
    }
    let key = submitted.key;
    e.queue
        .remember(&key, outcome.clone(), &kernel.kernel_name, submitted.shared);
    Ok(Some(key))
}

/// Loads the module into the worker (registers, local and shared memory into `m`); false when the load
/// failed (then that is `m`'s verdict).
fn load_in_worker(
    e: &mut Engine,
    kernel: &TunableKernel,
    key: &str,
    m: &mut Measurement,
) -> Result<bool, TunerError> {
    match e.link.load(key, &mut e.queue)? {
        Ok(info) => {
            m.registers = Some(info.registers);
            m.local_bytes = Some(info.local_bytes);
            m.static_shared_bytes = Some(info.static_shared_bytes);
            Ok(true)
        }
        Err(reason) => {
            m.verdict = Verdict::from_load_failure(reason, &kernel.kernel_name);
            Ok(false)
        }
    }
}

/// One verifying run of test `i` under a watchdog and, if it verifies, its timed samples; returns its median,
/// or None when the evaluation stops here (a failure, now `m`'s verdict, or no timing).
fn run_on_test(
    e: &mut Engine,
    key: &str,
    kernel: &TunableKernel,
    config: &Config,
    (i, t): (usize, &KernelTest),
    bench: &mut Bench,
    m: &mut Measurement,
) -> Result<Option<f64>, TunerError> {
    let base = run_request(key, kernel, config, t)?;
    m.launch.get_or_insert(base.dims);
    let reference = bench.refs.get(i).copied();
    let ref_ms = reference.map(|r| r.ms).unwrap_or(1.0);
    let timing = bench.timing;
    let budget_ms = timing.max_total_ms * 2.0 + ref_ms * (timing.max_reps as f64 + 2.0);
    let timeout = e.run_timeout(ref_ms, budget_ms);
    // the default launch's time bounds the early stop until something faster is found
    let best = match (bench.best_per_test[i], reference) {
        (Some(b), Some(r)) if r.ms < b.ms => Some(r),
        (Some(b), _) => Some(b),
        (None, r) => r,
    };
    let run = RunRequest {
        verify: bench.verify,
        timing: Some(timing),
        best,
        ..base
    };
    let outcome = match e
        .link
        .run(key, Request::Run { run }, timeout, &mut e.queue)?
    {
        Ok(o) => o,
        Err(v) => {
            m.verdict = v;
            return Ok(None);
        }
    };
    if m.occupancy.is_none() {
        m.occupancy = outcome.occupancy;
    }
    match outcome.status {
        RunStatus::Ok => {}
        RunStatus::Invalid(reason) | RunStatus::Crashed(reason) => {
            m.verdict = Verdict::Invalid { reason };
            return Ok(None);
        }
    }
    if let Some(wrong) = Verdict::from_outcome(&outcome, Some(&t.id)) {
        m.verdict = wrong;
        return Ok(None);
    }
    let Some(stats) = outcome.timing else {
        return Ok(None);
    };
    let median = stats.median_ms;
    let gpu = kt_record::GpuTime::of_samples(&stats.samples_ms, stats.aborted_early);
    m.gpu = Some(m.gpu.unwrap_or_default() + gpu);
    if !stats.aborted_early {
        let noise = Some(stats.sample_noise());
        if bench.best_per_test[i].is_none_or(|b| median < b.ms) {
            bench.best_per_test[i] = Some(Baseline { ms: median, noise });
        }
    }
    // An early stop on one test does not skip the others: every test is still verified (their
    // timing will most likely stop after the verifying sample too).
    if m.timing.is_none() {
        m.timing = Some(stats);
    }
    Ok(Some(median))
}

/// Bandwidth and FLOP rate of the first test's median, from the kernel's `bytes` / `flops` expressions.
pub(crate) fn fill_rates(kernel: &TunableKernel, scalars: &Bindings, m: &mut Measurement) {
    let Some(ms) = m.per_test_ms.first().copied().filter(|v| *v > 0.0) else {
        return;
    };
    if let Some(b) = &kernel.bytes {
        m.gbps = eval_number(b, scalars)
            .ok()
            .map(|bytes| bytes / (ms * 1e-3) / 1e9);
    }
    if let Some(f) = &kernel.flops {
        m.gflops = eval_number(f, scalars)
            .ok()
            .map(|flops| flops / (ms * 1e-3) / 1e9);
    }
}
