//! `baseline`: measures the user's kernel at its default launch. Its time is the first "best so far" and the
//! denominator of every speedup. It is the first node that needs the GPU.

use std::collections::BTreeMap;
use std::sync::Arc;

use kt_graph::{Node, NodeContext};

use crate::error::PipelineError;
use crate::stage3::backend::tuning_backend::BackendError;
use crate::stage3::context::Stage3Context;
use crate::stage3::state::{Stage3State, Stage3Update};
use crate::stage3::tunable_code::{KernelVersion, ORIGINAL_STEP};

pub(crate) struct Baseline(pub Arc<Stage3Context>);

impl Node<Stage3State> for Baseline {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let cx = &self.0;
        let original = state.original.clone().ok_or_else(|| PipelineError::Graph {
            stage: "stage 3",
            message: "the state holds no original kernel".into(),
        })?;
        let backend = cx.backend()?;
        let reference = ctx
            .effect("tuning.reference", || backend.reference(&original))
            .await
            .map_err(|e| super::launch_timing::tuning_error(&ctx, e))?;
        if !(reference.time_ms.is_finite() && reference.time_ms > 0.0) {
            return Err(PipelineError::Tuning(BackendError::Failed {
                detail: format!(
                    "the original kernel's measured time is {} ms",
                    reference.time_ms
                ),
            }));
        }
        let best_params: BTreeMap<String, i64> = original
            .parameters
            .iter()
            .filter_map(|p| p.values.first().map(|v| (p.name.clone(), *v)))
            .collect();
        let file = super::kernel_files::write_kernel_file(
            cx,
            0,
            "original",
            &original,
            None,
            &best_params,
        )?;
        // profiled here only for the record; a prompt that reads the profile takes it itself
        let profile = if cx.strategy.settings.profile_every_best {
            vec![
                super::profile::profile_kernel(cx, &ctx, ORIGINAL_STEP, &original, &best_params)
                    .await?,
            ]
        } else {
            Vec::new()
        };
        let best = KernelVersion {
            kernel: original,
            time_ms: reference.time_ms,
            noise_ms: reference.noise_ms,
            best_params,
            step: ORIGINAL_STEP.into(),
            file,
            percent_of_peak: reference.percent_of_peak,
            gflops: reference.gflops,
        };
        Ok(Stage3Update::default()
            .reference(Some(reference))
            .best(Some(best))
            .kernels_written(1)
            .profiles(profile))
    }
}
