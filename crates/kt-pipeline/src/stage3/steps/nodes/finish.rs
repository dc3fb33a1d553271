//! `finish`: times the naive and the delivered kernel in separate launches (the speedup's 95 % interval) and
//! marks the strategy done. The result files are written from the final state by
//! [`crate::stage3::write_result`], outside the graph, because they also need Stage 1/2 figures.

use std::sync::Arc;

use kt_graph::{Node, NodeContext};

use crate::error::PipelineError;
use crate::stage3::backend::tuning_backend::BackendError;
use crate::stage3::context::Stage3Context;
use crate::stage3::state::{FinalTiming, Stage3State, Stage3Update};
use crate::stage3::steps::speedup_interval::{METHOD, speedup_interval};

use super::launch_timing::time_pair;

pub(crate) struct Finish(pub Arc<Stage3Context>);

impl Node<Stage3State> for Finish {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let done = Stage3Update::default().finished(true).current(None);
        let (Some(original), Some(best)) = (&state.original, &state.best) else {
            return Ok(done);
        };
        let naive_params = original
            .parameters
            .iter()
            .filter_map(|p| p.values.first().map(|v| (p.name.clone(), *v)))
            .collect();
        let timed = time_pair(
            &self.0,
            &ctx,
            "tuning.final_timing",
            (original, &naive_params),
            (&best.kernel, &best.best_params),
        )
        .await;
        let times = match timed {
            Ok(t) => t,
            // The kernels were verified and timed already; a failure of this extra timing leaves the result
            // without its interval (said in the log) rather than failing the run. No GPU stops it (resumable).
            Err(PipelineError::Tuning(BackendError::Failed { detail })) => {
                tracing::warn!(%detail, "the final timing failed; the result has no speedup interval");
                return Ok(done);
            }
            Err(e) => return Err(e),
        };
        let estimate = speedup_interval(&times.first_ms, &times.second_ms);
        Ok(done.final_timing(Some(FinalTiming {
            test: times.test,
            naive_ms: times.first_ms,
            best_ms: times.second_ms,
            speedup: estimate.map(|e| e.speedup),
            speedup_ci95: estimate.map(|e| e.ci95),
            method: METHOD.into(),
        })))
    }
}
