//! `kt.runs`: the run records from Python, through kt-runs' catalog (the facts `kt runs list` shows) and its
//! lookup of a run by directory, id or unique id prefix (as `kt runs show` finds one).

use std::path::PathBuf;

use pyo3::exceptions::{PyFileNotFoundError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use kt_runs::RunsError;

fn to_py(e: RunsError) -> PyErr {
    match e {
        RunsError::RunNotFound { .. } => PyFileNotFoundError::new_err(e.to_string()),
        RunsError::Usage(_) => PyValueError::new_err(e.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

fn json(value: &impl serde::Serialize) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// Every run under `runs_dir` (default: $KT_RUNS_DIR, else ./kt-runs), oldest first, as JSON: what
/// `kt runs list --json` prints.
#[pyfunction]
#[pyo3(signature = (runs_dir=None))]
pub fn runs_list(runs_dir: Option<PathBuf>) -> PyResult<String> {
    let base = kt_runs::runs_base(runs_dir.as_deref());
    json(&kt_runs::list_runs(&base).map_err(to_py)?)
}

/// One run (a run directory, or a run id or a unique prefix of one under `runs_dir`) as JSON: its summary
/// (the `kt runs list` facts), run.json, result.json (null until written) and its best kernel's file.
#[pyfunction]
#[pyo3(signature = (run, runs_dir=None))]
pub fn runs_open(run: &str, runs_dir: Option<PathBuf>) -> PyResult<String> {
    let base = kt_runs::runs_base(runs_dir.as_deref());
    let dir = kt_runs::resolve_run(run, &base).map_err(to_py)?;
    let meta = dir
        .read_meta()
        .map_err(|e| PyRuntimeError::new_err(format!("{}: {e}", dir.root().display())))?;
    let best = dir.best_cu();
    json(&serde_json::json!({
        "path": dir.root(),
        "summary": kt_runs::summarize(dir.root()),
        "meta": meta,
        "result": kt_runs::RunResult::read(&dir.result_json()).ok().flatten(),
        "best_cu": best.is_file().then_some(best),
    }))
}
