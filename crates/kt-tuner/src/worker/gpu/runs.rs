//! What one launch request does on the device, step by step: a reference run (expected values, then a
//! poisoned rerun to learn which outputs the kernel fully overwrites), a verifying run (outputs poisoned or
//! reset, every output compared, inputs and guard regions checked unchanged), timed samples whose last
//! launch is checked like the verifying one (and, for a kernel with state across launches, one more after
//! many launches: `crate::check::late_check`), and a recording run (outputs streamed to .npy files, a
//! poisoned probe for elements never written).

use std::collections::HashMap;

use cudarc::driver::sys;

use super::launch::{LaunchError, Launcher};
use super::memory::{
    ArrayView, DeviceMemory, Ptr, copy_of, free, reset, reset_outputs, write_npy_from_device,
};
use crate::check::measure::TimingStats;
use crate::check::sampling::{FirstSample, LastLaunch};
use crate::check::verify::Tolerance;
use crate::worker::gpu::error::GpuError;
use crate::worker::protocol::{
    LaunchArg, OutputFile, RecordedOutput, Reply, RunOutcome, RunRequest, RunStatus, TimedCheck,
};

/// The reply to a launch request: a crash ends the worker after the reply.
pub(super) fn ran_reply(result: Result<RunOutcome, LaunchError>) -> (Reply, bool) {
    match result {
        Ok(outcome) => (Reply::Ran(outcome), false),
        Err(LaunchError::Invalid(m)) => (
            Reply::Ran(RunOutcome::empty(RunStatus::Invalid(m.to_string()))),
            false,
        ),
        Err(LaunchError::Crashed(m)) => (
            Reply::Ran(RunOutcome::empty(RunStatus::Crashed(m.to_string()))),
            true,
        ),
    }
}

/// A launch request resolved against the device: the function, its encoded arguments, the test's arrays.
pub(super) struct Setup {
    pub func: sys::CUfunction,
    pub params: Vec<Vec<u8>>,
    pub arrays: Vec<ArrayView>,
    occupancy: Option<f64>,
}

/// Also writes the test's `__constant__` contents into the module: every launch request runs on them.
pub(super) fn setup(
    mem: &mut DeviceMemory,
    launcher: &Launcher,
    r: &RunRequest,
) -> Result<Setup, LaunchError> {
    let inv = LaunchError::Invalid;
    let (func, module) = launcher
        .function(&r.module)
        .zip(launcher.module(&r.module))
        .ok_or_else(|| inv(GpuError::Missing(format!("module {} not loaded", r.module))))?;
    mem.write_constants(&r.test, module).map_err(inv)?;
    let mut params: Vec<Vec<u8>> = Vec::new();
    for a in &r.args {
        match a {
            LaunchArg::Array(name) => params.push(
                mem.working(&r.test, name)
                    .map_err(inv)?
                    .to_le_bytes()
                    .to_vec(),
            ),
            LaunchArg::Scalar(b) => params.push(b.clone()),
        }
    }
    let mut arrays = mem.views(&r.test).map_err(inv)?;
    for a in &mut arrays {
        if let Some((_, n)) = r.extents.iter().find(|(name, _)| name == &a.name) {
            a.elements = a.elements.min(*n);
        }
    }
    Ok(Setup {
        func,
        params,
        arrays,
        occupancy: launcher.occupancy(func, &r.dims),
    })
}

pub(super) fn crashed(m: GpuError) -> LaunchError {
    LaunchError::Crashed(m)
}

/// `Reference`, `Run`: the checks the request asks for, then timed samples when it asks for timing.
pub(super) fn run(
    mem: &mut DeviceMemory,
    launcher: &mut Launcher,
    r: &RunRequest,
    reference: bool,
) -> Result<RunOutcome, LaunchError> {
    let mut s = setup(mem, launcher, r)?;
    let mut outcome = RunOutcome::empty(RunStatus::Ok);
    outcome.occupancy = s.occupancy;
    // the first run's time (the verifying run), for the early abort
    let mut first_ms: Option<f64> = None;
    if reference {
        reference_checks(mem, launcher, r, &mut s, &mut outcome)?;
    } else if r.verify {
        first_ms = Some(verify_checks(mem, launcher, r, &mut s, &mut outcome)?);
    }
    if let Some(policy) = &r.timing {
        // Outputs that are also read (in-place kernels) start from their original values.
        for a in s
            .arrays
            .iter()
            .filter(|a| a.is_output && (!a.poison || !r.verify))
        {
            reset(a).map_err(crashed)?;
        }
        let verified = outcome.outputs.iter().all(|o| o.passed())
            && outcome.inputs_modified.is_empty()
            && outcome.guard_breaches.is_empty();
        if r.verify && !verified {
            // a wrong answer is not timed: its time would never be used
            return Ok(outcome);
        }
        let mut first = None;
        if r.verify && !reference && !policy.flush_l2 {
            // The verifying run verified: it is a launch like any other, so it is the first sample
            // (modules load eagerly and the function was queried before it; `take_samples` still drops
            // it as a warm-up when the next sample shows it was slow).
            first = first_ms.map(FirstSample);
        } else if !r.verify && !reference {
            // warm-up: not a sample, but timed so a hopeless configuration can stop here
            let ms = launcher.launch(s.func, r.dims, &mut s.params, true)?;
            if let Some(evidence) = policy.race(&[ms], r.best) {
                let mut stats = TimingStats::from_samples(&[ms])
                    .ok_or_else(|| crashed(GpuError::Missing("no samples".into())))?;
                stats.aborted_early = true;
                stats.race = Some(evidence);
                outcome.timing = Some(stats);
                return Ok(outcome);
            }
        }
        // Every timed launch of a verifying (or reference) run starts from the outputs a checked launch
        // starts from: poisoned, or reset for those the kernel accumulates into (outside the timed
        // events, see `crate::check::sampling`). A verifying run's last timed launch is then checked like the
        // first, so no median rests on launches that did less than the verified work.
        // a reference run's last timed launch is checked against the expected values it just set: its
        // time is the default launch's, the baseline of every speed-up and share of peak
        let checked = r.verify || reference;
        let arrays = s.arrays.clone();
        let mut prepare = || prepare_outputs(mem, &arrays);
        let (stats, last) = launcher.time(
            s.func,
            r.dims,
            &mut s.params,
            policy,
            r.best,
            first,
            if r.verify || reference {
                Some(&mut prepare as &mut dyn FnMut() -> Result<(), LaunchError>)
            } else {
                None
            },
        )?;
        let first_counted = first.is_some();
        if checked && last == LastLaunch::Prepared {
            outcome.timed_check = Some(check_timed(
                mem,
                launcher,
                r,
                &mut s,
                &stats,
                first_counted,
            )?);
        }
        if reference {
            reset_outputs(&s.arrays).map_err(crashed)?;
        }
        outcome.timing = Some(stats);
    }
    Ok(outcome)
}

/// Outputs poisoned (or reset, for those the kernel accumulates into) before a checked launch.
fn prepare_outputs(mem: &mut DeviceMemory, arrays: &[ArrayView]) -> Result<(), LaunchError> {
    for a in arrays.iter().filter(|a| a.is_output) {
        if a.poison {
            mem.poison(a.work, a.dtype, a.elements).map_err(crashed)?;
        } else {
            reset(a).map_err(crashed)?;
        }
    }
    Ok(())
}

/// Every output compared with its expected values, every input with its pristine copy, every guard read.
fn compare_all(
    mem: &mut DeviceMemory,
    arrays: &[ArrayView],
    outputs: &mut Vec<crate::check::verify::OutputReport>,
    inputs_modified: &mut Vec<String>,
) -> Result<Vec<crate::check::guard::GuardBreach>, LaunchError> {
    for a in arrays {
        if a.is_output {
            let Some(e) = a.expected else {
                return Err(LaunchError::Invalid(GpuError::Missing(format!(
                    "no expected values for output {}: run the reference first",
                    a.name
                ))));
            };
            outputs.push(mem.compare_output(a, e).map_err(crashed)?);
        } else if !mem.input_unchanged(a).map_err(crashed)? {
            inputs_modified.push(a.name.clone());
        }
    }
    mem.check_all_guards(arrays).map_err(crashed)
}

/// The check of the last timed launch (its outputs were poisoned before it by `Launcher::time`); when it
/// was far slower than the unchecked samples, up to two more checked launches decide (the fastest counts,
/// each compared like the first: a wrong one is the verdict), so one slow launch is not taken for a kernel
/// that skips its work.
fn check_timed(
    mem: &mut DeviceMemory,
    launcher: &Launcher,
    r: &RunRequest,
    s: &mut Setup,
    stats: &TimingStats,
    first_counted: bool,
) -> Result<TimedCheck, LaunchError> {
    let samples = &stats.samples_ms;
    let last = samples.last().copied().unwrap_or(0.0);
    // the samples between the verifying one (when counted and kept) and the checked last one
    let skip_first = usize::from(first_counted && !stats.warmup_discarded);
    let unchecked: Vec<f64> = samples
        .iter()
        .copied()
        .skip(skip_first)
        .take(samples.len().saturating_sub(skip_first + 1))
        .collect();
    let unchecked_median_ms = TimingStats::from_samples(&unchecked)
        .map(|u| u.median_ms)
        .unwrap_or(0.0);
    let mut check = TimedCheck {
        outputs: vec![],
        inputs_modified: vec![],
        guard_breaches: vec![],
        checked_ms: last,
        unchecked_median_ms,
        late: None,
    };
    check.guard_breaches = compare_all(
        mem,
        &s.arrays,
        &mut check.outputs,
        &mut check.inputs_modified,
    )?;
    for _ in 0..2 {
        if !TimedCheck::unchecked_samples_skipped_work(check.checked_ms, unchecked_median_ms) {
            break;
        }
        prepare_outputs(mem, &s.arrays)?;
        let ms = launcher.launch(s.func, r.dims, &mut s.params, true)?;
        // a relaunch's time counts only for what it computed: checked like the launch it stands for
        let (mut outputs, mut inputs_modified) = (vec![], vec![]);
        let guard_breaches = compare_all(mem, &s.arrays, &mut outputs, &mut inputs_modified)?;
        let wrong = !crate::check::verify::launch_problems(
            "a checked relaunch",
            &outputs,
            &inputs_modified,
            &guard_breaches,
        )
        .is_empty();
        if wrong {
            check.outputs = outputs;
            check.inputs_modified = inputs_modified;
            check.guard_breaches = guard_breaches;
            check.checked_ms = ms;
            break;
        }
        check.checked_ms = check.checked_ms.min(ms);
    }
    let cap = r.timing.map_or(0, |p| p.late_check_launches);
    if cap > 0 && check.problems().is_empty() {
        let launches = crate::check::late_check::launches_before(cap, stats.median_ms);
        check.late = Some(Box::new(late_check(mem, launcher, r, s, launches)?));
    }
    // later requests start from the original outputs
    for a in s.arrays.iter().filter(|a| a.is_output) {
        reset(a).map_err(crashed)?;
    }
    Ok(check)
}

/// `launches` more launches as a program would make them (no preparation, untimed), then one with its
/// outputs prepared, checked like the verifying launch (`crate::check::late_check`).
fn late_check(
    mem: &mut DeviceMemory,
    launcher: &Launcher,
    r: &RunRequest,
    s: &mut Setup,
    launches: u32,
) -> Result<crate::check::late_check::LateCheck, LaunchError> {
    for _ in 0..launches {
        launcher.launch(s.func, r.dims, &mut s.params, false)?;
    }
    prepare_outputs(mem, &s.arrays)?;
    launcher.launch(s.func, r.dims, &mut s.params, false)?;
    let mut late = crate::check::late_check::LateCheck {
        launches_before: launches,
        outputs: vec![],
        inputs_modified: vec![],
        guard_breaches: vec![],
    };
    late.guard_breaches =
        compare_all(mem, &s.arrays, &mut late.outputs, &mut late.inputs_modified)?;
    Ok(late)
}

/// A reference run: outputs from their initial contents; expected values are the test's own (compared)
/// or this run's; then a rerun with every output poisoned tells which outputs the kernel fully overwrites
/// (poisoned before verifying from now on) and which depend on their initial contents (reset instead).
fn reference_checks(
    mem: &mut DeviceMemory,
    launcher: &Launcher,
    r: &RunRequest,
    s: &mut Setup,
    outcome: &mut RunOutcome,
) -> Result<(), LaunchError> {
    reset_outputs(&s.arrays).map_err(crashed)?;
    launcher.launch(s.func, r.dims, &mut s.params, false)?;
    let mut expected: HashMap<String, Ptr> = HashMap::new();
    for a in s.arrays.iter().filter(|a| a.is_output) {
        let e = match a.expected {
            Some(e) => {
                outcome
                    .outputs
                    .push(mem.compare_output(a, e).map_err(crashed)?);
                e
            }
            None => copy_of(a, "allocating expected").map_err(crashed)?,
        };
        expected.insert(a.name.clone(), e);
    }
    for a in s.arrays.iter().filter(|a| a.is_output) {
        mem.poison(a.work, a.dtype, a.elements).map_err(crashed)?;
    }
    launcher.launch(s.func, r.dims, &mut s.params, false)?;
    let mut poisonable = Vec::new();
    for a in s.arrays.iter().filter(|a| a.is_output) {
        // run against run: the NaNs a kernel computes (sqrt of a negative input) are the same bits both
        // times and agree; only poison left unwritten, or a different value, tells the runs apart
        let rep = mem.compare_rerun(a, expected[&a.name]).map_err(crashed)?;
        if rep.passed() {
            poisonable.push(a.name.clone());
        } else {
            outcome.accumulating_outputs.push(a.name.clone());
            // depends on its initial contents: a kernel that skips elements already holding a number
            // leaves it exactly as it found it, yet writes all of it when it starts as poison
            if rep.never_written == 0
                && mem.all_numbers(a).map_err(crashed)?
                && mem.is_initial(a, expected[&a.name]).map_err(crashed)?
            {
                outcome.unchanged_outputs.push(a.name.clone());
            }
        }
        reset(a).map_err(crashed)?;
    }
    mem.set_expected(&r.test, &expected, &poisonable, &s.arrays)
        .map_err(crashed)?;
    // the rest of this request (its timed samples, the check of the last) prepares outputs as verifying
    // runs will, and compares with the expected values just set
    let fresh = mem.views(&r.test).map_err(crashed)?;
    for a in &mut s.arrays {
        a.poison = poisonable.contains(&a.name);
        if let Some(f) = fresh.iter().find(|f| f.name == a.name) {
            a.expected = f.expected;
            a.expected_elements = f.expected_elements;
            a.tolerance = f.tolerance;
            a.sum_floor = f.sum_floor;
        }
    }
    Ok(())
}

/// A verifying run: outputs poisoned (or reset, for those the kernel accumulates into), one timed launch,
/// every output compared with its expected values, every input with its pristine copy and every guard
/// region read back. Returns the launch's time.
fn verify_checks(
    mem: &mut DeviceMemory,
    launcher: &Launcher,
    r: &RunRequest,
    s: &mut Setup,
    outcome: &mut RunOutcome,
) -> Result<f64, LaunchError> {
    prepare_outputs(mem, &s.arrays)?;
    let ms = launcher.launch(s.func, r.dims, &mut s.params, true)?;
    outcome.guard_breaches = compare_all(
        mem,
        &s.arrays,
        &mut outcome.outputs,
        &mut outcome.inputs_modified,
    )?;
    Ok(ms)
}

/// `Repeat`: the launch `runs` times (at least two), outputs poisoned before the odd runs and reset to their
/// initial contents before the even ones (always reset, for those the kernel accumulates into); every output
/// of each later run compared with the first run's. A kernel that overwrites its outputs cannot tell the
/// two apart; one that skips work where its output already holds a number can.
pub(super) fn repeat(
    mem: &mut DeviceMemory,
    launcher: &mut Launcher,
    r: &RunRequest,
    runs: u32,
) -> Result<RunOutcome, LaunchError> {
    let mut s = setup(mem, launcher, r)?;
    let mut outcome = RunOutcome::empty(RunStatus::Ok);
    let mut firsts: HashMap<String, Ptr> = HashMap::new();
    let result = (|| {
        for run in 1..=runs.max(2) {
            if run % 2 == 1 {
                prepare_outputs(mem, &s.arrays)?;
            } else {
                reset_outputs(&s.arrays).map_err(crashed)?;
            }
            launcher.launch(s.func, r.dims, &mut s.params, false)?;
            outcome
                .guard_breaches
                .extend(mem.check_all_guards(&s.arrays).map_err(crashed)?);
            for a in s.arrays.iter().filter(|a| a.is_output) {
                match firsts.get(&a.name) {
                    None => {
                        let copy = copy_of(a, "keeping the first run's output").map_err(crashed)?;
                        firsts.insert(a.name.clone(), copy);
                    }
                    Some(first) => {
                        // a long sum's rounding may differ run to run (an order of its terms that changes):
                        // the tolerance is raised for sums as the check against expected values is, from
                        // the first run's values where this test has no expected ones yet
                        let (raised, sum_floor) = match a.sum_floor {
                            Some(_) => (a.tolerance, a.sum_floor),
                            None => a.tolerance.raised_for_sums(
                                a.dtype,
                                mem.rms(*first, a.dtype, a.elements).map_err(crashed)?,
                            ),
                        };
                        // runs of one kernel must agree everywhere: no mismatch fraction is allowed
                        let tol = Tolerance {
                            max_mismatch_fraction: 0.0,
                            ..raised
                        };
                        let mut rep = mem
                            .compare(&a.name, a.work, *first, a.dtype, a.elements, tol, true)
                            .map_err(crashed)?;
                        rep.sum_floor = sum_floor;
                        rep.name = if run % 2 == 0 && a.poison {
                            format!(
                                "{} (run {run}, started from its initial contents instead of poison, \
                                 against run 1)",
                                a.name
                            )
                        } else {
                            format!("{} (run {run} against run 1)", a.name)
                        };
                        outcome.outputs.push(rep);
                    }
                }
            }
        }
        reset_outputs(&s.arrays).map_err(crashed)
    })();
    for p in firsts.into_values() {
        free(p);
    }
    result.map(|()| outcome)
}

/// `RecordOutputs`: run with the outputs at their initial contents, write the requested outputs to
/// .npy files, probe with poisoned outputs for elements never written (when `probe`), time if asked.
pub(super) fn record(
    mem: &mut DeviceMemory,
    launcher: &mut Launcher,
    r: &RunRequest,
    files: &[OutputFile],
    probe: bool,
) -> Result<RunOutcome, LaunchError> {
    let inv = LaunchError::Invalid;
    let mut s = setup(mem, launcher, r)?;
    let mut outcome = RunOutcome::empty(RunStatus::Ok);
    outcome.occupancy = s.occupancy;
    let mut targets = Vec::new();
    for f in files {
        let a = s.arrays.iter().find(|a| a.name == f.name).ok_or_else(|| {
            inv(GpuError::Missing(format!(
                "no array `{}` in test {}",
                f.name, r.test
            )))
        })?;
        if f.shape.iter().product::<u64>() != a.elements {
            return Err(inv(GpuError::Refused(format!(
                "shape {:?} for `{}` does not hold its {} elements",
                f.shape, f.name, a.elements
            ))));
        }
        targets.push((f, a.clone()));
    }
    reset_outputs(&s.arrays).map_err(crashed)?;
    launcher.launch(s.func, r.dims, &mut s.params, false)?;
    // keep this run's values on the device for the poison probe, and stream them to the files
    let mut kept: Vec<(Ptr, &OutputFile, &ArrayView)> = Vec::new();
    let mut failure = None;
    for (f, a) in &targets {
        if probe {
            let copy = match copy_of(a, &format!("keeping a copy of {}", f.name)) {
                Ok(p) => p,
                Err(m) => {
                    failure = Some(inv(m));
                    break;
                }
            };
            kept.push((copy, f, a));
        }
        if let Err(m) = write_npy_from_device(&f.path, a.dtype, &f.shape, a.work, a.bytes().max(1))
        {
            failure = Some(inv(m));
            break;
        }
        if !probe {
            // not probed: nothing is known of elements left unwritten
            outcome.recorded.push(RecordedOutput {
                name: f.name.clone(),
                path: f.path.clone(),
                dtype: a.dtype,
                shape: f.shape.clone(),
                never_written: 0,
                depends_on_initial: 0,
            });
        }
    }
    if failure.is_none() && probe {
        failure = probe_unwritten(mem, launcher, r, &mut s, &kept, &mut outcome).err();
    }
    for (copy, _, _) in &kept {
        free(*copy);
    }
    if let Some(e) = failure {
        return Err(e);
    }
    reset_outputs(&s.arrays).map_err(crashed)?;
    if let Some(policy) = &r.timing {
        outcome.timing = Some(
            launcher
                .time(s.func, r.dims, &mut s.params, policy, None, None, None)?
                .0,
        );
        reset_outputs(&s.arrays).map_err(crashed)?;
    }
    Ok(outcome)
}

/// Reruns with the recorded outputs poisoned and compares with the kept copies: elements still poison are
/// never written, others that differ depend on the initial contents.
fn probe_unwritten(
    mem: &mut DeviceMemory,
    launcher: &Launcher,
    r: &RunRequest,
    s: &mut Setup,
    kept: &[(Ptr, &OutputFile, &ArrayView)],
    outcome: &mut RunOutcome,
) -> Result<(), LaunchError> {
    for (_, _, a) in kept {
        mem.poison(a.work, a.dtype, a.elements).map_err(crashed)?;
    }
    launcher.launch(s.func, r.dims, &mut s.params, false)?;
    for (copy, f, a) in kept {
        let rep = mem.compare_output(a, *copy).map_err(crashed)?;
        outcome.recorded.push(RecordedOutput {
            name: f.name.clone(),
            path: f.path.clone(),
            dtype: a.dtype,
            shape: f.shape.clone(),
            never_written: rep.never_written,
            depends_on_initial: rep.mismatches,
        });
        if !rep.passed() {
            outcome.accumulating_outputs.push(f.name.clone());
        }
        outcome.outputs.push(rep);
    }
    Ok(())
}
