//! `select`, the barrier after a round of candidates: every candidate is written to `kernels/`, the fastest
//! verified one is held against the best kernel (its gain above the noise and the strategy's threshold, then
//! the speedup's 95 % interval from separate launches of both), and the step is recorded as accepted,
//! rejected or dropped.

use std::collections::BTreeMap;
use std::sync::Arc;

use kt_graph::{Node, NodeContext};

use crate::error::PipelineError;
use crate::stage3::backend::tuning_backend::{BackendError, Outcome};
use crate::stage3::context::Stage3Context;
use crate::stage3::state::{
    CandidateOutcome, CurrentStep, Stage3State, Stage3Update, StepRecord, StepStatus,
};
use crate::stage3::steps::speedup_interval::speedup_interval;
use crate::stage3::tunable_code::KernelVersion;

use super::kernel_files::write_kernel_file;
use super::launch_timing::time_pair;

/// The smallest gain a step is accepted for, whatever the strategy's threshold: its speedup's 95 % interval
/// must lie above 1 + this.
const MIN_GAIN: f64 = 0.01;

/// Whether `time_ms` (with its noise) beats the best kernel: by more than either measurement's noise and by more
/// than `threshold` of the best time. A gain smaller than the noise is not a gain.
pub(crate) fn is_gain(best: &KernelVersion, time_ms: f64, noise_ms: f64, threshold: f64) -> bool {
    let gain = best.time_ms - time_ms;
    gain > best.noise_ms.max(noise_ms) && gain > threshold * best.time_ms
}

/// Whether `time_ms` is as fast as the best kernel: slower by no more than either measurement's noise and
/// `MIN_GAIN` of the best time.
pub(crate) fn is_as_fast(best: &KernelVersion, time_ms: f64, noise_ms: f64) -> bool {
    time_ms - best.time_ms <= best.noise_ms.max(noise_ms) + MIN_GAIN * best.time_ms
}

/// Whether later steps of an explicit strategy file build on `step` (name it in `depends_on`). Such a step is
/// kept when it verifies and is as fast as the best kernel, even without a gain of its own: making the block
/// size tunable rarely pays alone, but rejecting it skips every step after it.
fn later_steps_build_on(cx: &Stage3Context, step: &CurrentStep) -> bool {
    let Some(id) = step.id.as_deref() else {
        return false;
    };
    cx.strategy
        .steps
        .iter()
        .any(|s| s.depends_on.iter().any(|d| d == id))
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
        let (number, files) = write_round(cx, &state, &step, &round)?;
        let attempts = round.iter().map(|c| c.attempts).max().unwrap_or(0);
        let fastest = round
            .iter()
            .filter_map(|c| c.verified_time().map(|t| (*c, t)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let update = Stage3Update::default()
            .kernels_written(number)
            .current(None);
        let mut record = StepRecord {
            best_before_ms: Some(best.time_ms),
            attempts,
            ..StepRecord::unmeasured(&step, StepStatus::Dropped, String::new())
        };
        let update = match fastest {
            Some((c, time_ms)) => {
                record.time_ms = Some(time_ms);
                record.kernel_file = files.get(&c.index).cloned();
                let judged = Judged {
                    cx,
                    ctx: &ctx,
                    step: &step,
                    best: &best,
                };
                judged.fastest(c, time_ms, &mut record, update).await?
            }
            None => {
                record.reason = no_candidate_reason(&round, attempts);
                record.kernel_file = files.values().next().cloned();
                update
            }
        };
        Ok(update.history(vec![record]))
    }
}

/// Writes each candidate of the round that has a kernel to `kernels/`: the next kernel number and the files
/// by candidate index.
fn write_round(
    cx: &Stage3Context,
    state: &Stage3State,
    step: &CurrentStep,
    round: &[&CandidateOutcome],
) -> Result<(u32, BTreeMap<u32, String>), PipelineError> {
    let several = round.len() > 1;
    let mut number = state.kernels_written;
    let mut files: BTreeMap<u32, String> = BTreeMap::new();
    for c in round {
        let Some(kernel) = &c.kernel else { continue };
        let name = if several {
            format!("{} c{}", step.description, c.index)
        } else {
            step.description.clone()
        };
        let params = match &c.outcome {
            Some(Outcome::Verified { best_params, .. }) => best_params.clone(),
            _ => BTreeMap::new(),
        };
        if let Some(f) = write_kernel_file(cx, number, &name, kernel, c.outcome.as_ref(), &params)?
        {
            files.insert(c.index, f);
        }
        number += 1;
    }
    Ok((number, files))
}

/// Why a round kept nothing: the kinds of its last failures.
fn no_candidate_reason(round: &[&CandidateOutcome], attempts: u32) -> String {
    let kinds: Vec<String> = round
        .iter()
        .filter_map(|c| c.failure_kind.map(|k| k.to_string()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    format!(
        "no candidate verified after {attempts} attempt(s); last failure: {}",
        if kinds.is_empty() {
            "unknown".to_string()
        } else {
            kinds.join(", ")
        }
    )
}

/// The fastest verified candidate of a round held against the best kernel.
struct Judged<'a> {
    cx: &'a Stage3Context,
    ctx: &'a NodeContext,
    step: &'a CurrentStep,
    best: &'a KernelVersion,
}

impl Judged<'_> {
    /// Accepts the candidate (the new best) or rejects it, in `record`.
    async fn fastest(
        &self,
        c: &CandidateOutcome,
        time_ms: f64,
        record: &mut StepRecord,
        update: Stage3Update,
    ) -> Result<Stage3Update, PipelineError> {
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
        let threshold = self.cx.strategy.settings.acceptance_threshold;
        let interval = self
            .interval(c, time_ms, noise_ms, &best_params, threshold)
            .await?;
        record.speedup_ci95 = interval;
        let confirmed = interval.is_some_and(|[lo, _]| lo > 1.0 + threshold.max(MIN_GAIN));
        let enabler = !confirmed
            && later_steps_build_on(self.cx, self.step)
            && is_as_fast(self.best, time_ms, noise_ms);
        let (true, Some(kernel)) = (confirmed || enabler, c.kernel.clone()) else {
            record.status = StepStatus::Rejected;
            record.reason = format!(
                "verified on every test, but not faster than the best kernel by more than the measured \
                 noise and {:.0}% of its time",
                threshold * 100.0
            );
            return Ok(update);
        };
        record.status = StepStatus::Accepted;
        // Reasons go into later prompts: their wording is part of recorded requests.
        record.reason = if confirmed {
            "verified on every test and faster than the best kernel by more than the measured noise"
                .into()
        } else {
            format!(
                "kept as the base of the steps that build on it: verified on every test and as fast as the \
                 best kernel within the measured noise and {:.0}% of its time, though not faster",
                MIN_GAIN * 100.0
            )
        };
        // profiled here only for the record; a prompt that reads the profile takes it itself
        let profile = if self.cx.strategy.settings.profile_every_best {
            vec![
                super::profile::profile_kernel(
                    self.cx,
                    self.ctx,
                    &self.step.description,
                    &kernel,
                    &best_params,
                )
                .await?,
            ]
        } else {
            Vec::new()
        };
        Ok(update.profiles(profile).best(Some(KernelVersion {
            kernel,
            time_ms,
            noise_ms,
            best_params,
            step: self.step.description.clone(),
            file: record.kernel_file.clone(),
            percent_of_peak,
            gflops,
        })))
    }

    /// The tuned objective must beat the best kernel by more than the noise and the threshold first (cheap);
    /// then separate launches of both give the speedup's 95 % interval.
    async fn interval(
        &self,
        c: &CandidateOutcome,
        time_ms: f64,
        noise_ms: f64,
        best_params: &BTreeMap<String, i64>,
        threshold: f64,
    ) -> Result<Option<[f64; 2]>, PipelineError> {
        let (true, Some(kernel)) = (is_gain(self.best, time_ms, noise_ms, threshold), &c.kernel)
        else {
            return Ok(None);
        };
        let timed = time_pair(
            self.cx,
            self.ctx,
            "tuning.compare",
            (&self.best.kernel, &self.best.best_params),
            (kernel, best_params),
        )
        .await;
        match timed {
            Ok(times) => Ok(speedup_interval(&times.first_ms, &times.second_ms).map(|e| e.ci95)),
            // No GPU: the run stops (resumable). Any other failure to time the pair is no evidence of a
            // gain: the step is rejected.
            Err(PipelineError::Tuning(BackendError::Failed { detail })) => {
                tracing::warn!(step = %self.step.description, %detail, "timing the candidate against the best kernel failed");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::stage3::tunable_code::TunableCode;

    fn version(time_ms: f64, noise_ms: f64) -> KernelVersion {
        KernelVersion {
            kernel: TunableCode {
                code: String::new(),
                parameters: vec![],
                restrictions: vec![],
                grid_divisors: crate::stage3::tunable_code::default_grid_divisors(),
                dynamic_shared_memory: None,
                seeds: Vec::new(),
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
    fn as_fast_allows_the_noise_and_one_percent_but_not_more() {
        let best = version(10.0, 0.2);
        assert!(is_as_fast(&best, 9.0, 0.1), "faster is as fast");
        assert!(
            is_as_fast(&best, 10.25, 0.1),
            "0.25 ms slower < 0.2 ms noise + 0.1 ms"
        );
        assert!(!is_as_fast(&best, 10.4, 0.1), "0.4 ms slower > 0.3 ms");
        assert!(
            is_as_fast(&best, 10.4, 0.35),
            "the candidate's own noise counts"
        );
    }
}
