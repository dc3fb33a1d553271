//! The nodes that turn a step into a kernel: `prepare` opens a best-of-N round, `apply` (N parallel tasks)
//! asks for a rewrite and takes it through the naming pass, the static checks, the restrictions (asked with the
//! *new* code) and the tuner, and `select` keeps the fastest verified candidate if it beats the best kernel by
//! more than the noise.
//!
//! `apply` fails an attempt with [`PipelineError::CandidateFailed`]; the graph's retry policy sends the failure
//! back to the LLM (the handler appends it to the next attempt's prompt). The last attempt records the failure
//! instead of failing, so a step that keeps failing is dropped and the run goes on.

use std::sync::Arc;

use kt_graph::{Node, NodeContext};
use serde::Serialize;

use crate::KernelInfo;
use crate::error::FailureKind;
use crate::error::PipelineError;
use crate::kernel_unit::kernel_unit;
use crate::stage3::answers::{
    CodeParameters, KernelRewrite, ParameterRenames, Restrictions, TunableParameter,
};
use crate::stage3::backend::tuning_backend::Outcome;
use crate::stage3::context::Stage3Context;
use crate::stage3::state::{
    CandidateOutcome, CurrentStep, LlmCallRecord, Stage3State, Stage3Update,
};
use crate::stage3::steps::ask::{AskError, ask, ask_text};
use crate::stage3::steps::feedback::failure_feedback;
use crate::stage3::steps::prompt_vars::{KernelVar, LaunchVar, kernel_var, launch_var};
use crate::stage3::steps::rewrite_answer::{ReadRewrite, read_rewrite};
use crate::stage3::steps::rewrite_check::{
    NamedRewrite, check_restrictions, check_rewrite, code_of, normalize_names,
};
use crate::stage3::tunable_code::TunableCode;
use crate::strategy::ProfilePrompt;

use super::launch_timing::tuning_error;

/// `prepare`: starts a new candidate round for the current step, profiling the best kernel first when the
/// apply prompts of the round read its profile (once, before the candidates run in parallel).
pub(crate) struct Prepare(pub Arc<Stage3Context>);

impl Node<Stage3State> for Prepare {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let mut current = state.current_step()?;
        let round = state.round + 1;
        current.round = round;
        let taken =
            super::profile::profile_best_for(&self.0, &ctx, &state, ProfilePrompt::Apply).await?;
        Ok(Stage3Update::default()
            .round(round)
            .current(Some(current))
            .profiles(taken.into_iter().collect()))
    }
}

#[derive(Serialize)]
struct ApplyVars<'a> {
    kernel: KernelVar,
    info: &'a KernelInfo,
    launch: LaunchVar,
    step: &'a str,
    suggested: &'a [TunableParameter],
    errors: &'a [String],
    /// The best kernel's profile summary (a measured section), when the strategy turns profiles on.
    profile: Option<String>,
}

#[derive(Serialize)]
struct NamesVars<'a> {
    kernel: KernelVar,
    info: &'a KernelInfo,
    launch: LaunchVar,
    conflicts: &'a [String],
    errors: &'a [String],
}

#[derive(Serialize)]
struct RestrictionVars<'a> {
    kernel: KernelVar,
    info: &'a KernelInfo,
    launch: LaunchVar,
    errors: &'a [String],
}

/// A failed attempt: what went wrong and what the LLM is told.
struct Failed {
    kind: FailureKind,
    feedback: String,
    kernel: Option<TunableCode>,
    outcome: Option<Outcome>,
}

enum AttemptError {
    Failed(Box<Failed>),
    Fatal(PipelineError),
}

impl From<PipelineError> for AttemptError {
    fn from(e: PipelineError) -> Self {
        AttemptError::Fatal(e)
    }
}

fn refused(feedback: String, kernel: Option<TunableCode>) -> AttemptError {
    AttemptError::Failed(Box::new(Failed {
        kind: FailureKind::Refused,
        feedback,
        kernel,
        outcome: None,
    }))
}

fn from_ask(e: AskError) -> AttemptError {
    match e {
        AskError::Recoverable { kind, message } => AttemptError::Failed(Box::new(Failed {
            kind,
            feedback: message,
            kernel: None,
            outcome: None,
        })),
        AskError::Fatal(e) => AttemptError::Fatal(e),
    }
}

fn draft(code: &str, parameters: &[TunableParameter], divisors: &[Vec<String>; 3]) -> TunableCode {
    TunableCode {
        code: code.to_string(),
        parameters: parameters.to_vec(),
        restrictions: Vec::new(),
        grid_divisors: divisors.clone(),
        dynamic_shared_memory: None,
        seeds: Vec::new(),
    }
}

/// `apply`: one candidate of the current round.
pub(crate) struct Apply(pub Arc<Stage3Context>);

#[derive(Serialize)]
struct CodeParameterVars<'a> {
    kernel: KernelVar,
    info: &'a KernelInfo,
    launch: LaunchVar,
    step: &'a str,
    errors: &'a [String],
}

impl Apply {
    /// The code-first fallback: the parameters of `code` (a rewrite that came without its JSON), asked in one
    /// short structured question.
    async fn parameters_of(
        &self,
        state: &Stage3State,
        ctx: &NodeContext,
        step: &CurrentStep,
        code: String,
        calls: &mut Vec<LlmCallRecord>,
    ) -> Result<KernelRewrite, AttemptError> {
        let cx = &self.0;
        let best = state.best_kernel()?;
        let shown = draft(&code, &[], &best.kernel.grid_divisors);
        let vars = CodeParameterVars {
            kernel: kernel_var(cx, &shown),
            info: &cx.kernel.info,
            launch: launch_var(&cx.kernel.info),
            step: &step.description,
            errors: &[],
        };
        let asked = ask::<CodeParameters, _>(
            cx,
            ctx,
            "stage3.code_parameters",
            &cx.strategy.prompts.code_parameters,
            &vars,
        )
        .await
        .map_err(from_ask)?;
        calls.push(asked.call);
        let p = asked.answer;
        Ok(KernelRewrite {
            code,
            parameters: p.parameters,
            grid_divisors: p.grid_divisors,
            dynamic_shared_memory: p.dynamic_shared_memory,
            explanation: "code-first: the parameters were asked for separately".into(),
            expected_best: Vec::new(),
        })
    }

    async fn attempt(
        &self,
        state: &Stage3State,
        ctx: &NodeContext,
        step: &CurrentStep,
        calls: &mut Vec<LlmCallRecord>,
        notes: &mut Vec<String>,
    ) -> Result<(TunableCode, Outcome, String), AttemptError> {
        let cx = &self.0;
        let (rewrite, code) = self.rewrite(state, ctx, step, calls, notes).await?;
        let divisors = TunableCode::divisors_from(&rewrite.grid_divisors);
        let named = self
            .name_parameters(ctx, step, &code, &rewrite, &divisors, calls)
            .await?;
        // 3. Static checks: same signature, device code only, parameters used, divisors known.
        let problems = check_rewrite(
            &cx.kernel.signature,
            &named.code,
            &named.parameters,
            &named.divisors,
        );
        if !problems.is_empty() {
            return Err(refused(
                format!("kt refused the rewrite: {}", problems.join("; ")),
                Some(draft(&named.code, &named.parameters, &named.divisors)),
            ));
        }

        let mut kernel = draft(&named.code, &named.parameters, &named.divisors);
        kernel.dynamic_shared_memory = rewrite.dynamic_shared_memory.clone();
        kernel.seeds = TunableCode::usable_seeds(&rewrite.expected_best, &kernel.parameters);
        kernel.restrictions = self.restrictions(ctx, &kernel, calls).await?;
        let outcome = self.evaluate(ctx, step, &kernel).await?;
        Ok((kernel, outcome, rewrite.explanation))
    }

    /// 1. The rewrite, from the step's own template and the best kernel so far, cut to the kernel's unit:
    ///    the answer and its code.
    async fn rewrite(
        &self,
        state: &Stage3State,
        ctx: &NodeContext,
        step: &CurrentStep,
        calls: &mut Vec<LlmCallRecord>,
        notes: &mut Vec<String>,
    ) -> Result<(KernelRewrite, String), AttemptError> {
        let cx = &self.0;
        let best = state.best_kernel()?;
        let vars = ApplyVars {
            kernel: kernel_var(cx, &best.kernel),
            info: &cx.kernel.info,
            launch: launch_var(&cx.kernel.info),
            step: &step.description,
            suggested: &step.suggested_parameters,
            errors: &state.feedback,
            profile: crate::stage3::profiling::run_profiles::prompt_profile(
                cx,
                state,
                ProfilePrompt::Apply,
            ),
        };
        let asked = ask_text::<KernelRewrite, _>(cx, ctx, "stage3.apply", &step.template, &vars)
            .await
            .map_err(from_ask)?;
        calls.push(asked.call);
        let rewrite = match read_rewrite(&asked.answer, &cx.kernel.signature.name) {
            ReadRewrite::Json(rewrite, repairs) => {
                if !repairs.is_empty() {
                    tracing::info!(step = %step.description, ?repairs, "rewrite read leniently");
                }
                *rewrite
            }
            ReadRewrite::CodeOnly(code) => {
                notes.push(
                    "your answer had code but no usable JSON, so kt took the last code block defining the \
                     kernel and asked for its parameters separately"
                        .into(),
                );
                self.parameters_of(state, ctx, step, code, calls).await?
            }
            ReadRewrite::Unusable(why) => {
                return Err(AttemptError::Failed(Box::new(Failed {
                    kind: FailureKind::BadAnswer,
                    feedback: format!("the answer could not be used: {why}"),
                    kernel: None,
                    outcome: None,
                })));
            }
        };
        // Host code and host-only includes around the kernel are dropped (and the model told so).
        let unit = kernel_unit(&code_of(&rewrite.code), &cx.kernel.signature.name);
        if !unit.dropped.is_empty() {
            let note = format!(
                "kt kept only the kernel's device code and dropped {}; answer with the kernel's code only",
                unit.dropped.join(", ")
            );
            tracing::info!(step = %step.description, "{note}");
            notes.push(note);
        }
        Ok((rewrite, unit.code))
    }

    /// 2. Naming pass: kt's own fixes first, the LLM only for what needs a decision about meaning.
    async fn name_parameters(
        &self,
        ctx: &NodeContext,
        step: &CurrentStep,
        code: &str,
        rewrite: &KernelRewrite,
        divisors: &[Vec<String>; 3],
        calls: &mut Vec<LlmCallRecord>,
    ) -> Result<NamedRewrite, AttemptError> {
        let cx = &self.0;
        let mut named = normalize_names(code, &rewrite.parameters, divisors);
        if !named.unresolved.is_empty() {
            let vars = NamesVars {
                kernel: kernel_var(cx, &draft(&named.code, &named.parameters, &named.divisors)),
                info: &cx.kernel.info,
                launch: launch_var(&cx.kernel.info),
                conflicts: &named.unresolved,
                errors: &[],
            };
            let asked = ask::<ParameterRenames, _>(
                cx,
                ctx,
                "stage3.names",
                &cx.strategy.prompts.names,
                &vars,
            )
            .await
            .map_err(from_ask)?;
            calls.push(asked.call);
            let mut code = named.code.clone();
            let mut parameters = named.parameters.clone();
            let mut divisors = named.divisors.clone();
            for r in &asked.answer.renames {
                code = kt_cuda::rename_identifiers(&code, &[(r.from.as_str(), r.to.as_str())])
                    .map_err(|e| {
                        refused(
                            format!("naming pass: {e}"),
                            Some(draft(&named.code, &named.parameters, &named.divisors)),
                        )
                    })?;
                for p in parameters.iter_mut().filter(|p| p.name == r.from) {
                    p.name = r.to.clone();
                }
                for d in divisors.iter_mut() {
                    for n in d.iter_mut().filter(|n| **n == r.from) {
                        *n = r.to.clone();
                    }
                }
            }
            named = normalize_names(&code, &parameters, &divisors);
            if !named.unresolved.is_empty() {
                return Err(refused(
                    format!(
                        "tunable parameter names collide with names in the code: {}. Use one distinct name per knob.",
                        named.unresolved.join("; ")
                    ),
                    Some(draft(&named.code, &named.parameters, &named.divisors)),
                ));
            }
        }
        for note in &named.notes {
            tracing::info!(step = %step.description, "{note}");
        }
        Ok(named)
    }

    /// 4. Restrictions, asked with the new code and its parameters, checked before use.
    async fn restrictions(
        &self,
        ctx: &NodeContext,
        kernel: &TunableCode,
        calls: &mut Vec<LlmCallRecord>,
    ) -> Result<Vec<String>, AttemptError> {
        let cx = &self.0;
        let settings = &cx.strategy.settings;
        let mut errors: Vec<String> = Vec::new();
        let mut restrictions = None;
        for _ in 0..=settings.max_reasks {
            let vars = RestrictionVars {
                kernel: kernel_var(cx, kernel),
                info: &cx.kernel.info,
                launch: launch_var(&cx.kernel.info),
                errors: &errors,
            };
            let asked = ask::<Restrictions, _>(
                cx,
                ctx,
                "stage3.restrictions",
                &cx.strategy.prompts.restrictions,
                &vars,
            )
            .await
            .map_err(from_ask)?;
            calls.push(asked.call);
            let list: Vec<String> = asked
                .answer
                .restrictions
                .into_iter()
                .map(|r| r.trim().to_string())
                .filter(|r| !r.is_empty())
                .collect();
            let problems = check_restrictions(&list, &kernel.parameters);
            if problems.is_empty() {
                restrictions = Some(list);
                break;
            }
            errors = problems;
        }
        let Some(restrictions) = restrictions else {
            return Err(refused(
                format!("the restrictions stayed invalid: {}", errors.join("; ")),
                Some(kernel.clone()),
            ));
        };
        Ok(restrictions)
    }

    /// 5. The GPU: compile, verify on every test, tune; a candidate that fails is an attempt that failed.
    async fn evaluate(
        &self,
        ctx: &NodeContext,
        step: &CurrentStep,
        kernel: &TunableCode,
    ) -> Result<Outcome, AttemptError> {
        let cx = &self.0;
        let backend = cx.backend()?;
        let label = format!("r{}-c{}-a{}", step.round, ctx.task_index(), ctx.attempt());
        let progress = cx.progress.clone();
        let outcome = ctx
            .effect("tuning.evaluate", || {
                backend.evaluate(&label, kernel, progress.as_ref())
            })
            .await
            .map_err(|e| AttemptError::Fatal(tuning_error(ctx, e)))?;
        if let Some(kind) = outcome.failure_kind() {
            let feedback = failure_feedback(&outcome).unwrap_or_default();
            return Err(AttemptError::Failed(Box::new(Failed {
                kind,
                feedback,
                kernel: Some(kernel.clone()),
                outcome: Some(outcome),
            })));
        }
        Ok(outcome)
    }
}

impl Node<Stage3State> for Apply {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let step = state.current_step()?;
        let max_attempts = self.0.strategy.settings.max_attempts;
        let mut calls = Vec::new();
        let mut notes = Vec::new();
        let result = self
            .attempt(&state, &ctx, &step, &mut calls, &mut notes)
            .await
            .map_err(|e| match e {
                AttemptError::Failed(mut f) if !notes.is_empty() => {
                    f.feedback = format!("{} (Also: {}.)", f.feedback, notes.join("; "));
                    AttemptError::Failed(f)
                }
                other => other,
            });
        let mut all_calls = state.carried_calls.clone();
        let candidate =
            |kernel, outcome, failure: Option<&Failed>, explanation: String| CandidateOutcome {
                round: step.round,
                index: ctx.task_index() as u32,
                kernel,
                outcome,
                failure: failure.map(|f| f.feedback.clone()),
                failure_kind: failure.map(|f| f.kind),
                attempts: ctx.attempt(),
                feedback: state.feedback.clone(),
                explanation,
            };
        match result {
            Ok((kernel, outcome, explanation)) => {
                all_calls.extend(calls);
                Ok(Stage3Update::default()
                    .candidates(vec![candidate(
                        Some(kernel),
                        Some(outcome),
                        None,
                        explanation,
                    )])
                    .llm_calls(all_calls))
            }
            Err(AttemptError::Failed(f)) if ctx.attempt() < max_attempts => {
                Err(PipelineError::CandidateFailed {
                    step: step.description.clone(),
                    kind: f.kind,
                    feedback: f.feedback,
                    calls,
                })
            }
            Err(AttemptError::Failed(f)) => {
                tracing::warn!(step = %step.description, kind = %f.kind, "last attempt failed; the candidate is dropped");
                all_calls.extend(calls);
                let c = candidate(f.kernel.clone(), f.outcome.clone(), Some(&f), String::new());
                Ok(Stage3Update::default()
                    .candidates(vec![c])
                    .llm_calls(all_calls))
            }
            Err(AttemptError::Fatal(e)) => Err(e),
        }
    }
}
