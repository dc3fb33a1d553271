//! Profiling a kernel as a journaled effect (a resumed or replayed run reuses the profile instead of running
//! Nsight Compute again): the best kernel right before a prompt that reads its profile (`plan`, `replan`, and
//! `prepare` when `apply` reads it), or, with `profile_every_best`, a kernel as it becomes the best one
//! (`baseline`, `select`). Profiling never stops a run: a backend failure is recorded as the reason there is
//! no profile.

use std::collections::BTreeMap;

use kt_graph::{EffectError, NodeContext};

use crate::error::PipelineError;
use crate::stage3::backend::tuning_backend::ProfileRun;
use crate::stage3::context::Stage3Context;
use crate::stage3::profiling::run_profiles::best_profile;
use crate::stage3::profiling::run_profiles::{ProfileRecord, record};
use crate::stage3::state::Stage3State;
use crate::stage3::tunable_code::TunableCode;
use crate::strategy::ProfilePrompt;

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

/// The profile a prompt of kind `prompt` is about to read: the best kernel is profiled now when the strategy
/// puts profiles into that prompt and no profile of it at its configuration was taken yet. Returns the new
/// record for the node's update (None when nothing was profiled).
pub(super) async fn profile_best_for(
    cx: &Stage3Context,
    ctx: &NodeContext,
    state: &Stage3State,
    prompt: ProfilePrompt,
) -> Result<Option<ProfileRecord>, PipelineError> {
    if !cx.strategy.settings.prompt_reads_profile(prompt) || best_profile(state).is_some() {
        return Ok(None);
    }
    let Some(best) = state.best.as_ref() else {
        return Ok(None);
    };
    let record = profile_kernel(cx, ctx, &best.step, &best.kernel, &best.best_params).await?;
    Ok(Some(record))
}
