//! Profiling a kernel that just became the best one (the naive kernel after the baseline, an accepted step's
//! kernel in `select`), as a journaled effect: a resumed or replayed run reuses the profile instead of
//! running Nsight Compute again. Profiling never stops a run: a backend failure is recorded as the reason
//! there is no profile.

use std::collections::BTreeMap;

use kt_graph::{EffectError, NodeContext};

use crate::error::PipelineError;
use crate::stage3::backend::ProfileRun;
use crate::stage3::context::Stage3Context;
use crate::stage3::profiling::{ProfileRecord, record};
use crate::stage3::tunable_code::TunableCode;

/// Profiles `kernel` at `params` (the kernel of `step`) as effect `profile.kernel`.
pub(super) async fn profile_kernel(
    cx: &Stage3Context,
    ctx: &NodeContext,
    step: &str,
    kernel: &TunableCode,
    params: &BTreeMap<String, i64>,
) -> Result<ProfileRecord, PipelineError> {
    let backend = cx.backend()?;
    let run = match ctx
        .effect("profile.kernel", || backend.profile(step, kernel, params))
        .await
    {
        Ok(run) => run,
        Err(EffectError::Failed { source, .. }) => {
            tracing::warn!(step, error = %source, "profiling failed; the run goes on without this profile");
            ProfileRun::skipped(format!("profiling failed: {source}"))
        }
        Err(e) => return Err(super::launch_timing::tuning_error(ctx, e)),
    };
    Ok(record(step, params, run))
}
