//! The Stage 3 state: what a strategy's graph carries from node to node, checkpointed after every step. Each
//! field's merge rule is declared here; only `candidates` and `llm_calls` are written by parallel candidate
//! tasks, and both append.

use serde::{Deserialize, Serialize};

use super::answers::TunableParameter;
use super::backend::tuning_backend::{Outcome, Reference};
use super::tunable_code::{KernelVersion, TunableCode};
use crate::error::PipelineError;
pub use crate::llm_call::LlmCallRecord;
pub use kt_record::{FinalTiming, StepStatus};

/// A step waiting in the autonomous plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedStep {
    pub description: String,
    /// How many breakdowns produced it (0 for a step of a plan).
    pub breakdown_depth: u32,
}

/// The step being worked on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurrentStep {
    /// The explicit strategy's step id; `None` for planned steps.
    pub id: Option<String>,
    /// What to do, as the plan (or the step's title) says.
    pub description: String,
    /// The template that applies it.
    pub template: String,
    /// Parameters the step suggests (explicit steps); the LLM may change their values.
    pub suggested_parameters: Vec<TunableParameter>,
    /// How many breakdowns led to this step (0 for a step of the plan itself).
    pub breakdown_depth: u32,
    /// Explicit: ask whether the step is worth doing before applying it.
    pub ask_if_worth_it: bool,
    /// Which candidate round (best-of-N batch) belongs to this step.
    pub round: u32,
}

/// One line of the run's step history (the report's table and the replanner's memory).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub step: String,
    pub id: Option<String>,
    pub status: StepStatus,
    /// Why, in words (no measurements: this text goes into later prompts, which must not depend on the GPU).
    pub reason: String,
    /// Measured time of the step's best verified candidate, if any.
    pub time_ms: Option<f64>,
    /// Best time before the step.
    pub best_before_ms: Option<f64>,
    pub kernel_file: Option<String>,
    pub attempts: u32,
    /// The 95 % interval of the step's speedup over the best kernel before it, from separate launches of
    /// both (absent when the step never got that far).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_ci95: Option<[f64; 2]>,
}

impl StepRecord {
    /// How `step` ended without a measured candidate (dropped, refused, cut, broken down, skipped).
    pub(crate) fn unmeasured(step: &CurrentStep, status: StepStatus, reason: String) -> Self {
        StepRecord {
            step: step.description.clone(),
            id: step.id.clone(),
            status,
            reason,
            time_ms: None,
            best_before_ms: None,
            kernel_file: None,
            attempts: 0,
            speedup_ci95: None,
        }
    }
}

/// Explicit strategy: the answer to "is this step worth doing?" for one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorthItAnswer {
    pub step_id: String,
    /// None: asked, but no usable answer came.
    pub worth_it: Option<bool>,
}

/// One candidate of a best-of-N round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateOutcome {
    pub round: u32,
    pub index: u32,
    /// The kernel that reached the tuner (absent when no attempt produced an acceptable rewrite).
    pub kernel: Option<TunableCode>,
    /// The tuner's verdict on it (absent when it never reached the tuner).
    pub outcome: Option<Outcome>,
    /// Why the last attempt failed, when it did (the message the LLM would have been sent).
    pub failure: Option<String>,
    pub failure_kind: Option<crate::error::FailureKind>,
    pub attempts: u32,
    /// What each failed attempt was told.
    pub feedback: Vec<String>,
    pub explanation: String,
}

impl CandidateOutcome {
    /// The verified time, if this candidate verified. Nothing else can ever become the best kernel.
    pub fn verified_time(&self) -> Option<f64> {
        match (&self.kernel, &self.outcome) {
            (Some(_), Some(Outcome::Verified { time_ms, .. })) => Some(*time_ms),
            _ => None,
        }
    }
}

kt_graph::state! {
    /// Everything a Stage 3 graph carries. (Field notes are plain comments: the macro takes no field docs.)
    // Checkpoints written before a field existed read it as its default.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Stage3State => Stage3Update {
        // The user's kernel, launched as the naive code expects.
        #[overwrite] pub original: Option<TunableCode>,
        #[overwrite] pub reference: Option<Reference>,
        // The best verified kernel so far (the original until a step is accepted). Never an unverified one.
        #[overwrite] pub best: Option<KernelVersion>,
        // Autonomous: the steps still to do, next first.
        #[overwrite] pub plan: Vec<PlannedStep>,
        #[overwrite] pub current: Option<CurrentStep>,
        // The last candidate round started.
        #[overwrite] pub round: u32,
        #[append] pub candidates: Vec<CandidateOutcome>,
        #[append] pub history: Vec<StepRecord>,
        #[overwrite] pub replans_used: u32,
        #[overwrite] pub planner_failures: u32,
        // Explicit: ids of steps already decided (in any way).
        #[overwrite] pub explicit_done: Vec<String>,
        // Files written under kernels/ so far (numbering).
        #[overwrite] pub kernels_written: u32,
        // Messages for the next attempt of a node: filled by retry handlers on the attempt's own copy of the
        // state, never merged (nodes do not return it).
        #[overwrite] pub feedback: Vec<String>,
        // LLM calls of failed attempts, carried by retry handlers like `feedback` and returned by the attempt
        // that finally ends the node, so every call is accounted for.
        #[overwrite] pub carried_calls: Vec<LlmCallRecord>,
        // Whether the last planner call failed (as opposed to answering an empty plan).
        #[overwrite] pub last_plan_failed: bool,
        #[append] pub llm_calls: Vec<LlmCallRecord>,
        // Separate launches of the naive and the best kernel, timed by the final node.
        #[overwrite] pub final_timing: Option<FinalTiming>,
        // Set by the final node.
        #[overwrite] pub finished: bool,
        // Explicit: the necessity check's answer per step asked.
        #[append] pub worth_it_answers: Vec<WorthItAnswer>,
        // Nsight Compute profiles of the naive kernel and of each accepted step's kernel (or why not).
        #[append] pub profiles: Vec<super::profiling::profile_record::ProfileRecord>,
    }
}

impl Stage3State {
    /// The state a strategy starts from.
    pub fn new(original: TunableCode) -> Self {
        Self {
            original: Some(original),
            ..Self::default()
        }
    }

    /// Candidates of the current round.
    pub fn round_candidates(&self) -> impl Iterator<Item = &CandidateOutcome> {
        self.candidates
            .iter()
            .filter(move |c| c.round == self.round)
    }

    /// How many times the current step (and its ancestors) were broken down.
    pub fn breakdown_depth(&self) -> u32 {
        self.current.as_ref().map_or(0, |c| c.breakdown_depth)
    }

    /// The step being worked on, for the nodes that only run when there is one (the graph routes there only
    /// then, so its absence is a routing bug, reported rather than panicked on).
    pub(crate) fn current_step(&self) -> Result<CurrentStep, PipelineError> {
        self.current.clone().ok_or_else(|| PipelineError::Graph {
            stage: "stage 3",
            message: "no current step".into(),
        })
    }

    /// The best kernel so far, for the nodes after `baseline` (which sets it first).
    pub(crate) fn best_kernel(&self) -> Result<&KernelVersion, PipelineError> {
        self.best.as_ref().ok_or_else(|| PipelineError::Graph {
            stage: "stage 3",
            message: "no best kernel: the baseline has not run".into(),
        })
    }
}

impl Stage3State {
    /// The necessity answer recorded for `step`: None when it was not asked, Some(None) when it was asked and
    /// gave no usable answer, Some(Some(yes)) otherwise.
    pub fn worth_it_answer(&self, step: &StepRecord) -> Option<Option<bool>> {
        let id = step.id.as_ref()?;
        self.worth_it_answers
            .iter()
            .rev()
            .find(|a| &a.step_id == id)
            .map(|a| a.worth_it)
    }
}
