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
