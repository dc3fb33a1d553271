//! The autonomous strategy's planning nodes: `plan` / `replan` (the list of steps), `next_step` (take the next
//! one), `validate` (device code only), `breakdown` (sub-steps go to the front of the plan).
//!
//! Every call is a fresh conversation built from the state: the current best kernel, the step, and for the
//! replanner every step taken so far with its outcome. A planner that keeps failing ends the strategy with the
//! best kernel so far instead of crashing the run.

use std::sync::Arc;

use kt_graph::{Node, NodeContext};
use serde::Serialize;

use crate::KernelInfo;
use crate::error::PipelineError;
use crate::stage3::answers::{self, Plan, StepValidation};
use crate::stage3::context::Stage3Context;
use crate::stage3::state::{
    CurrentStep, PlannedStep, Stage3State, Stage3Update, StepRecord, StepStatus,
};
use crate::stage3::steps::ask::{AskError, ask};
use crate::stage3::steps::prompt_vars::{
    HistoryVar, KernelVar, LaunchVar, history_var, kernel_var, launch_var, step_vars,
};
use crate::strategy::ProfilePrompt;

use super::step_gate::StepGate;

/// Sub-steps kept from one breakdown.
const MAX_SUBSTEPS: usize = 5;

#[derive(Serialize)]
struct PlanVars<'a> {
    kernel: KernelVar,
    info: &'a KernelInfo,
    launch: LaunchVar,
    history: Vec<HistoryVar>,
    max_steps: usize,
    /// The best kernel's profile summary (a measured section), when the strategy turns profiles on.
    profile: Option<String>,
}

/// `plan` (first plan) or `replan` (after the plan ran out).
pub(crate) struct Planner {
    pub cx: Arc<Stage3Context>,
    pub replan: bool,
}

impl Node<Stage3State> for Planner {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let cx = &self.cx;
        let settings = &cx.strategy.settings;
        let kind = if self.replan {
            ProfilePrompt::Replan
        } else {
            ProfilePrompt::Plan
        };
        let taken = super::profile::profile_best_for(cx, &ctx, &state, kind).await?;
        let profile = match &taken {
            Some(record) => record.summary.clone(),
            None => crate::stage3::profiling::run_profiles::prompt_profile(cx, &state, kind),
        };
        let taken: Vec<_> = taken.into_iter().collect();
        let vars = PlanVars {
            kernel: kernel_var(cx, &state.best_kernel()?.kernel),
            info: &cx.kernel.info,
            launch: launch_var(&cx.kernel.info),
            history: history_var(&state.history),
            max_steps: settings.max_plan_length,
            // measured: left out of the request's identity, so a recorded run replays on another GPU
            profile: crate::stage3::profiling::run_profiles::with_ceiling(profile, &state),
        };
        let (template, node) = if self.replan {
            (&cx.strategy.prompts.replan, "stage3.replan")
        } else {
            (&cx.strategy.prompts.plan, "stage3.plan")
        };
        match ask::<Plan, _>(cx, &ctx, node, template, &vars).await {
            Ok(asked) => {
                let steps: Vec<String> = asked
                    .answer
                    .steps
                    .into_iter()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                let keep = settings.max_plan_length.max(1);
                let cut: Vec<StepRecord> = steps
                    .iter()
                    .skip(keep)
                    .map(|s| StepRecord {
                        step: s.clone(),
                        id: None,
                        status: StepStatus::Cut,
                        reason: format!("the plan had more than {keep} steps"),
                        time_ms: None,
                        best_before_ms: None,
                        kernel_file: None,
                        attempts: 0,
                        speedup_ci95: None,
                    })
                    .collect();
                let plan: Vec<PlannedStep> = steps
                    .into_iter()
                    .take(keep)
                    .map(|description| PlannedStep {
                        description,
                        breakdown_depth: 0,
                    })
                    .collect();
                let mut update = Stage3Update::default()
                    .profiles(taken)
                    .plan(plan)
                    .last_plan_failed(false)
                    .history(cut)
                    .llm_calls(vec![asked.call]);
                if self.replan {
                    update = update.replans_used(state.replans_used + 1);
                }
                Ok(update)
            }
            Err(AskError::Recoverable { kind, message }) => {
                tracing::warn!(%kind, %message, failures = state.planner_failures + 1, "planner gave no usable plan");
                Ok(Stage3Update::default()
                    .profiles(taken)
                    .plan(Vec::new())
                    .last_plan_failed(true)
                    .planner_failures(state.planner_failures + 1))
            }
            Err(AskError::Fatal(e)) => Err(e),
        }
    }
}

/// `next_step`: moves the first planned step into `current` (or clears it when the plan is empty).
pub(crate) struct NextStep(pub Arc<Stage3Context>);

impl Node<Stage3State> for NextStep {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        _ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let mut plan = state.plan.clone();
        if plan.is_empty() {
            return Ok(Stage3Update::default().current(None));
        }
        let next = plan.remove(0);
        let current = CurrentStep {
            id: None,
            description: next.description,
            template: self.0.strategy.prompts.apply.clone(),
            suggested_parameters: Vec::new(),
            breakdown_depth: next.breakdown_depth,
            ask_if_worth_it: false,
            round: state.round,
        };
        Ok(Stage3Update::default().plan(plan).current(Some(current)))
    }
}

/// `validate`: refuses steps that are not device-code changes. An unreadable answer refuses the step too.
pub(crate) struct Validate(pub Arc<Stage3Context>);

impl Node<Stage3State> for Validate {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let cx = &self.0;
        let gate = StepGate {
            node: "stage3.validate",
            template: &cx.strategy.prompts.validate,
            refusal: StepStatus::Invalid,
            if_unusable: "validation gave no usable answer, so the step counts as not a device-code change",
        };
        gate.ask(cx, &ctx, &state, |a: StepValidation| {
            (!a.valid).then_some(a.reason)
        })
        .await
    }
}

/// `breakdown`: replaces a step by its sub-steps (at the front of the plan), or lets it through unchanged.
pub(crate) struct Breakdown(pub Arc<Stage3Context>);

impl Node<Stage3State> for Breakdown {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let cx = &self.0;
        let step = state.current_step()?;
        let vars = step_vars(cx, &state, &step)?;
        match ask::<answers::Breakdown, _>(
            cx,
            &ctx,
            "stage3.breakdown",
            &cx.strategy.prompts.breakdown,
            &vars,
        )
        .await
        {
            Ok(asked) => {
                let subs: Vec<String> = asked
                    .answer
                    .substeps
                    .into_iter()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .take(MAX_SUBSTEPS)
                    .collect();
                // A "breakdown" into the step itself is no breakdown.
                if subs.is_empty() || (subs.len() == 1 && subs[0] == step.description) {
                    return Ok(Stage3Update::default().llm_calls(vec![asked.call]));
                }
                let reason = format!(
                    "broken down into {} sub-steps: {}",
                    subs.len(),
                    subs.join("; ")
                );
                let mut plan: Vec<PlannedStep> = subs
                    .into_iter()
                    .map(|description| PlannedStep {
                        description,
                        breakdown_depth: step.breakdown_depth + 1,
                    })
                    .collect();
                plan.extend(state.plan.iter().cloned());
                Ok(Stage3Update::default()
                    .plan(plan)
                    .current(None)
                    .history(vec![StepRecord::unmeasured(
                        &step,
                        StepStatus::BrokenDown,
                        reason,
                    )])
                    .llm_calls(vec![asked.call]))
            }
            Err(AskError::Recoverable { kind, message }) => {
                tracing::warn!(%kind, %message, "breakdown gave no usable answer; applying the step as it is");
                Ok(Stage3Update::default())
            }
            Err(AskError::Fatal(e)) => Err(e),
        }
    }
}
