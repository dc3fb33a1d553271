//! Tuning effects' errors, and separate launches of two kernels as a journaled effect: the samples behind a step's acceptance and the
//! end-of-run speedup interval. A resumed or replayed run reuses them instead of timing again.

use std::collections::BTreeMap;

use kt_graph::{EffectError, NodeContext};

use crate::error::PipelineError;
use crate::stage3::backend::tuning_backend::{BackendError, PairTimes};
use crate::stage3::context::Stage3Context;
use crate::stage3::tunable_code::TunableCode;

/// Launches of each kernel per comparison: enough for a 95 % interval (at least 4 are needed; 10 give one
/// that is not dominated by a single slow launch).
pub(crate) const LAUNCHES: u32 = 10;

/// Times `first` and `second` (each at its parameters) in [`LAUNCHES`] separate launches each, as effect `name`.
pub(super) async fn time_pair(
    cx: &Stage3Context,
    ctx: &NodeContext,
    name: &str,
    first: (&TunableCode, &BTreeMap<String, i64>),
    second: (&TunableCode, &BTreeMap<String, i64>),
) -> Result<PairTimes, PipelineError> {
    let backend = cx.backend()?;
    ctx.effect(name, || backend.time_pair(first, second, LAUNCHES))
        .await
        .map_err(|e| tuning_error(ctx, e))
}

/// The error of a failed tuning effect: the backend's own (no GPU, tuner failure) or the journal's.
pub(super) fn tuning_error(ctx: &NodeContext, e: EffectError<BackendError>) -> PipelineError {
    match e {
        EffectError::Failed { source, .. } => PipelineError::Tuning(source),
        EffectError::Journal { source, .. } => PipelineError::Journal {
            node: ctx.node().to_string(),
            message: source.to_string(),
        },
    }
}
