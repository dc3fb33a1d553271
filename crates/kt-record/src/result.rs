//! `result.json` (docs/run-format.md): what a finished (or stopped) run delivered, step by step. kt-pipeline
//! writes it; `kt resume`, kt-runs and kt-experiments read it ([`ResultSummary`] is the lenient reading of a
//! result that may be old or partial).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::gpu::GpuRecord;
use crate::protections::Protections;
use crate::run_llm::RunLlm;
use crate::run_meta::{RunSettings, RunStatus, WaitingAnswer};

/// One step in `result.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    pub name: String,
    pub accepted: bool,
    pub status: StepStatus,
    pub reason: String,
    pub time_ms: Option<f64>,
    /// 95 % interval of the step's speedup over the kernel before it (separate launches of both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_ci95: Option<[f64; 2]>,
    /// Explicit strategy: the model's answer to "is this step worth doing?" (null when it was not asked or gave
    /// no usable answer; `worth_it_asked` tells the two apart).
    #[serde(default)]
    pub worth_it: Option<bool>,
    #[serde(default)]
    pub worth_it_asked: bool,
}

/// Wall time per stage, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WallTimes {
    pub stage1: f64,
    pub stage2: f64,
    pub stage3: f64,
    pub total: f64,
}

/// The schema version of `result.json` this crate writes.
pub const RESULT_SCHEMA_VERSION: u32 = 2;

/// What a finished run delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultOutcome {
    /// A transformed kernel, verified on every test, faster than the naive one.
    Improved,
    /// No step was accepted: the delivered kernel is the original.
    NoImprovement,
    /// The run finished without a verified kernel (the baseline never ran).
    NotVerified,
}

/// `result.json` (schema_version 2, docs/run-format.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub run_id: String,
    pub kernel: String,
    pub kernel_file: String,
    pub strategy: String,
    pub settings: RunSettings,
    pub llm: RunLlm,
    pub status: RunStatus,
    /// The delivered kernel (best.cu at best_params) is correct: a transformed kernel verified on every test,
    /// or, in a finished run that kept it (`outcome: no_improvement`), the original kernel itself. False when
    /// nothing is delivered (a stopped or failed run before any step was accepted, `not_verified`).
    pub correct: bool,
    /// `improved`, `no_improvement` or `not_verified` for a finished run; null otherwise.
    #[serde(default)]
    pub outcome: Option<ResultOutcome>,
    /// Sums of per-test medians over every test (the tuning objective); `time_basis` says over how many.
    pub naive_time_ms: Option<f64>,
    pub best_time_ms: Option<f64>,
    #[serde(default)]
    pub time_basis: Option<String>,
    /// naive_time_ms / best_time_ms.
    pub speedup: Option<f64>,
    /// 95 % interval of the final timing's speedup on one test (`final_timing.speedup`, separate launches). It
    /// belongs to that test's speedup, which can differ from `speedup` (the objective summed over every test).
    #[serde(default)]
    pub speedup_ci95: Option<[f64; 2]>,
    /// The thesis's gain (t_naive − t_best) / t_naive, as a fraction (0.82 for a 5.49× speedup).
    #[serde(default)]
    pub gain: Option<f64>,
    /// Separate launches of the naive and the best kernel on one test at the end of the run.
    #[serde(default)]
    pub final_timing: Option<FinalTiming>,
    pub best_params: BTreeMap<String, i64>,
    pub percent_of_peak: Option<f64>,
    /// Achieved GFLOP/s of the naive and the best kernel on the first test, when the FLOP count is known
    /// (an addition to RUN_FORMAT.md's fields; times above are summed over every test).
    #[serde(default)]
    pub naive_gflops: Option<f64>,
    #[serde(default)]
    pub best_gflops: Option<f64>,
    pub steps: Vec<StepSummary>,
    /// Stage 2's warnings about the tests (e.g. a size that is a multiple of 32 in every test).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub test_warnings: Vec<String>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: Option<f64>,
    pub wall_time_s: WallTimes,
    pub error: Option<String>,
    /// The run stopped where it needs a CUDA GPU it could not get (status `interrupted`): `kt resume` on a
    /// machine with one continues it. What a program checks; `error` says it in words.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_gpu: bool,
    /// `b<N>` when these are the results of a branch other than the main one (`kt resume` after `kt replay`
    /// or `kt fork`), written under `branches/b<N>/`; absent for the main branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The manual provider's question the run is paused at (`kt resume RUN --answer FILE` answers it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<WaitingAnswer>,
    /// The GPU the kernels ran on (run.json's `gpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuRecord>,
    /// The sandbox protections generated programs ran under (run.json's `sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Protections>,
    /// `best_program.cu` when the input was a whole program and the best kernel was put back into a copy of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_program: Option<String>,
    /// Nsight Compute profiles of the naive kernel and each accepted step's kernel, with their cost
    /// (kt-pipeline's `RunProfiles`, whose parts are kt-profile's types: kept as JSON here so that this crate
    /// stays a leaf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiles: Option<serde_json::Value>,
    /// The device's roofline with the naive and the best kernel on it (kt-pipeline's `RunRoofline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roofline: Option<serde_json::Value>,
}

/// How one step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Verified and faster by more than the noise: the new best kernel.
    Accepted,
    /// Verified but not faster by more than the noise and threshold.
    Rejected,
    /// No candidate verified after every attempt.
    Dropped,
    /// Refused by validation (not a device-code change).
    Invalid,
    /// Replaced by its sub-steps.
    BrokenDown,
    /// Explicit: judged not worth doing.
    NotWorthIt,
    /// Explicit: a dependency was not applied.
    Skipped,
    /// Autonomous: cut from an over-long plan.
    Cut,
}

impl std::fmt::Display for StepStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StepStatus::Accepted => "accepted",
            StepStatus::Rejected => "rejected",
            StepStatus::Dropped => "dropped",
            StepStatus::Invalid => "invalid",
            StepStatus::BrokenDown => "broken down",
            StepStatus::NotWorthIt => "not worth it",
            StepStatus::Skipped => "skipped",
            StepStatus::Cut => "cut",
        })
    }
}

/// The end-of-run timing: the naive and the delivered kernel in separate launches each on one test, and the
/// speedup with its 95 % interval from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalTiming {
    pub test: String,
    pub naive_ms: Vec<f64>,
    pub best_ms: Vec<f64>,
    /// t_naive / t_best from these launches (Hodges–Lehmann), with its interval; absent when too few
    /// launches were usable.
    pub speedup: Option<f64>,
    pub speedup_ci95: Option<[f64; 2]>,
    pub method: String,
}

/// The parts of `result.json` that experiment reports use, read leniently. Every field is optional: a run that stopped early may not
/// know its times, and schema_version 1 results have no `outcome`, `gain` or `speedup_ci95`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultSummary {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub schema_version: Option<u64>,
    /// schema_version 2: the delivered kernel verified on every test. In version 1 it only meant "a best
    /// kernel exists", which every run past its baseline has.
    #[serde(default)]
    pub correct: Option<bool>,
    /// schema_version 2: `improved`, `no_improvement` (the original kept) or `not_verified`.
    #[serde(default)]
    pub outcome: Option<String>,
    #[serde(default)]
    pub naive_time_ms: Option<f64>,
    #[serde(default)]
    pub best_time_ms: Option<f64>,
    #[serde(default)]
    pub speedup: Option<f64>,
    /// 95 % interval of the speedup, from the final timing's repeated launches.
    #[serde(default)]
    pub speedup_ci95: Option<[f64; 2]>,
    /// The thesis's gain, (t_naive − t_best) / t_naive, as a fraction.
    #[serde(default)]
    pub gain: Option<f64>,
    #[serde(default)]
    pub percent_of_peak: Option<f64>,
    #[serde(default)]
    pub tokens_in: Option<u64>,
    #[serde(default)]
    pub tokens_out: Option<u64>,
    #[serde(default)]
    pub cost_usd: Option<f64>,
    #[serde(default)]
    pub wall_time_s: Option<TotalWallTime>,
    #[serde(default)]
    pub error: Option<String>,
    /// The run stopped where it needs a CUDA GPU (see [`RunResult::needs_gpu`]).
    #[serde(default)]
    pub needs_gpu: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TotalWallTime {
    #[serde(default)]
    pub total: Option<f64>,
}

impl ResultSummary {
    /// Reads the typed view of a `result.json` value (lenient: a field of the wrong type reads as absent
    /// rather than failing the whole report).
    pub fn from_value(value: &serde_json::Value) -> ResultSummary {
        serde_json::from_value(value.clone()).unwrap_or_else(|_| {
            let get = |k: &str| value.get(k);
            ResultSummary {
                status: get("status").and_then(|v| v.as_str()).map(str::to_string),
                schema_version: get("schema_version").and_then(serde_json::Value::as_u64),
                correct: get("correct").and_then(serde_json::Value::as_bool),
                outcome: get("outcome").and_then(|v| v.as_str()).map(str::to_string),
                speedup_ci95: get("speedup_ci95")
                    .and_then(|v| serde_json::from_value(v.clone()).ok()),
                gain: get("gain").and_then(serde_json::Value::as_f64),
                naive_time_ms: get("naive_time_ms").and_then(serde_json::Value::as_f64),
                best_time_ms: get("best_time_ms").and_then(serde_json::Value::as_f64),
                speedup: get("speedup").and_then(serde_json::Value::as_f64),
                percent_of_peak: get("percent_of_peak").and_then(serde_json::Value::as_f64),
                tokens_in: get("tokens_in").and_then(serde_json::Value::as_u64),
                tokens_out: get("tokens_out").and_then(serde_json::Value::as_u64),
                cost_usd: get("cost_usd").and_then(serde_json::Value::as_f64),
                wall_time_s: get("wall_time_s")
                    .and_then(|w| w.get("total"))
                    .and_then(serde_json::Value::as_f64)
                    .map(|t| TotalWallTime { total: Some(t) }),
                error: get("error").and_then(|v| v.as_str()).map(str::to_string),
                needs_gpu: get("needs_gpu")
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(false),
            }
        })
    }

    /// `finished` and `failed` are final; `interrupted`, `llm_unavailable` (or no status) can be resumed.
    pub fn is_final(&self) -> bool {
        matches!(self.status.as_deref(), Some("finished" | "failed"))
    }

    pub fn tokens(&self) -> Option<u64> {
        match (self.tokens_in, self.tokens_out) {
            (None, None) => None,
            (i, o) => Some(i.unwrap_or(0) + o.unwrap_or(0)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn wrongly_typed_fields_read_as_absent_not_as_an_error() {
        let v: serde_json::Value =
            serde_json::json!({"status": "finished", "speedup": "fast", "tokens_in": 5});
        let r = ResultSummary::from_value(&v);
        assert_eq!(r.speedup, None);
        assert_eq!(r.tokens(), Some(5));
    }
}
