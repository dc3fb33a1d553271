//! A cell's run directory as `kt transform --out <cell dir>` leaves it (RUN_FORMAT.md): finding it, and
//! reading the `result.json` fields that the experiment needs. Unknown fields are kept verbatim so that the
//! ledger carries everything the run reported.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::ExperimentError;

/// The parts of `result.json` that reports use. Every field is optional: a run that stopped early may not
/// know its times, and schema_version 1 results have no `outcome`, `gain` or `speedup_ci95`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RunResult {
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
    pub wall_time_s: Option<WallTime>,
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct WallTime {
    #[serde(default)]
    pub total: Option<f64>,
}

impl RunResult {
    /// Reads the typed view of a `result.json` value (lenient: a field of the wrong type reads as absent
    /// rather than failing the whole report).
    pub fn from_value(value: &serde_json::Value) -> RunResult {
        serde_json::from_value(value.clone()).unwrap_or_else(|_| {
            let get = |k: &str| value.get(k);
            RunResult {
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
                    .map(|t| WallTime { total: Some(t) }),
                error: get("error").and_then(|v| v.as_str()).map(str::to_string),
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

/// What a cell directory holds.
#[derive(Debug, Clone, PartialEq)]
pub enum RunState {
    /// A run with a final `result.json`: nothing to do but record it.
    Final {
        dir: PathBuf,
        result: Box<RunResult>,
        raw: serde_json::Value,
    },
    /// A run that started (it has `run.json`) but has no final result: resume it.
    Partial { dir: PathBuf },
    /// No run yet: start one.
    Missing,
}

/// Looks at the run directories under `cell_dir`. A final run wins (there should be only one run per
/// cell, but if a crash left an extra one the finished work is what counts); otherwise the newest started
/// run (run ids begin with a UTC timestamp, so the largest name is the newest).
pub fn locate(cell_dir: &Path) -> Result<RunState, ExperimentError> {
    let entries = match std::fs::read_dir(cell_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RunState::Missing),
        Err(e) => {
            return Err(ExperimentError::io(
                cell_dir,
                "listing the cell directory",
                e,
            ));
        }
    };
    let mut runs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && (p.join("run.json").is_file() || p.join("result.json").is_file()))
        .collect();
    runs.sort();
    for dir in &runs {
        let result_path = dir.join("result.json");
        if !result_path.is_file() {
            continue;
        }
        // A result.json that does not parse is being written right now (or was cut off by a crash): either
        // way the run is not final yet, and resuming it rewrites the file.
        let raw = match read_result(&result_path) {
            Ok(raw) => raw,
            Err(e) => {
                tracing::warn!("{e}; treating the run as unfinished");
                continue;
            }
        };
        let result = RunResult::from_value(&raw);
        if result.is_final() {
            return Ok(RunState::Final {
                dir: dir.clone(),
                result: Box::new(result),
                raw,
            });
        }
    }
    Ok(runs
        .pop()
        .map_or(RunState::Missing, |dir| RunState::Partial { dir }))
}

/// Reads `result.json` as JSON. A file that is being written may be truncated; the caller sees an error
/// naming it and the cell stays unrecorded.
pub fn read_result(path: &Path) -> Result<serde_json::Value, ExperimentError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ExperimentError::io(path, "reading result.json", e))?;
    serde_json::from_str(&text).map_err(|e| ExperimentError::Result {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path, name: &str, result: Option<&str>) -> PathBuf {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("run.json"), "{}").unwrap();
        if let Some(status) = result {
            std::fs::write(
                d.join("result.json"),
                format!(r#"{{"status":"{status}","speedup":2.5,"correct":true}}"#),
            )
            .unwrap();
        }
        d
    }

    #[test]
    fn an_empty_or_missing_cell_directory_has_no_run() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(locate(&dir.path().join("nope")).unwrap(), RunState::Missing);
        std::fs::create_dir(dir.path().join("not-a-run")).unwrap();
        assert_eq!(locate(dir.path()).unwrap(), RunState::Missing);
    }

    #[test]
    fn an_interrupted_run_is_partial_and_a_finished_one_final() {
        let dir = tempfile::tempdir().unwrap();
        let a = run(dir.path(), "20261122-010000-k-s-0001", Some("interrupted"));
        assert_eq!(
            locate(dir.path()).unwrap(),
            RunState::Partial { dir: a.clone() }
        );
        std::fs::write(
            a.join("result.json"),
            r#"{"status":"finished","speedup":2.5,"correct":true}"#,
        )
        .unwrap();
        match locate(dir.path()).unwrap() {
            RunState::Final { result, .. } => {
                assert_eq!(result.speedup, Some(2.5));
                assert!(result.is_final());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_half_written_result_is_not_final() {
        let dir = tempfile::tempdir().unwrap();
        let a = run(dir.path(), "20261122-010000-k-s-0001", None);
        std::fs::write(a.join("result.json"), r#"{"status":"finished","spee"#).unwrap();
        assert_eq!(locate(dir.path()).unwrap(), RunState::Partial { dir: a });
    }

    #[test]
    fn the_newest_started_run_is_resumed() {
        let dir = tempfile::tempdir().unwrap();
        run(dir.path(), "20261122-010000-k-s-0001", None);
        let newer = run(dir.path(), "20261122-020000-k-s-0002", None);
        assert_eq!(
            locate(dir.path()).unwrap(),
            RunState::Partial { dir: newer }
        );
    }

    #[test]
    fn wrongly_typed_fields_read_as_absent_not_as_an_error() {
        let v: serde_json::Value =
            serde_json::json!({"status": "finished", "speedup": "fast", "tokens_in": 5});
        let r = RunResult::from_value(&v);
        assert_eq!(r.speedup, None);
        assert_eq!(r.tokens(), Some(5));
    }
}
