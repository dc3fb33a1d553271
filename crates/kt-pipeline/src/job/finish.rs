//! How a run ended, written down: result files for a finished run, a stop or a failure, and run.json's status.

use kt_graph::{Executor, GraphError, RunId, RunOutcome};

use super::outcome::{Stopped, TransformOutcome};
use super::result::{Ending, WallTimes, write_result, write_result_ending};
use crate::error::{PipelineError, TESTS_WHERE_USED};
use crate::stage3::{BackendError, Stage3State, TuningBackend};
use kt_record::{ResultFiles, RunDir, RunStatus};

/// Records a run stopped before Stage 2 because this machine has no GPU (`reason`): interrupted, `needs_gpu`,
/// resumable on a machine with one. Returns the error the job ends with (a missing GPU, as in Stage 3).
pub(super) fn stopped_for_gpu(run: &RunDir, wall: WallTimes, reason: &str) -> PipelineError {
    let detail = format!("{reason}; {TESTS_WHERE_USED}");
    let stopped = BackendError::GpuUnavailable { detail };
    let ending = Ending {
        error: Some(stopped.to_string()),
        needs_gpu: true,
        waiting: None,
    };
    let out = run.results(0);
    let status = RunStatus::Interrupted;
    if let Err(e) = write_result_ending(run, &out, None, None, status, wall, ending) {
        return e;
    }
    match run.set_status(status) {
        Ok(()) => PipelineError::Tuning(stopped),
        Err(e) => e.into(),
    }
}

/// Records how Stage 3's graph run `id` ended: the result files of a finished run, a stop (resumable, not an
/// error), or a failure with its status (`interrupted` where a GPU is needed, `llm_unavailable`, `failed`).
pub(super) fn end_stage3(
    run: &RunDir,
    out: &ResultFiles,
    executor: &Executor<Stage3State>,
    id: &RunId,
    backend: &dyn TuningBackend,
    wall: WallTimes,
    outcome: Result<RunOutcome<Stage3State>, GraphError>,
) -> Result<TransformOutcome, PipelineError> {
    let ended = Stage3End {
        run,
        out,
        executor,
        id,
        backend,
        wall,
    };
    match outcome {
        Ok(RunOutcome::Finished { state, .. }) => {
            finish(run, out, Some(state), Some(backend), wall, Ok(()))
        }
        Ok(other) => ended.stopped(Stopped::of(&other), Some(other.into_state())),
        Err(GraphError::Cancelled { checkpoint, .. }) => {
            let stopped = Stopped {
                checkpoint: Some(checkpoint.0),
                at: "in stage 3".into(),
                cancelled: true,
                waiting: None,
            };
            ended.stopped(stopped, ended.last_state())
        }
        Err(e) => Err(ended.failed(e)),
    }
}

/// A Stage 3 graph run that has ended, and where to record how.
struct Stage3End<'a> {
    run: &'a RunDir,
    out: &'a ResultFiles,
    executor: &'a Executor<Stage3State>,
    id: &'a RunId,
    backend: &'a dyn TuningBackend,
    wall: WallTimes,
}

impl Stage3End<'_> {
    /// The state to report from when the run stopped early: the last checkpoint's.
    fn last_state(&self) -> Option<Stage3State> {
        let exec = self.executor;
        exec.latest(self.id)
            .ok()
            .and_then(|cp| exec.state_at(self.id, cp).ok())
    }

    /// run.json's status; a branch's run leaves it as it is.
    fn set_status(&self, status: RunStatus) -> Result<(), PipelineError> {
        if self.out.branch().is_none() {
            self.run.set_status(status)?;
        }
        Ok(())
    }

    /// A stop (paused, cancelled, waiting for an answer): interrupted and resumable, not an error.
    fn stopped(
        &self,
        stopped: Stopped,
        state: Option<Stage3State>,
    ) -> Result<TransformOutcome, PipelineError> {
        let ending = Ending {
            error: Some(stopped.message(self.run.root())),
            needs_gpu: false,
            waiting: stopped.waiting.clone(),
        };
        let status = RunStatus::Interrupted;
        let result = write_result_ending(
            self.run,
            self.out,
            state.as_ref(),
            Some(self.backend),
            status,
            self.wall,
            ending,
        )?;
        self.set_status(status)?;
        Ok(TransformOutcome {
            result,
            state,
            stopped: Some(stopped),
            results: self.out.clone(),
        })
    }

    /// A failure: its result files and status (`interrupted` where a GPU is needed, `llm_unavailable`,
    /// `failed`), and the error the job ends with.
    fn failed(&self, e: GraphError) -> PipelineError {
        let message = e.to_string();
        let e = PipelineError::graph("stage 3", e);
        let gpu_missing = e.gpu_unavailable().map(str::to_string);
        let status = if gpu_missing.is_some() {
            RunStatus::Interrupted
        } else if e.is_llm_unavailable() {
            RunStatus::LlmUnavailable
        } else {
            RunStatus::Failed
        };
        let ending = Ending {
            error: Some(message),
            needs_gpu: gpu_missing.is_some(),
            waiting: None,
        };
        let written = write_result_ending(
            self.run,
            self.out,
            self.last_state().as_ref(),
            Some(self.backend),
            status,
            self.wall,
            ending,
        );
        if let Err(status_error) = self.set_status(status) {
            return status_error;
        }
        if let Err(written_error) = written {
            return written_error;
        }
        match gpu_missing {
            Some(detail) => PipelineError::Tuning(BackendError::GpuUnavailable { detail }),
            None => e,
        }
    }
}

pub(super) fn finish(
    run: &RunDir,
    out: &ResultFiles,
    state: Option<Stage3State>,
    backend: Option<&dyn TuningBackend>,
    wall: WallTimes,
    outcome: Result<(), PipelineError>,
) -> Result<TransformOutcome, PipelineError> {
    match outcome {
        Ok(()) => {
            let started = std::time::Instant::now();
            let result = write_result(
                run,
                out,
                state.as_ref(),
                backend,
                RunStatus::Finished,
                wall,
                None,
            )?;
            if out.branch().is_none() {
                run.set_status(RunStatus::Finished)?;
            }
            tracing::debug!(
                ms = started.elapsed().as_secs_f64() * 1e3,
                "the result files are written"
            );
            Ok(TransformOutcome {
                result,
                state,
                stopped: None,
                results: out.clone(),
            })
        }
        Err(e) => {
            let status = if e.is_llm_unavailable() {
                RunStatus::LlmUnavailable
            } else {
                RunStatus::Failed
            };
            let _ = write_result(
                run,
                out,
                state.as_ref(),
                backend,
                status,
                wall,
                Some(e.to_string()),
            );
            if out.branch().is_none() {
                run.set_status(status)?;
            }
            Err(e)
        }
    }
}
