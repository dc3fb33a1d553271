//! What one launch request does on the device, step by step: a reference run (expected values, then a
//! poisoned rerun to learn which outputs the kernel fully overwrites), a verifying run (outputs poisoned or
//! reset, every output compared, inputs and guard regions checked unchanged), timed samples whose launches
//! are checked (`timed_check`), and a recording run (outputs streamed to .npy files, a poisoned probe for
//! elements never written).

use std::collections::HashMap;

use super::launch::{LaunchError, Launcher};
use super::memory::{
    ArrayView, DeviceMemory, Ptr, copy_of, free, reset, reset_outputs, write_npy_from_device,
};
use super::run_setup::{Setup, compare_all, crashed, prepare_outputs, setup};
use super::timed_check::{EveryTimedLaunch, check_timed};
use crate::check::measure::TimingStats;
use crate::check::sampling::{FirstSample, LastLaunch};
use crate::check::verify::Tolerance;
use crate::worker::gpu::error::GpuError;
use crate::worker::protocol::{
    OutputFile, RecordedOutput, Reply, RunOutcome, RunRequest, RunStatus,
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
        // a kernel with state across launches can choose which launches work: every timed one is checked
        let mut every = EveryTimedLaunch::new(r.verify && policy.late_check_launches > 0);
        let mut prepare = || every.prepare(mem, &arrays);
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
        if let Some(wrong) = every.first_wrong {
            outcome.timed_check = Some(wrong.into_check(&stats));
            reset_outputs(&s.arrays).map_err(crashed)?;
        } else if checked && last == LastLaunch::Prepared {
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
        if rep.elements > 0 && rep.never_written >= rep.elements {
            outcome.unwritten_outputs.push(a.name.clone());
        }
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
    // a write outside the arrays is the reference's, not a later candidate's: read (and restore) the guards
    outcome.guard_breaches = mem.check_all_guards(&s.arrays).map_err(crashed)?;
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
        // which elements the kernel writes is asked element by element, also of an output compared by its
        // total (its unused partial slots are reported as never written, as they are)
        let elementwise = ArrayView {
            tolerance: Tolerance {
                total: false,
                ..a.tolerance
            },
            ..(*a).clone()
        };
        let rep = mem.compare_output(&elementwise, *copy).map_err(crashed)?;
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
