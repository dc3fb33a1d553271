//! The run loop: `start` a run, `resume` it (after a crash, a stop, a pause or a fork), answer an
//! interrupt, `step` once — all through `drive`, which runs supersteps until the run finishes, stops,
//! fails or pauses.

use super::superstep::{StepEnd, StepInput};
use super::{Executor, now_ms, to_fields, unwrap_arc};
use crate::cancel::CancelToken;
use crate::checkpoint::{
    BranchInfo, Breakpoints, Checkpoint, CheckpointSource, FULL_SNAPSHOT_EVERY, GraphRunMeta,
    StateRecord, StopReason,
};
use crate::context::ReplayMode;
use crate::decl::START;
use crate::error::GraphError;
use crate::events::EventKind;
use crate::ids::{BranchId, CheckpointId, RunId};
use crate::state::State;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use tracing::Instrument;

/// Options of one call that runs steps.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// A run never goes past this superstep number (counted from the run's start, across resumes).
    pub step_limit: u64,
    /// Fired from elsewhere to stop the run; the current step is dropped uncommitted.
    pub cancel: CancelToken,
    /// Whether journaled effects are reused (default) or paid for again.
    pub effects: ReplayMode,
    /// Stop with [`RunOutcome::Paused`] after this many supersteps in this call (`step` uses 1).
    pub max_steps: Option<u64>,
    /// Breakpoints to store with a new run (`start` only; use `set_breakpoints` later).
    pub breakpoints: Breakpoints,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            step_limit: 10_000,
            cancel: CancelToken::new(),
            effects: ReplayMode::Reuse,
            max_steps: None,
            breakpoints: Breakpoints::default(),
        }
    }
}

/// How a call that runs steps ended (errors aside).
#[derive(Debug, Clone)]
pub enum RunOutcome<S> {
    /// No tasks remain.
    Finished { state: S, checkpoint: CheckpointId },
    /// A breakpoint or a node's interrupt stopped the run; `resume`/`resume_with` continues it.
    Stopped {
        state: S,
        checkpoint: CheckpointId,
        reason: StopReason,
    },
    /// `max_steps` supersteps were run; `resume` continues.
    Paused { state: S, checkpoint: CheckpointId },
}

impl<S> RunOutcome<S> {
    pub fn state(&self) -> &S {
        match self {
            Self::Finished { state, .. }
            | Self::Stopped { state, .. }
            | Self::Paused { state, .. } => state,
        }
    }
    pub fn into_state(self) -> S {
        match self {
            Self::Finished { state, .. }
            | Self::Stopped { state, .. }
            | Self::Paused { state, .. } => state,
        }
    }
    pub fn checkpoint(&self) -> CheckpointId {
        match self {
            Self::Finished { checkpoint, .. }
            | Self::Stopped { checkpoint, .. }
            | Self::Paused { checkpoint, .. } => *checkpoint,
        }
    }
    pub fn is_finished(&self) -> bool {
        matches!(self, Self::Finished { .. })
    }
}

/// What the loop does at a checkpoint before the next superstep.
#[derive(Debug, PartialEq)]
enum Gate {
    Run,
    Finished,
    Paused,
    StepLimit,
    Stop(StopReason),
    Cancelled,
}

/// Decides [`Gate`] in a fixed order: the end, the call's step budget, the run's step limit, a
/// breakpoint before a pending node (unless the call steps over it), cancellation.
fn gate(
    meta: &GraphRunMeta,
    head: &Checkpoint,
    opts: &RunOptions,
    steps_done: u64,
    skip_before: bool,
) -> Gate {
    if head.is_finished() {
        return Gate::Finished;
    }
    if opts.max_steps.is_some_and(|m| steps_done >= m) {
        return Gate::Paused;
    }
    if head.step >= opts.step_limit {
        return Gate::StepLimit;
    }
    if !skip_before
        && let Some(t) = head
            .next
            .iter()
            .find(|t| meta.breakpoints.before.contains(&t.node))
    {
        return Gate::Stop(StopReason::BeforeNode(t.node.clone()));
    }
    if opts.cancel.is_cancelled() {
        return Gate::Cancelled;
    }
    Gate::Run
}

impl<S: State> Executor<S> {
    /// Starts a new run from `initial`: checkpoint 0 holds the input, then steps run until the end, a
    /// stop, an error or `max_steps`.
    pub async fn start(
        &self,
        run: RunId,
        initial: S,
        opts: RunOptions,
    ) -> Result<RunOutcome<S>, GraphError> {
        let meta = GraphRunMeta {
            run: run.clone(),
            fingerprint: self.graph.fingerprint().to_string(),
            breakpoints: opts.breakpoints.clone(),
            branches: vec![BranchInfo {
                id: BranchId(0),
                origin: None,
                inherits_effects: false,
            }],
            stopped: None,
        };
        self.store.create_run(&meta)?;
        let fields = to_fields(&run, &initial)?;
        let input = Checkpoint {
            id: CheckpointId(0),
            parent: None,
            branch: BranchId(0),
            step: 0,
            fingerprint: self.graph.fingerprint().to_string(),
            next: self.graph.successors(START, &initial)?,
            timings: Vec::new(),
            failures: Vec::new(),
            source: CheckpointSource::Input,
            created_ms: now_ms(),
            state: StateRecord::Full(fields),
        };
        self.store.put_checkpoint(&run, &input)?;
        self.emit(
            &run,
            BranchId(0),
            0,
            EventKind::CheckpointSaved {
                checkpoint: input.id,
            },
        );
        self.drive(meta, input, initial, &opts, None).await
    }

    /// Continues the run from its latest checkpoint (after a crash, a breakpoint, a pause or a fork).
    pub async fn resume(&self, run: &RunId, opts: RunOptions) -> Result<RunOutcome<S>, GraphError> {
        self.resume_inner(run, opts, None).await
    }

    /// Continues a run stopped by a node's interrupt, handing `answer` to that node's
    /// [`NodeContext::interrupt`](crate::NodeContext::interrupt) call.
    pub async fn resume_with(
        &self,
        run: &RunId,
        answer: impl Serialize,
        opts: RunOptions,
    ) -> Result<RunOutcome<S>, GraphError> {
        let value = serde_json::to_value(answer).map_err(|e| GraphError::Serialize {
            run: run.clone(),
            what: "resume value".into(),
            reason: e.to_string(),
        })?;
        self.resume_inner(run, opts, Some(value)).await
    }

    /// Runs exactly one superstep from the latest checkpoint.
    pub async fn step(
        &self,
        run: &RunId,
        mut opts: RunOptions,
    ) -> Result<RunOutcome<S>, GraphError> {
        opts.max_steps = Some(1);
        self.resume_inner(run, opts, None).await
    }

    async fn resume_inner(
        &self,
        run: &RunId,
        opts: RunOptions,
        answer: Option<Value>,
    ) -> Result<RunOutcome<S>, GraphError> {
        let meta = self.meta(run)?;
        let latest = self
            .store
            .latest_checkpoint(run)?
            .ok_or(GraphError::CheckpointNotFound {
                run: run.clone(),
                checkpoint: CheckpointId(0),
            })?;
        let (head, state) = self.load(run, latest, true)?;
        self.drive(meta, head, state, &opts, answer).await
    }

    /// Runs supersteps from `head` until the run finishes, stops, fails or pauses. `answer` goes to the
    /// node whose interrupt stopped the run at `head`, if that is where it stopped.
    pub(super) async fn drive(
        &self,
        mut meta: GraphRunMeta,
        mut head: Checkpoint,
        state: S,
        opts: &RunOptions,
        answer: Option<Value>,
    ) -> Result<RunOutcome<S>, GraphError> {
        let run = meta.run.clone();
        let span = tracing::info_span!("run", run = %run, branch = %head.branch, from = %head.id);
        async move {
            let mut state = Arc::new(state);
            let branch = head.branch;
            let origin = meta
                .branch(branch)
                .filter(|b| b.inherits_effects)
                .and_then(|b| b.origin.map(|(o, _)| o));
            // Step over the breakpoint or interrupt the run stopped at, exactly once.
            let mut stepping_over = self.take_stop(&mut meta, head.id)?;
            let mut answer = match &stepping_over {
                Some(StopReason::Interrupt { node, .. }) => answer.map(|a| (node.clone(), a)),
                _ => None,
            };
            self.emit(
                &run,
                branch,
                head.step,
                EventKind::RunStarted { from: head.id },
            );
            let mut next_id = self.next_id(&run)?;
            let mut since_full = FULL_SNAPSHOT_EVERY; // the first checkpoint of a call is a full snapshot
            let mut steps_done = 0u64;
            loop {
                let skip_before = matches!(stepping_over.take(), Some(StopReason::BeforeNode(_)));
                match gate(&meta, &head, opts, steps_done, skip_before) {
                    Gate::Run => {}
                    Gate::Finished => {
                        let checkpoint = head.id;
                        self.emit(
                            &run,
                            branch,
                            head.step,
                            EventKind::RunFinished { checkpoint },
                        );
                        let state = unwrap_arc(state);
                        return Ok(RunOutcome::Finished { state, checkpoint });
                    }
                    Gate::Paused => {
                        let state = unwrap_arc(state);
                        return Ok(RunOutcome::Paused {
                            state,
                            checkpoint: head.id,
                        });
                    }
                    Gate::StepLimit => {
                        let e = GraphError::StepLimit {
                            run: run.clone(),
                            limit: opts.step_limit,
                            checkpoint: head.id,
                        };
                        return Err(self.failed(&run, branch, head.step, e));
                    }
                    Gate::Stop(reason) => return self.stop(&mut meta, &head, state, reason),
                    Gate::Cancelled => {
                        return Err(GraphError::Cancelled {
                            run: run.clone(),
                            checkpoint: head.id,
                        });
                    }
                }
                let input = StepInput {
                    head: &head,
                    origin,
                    answer: answer.take(),
                    id: next_id,
                    full: since_full >= FULL_SNAPSHOT_EVERY,
                    effects: opts.effects,
                    cancel: &opts.cancel,
                };
                let step_span = tracing::info_span!("step", step = head.step + 1);
                let end = self
                    .run_step(&run, input, &mut state)
                    .instrument(step_span)
                    .await;
                let (cp, ran) = match end {
                    Ok(StepEnd::Committed(cp, ran)) => (cp, ran),
                    Ok(StepEnd::Interrupt { node, payload }) => {
                        let reason = StopReason::Interrupt { node, payload };
                        return self.stop(&mut meta, &head, state, reason);
                    }
                    Err(e) => return Err(self.failed(&run, branch, head.step + 1, e)),
                };
                since_full = if matches!(cp.state, StateRecord::Full(_)) {
                    1
                } else {
                    since_full + 1
                };
                next_id = CheckpointId(cp.id.0 + 1);
                head = cp;
                steps_done += 1;
                if let Some(t) = ran
                    .iter()
                    .find(|t| meta.breakpoints.after.contains(&t.node))
                {
                    let reason = StopReason::AfterNode(t.node.clone());
                    return self.stop(&mut meta, &head, state, reason);
                }
            }
        }
        .instrument(span)
        .await
    }

    /// Clears the stop stored with the run; returns its reason when it is at `head` (the call then steps
    /// over it once).
    fn take_stop(
        &self,
        meta: &mut GraphRunMeta,
        head: CheckpointId,
    ) -> Result<Option<StopReason>, GraphError> {
        let Some((at, reason)) = meta.stopped.take() else {
            return Ok(None);
        };
        self.store.update_run(meta)?;
        Ok((at == head).then_some(reason))
    }

    /// Reports a failed run as an event and hands the error back.
    fn failed(&self, run: &RunId, branch: BranchId, step: u64, e: GraphError) -> GraphError {
        let error = e.to_string();
        self.emit(run, branch, step, EventKind::RunFailed { error });
        e
    }

    /// Stores the stop with the run and ends the call with [`RunOutcome::Stopped`].
    fn stop(
        &self,
        meta: &mut GraphRunMeta,
        head: &Checkpoint,
        state: Arc<S>,
        reason: StopReason,
    ) -> Result<RunOutcome<S>, GraphError> {
        meta.stopped = Some((head.id, reason.clone()));
        self.store.update_run(meta)?;
        self.emit(
            &meta.run,
            head.branch,
            head.step,
            EventKind::Stopped {
                checkpoint: head.id,
                reason: reason.clone(),
            },
        );
        tracing::info!(checkpoint = %head.id, ?reason, "run stopped");
        Ok(RunOutcome::Stopped {
            state: unwrap_arc(state),
            checkpoint: head.id,
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::Task;

    fn head(step: u64, next: &[&str]) -> Checkpoint {
        Checkpoint {
            id: CheckpointId(step),
            parent: None,
            branch: BranchId(0),
            step,
            fingerprint: String::new(),
            next: next.iter().map(|n| Task::single(*n)).collect(),
            timings: Vec::new(),
            failures: Vec::new(),
            source: CheckpointSource::Step,
            created_ms: 0,
            state: StateRecord::Full(Default::default()),
        }
    }

    fn meta_with_breakpoint_before(node: &str) -> GraphRunMeta {
        GraphRunMeta {
            run: RunId::new("r"),
            fingerprint: String::new(),
            breakpoints: Breakpoints {
                before: vec![node.into()],
                after: Vec::new(),
            },
            branches: Vec::new(),
            stopped: None,
        }
    }

    #[test]
    fn the_gate_checks_the_end_budget_limit_breakpoint_and_cancel_in_that_order() {
        let meta = meta_with_breakpoint_before("b");
        let opts = RunOptions {
            step_limit: 5,
            max_steps: Some(2),
            ..RunOptions::default()
        };
        assert_eq!(gate(&meta, &head(9, &[]), &opts, 9, false), Gate::Finished);
        assert_eq!(gate(&meta, &head(9, &["b"]), &opts, 2, false), Gate::Paused);
        assert_eq!(
            gate(&meta, &head(5, &["b"]), &opts, 0, false),
            Gate::StepLimit
        );
        assert_eq!(
            gate(&meta, &head(1, &["a", "b"]), &opts, 0, false),
            Gate::Stop(StopReason::BeforeNode("b".into()))
        );
        opts.cancel.cancel();
        assert_eq!(
            gate(&meta, &head(1, &["b"]), &opts, 0, true),
            Gate::Cancelled
        );
        assert_eq!(
            gate(&meta, &head(1, &["a"]), &RunOptions::default(), 0, false),
            Gate::Run
        );
    }
}
