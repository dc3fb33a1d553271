//! The checks of timed launches: the last one (its outputs poisoned before it, compared after it, and
//! relaunched when it was far slower than the unchecked samples), the check after many more launches for a
//! kernel with state across launches, and for such a kernel every timed launch (`EveryTimedLaunch`).

use super::launch::{LaunchError, Launcher};
use super::memory::{ArrayView, DeviceMemory, reset};
use super::run_setup::{Setup, compare_all, crashed, prepare_outputs};
use crate::check::measure::TimingStats;
use crate::worker::protocol::{RunRequest, TimedCheck};

/// The preparation before each timed launch; for a kernel with state across launches (`check_each`) it
/// first compares the previous timed launch's outputs, so a kernel that idles on the launches it guesses
/// are not compared (any but the verifying and the last) is caught on the first of them.
pub(super) struct EveryTimedLaunch {
    check_each: bool,
    /// Timed launches prepared so far.
    prepared: usize,
    pub(super) first_wrong: Option<WrongTimedLaunch>,
}

pub(super) struct WrongTimedLaunch {
    /// Its number among the timed launches, from 1.
    launch: usize,
    outputs: Vec<crate::check::verify::OutputReport>,
    inputs_modified: Vec<String>,
    guard_breaches: Vec<crate::check::guard::GuardBreach>,
}

impl EveryTimedLaunch {
    pub(super) fn new(check_each: bool) -> Self {
        EveryTimedLaunch {
            check_each,
            prepared: 0,
            first_wrong: None,
        }
    }

    pub(super) fn prepare(
        &mut self,
        mem: &mut DeviceMemory,
        arrays: &[ArrayView],
    ) -> Result<(), LaunchError> {
        if self.check_each && self.prepared > 0 && self.first_wrong.is_none() {
            let (mut outputs, mut inputs_modified) = (vec![], vec![]);
            let guard_breaches = compare_all(mem, arrays, &mut outputs, &mut inputs_modified)?;
            let wrong = !crate::check::verify::launch_problems(
                "a timed launch",
                &outputs,
                &inputs_modified,
                &guard_breaches,
            )
            .is_empty();
            if wrong {
                self.first_wrong = Some(WrongTimedLaunch {
                    launch: self.prepared,
                    outputs,
                    inputs_modified,
                    guard_breaches,
                });
            }
        }
        self.prepared += 1;
        prepare_outputs(mem, arrays)
    }
}

impl WrongTimedLaunch {
    pub(super) fn into_check(self, stats: &TimingStats) -> TimedCheck {
        TimedCheck {
            outputs: self.outputs,
            inputs_modified: self.inputs_modified,
            guard_breaches: self.guard_breaches,
            checked_ms: stats.median_ms,
            unchecked_median_ms: stats.median_ms,
            late: None,
            wrong_timed_launch: Some(self.launch),
        }
    }
}

/// The check of the last timed launch (its outputs were poisoned before it by `Launcher::time`); when it
/// was far slower than the unchecked samples, up to two more checked launches decide (the fastest counts,
/// each compared like the first: a wrong one is the verdict), so one slow launch is not taken for a kernel
/// that skips its work.
pub(super) fn check_timed(
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
        wrong_timed_launch: None,
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
