//! One superstep, in its phases: reuse the writes that tasks of an interrupted attempt saved, run the
//! other tasks concurrently, fold their updates into the state, route, and write the checkpoint.

use super::merge::{Done, Merged, Slot, merge_updates};
use super::{Executor, now_ms, ser_err, to_fields};
use crate::cancel::CancelToken;
use crate::checkpoint::{Checkpoint, CheckpointSource, NodeTiming, StateRecord, Task};
use crate::context::ReplayMode;
use crate::decl::END;
use crate::error::GraphError;
use crate::events::EventKind;
use crate::ids::{BranchId, CheckpointId, RunId};
use crate::node::{TaskFailure, TaskResult};
use crate::state::State;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the run loop hands one superstep.
pub(super) struct StepInput<'a> {
    /// The last committed checkpoint; its `next` are the step's tasks.
    pub head: &'a Checkpoint,
    /// The branch whose effect journal this branch may reuse (a replay's origin).
    pub origin: Option<BranchId>,
    /// The answer for the node whose interrupt stopped the run here: (node, answer).
    pub answer: Option<(String, Value)>,
    /// The id the step's checkpoint gets.
    pub id: CheckpointId,
    /// Store the whole state rather than a delta.
    pub full: bool,
    pub effects: ReplayMode,
    pub cancel: &'a CancelToken,
}

/// How a superstep ended (errors aside): committed, or stopped by a node's interrupt before committing.
pub(super) enum StepEnd {
    /// The new checkpoint and the tasks that ran to make it.
    Committed(Checkpoint, Vec<Task>),
    Interrupt {
        node: String,
        payload: Value,
    },
}

/// The tasks' results as they come in: finished slots, the first failure, the first interrupt.
struct Collected<S: State> {
    done: Vec<Slot<S>>,
    failure: Option<GraphError>,
    interrupt: Option<(String, Value)>,
}

impl<S: State> Executor<S> {
    /// Runs the tasks of `input.head`, merges, routes and commits one checkpoint. Nothing is committed
    /// when a task fails (unless routed by `on_exhausted`), interrupts, or the run is cancelled.
    pub(super) async fn run_step(
        &self,
        run: &RunId,
        input: StepInput<'_>,
        state: &mut Arc<S>,
    ) -> Result<StepEnd, GraphError> {
        let head = input.head;
        let (branch, step, tasks) = (head.branch, head.step + 1, &head.next);
        let keys: Vec<String> = tasks.iter().map(Task::key).collect();
        let names = keys.join(" ");
        self.emit(run, branch, step, EventKind::StepStarted { tasks: keys });

        let started = std::time::Instant::now();
        let saved = self.reuse_saved_writes(run, head)?;
        let collected = self.run_tasks(run, &input, state, saved).await?;
        let ran = started.elapsed();
        if let Some(e) = collected.failure {
            return Err(e);
        }
        if let Some((node, payload)) = collected.interrupt {
            return Ok(StepEnd::Interrupt { node, payload });
        }
        let mut merged = merge_updates(&self.graph, run, tasks, state, collected.done)?;
        let fields = std::mem::take(&mut merged.fields);
        self.emit(run, branch, step, EventKind::StateMerged { fields });
        let next = self.route(tasks, &merged.routes, state)?;
        let cp = self.write_checkpoint(run, &input, state, merged, next)?;
        // where a run's time goes between its nodes' own logs
        tracing::debug!(
            tasks = %names,
            tasks_ms = ran.as_secs_f64() * 1e3,
            commit_ms = (started.elapsed() - ran).as_secs_f64() * 1e3,
            "step committed"
        );
        Ok(StepEnd::Committed(cp, tasks.clone()))
    }

    /// Phase 1: in a step with several tasks, those that finished in an earlier attempt of the step saved
    /// their writes; they are reused rather than run again.
    fn reuse_saved_writes(
        &self,
        run: &RunId,
        head: &Checkpoint,
    ) -> Result<Vec<Slot<S>>, GraphError> {
        let tasks = &head.next;
        let mut done: Vec<Slot<S>> = tasks.iter().map(|_| None).collect();
        if tasks.len() <= 1 {
            return Ok(done);
        }
        for (key, write) in self.store.task_writes(run, head.id)? {
            let Some(i) = tasks.iter().position(|t| t.key() == key) else {
                continue;
            };
            let Value::Object(map) = write else { continue };
            let update = S::update_from_json(map).map_err(|e| GraphError::CorruptCheckpoint {
                run: run.clone(),
                checkpoint: head.id,
                reason: format!("saved write of task {key} does not decode: {e}"),
            })?;
            let t = &tasks[i];
            tracing::debug!(task = %key, "reusing the saved write of a task finished before");
            let timing = NodeTiming {
                node: t.node.clone(),
                index: t.index,
                micros: 0,
                attempts: 0,
            };
            done[i] = Some((Done::Update(update), timing));
        }
        Ok(done)
    }

    /// Phase 2: runs the tasks without a result concurrently on the same snapshot, collecting results as
    /// they finish. Cancellation drops the step.
    async fn run_tasks(
        &self,
        run: &RunId,
        input: &StepInput<'_>,
        state: &Arc<S>,
        done: Vec<Slot<S>>,
    ) -> Result<Collected<S>, GraphError> {
        let head = input.head;
        let mut running = FuturesUnordered::new();
        for (i, task) in head.next.iter().enumerate() {
            if done[i].is_some() {
                continue;
            }
            let node = self
                .graph
                .node(&task.node)
                .ok_or_else(|| GraphError::NoSuchNode {
                    run: run.clone(),
                    node: task.node.clone(),
                })?;
            let answer = input
                .answer
                .as_ref()
                .filter(|(n, _)| *n == task.node)
                .map(|(_, v)| v.clone());
            let ctx = self.context(
                run,
                head.branch,
                head.step + 1,
                task.clone(),
                input.effects,
                input.origin,
                true,
                input.cancel,
                answer,
            );
            let fut = node.task.run_task(state.clone(), ctx);
            running.push(async move {
                let t0 = Instant::now();
                let r = fut.await;
                (i, r, t0.elapsed())
            });
        }
        let mut collected = Collected {
            done,
            failure: None,
            interrupt: None,
        };
        loop {
            let next = tokio::select! {
                biased;
                _ = input.cancel.cancelled() => {
                    return Err(GraphError::Cancelled { run: run.clone(), checkpoint: head.id });
                }
                next = running.next() => next,
            };
            let Some((i, result, elapsed)) = next else {
                break;
            };
            self.settle(run, head, i, result, elapsed, &mut collected)?;
        }
        Ok(collected)
    }

    /// Records one finished task: its update (saved at once when the step has several tasks, so a crash
    /// does not lose it), its interrupt, or its failure (routed by `on_exhausted`, or failing the step).
    fn settle(
        &self,
        run: &RunId,
        head: &Checkpoint,
        i: usize,
        result: TaskResult<S>,
        elapsed: Duration,
        collected: &mut Collected<S>,
    ) -> Result<(), GraphError> {
        let (task, branch, step) = (&head.next[i], head.branch, head.step + 1);
        let timing = NodeTiming {
            node: task.node.clone(),
            index: task.index,
            micros: elapsed.as_micros() as u64,
            attempts: result.attempts,
        };
        match result.outcome {
            Ok(update) => {
                if head.next.len() > 1 {
                    self.save_task_write(run, head, task, &update)?;
                }
                let kind = EventKind::NodeFinished {
                    node: task.node.clone(),
                    index: task.index,
                    micros: timing.micros,
                    fields: S::fields_written(&update),
                };
                self.emit(run, branch, step, kind);
                collected.done[i] = Some((Done::Update(update), timing));
            }
            Err(TaskFailure::Interrupted(payload)) => {
                if collected.interrupt.is_none() {
                    collected.interrupt = Some((task.node.clone(), payload));
                }
            }
            Err(TaskFailure::Error { message, cause }) => {
                let routed = self
                    .graph
                    .node(&task.node)
                    .and_then(|n| n.on_exhausted.clone());
                match routed {
                    Some(to) => {
                        let kind = EventKind::NodeRouted {
                            node: task.node.clone(),
                            index: task.index,
                            to: to.clone(),
                        };
                        self.emit(run, branch, step, kind);
                        collected.done[i] = Some((Done::Routed { message, to }, timing));
                    }
                    None if collected.failure.is_none() => {
                        collected.failure = Some(GraphError::NodeFailed {
                            run: run.clone(),
                            node: task.node.clone(),
                            step,
                            attempts: result.attempts,
                            message,
                            cause,
                        });
                    }
                    None => {}
                }
            }
        }
        Ok(())
    }

    fn save_task_write(
        &self,
        run: &RunId,
        head: &Checkpoint,
        task: &Task,
        update: &S::Update,
    ) -> Result<(), GraphError> {
        let map: Map<String, Value> = S::update_to_json(update)
            .map_err(|e| ser_err(run, "task write", e))?
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        self.store
            .put_task_write(run, head.id, &task.key(), &Value::Object(map))
    }

    /// Phase 4: the next tasks, on the merged state. Deduplicated, so a node reached from several tasks
    /// runs once (the barrier).
    fn route(
        &self,
        tasks: &[Task],
        routes: &[Option<String>],
        state: &S,
    ) -> Result<Vec<Task>, GraphError> {
        let mut next = Vec::new();
        let mut seen = HashSet::new();
        for (task, route) in tasks.iter().zip(routes) {
            let succ = match route {
                Some(to) if to == END => Vec::new(),
                Some(to) => vec![Task::single(to.clone())],
                None => self.graph.successors(&task.node, state)?,
            };
            for t in succ {
                if seen.insert((t.node.clone(), t.index)) {
                    next.push(t);
                }
            }
        }
        Ok(next)
    }

    /// Phase 5: commits the step's checkpoint (a full snapshot or the merged delta).
    fn write_checkpoint(
        &self,
        run: &RunId,
        input: &StepInput<'_>,
        state: &S,
        merged: Merged,
        next: Vec<Task>,
    ) -> Result<Checkpoint, GraphError> {
        let head = input.head;
        let record = if input.full {
            StateRecord::Full(to_fields(run, state)?)
        } else {
            StateRecord::Delta(merged.ops)
        };
        let cp = Checkpoint {
            id: input.id,
            parent: Some(head.id),
            branch: head.branch,
            step: head.step + 1,
            fingerprint: self.graph.fingerprint().to_string(),
            next,
            timings: merged.timings,
            failures: merged.failures,
            source: CheckpointSource::Step,
            created_ms: now_ms(),
            state: record,
        };
        self.store.put_checkpoint(run, &cp)?;
        let checkpoint = cp.id;
        self.emit(
            run,
            cp.branch,
            cp.step,
            EventKind::CheckpointSaved { checkpoint },
        );
        Ok(cp)
    }
}
