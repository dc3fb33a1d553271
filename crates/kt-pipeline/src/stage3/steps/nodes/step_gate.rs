//! A yes/no question about the current step before it is applied (`validate`: device code only? `worth_it`:
//! does this kernel need it?). A "no" drops the step with the answer's reason in the history; a "yes" lets it
//! through. An answer that cannot be read (after the client's re-asks) is a "no": a guard rail that opens when
//! the model answers gibberish is no guard rail. Only a recording without the question lets the step through.

use kt_graph::NodeContext;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::FailureKind;
use crate::error::PipelineError;
use crate::stage3::context::Stage3Context;
use crate::stage3::state::{Stage3State, Stage3Update, StepRecord, StepStatus};
use crate::stage3::steps::ask::{AskError, ask};
use crate::stage3::steps::prompt_vars::step_vars;

/// One gate: which call it is and what a "no" or no answer means.
pub(super) struct StepGate<'a> {
    /// The graph node name of the call (`stage3.validate`).
    pub node: &'static str,
    pub template: &'a str,
    /// The step's status in the history when the answer is no.
    pub refusal: StepStatus,
    /// The history's reason when the answer could not be read (the step is refused).
    pub if_unusable: &'static str,
}

impl StepGate<'_> {
    /// Asks about the current step; `refused` gives the reason when the answer `A` says no.
    pub(super) async fn ask<A>(
        &self,
        cx: &Stage3Context,
        ctx: &NodeContext,
        state: &Stage3State,
        refused: impl FnOnce(A) -> Option<String>,
    ) -> Result<Stage3Update, PipelineError>
    where
        A: JsonSchema + DeserializeOwned + Serialize + Send + 'static,
    {
        let step = state.current_step()?;
        let vars = step_vars(cx, state, &step)?;
        match ask::<A, _>(cx, ctx, self.node, self.template, &vars).await {
            Ok(asked) => {
                let update = Stage3Update::default().llm_calls(vec![asked.call]);
                Ok(match refused(asked.answer) {
                    Some(reason) => update.current(None).history(vec![StepRecord::unmeasured(
                        &step,
                        self.refusal,
                        reason,
                    )]),
                    None => update,
                })
            }
            Err(AskError::Recoverable {
                kind: FailureKind::BadAnswer,
                message,
            }) => {
                tracing::warn!(%message, "{}", self.if_unusable);
                Ok(Stage3Update::default()
                    .current(None)
                    .history(vec![StepRecord::unmeasured(
                        &step,
                        self.refusal,
                        format!(
                            "{}: {}",
                            self.if_unusable,
                            crate::stage3::steps::feedback::cut(&message, 300)
                        ),
                    )]))
            }
            Err(AskError::Recoverable { kind, message }) => {
                tracing::warn!(%kind, %message, "no recorded answer to {}; trying the step", self.node);
                Ok(Stage3Update::default())
            }
            Err(AskError::Fatal(e)) => Err(e),
        }
    }
}
