//! `result.json` (docs/run-format.md): what a finished (or stopped) run delivered, step by step. kt-pipeline
//! writes it ([`RunResult::write`], atomically); `kt resume`, kt-runs, kt studio, kt-experiments and kt's Python
//! module read it, all through [`RunResult::read`] / [`RunResult::from_value`]: leniently, so that an old
//! (schema 1), partial or newer result reads with every field it has (unknown fields ignored, missing or
//! wrongly typed ones at their defaults).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::RecordError;
use crate::gpu::GpuRecord;
use crate::layout::write_json;
use crate::lenient::or_default;
use crate::profiles::{RunProfiles, RunRoofline};
use crate::protections::Protections;
use crate::run_llm::RunLlm;
use crate::run_meta::{RunSettings, WaitingAnswer};
use crate::run_status::RunStatus;

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
#[serde(default)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunResult {
    #[serde(default, deserialize_with = "or_default")]
    pub schema_version: u32,
    #[serde(default, deserialize_with = "or_default")]
    pub run_id: String,
    #[serde(default, deserialize_with = "or_default")]
    pub kernel: String,
    #[serde(default, deserialize_with = "or_default")]
    pub kernel_file: String,
    #[serde(default, deserialize_with = "or_default")]
    pub strategy: String,
    #[serde(default, deserialize_with = "or_default")]
    pub settings: RunSettings,
    #[serde(default, deserialize_with = "or_default")]
    pub llm: RunLlm,
    #[serde(default, deserialize_with = "or_default")]
    pub status: RunStatus,
    /// The delivered kernel (best.cu at best_params) is correct: a transformed kernel verified on every test,
    /// or, in a finished run that kept it (`outcome: no_improvement`), the original kernel itself. False when
    /// nothing is delivered (a stopped or failed run before any step was accepted, `not_verified`).
    #[serde(default, deserialize_with = "or_default")]
    pub correct: bool,
    /// `improved`, `no_improvement` or `not_verified` for a finished run; null otherwise.
    #[serde(default, deserialize_with = "or_default")]
    pub outcome: Option<ResultOutcome>,
    /// Sums of per-test medians over every test (the tuning objective); `time_basis` says over how many.
    #[serde(default, deserialize_with = "or_default")]
    pub naive_time_ms: Option<f64>,
    #[serde(default, deserialize_with = "or_default")]
    pub best_time_ms: Option<f64>,
    #[serde(default, deserialize_with = "or_default")]
    pub time_basis: Option<String>,
    /// naive_time_ms / best_time_ms.
    #[serde(default, deserialize_with = "or_default")]
    pub speedup: Option<f64>,
    /// 95 % interval of the final timing's speedup on one test (`final_timing.speedup`, separate launches). It
    /// belongs to that test's speedup, which can differ from `speedup` (the objective summed over every test).
    #[serde(default, deserialize_with = "or_default")]
    pub speedup_ci95: Option<[f64; 2]>,
    /// The thesis's gain (t_naive − t_best) / t_naive, as a fraction (0.82 for a 5.49× speedup).
    #[serde(default, deserialize_with = "or_default")]
    pub gain: Option<f64>,
    /// Separate launches of the naive and the best kernel on one test at the end of the run.
    #[serde(default, deserialize_with = "or_default")]
    pub final_timing: Option<FinalTiming>,
    #[serde(default, deserialize_with = "or_default")]
    pub best_params: BTreeMap<String, i64>,
    #[serde(default, deserialize_with = "or_default")]
    pub percent_of_peak: Option<f64>,
    /// Achieved GFLOP/s of the naive and the best kernel on the first test, when the FLOP count is known
    /// (an addition to RUN_FORMAT.md's fields; times above are summed over every test).
    #[serde(default, deserialize_with = "or_default")]
    pub naive_gflops: Option<f64>,
    #[serde(default, deserialize_with = "or_default")]
    pub best_gflops: Option<f64>,
    #[serde(default, deserialize_with = "or_default")]
    pub steps: Vec<StepSummary>,
    /// Stage 2's warnings about the tests (e.g. a size that is a multiple of 32 in every test).
    #[serde(
        default,
        deserialize_with = "or_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub test_warnings: Vec<String>,
    #[serde(default, deserialize_with = "or_default")]
    pub tokens_in: u64,
    #[serde(default, deserialize_with = "or_default")]
    pub tokens_out: u64,
    #[serde(default, deserialize_with = "or_default")]
    pub cost_usd: Option<f64>,
    #[serde(default, deserialize_with = "or_default")]
    pub wall_time_s: WallTimes,
    #[serde(default, deserialize_with = "or_default")]
    pub error: Option<String>,
    /// The run stopped where it needs a CUDA GPU it could not get (status `interrupted`): `kt resume` on a
    /// machine with one continues it. What a program checks; `error` says it in words.
    #[serde(
        default,
        deserialize_with = "or_default",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub needs_gpu: bool,
    /// `b<N>` when these are the results of a branch other than the main one (`kt resume` after `kt replay`
    /// or `kt fork`), written under `branches/b<N>/`; absent for the main branch.
    #[serde(
        default,
        deserialize_with = "or_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub branch: Option<String>,
    /// The manual provider's question the run is paused at (`kt resume RUN --answer FILE` answers it).
    #[serde(
        default,
        deserialize_with = "or_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub waiting_for: Option<WaitingAnswer>,
    /// The GPU the kernels ran on (run.json's `gpu`).
    #[serde(
        default,
        deserialize_with = "or_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub gpu: Option<GpuRecord>,
    /// The sandbox protections generated programs ran under (run.json's `sandbox`).
    #[serde(
        default,
        deserialize_with = "or_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub sandbox: Option<Protections>,
    /// `best_program.cu` when the input was a whole program and the best kernel was put back into a copy of it.
    #[serde(
        default,
        deserialize_with = "or_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub best_program: Option<String>,
    /// Profiles of the naive kernel and each accepted step's kernel, with their cost.
    #[serde(
        default,
        deserialize_with = "or_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub profiles: Option<RunProfiles>,
    /// The device's roofline with the naive and the best kernel on it.
    #[serde(
        default,
        deserialize_with = "or_default",
        skip_serializing_if = "Option::is_none"
    )]
    pub roofline: Option<RunRoofline>,
}

impl RunResult {
    /// `result.json` at `path`, read leniently (see the module documentation); None when the run has not
    /// written one. A file that is not JSON at all (cut off by a crash of a kt that wrote it without the atomic
    /// writer, or not a result) is an error naming it.
    pub fn read(path: &Path) -> Result<Option<RunResult>, RecordError> {
        Ok(RunResult::read_json(path)?.map(|v| RunResult::from_value(&v)))
    }

    /// `result.json` at `path` as the JSON it is, for a reader that keeps it verbatim (an experiment's ledger
    /// carries every field a run reported, known to this kt or not); [`RunResult::from_value`] types it.
    pub fn read_json(path: &Path) -> Result<Option<serde_json::Value>, RecordError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(RecordError::io("reading", path, e)),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| RecordError::BadFile {
                path: path.to_path_buf(),
                what: "JSON",
                message: e.to_string(),
            })
    }

    /// A result from JSON already read (an experiment's ledger keeps each cell's result.json verbatim), leniently.
    pub fn from_value(value: &serde_json::Value) -> RunResult {
        RunResult::deserialize(value).unwrap_or_default()
    }

    /// Writes the result to `path` atomically: a reader never sees half a result.
    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        write_json(path, self)
    }

    /// Every LLM token of the run, in and out; None when the result counts none (older or partial results
    /// that did not record them).
    pub fn tokens(&self) -> Option<u64> {
        Some(self.tokens_in + self.tokens_out).filter(|t| *t > 0)
    }

    /// The active wall time of the run (summed over its attempts), when the result records it (a result
    /// without `wall_time_s` reads as zero seconds, which no run takes).
    pub fn total_wall_s(&self) -> Option<f64> {
        Some(self.wall_time_s.total).filter(|t| *t > 0.0)
    }

    /// The run stopped where it needs a CUDA GPU it could not get.
    pub fn stopped_for_gpu(&self) -> bool {
        self.status.needs_gpu(self.needs_gpu)
    }
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

impl ResultOutcome {
    /// The outcome as result.json spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultOutcome::Improved => "improved",
            ResultOutcome::NoImprovement => "no_improvement",
            ResultOutcome::NotVerified => "not_verified",
        }
    }
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn wrongly_typed_fields_read_as_absent_not_as_an_error() {
        let v: serde_json::Value =
            serde_json::json!({"status": "finished", "speedup": "fast", "tokens_in": 5});
        let r = RunResult::from_value(&v);
        assert_eq!(r.speedup, None);
        assert_eq!(r.tokens(), Some(5));
        assert!(r.status.is_finished());
    }

    #[test]
    fn a_partial_or_old_result_reads_with_what_it_has() {
        // schema 1: no outcome, gain or interval; a partial wall time
        let v = serde_json::json!({"schema_version": 1, "status": "interrupted", "needs_gpu": true,
                                   "wall_time_s": {"total": 1.5}, "future_field": [1, 2]});
        let r = RunResult::from_value(&v);
        assert_eq!(r.schema_version, 1);
        assert!(r.outcome.is_none() && r.gain.is_none());
        assert_eq!(r.total_wall_s(), Some(1.5));
        assert!(r.stopped_for_gpu());
        assert_eq!(
            RunResult::from_value(&serde_json::json!({})).total_wall_s(),
            None
        );
    }

    #[test]
    fn a_result_without_a_roofline_has_none_and_one_with_it_is_read() {
        assert!(
            RunResult::from_value(&serde_json::json!({"speedup": 2.0}))
                .roofline
                .is_none()
        );
        let r = serde_json::json!({"roofline": {"device": "H100", "peaks": {"bandwidth_gb_s": 3352.0, "fp32_gflop_s": 66908.0},
            "points": [{"label": "naive", "intensity": 500.0, "gflop_s": 5600.0}]}});
        let c = RunResult::from_value(&r).roofline.unwrap();
        assert_eq!(c.device, "H100");
        assert!(c.point("naive").is_some() && c.point("best").is_none());
    }

    #[test]
    fn a_written_result_reads_back_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("result.json");
        assert_eq!(RunResult::read(&path).unwrap(), None);
        let result = RunResult {
            schema_version: RESULT_SCHEMA_VERSION,
            run_id: "r".into(),
            status: RunStatus::Finished,
            outcome: Some(ResultOutcome::Improved),
            speedup: Some(2.0),
            wall_time_s: WallTimes {
                total: 3.0,
                ..WallTimes::default()
            },
            ..RunResult::default()
        };
        result.write(&path).unwrap();
        assert_eq!(RunResult::read(&path).unwrap(), Some(result));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["result.json"]);
        std::fs::write(&path, "{\"status\": \"fini").unwrap();
        assert!(
            RunResult::read(&path)
                .unwrap_err()
                .to_string()
                .contains("result.json")
        );
    }
}
