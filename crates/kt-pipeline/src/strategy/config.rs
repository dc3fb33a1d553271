//! The typed form of a strategy file and the command-line overrides that adjust it.

use serde::{Deserialize, Serialize};

use super::explicit::ExplicitStep;

/// Which Stage 3 graph a strategy builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StrategyKind {
    OnePrompt,
    Explicit,
    Autonomous,
}

impl std::fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StrategyKind::OnePrompt => "one-prompt",
            StrategyKind::Explicit => "explicit",
            StrategyKind::Autonomous => "autonomous",
        })
    }
}

fn default_candidates() -> u32 {
    1
}
fn default_max_attempts() -> u32 {
    3
}
fn default_threshold() -> f64 {
    0.01
}
fn default_reasks() -> u32 {
    2
}
fn default_replans() -> u32 {
    3
}
fn default_true() -> bool {
    true
}
fn default_breakdowns() -> u32 {
    1
}
fn default_planner_failures() -> u32 {
    3
}
fn default_plan_length() -> usize {
    8
}
fn default_graph_steps() -> u64 {
    2000
}

/// The knobs of a strategy. Every field has a default so a strategy file only states what it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrategySettings {
    /// Variants asked for per step, in parallel (best-of-N).
    #[serde(default = "default_candidates")]
    pub candidates: u32,
    /// Attempts per step: a compile error, wrong answer or timeout is sent back to the LLM until this many
    /// attempts were made; then the step is dropped and recorded, and the run goes on.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// A kernel must beat the best so far by more than the measured noise and by this fraction of its time.
    #[serde(default = "default_threshold")]
    pub acceptance_threshold: f64,
    /// Re-asks for an answer that is not valid JSON, misses fields or holds no code.
    #[serde(default = "default_reasks")]
    pub max_reasks: u32,
    /// Autonomous: replans after the first plan is used up.
    #[serde(default = "default_replans")]
    pub max_replans: u32,
    /// Autonomous: whether steps may be broken down into sub-steps.
    #[serde(default = "default_true")]
    pub breakdown: bool,
    /// Autonomous: how deep one step may be broken down.
    #[serde(default = "default_breakdowns")]
    pub max_breakdowns_per_step: u32,
    /// Autonomous: planner failures (after re-asks) tolerated before the run ends with what it has.
    #[serde(default = "default_planner_failures")]
    pub max_planner_failures: u32,
    /// Autonomous: steps kept from one plan.
    #[serde(default = "default_plan_length")]
    pub max_plan_length: usize,
    /// Bound on graph steps, so that no combination of answers can loop for ever.
    #[serde(default = "default_graph_steps")]
    pub max_graph_steps: u64,
    /// Nsight Compute's summary of the best kernel in the prompts `profile_in` names (inside a measured
    /// section, which replays ignore). Takes effect only where ncu is installed.
    #[serde(default)]
    pub profile: bool,
    /// The prompts that carry the profile summary when `profile` is on. A kernel is profiled when a prompt
    /// about to be asked reads its profile and none of it (same kernel, same configuration) was taken yet:
    /// the plan prompt profiles the naive kernel, a replan the best kernel at that point. `apply` adds a
    /// profile of every accepted step's kernel, taken before the next step is applied.
    #[serde(default = "default_profile_in")]
    pub profile_in: Vec<ProfilePrompt>,
    /// Also profile every kernel that becomes the best one (the naive kernel and each accepted step's), for
    /// the record (result.json, the report), whether or not a prompt reads its profile.
    #[serde(default)]
    pub profile_every_best: bool,
}

/// A prompt that can carry the best kernel's profile summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProfilePrompt {
    Plan,
    Replan,
    Apply,
}

fn default_profile_in() -> Vec<ProfilePrompt> {
    vec![ProfilePrompt::Plan, ProfilePrompt::Replan]
}

impl StrategySettings {
    /// Whether a prompt of kind `prompt` carries the best kernel's profile summary.
    pub fn prompt_reads_profile(&self, prompt: ProfilePrompt) -> bool {
        self.profile && self.profile_in.contains(&prompt)
    }

    /// Whether this strategy may profile a kernel at all (ncu is started ahead of time only then).
    pub fn takes_profiles(&self) -> bool {
        self.profile_every_best || (self.profile && !self.profile_in.is_empty())
    }
}

impl Default for StrategySettings {
    fn default() -> Self {
        Self {
            candidates: default_candidates(),
            max_attempts: default_max_attempts(),
            acceptance_threshold: default_threshold(),
            max_reasks: default_reasks(),
            max_replans: default_replans(),
            breakdown: true,
            max_breakdowns_per_step: default_breakdowns(),
            max_planner_failures: default_planner_failures(),
            max_plan_length: default_plan_length(),
            max_graph_steps: default_graph_steps(),
            profile: false,
            profile_in: default_profile_in(),
            profile_every_best: false,
        }
    }
}

/// Which template each LLM call of a strategy renders. Unset names fall back to the standard ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrategyPrompts {
    #[serde(default = "p_one_prompt")]
    pub one_prompt: String,
    #[serde(default = "p_plan")]
    pub plan: String,
    #[serde(default = "p_validate")]
    pub validate: String,
    #[serde(default = "p_breakdown")]
    pub breakdown: String,
    #[serde(default = "p_apply")]
    pub apply: String,
    #[serde(default = "p_names")]
    pub names: String,
    #[serde(default = "p_restrictions")]
    pub restrictions: String,
    #[serde(default = "p_replan")]
    pub replan: String,
    #[serde(default = "p_worth_it")]
    pub worth_it: String,
    /// The follow-up question of a rewrite that came as code without its JSON.
    #[serde(default = "p_code_parameters")]
    pub code_parameters: String,
}

fn p_one_prompt() -> String {
    "stage3-one-prompt".into()
}
fn p_plan() -> String {
    "stage3-plan".into()
}
fn p_validate() -> String {
    "stage3-validate-step".into()
}
fn p_breakdown() -> String {
    "stage3-breakdown".into()
}
fn p_apply() -> String {
    "stage3-apply-step".into()
}
fn p_names() -> String {
    "stage3-parameter-names".into()
}
fn p_restrictions() -> String {
    "stage3-restrictions".into()
}
fn p_replan() -> String {
    "stage3-replan".into()
}
fn p_worth_it() -> String {
    "stage3-explicit-worth-it".into()
}
fn p_code_parameters() -> String {
    "stage3-code-parameters".into()
}

impl Default for StrategyPrompts {
    fn default() -> Self {
        Self {
            one_prompt: p_one_prompt(),
            plan: p_plan(),
            validate: p_validate(),
            breakdown: p_breakdown(),
            apply: p_apply(),
            names: p_names(),
            restrictions: p_restrictions(),
            replan: p_replan(),
            worth_it: p_worth_it(),
            code_parameters: p_code_parameters(),
        }
    }
}

/// A loaded, checked strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Strategy {
    pub name: String,
    pub kind: StrategyKind,
    pub description: String,
    pub settings: StrategySettings,
    pub prompts: StrategyPrompts,
    /// Explicit strategy: the steps in an order that respects their dependencies. Empty for the others.
    pub steps: Vec<ExplicitStep>,
    /// Where the strategy came from (a path or `built-in`), for messages and the run record.
    pub origin: String,
    /// blake3 of the strategy file's text, recorded with the run so results name exactly what produced them.
    pub hash: String,
    /// The strategy file's text, as a run snapshots it (`RUN/strategy.toml`).
    #[serde(skip)]
    pub text: String,
}

/// Command-line adjustments (`--replan`, `--breakdown`, `--candidates`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrategyOverrides {
    pub replan: Option<u32>,
    /// `0` turns breakdown off; `N` turns it on with at most N breakdowns per step.
    pub breakdown: Option<u32>,
    pub candidates: Option<u32>,
}

impl Strategy {
    /// The strategy with the command line's overrides applied. Candidates below 1 count as 1.
    pub fn with_overrides(mut self, overrides: &StrategyOverrides) -> Self {
        if let Some(r) = overrides.replan {
            self.settings.max_replans = r;
        }
        if let Some(b) = overrides.breakdown {
            self.settings.breakdown = b > 0;
            self.settings.max_breakdowns_per_step = b;
        }
        if let Some(c) = overrides.candidates {
            self.settings.candidates = c.max(1);
        }
        self
    }

    /// The breakdown limit actually in force (0 when breakdown is off).
    pub fn breakdown_limit(&self) -> u32 {
        if self.settings.breakdown {
            self.settings.max_breakdowns_per_step
        } else {
            0
        }
    }
}
