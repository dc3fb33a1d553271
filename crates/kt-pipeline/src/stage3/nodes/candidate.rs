//! The nodes that turn a step into a kernel: `prepare` opens a best-of-N round, `apply` (N parallel tasks)
//! asks for a rewrite and takes it through the naming pass, the static checks, the restrictions (asked with the
//! *new* code) and the tuner, and `select` keeps the fastest verified candidate if it beats the best kernel by
//! more than the noise.
//!
//! `apply` fails an attempt with [`PipelineError::CandidateFailed`]; the graph's retry policy sends the failure
//! back to the LLM (the handler appends it to the next attempt's prompt). The last attempt records the failure
//! instead of failing, so a step that keeps failing is dropped and the run goes on.

use std::collections::BTreeMap;
use std::sync::Arc;

use kt_graph::{Node, NodeContext};
use serde::Serialize;

use crate::KernelInfo;
use crate::error::PipelineError;
use crate::kernel_unit::kernel_unit;
use crate::stage3::answers::{
    CodeParameters, KernelRewrite, ParameterRenames, Restrictions, TunableParameter,
};
use crate::stage3::ask::{AskError, ask, ask_text};
use crate::stage3::backend::{BackendError, Outcome};
use crate::stage3::context::Stage3Context;
use crate::stage3::failure::FailureKind;
use crate::stage3::feedback::failure_feedback;
use crate::stage3::prompt_vars::{KernelVar, LaunchVar, kernel_var, launch_var};
use crate::stage3::rewrite_answer::{ReadRewrite, read_rewrite};
use crate::stage3::rewrite_check::{
    NamedRewrite, check_restrictions, check_rewrite, code_of, normalize_names,
};
use crate::stage3::speedup_interval::speedup_interval;
use crate::stage3::state::{
    CandidateOutcome, CurrentStep, LlmCallRecord, Stage3State, Stage3Update, StepRecord, StepStatus,
};
use crate::stage3::tunable_code::{KernelVersion, TunableCode};

use super::launch_timing::{time_pair, tuning_error};

/// The smallest gain a step is accepted for, whatever the strategy's threshold: its speedup's 95 % interval
/// must lie above 1 + this.
const MIN_GAIN: f64 = 0.01;

/// `prepare`: starts a new candidate round for the current step.
pub(crate) struct Prepare;

impl Node<Stage3State> for Prepare {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        _ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let mut current = state.current_step()?;
        let round = state.round + 1;
        current.round = round;
        Ok(Stage3Update::default().round(round).current(Some(current)))
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
        kernel.restrictions = self.restrictions(ctx, &kernel, calls).await?;
        let outcome = self.evaluate(ctx, step, &kernel).await?;
        Ok((kernel, outcome, rewrite.explanation))
    }

    /// 1. The rewrite, from the step's own template and the best kernel so far, cut to the kernel's unit:
    /// the answer and its code.
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
            profile: crate::stage3::profiling::prompt_profile(cx, state),
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
        if let Some(kind) = FailureKind::of_outcome(&outcome) {
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

/// Whether `time_ms` (with its noise) beats the best kernel: by more than either measurement's noise and by more
/// than `threshold` of the best time. A gain smaller than the noise is not a gain.
pub(crate) fn is_gain(best: &KernelVersion, time_ms: f64, noise_ms: f64, threshold: f64) -> bool {
    let gain = best.time_ms - time_ms;
    gain > best.noise_ms.max(noise_ms) && gain > threshold * best.time_ms
}

/// A file-name slug: the first words of a step, lower case, joined by dashes.
pub(crate) fn slug(text: &str) -> String {
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
        .map(|w| w.to_ascii_lowercase())
        .collect();
    if words.is_empty() {
        "step".into()
    } else {
        words.join("-")
    }
}

/// Writes `kernels/NNN-<slug>.cu` and its `.json` (verdict and tuning summary) when the run has a directory.
/// Returns the `.cu` path relative to the run directory.
pub(crate) fn write_kernel_file(
    cx: &Stage3Context,
    number: u32,
    name: &str,
    kernel: &TunableCode,
    outcome: Option<&Outcome>,
    best_params: &BTreeMap<String, i64>,
) -> Result<Option<String>, PipelineError> {
    let Some(dir) = &cx.run_dir else {
        return Ok(None);
    };
    let kernels = dir.join("kernels");
    std::fs::create_dir_all(&kernels).map_err(|e| PipelineError::io("creating", &kernels, e))?;
    let stem = format!("{number:03}-{}", slug(name));
    let cu = kernels.join(format!("{stem}.cu"));
    std::fs::write(&cu, &kernel.code).map_err(|e| PipelineError::io("writing", &cu, e))?;
    let json = kernels.join(format!("{stem}.json"));
    let summary = serde_json::json!({
        "step": name,
        "parameters": kernel.parameters,
        "restrictions": kernel.restrictions,
        "grid_divisors": kernel.grid_divisors,
        "dynamic_shared_memory": kernel.dynamic_shared_memory,
        "verdict": outcome.map(Outcome::verdict),
        "outcome": outcome,
        "best_params": best_params,
    });
    let text = serde_json::to_string_pretty(&summary).map_err(|e| PipelineError::BadFile {
        path: json.clone(),
        what: "JSON",
        message: e.to_string(),
    })?;
    std::fs::write(&json, text).map_err(|e| PipelineError::io("writing", &json, e))?;
    Ok(Some(format!("kernels/{stem}.cu")))
}

/// `select`: the barrier after a round. Writes every candidate to `kernels/`, keeps the fastest verified one if
/// it is a gain, and records the step. Only a verified candidate can become the best kernel.
pub(crate) struct Select(pub Arc<Stage3Context>);

impl Node<Stage3State> for Select {
    type Error = PipelineError;

    async fn run(
        &self,
        state: Arc<Stage3State>,
        ctx: NodeContext,
    ) -> Result<Stage3Update, PipelineError> {
        let cx = &self.0;
        let step = state.current_step()?;
        let best = state.best_kernel()?.clone();
        let mut round: Vec<&CandidateOutcome> = state.round_candidates().collect();
        round.sort_by_key(|c| c.index);
        let several = round.len() > 1;
        let mut number = state.kernels_written;
        let mut files: BTreeMap<u32, String> = BTreeMap::new();
        for c in &round {
            if let Some(kernel) = &c.kernel {
                let name = if several {
                    format!("{} c{}", step.description, c.index)
                } else {
                    step.description.clone()
                };
                let params = match &c.outcome {
                    Some(Outcome::Verified { best_params, .. }) => best_params.clone(),
                    _ => BTreeMap::new(),
                };
                if let Some(f) =
                    write_kernel_file(cx, number, &name, kernel, c.outcome.as_ref(), &params)?
                {
                    files.insert(c.index, f);
                }
                number += 1;
            }
        }
        let attempts = round.iter().map(|c| c.attempts).max().unwrap_or(0);
        let fastest = round
            .iter()
            .filter_map(|c| c.verified_time().map(|t| (*c, t)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let mut update = Stage3Update::default()
            .kernels_written(number)
            .current(None);
        let mut record = StepRecord {
            best_before_ms: Some(best.time_ms),
            attempts,
            ..StepRecord::unmeasured(&step, StepStatus::Dropped, String::new())
        };
        match fastest {
            Some((c, time_ms)) => {
                let (noise_ms, best_params, percent_of_peak, gflops) = match &c.outcome {
                    Some(Outcome::Verified {
                        noise_ms,
                        best_params,
                        percent_of_peak,
                        gflops,
                        ..
                    }) => (*noise_ms, best_params.clone(), *percent_of_peak, *gflops),
                    _ => (0.0, BTreeMap::new(), None, None),
                };
                record.time_ms = Some(time_ms);
                record.kernel_file = files.get(&c.index).cloned();
                let threshold = cx.strategy.settings.acceptance_threshold;
                // The tuned objective must beat the best kernel by more than the noise and the threshold
                // first (cheap); then separate launches of both must put the speedup's 95 % interval above
                // 1 + threshold.
                let interval = match (is_gain(&best, time_ms, noise_ms, threshold), &c.kernel) {
                    (true, Some(kernel)) => {
                        let timed = time_pair(
                            cx,
                            &ctx,
                            "tuning.compare",
                            (&best.kernel, &best.best_params),
                            (kernel, &best_params),
                        )
                        .await;
                        match timed {
                            Ok(times) => {
                                speedup_interval(&times.first_ms, &times.second_ms).map(|e| e.ci95)
                            }
                            // No GPU: the run stops (resumable). Any other failure to time the pair is
                            // no evidence of a gain: the step is rejected.
                            Err(PipelineError::Tuning(BackendError::Failed { detail })) => {
                                tracing::warn!(step = %step.description, %detail, "timing the candidate against the best kernel failed");
                                None
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    _ => None,
                };
                record.speedup_ci95 = interval;
                let confirmed = interval.is_some_and(|[lo, _]| lo > 1.0 + threshold.max(MIN_GAIN));
                if let (true, Some(kernel)) = (confirmed, c.kernel.clone()) {
                    record.status = StepStatus::Accepted;
                    // Reasons go into later prompts: their wording is part of recorded requests.
                    record.reason =
                        "verified on every test and faster than the best kernel by more than the \
                                     measured noise"
                            .into();
                    let profile = super::profile::profile_kernel(
                        cx,
                        &ctx,
                        &step.description,
                        &kernel,
                        &best_params,
                    )
                    .await?;
                    update = update.profiles(vec![profile]).best(Some(KernelVersion {
                        kernel,
                        time_ms,
                        noise_ms,
                        best_params,
                        step: step.description.clone(),
                        file: record.kernel_file.clone(),
                        percent_of_peak,
                        gflops,
                    }));
                } else {
                    record.status = StepStatus::Rejected;
                    record.reason = format!(
                        "verified on every test, but not faster than the best kernel by more than the measured \
                         noise and {:.0}% of its time",
                        threshold * 100.0
                    );
                }
            }
            None => {
                let kinds: Vec<String> = round
                    .iter()
                    .filter_map(|c| c.failure_kind.map(|k| k.to_string()))
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect();
                record.reason = format!(
                    "no candidate verified after {attempts} attempt(s); last failure: {}",
                    if kinds.is_empty() {
                        "unknown".to_string()
                    } else {
                        kinds.join(", ")
                    }
                );
                record.kernel_file = files.values().next().cloned();
            }
        }
        Ok(update.history(vec![record]))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn version(time_ms: f64, noise_ms: f64) -> KernelVersion {
        KernelVersion {
            kernel: TunableCode {
                code: String::new(),
                parameters: vec![],
                restrictions: vec![],
                grid_divisors: crate::stage3::tunable_code::default_grid_divisors(),
                dynamic_shared_memory: None,
            },
            time_ms,
            noise_ms,
            best_params: BTreeMap::new(),
            step: "original".into(),
            file: None,
            percent_of_peak: None,
            gflops: None,
        }
    }

    #[test]
    fn a_gain_within_the_noise_is_not_a_gain() {
        let best = version(10.0, 0.5);
        assert!(
            !is_gain(&best, 9.6, 0.1, 0.0),
            "0.4 ms gain < 0.5 ms noise of the best"
        );
        assert!(!is_gain(&best, 9.6, 0.6, 0.0));
        assert!(is_gain(&best, 9.0, 0.1, 0.01));
        assert!(
            !is_gain(&best, 9.0, 0.1, 0.2),
            "10% gain under a 20% threshold"
        );
        assert!(!is_gain(&best, 11.0, 0.1, 0.0));
    }

    #[test]
    fn slugs_are_short_and_file_safe() {
        assert_eq!(
            slug("Tile A and B in shared memory (tunable tile_k)!"),
            "tile-a-and-b-in-shared"
        );
        assert_eq!(slug("***"), "step");
    }
}
