//! Starting a stage's graph in a run that may already hold it: a run interrupted during Stage 1 or 2 (Ctrl-C,
//! a crash) has that stage's checkpoints in `run.sqlite`, and `kt resume` continues them instead of starting
//! over (recorded LLM answers and generator runs are reused).

use kt_graph::{Executor, GraphError, RunId, RunOptions, RunOutcome, State};

/// Resumes `run` from its latest checkpoint when the store has it (a finished run ends at once with its final
/// state), else starts it from `initial`.
pub(crate) async fn start_or_resume<S: State>(
    executor: &Executor<S>,
    run: RunId,
    initial: S,
    opts: RunOptions,
) -> Result<RunOutcome<S>, GraphError> {
    if executor.run_meta(&run).is_ok() {
        executor.resume(&run, opts).await
    } else {
        executor.start(run, initial, opts).await
    }
}

/// What a run stopped for when a node waits for a manual answer: the interrupt's payload.
pub(crate) fn waiting_of<S>(outcome: &kt_graph::RunOutcome<S>) -> Option<kt_record::WaitingAnswer> {
    match outcome {
        kt_graph::RunOutcome::Stopped {
            reason: kt_graph::StopReason::Interrupt { payload, .. },
            ..
        } => serde_json::from_value(payload.clone()).ok(),
        _ => None,
    }
}

/// Turns a manual provider's "no answer yet" into an interrupt of the node (the run pauses there, and the
/// resumed node asks again), and any other LLM error into the pipeline's error.
pub(crate) fn llm_failure(
    ctx: &kt_graph::NodeContext,
    node: &str,
    e: kt_llm::LlmError,
) -> crate::PipelineError {
    match e {
        kt_llm::LlmError::AwaitingManualAnswer {
            node: asked,
            prompt_file,
            answer_file,
        } => {
            let waiting = kt_record::WaitingAnswer {
                node: asked,
                prompt_file,
                answer_file,
            };
            let _ = ctx.interrupt(&waiting);
            crate::PipelineError::AwaitingAnswer(waiting)
        }
        other => crate::PipelineError::from_llm(node, other),
    }
}
