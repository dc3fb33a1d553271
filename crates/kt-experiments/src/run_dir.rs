//! A cell's run directory as `kt transform --out <cell dir>` leaves it (RUN_FORMAT.md): finding it, and
//! reading the `result.json` fields that the experiment needs. Unknown fields are kept verbatim so that the
//! ledger carries everything the run reported.

use std::path::{Path, PathBuf};

use kt_record::RunResult;

use crate::error::ExperimentError;

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
        let raw = match RunResult::read_json(&result_path) {
            Ok(Some(raw)) => raw,
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!("{e}; treating the run as unfinished");
                continue;
            }
        };
        let result = RunResult::from_value(&raw);
        if result.status.is_final() {
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
                assert!(result.status.is_final());
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
}
