//! `Counters`: one launch of a configuration under CUPTI's range profiler, with the launch facts Nsight
//! Compute would report beside the counters. kt replays the launch once per pass CUPTI needs, each from the
//! outputs' initial contents and an L2 holding none of the kernel's data (ncu's default cache control); the
//! launches are not timed (a profiled launch is slowed).

use std::path::Path;
use std::time::Instant;

use cudarc::driver::sys::CUcontext;

use super::counters::CounterSession;
use super::launch::{LaunchError, Launcher};
use super::launch_facts::{FunctionUse, SmLimits, counted_metrics, launch_facts};
use super::memory::{DeviceMemory, reset_outputs};
use super::run_setup::{crashed, setup};
use crate::worker::gpu::error::GpuError;
use crate::worker::protocol::{CounterReport, RunRequest};

/// Runs `r` once under the profiler and reports `metrics`: the `launch__*` facts and theoretical occupancy
/// computed here, every other name from CUPTI. A CUPTI failure leaves the context usable
/// (`LaunchError::Invalid`, with CUPTI's reason); a fault in the kernel does not.
#[allow(clippy::too_many_arguments)]
pub(super) fn count(
    mem: &mut DeviceMemory,
    launcher: &mut Launcher,
    session: &mut Option<CounterSession>,
    ctx: CUcontext,
    ordinal: usize,
    r: &RunRequest,
    metrics: &[String],
    cupti: &Path,
) -> Result<CounterReport, LaunchError> {
    let started = Instant::now();
    let mut phases = Vec::new();
    if session.is_none() {
        *session = Some(
            CounterSession::start(cupti, ctx, ordinal)
                .map_err(|e| LaunchError::Invalid(e.into()))?,
        );
        phases.push(("CUPTI start", started.elapsed().as_secs_f64() * 1e3));
    }
    let Some(session) = session.as_mut() else {
        return Err(LaunchError::Invalid(GpuError::Refused(
            "CUPTI did not start".into(),
        )));
    };
    let mut s = setup(mem, launcher, r)?;
    let facts = launch_facts(
        FunctionUse::of(s.func).map_err(LaunchError::Invalid)?,
        &r.dims,
        SmLimits::of_current_device().map_err(LaunchError::Invalid)?,
        launcher.blocks_per_sm(s.func, &r.dims),
    );
    let counted = counted_metrics(metrics);
    // a crash inside the profiled launch must end the worker like any other
    let mut fault: Option<LaunchError> = None;
    // each replay starts as ncu's would: outputs at their initial contents, nothing of them in L2
    let mut pass = || -> Result<(), LaunchError> {
        reset_outputs(&s.arrays).map_err(crashed)?;
        launcher.flush_l2()?;
        launcher.launch(s.func, r.dims, &mut s.params, false)?;
        Ok(())
    };
    let counters = session.collect(
        ctx,
        &counted,
        || {
            pass().map_err(|e| {
                let text = match &e {
                    LaunchError::Invalid(m) | LaunchError::Crashed(m) => m.to_string(),
                };
                fault = Some(e);
                text
            })
        },
        &mut phases,
    );
    if let Some(e) = fault {
        return Err(e);
    }
    let counters = counters.map_err(|e| LaunchError::Invalid(e.into()))?;
    let values = metrics
        .iter()
        .map(|m| {
            let fact = facts.iter().find(|(f, _)| f == m).map(|(_, v)| *v);
            let counted = counters
                .values
                .iter()
                .find(|(n, _)| n == m)
                .and_then(|(_, v)| *v);
            (m.clone(), fact.or(counted))
        })
        .collect();
    Ok(CounterReport {
        values,
        passes: counters.passes,
        ms: started.elapsed().as_secs_f64() * 1e3,
        phases_ms: phases
            .into_iter()
            .map(|(p, ms)| (p.to_string(), ms))
            .collect(),
    })
}
