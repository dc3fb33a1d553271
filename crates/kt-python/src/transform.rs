//! `kt.transform`: the command line's `kt transform` (kt-cli's `embed`), from Python. The run goes on a
//! thread of its own while the calling thread watches for Ctrl-C: Python handles signals only on the
//! thread that runs Python code, so a KeyboardInterrupt cancels the run (saved at its last checkpoint,
//! resumable) and is raised once the run has stopped.
//!
//! Inside Python there is no `kt` binary, so the command that runs kt's command line (the GPU worker, the
//! program Nsight Compute watches) is the one the caller gives: this interpreter running kt's module.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use kt_cli::embed::{self, CancelToken, TransformError, TransformRun};
use kt_tuner::host::self_command::{SelfCommand, set_host};

/// Makes `kt_command` (program first) how kt starts itself from this process.
pub(crate) fn set_kt_command(kt_command: Vec<String>) -> PyResult<()> {
    let (program, args) = kt_command
        .split_first()
        .ok_or_else(|| PyRuntimeError::new_err("no command for kt's command line"))?;
    set_host(SelfCommand {
        program: PathBuf::from(program),
        args: args.to_vec(),
    });
    Ok(())
}

/// The run, or why there is none, as JSON for the Python side: `{"run": …}` or `{"error": {kind, message,
/// run}}` (kind: usage, stopped, failed).
fn reply(outcome: Result<TransformRun, TransformError>) -> String {
    let value = match outcome {
        Ok(r) => serde_json::json!({ "run": {
            "path": r.run,
            "result": r.result,
            "stopped": r.stopped,
            "cancelled": r.cancelled,
            "best_cu": r.best_cu,
        }}),
        Err(TransformError::Usage(m)) => {
            serde_json::json!({ "error": { "kind": "usage", "message": m } })
        }
        Err(TransformError::Stopped { run, message }) => {
            serde_json::json!({ "error": { "kind": "stopped", "message": message, "run": run } })
        }
        Err(TransformError::Failed(m)) => {
            serde_json::json!({ "error": { "kind": "failed", "message": m } })
        }
    };
    value.to_string()
}

/// `kt transform ARGS` (the arguments after `transform`); `kt_command` runs kt's command line.
#[pyfunction]
#[pyo3(signature = (args, kt_command, progress=false))]
pub fn transform(
    py: Python<'_>,
    args: Vec<String>,
    kt_command: Vec<String>,
    progress: bool,
) -> PyResult<String> {
    set_kt_command(kt_command)?;
    let cancel = CancelToken::new();
    let token = cancel.clone();
    let args: Vec<OsString> = args.into_iter().map(OsString::from).collect();
    let run = std::thread::spawn(move || embed::transform(args, token, progress));
    let mut interrupted: Option<PyErr> = None;
    while !run.is_finished() {
        py.detach(|| std::thread::sleep(Duration::from_millis(100)));
        if interrupted.is_none()
            && let Err(e) = py.check_signals()
        {
            embed::cancel(&cancel);
            interrupted = Some(e);
        }
    }
    let outcome = run.join().map_err(|_| {
        PyRuntimeError::new_err("kt transform panicked; its run directory keeps what it did")
    })?;
    match interrupted {
        // the run is saved at its last checkpoint: say where, as the command line does, and raise
        Some(e) => {
            if let Ok(TransformRun {
                stopped: Some(m), ..
            }) = &outcome
            {
                eprintln!("{m}");
            }
            Err(e)
        }
        None => Ok(reply(outcome)),
    }
}
