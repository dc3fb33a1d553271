//! The explicit strategy's nodes: `next_explicit` picks the next step of the strategy file whose dependencies
//! were applied, and `worth_it` asks whether that step is worth doing. The step judged worth doing is the step
//! that is applied: `worth_it` never changes `current`, and `apply` reads the step (and its own template)
//! from `current`.

use std::sync::Arc;

use kt_graph::{Node, NodeContext};
use serde::Serialize;

use crate::KernelInfo;
use crate::error::PipelineError;
use crate::stage3::answers::{TunableParameter, WorthIt};
use crate::stage3::ask::{AskError, ask};
use crate::stage3::context::Stage3Context;
use crate::stage3::prompt_vars::{
    HistoryVar, KernelVar, LaunchVar, history_var, kernel_var, launch_var,
};
use crate::stage3::state::{CurrentStep, Stage3State, Stage3Update, StepRecord, StepStatus};

fn step_record(step: &CurrentStep, status: StepStatus, reason: String) -> StepRecord {
    StepRecord {
        step: step.description.clone(),
        id: step.id.clone(),
        status,
        reason,
        time_ms: None,
        best_before_ms: None,
        kernel_file: None,
        attempts: 0,
    }
}

/// A dependency counts as met when its step was accepted or judged not worth doing (the kernel already has
/// what it would add, or does not need it).
fn dependency_met(state: &Stage3State, id: &str) -> bool {
    state
        .history
        .iter()
        .rev()
        .find(|r| r.id.as_deref() == Some(id))
        .is_some_and(|r| matches!(r.status, StepStatus::Accepted | StepStatus::NotWorthIt))
}

/// `next_explicit`: the next step of the file, in dependency order.
pub(crate) struct NextExplicit(pub Arc<Stage3Context>);

impl Node<Stage3State> for NextExplicit {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        _ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let steps = &self.0.strategy.steps;
        let Some(step) = steps.iter().find(|s| !state.explicit_done.contains(&s.id)) else {
            return Ok(Stage3Update::default().current(None));
        };
        let mut done = state.explicit_done.clone();
        done.push(step.id.clone());
        let current = CurrentStep {
            id: Some(step.id.clone()),
            description: step.title.clone(),
            template: step.template.clone(),
            suggested_parameters: step
                .parameters
                .iter()
                .map(|p| TunableParameter {
                    name: p.name.clone(),
                    values: p.values.clone(),
                })
                .collect(),
            breakdown_depth: 0,
            ask_if_worth_it: step.ask_if_worth_it,
            round: state.round,
        };
        let missing: Vec<&str> = step
            .depends_on
            .iter()
            .filter(|d| !dependency_met(&state, d))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            let reason = format!("depends on {}, which was not applied", missing.join(", "));
            return Ok(Stage3Update::default()
                .explicit_done(done)
                .current(None)
                .history(vec![step_record(&current, StepStatus::Skipped, reason)]));
        }
        Ok(Stage3Update::default()
            .explicit_done(done)
            .current(Some(current)))
    }
}

#[derive(Serialize)]
struct WorthVars<'a> {
    kernel: KernelVar,
    info: &'a KernelInfo,
    launch: LaunchVar,
    step: &'a str,
    step_id: &'a str,
    history: Vec<HistoryVar>,
}

/// `worth_it`: is the current explicit step worth doing for this kernel? An unusable answer counts as yes.
pub(crate) struct WorthItCheck(pub Arc<Stage3Context>);

impl Node<Stage3State> for WorthItCheck {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let cx = &self.0;
        let step = state.current.clone().ok_or_else(|| PipelineError::Graph {
            stage: "stage 3",
            message: "no current step".into(),
        })?;
        let best = state.best.as_ref().ok_or_else(|| PipelineError::Graph {
            stage: "stage 3",
            message: "no best kernel".into(),
        })?;
        let vars = WorthVars {
            kernel: kernel_var(cx, &best.kernel),
            info: &cx.kernel.info,
            launch: launch_var(&cx.kernel.info),
            step: &step.description,
            step_id: step.id.as_deref().unwrap_or_default(),
            history: history_var(&state.history),
        };
        match ask::<WorthIt, _>(
            cx,
            &ctx,
            "stage3.worth_it",
            &cx.strategy.prompts.worth_it,
            &vars,
        )
        .await
        {
            Ok(asked) if !asked.answer.worth_it => Ok(Stage3Update::default()
                .current(None)
                .history(vec![step_record(
                    &step,
                    StepStatus::NotWorthIt,
                    asked.answer.reason,
                )])
                .llm_calls(vec![asked.call])),
            Ok(asked) => Ok(Stage3Update::default().llm_calls(vec![asked.call])),
            Err(AskError::Recoverable { kind, message }) => {
                tracing::warn!(%kind, %message, "no usable answer on whether the step is worth it; doing it");
                Ok(Stage3Update::default())
            }
            Err(AskError::Fatal(e)) => Err(e),
        }
    }
}
