//! The explicit strategy's nodes: `next_explicit` picks the next step of the strategy file whose dependencies
//! were applied, and `worth_it` asks whether that step is worth doing. The step judged worth doing is the step
//! that is applied: `worth_it` never changes `current`, and `apply` reads the step (and its own template)
//! from `current`.

use std::sync::Arc;

use kt_graph::{Node, NodeContext};

use super::step_gate::StepGate;
use crate::error::PipelineError;
use crate::stage3::answers::{TunableParameter, WorthIt};
use crate::stage3::context::Stage3Context;
use crate::stage3::state::{
    CurrentStep, Stage3State, Stage3Update, StepRecord, StepStatus, WorthItAnswer,
};

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
                .history(vec![StepRecord::unmeasured(
                    &current,
                    StepStatus::Skipped,
                    reason,
                )]));
        }
        Ok(Stage3Update::default()
            .explicit_done(done)
            .current(Some(current)))
    }
}

/// `worth_it`: is the current explicit step worth doing for this kernel? An unreadable answer counts as no.
pub(crate) struct WorthItCheck(pub Arc<Stage3Context>);

impl Node<Stage3State> for WorthItCheck {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let cx = &self.0;
        let gate = StepGate {
            node: "stage3.worth_it",
            template: &cx.strategy.prompts.worth_it,
            refusal: StepStatus::NotWorthIt,
            if_unusable: "no usable answer on whether the step is worth it, so it is not done",
        };
        let step_id = state.current_step()?.id.unwrap_or_default();
        let mut answered = None;
        let update = gate
            .ask(cx, &ctx, &state, |a: WorthIt| {
                answered = Some(a.worth_it);
                (!a.worth_it).then_some(a.reason)
            })
            .await?;
        // Recorded for the necessity figure: yes, no, or asked without a usable answer.
        Ok(update.worth_it_answers(vec![WorthItAnswer {
            step_id,
            worth_it: answered,
        }]))
    }
}
