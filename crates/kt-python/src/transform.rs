//! `kt.transform` and `kt.resume`: the command line's `kt transform` and `kt resume` (kt-cli's `embed`, with
//! typed options), from Python. The run goes on a thread of its own while the calling thread watches for
//! Ctrl-C: Python handles signals only on the thread that runs Python code, so a KeyboardInterrupt cancels
//! the run (saved at its last checkpoint, resumable) and is raised once the run has stopped.
//!
//! Inside Python there is no `kt` binary, so the command that runs kt's command line (the GPU worker, the
//! program Nsight Compute watches) is the one the caller gives: this interpreter running kt's module.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use kt_cli::embed::{
    self, CancelToken, ResumeOptions, TransformError, TransformOptions, TransformRun,
};
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

/// Runs `call` (kt transform or kt resume) on a thread of its own while this one watches for Ctrl-C; the run
/// as JSON for the Python side (see [`reply`]).
fn run_watched(
    py: Python<'_>,
    call: impl FnOnce(CancelToken) -> Result<TransformRun, TransformError> + Send + 'static,
    what: &str,
) -> PyResult<String> {
    let cancel = CancelToken::new();
    let token = cancel.clone();
    let run = std::thread::spawn(move || call(token));
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
        PyRuntimeError::new_err(format!(
            "{what} panicked; its run directory keeps what it did"
        ))
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

/// `kt transform` with typed settings (None: the command's default); `kt_command` runs kt's command line.
#[pyfunction]
#[pyo3(signature = (file, kt_command, *, strategy=None, kernel=None, replan=None, breakdown=None,
                    candidates=None, tests=None, llm=None, stream=true, runs_dir=None, prompts=None,
                    seed=None, allow_unsandboxed=false, include=Vec::new(), progress=false))]
#[allow(clippy::too_many_arguments)]
pub fn transform(
    py: Python<'_>,
    file: PathBuf,
    kt_command: Vec<String>,
    strategy: Option<String>,
    kernel: Option<String>,
    replan: Option<u32>,
    breakdown: Option<u32>,
    candidates: Option<u32>,
    tests: Option<u32>,
    llm: Option<String>,
    stream: bool,
    runs_dir: Option<PathBuf>,
    prompts: Option<PathBuf>,
    seed: Option<u64>,
    allow_unsandboxed: bool,
    include: Vec<PathBuf>,
    progress: bool,
) -> PyResult<String> {
    set_kt_command(kt_command)?;
    let options = TransformOptions {
        file,
        strategy,
        kernel,
        replan,
        breakdown,
        candidates,
        tests,
        llm,
        no_stream: !stream,
        runs_dir,
        prompts,
        seed,
        allow_unsandboxed,
        include,
    };
    run_watched(
        py,
        move |token| embed::transform(options, token, progress),
        "kt transform",
    )
}

/// `kt resume RUN` with typed settings; `kt_command` runs kt's command line.
#[pyfunction]
#[pyo3(signature = (run, kt_command, *, llm=None, stream=true, runs_dir=None, prompts=None, answer=None,
                    answer_for=None, include=Vec::new(), wait=false, trust_run=false, progress=false))]
#[allow(clippy::too_many_arguments)]
pub fn resume(
    py: Python<'_>,
    run: String,
    kt_command: Vec<String>,
    llm: Option<String>,
    stream: bool,
    runs_dir: Option<PathBuf>,
    prompts: Option<PathBuf>,
    answer: Option<PathBuf>,
    answer_for: Option<String>,
    include: Vec<PathBuf>,
    wait: bool,
    trust_run: bool,
    progress: bool,
) -> PyResult<String> {
    set_kt_command(kt_command)?;
    let options = ResumeOptions {
        run,
        llm,
        no_stream: !stream,
        runs_dir,
        prompts,
        answer,
        answer_for,
        include,
        wait,
        trust_run,
    };
    run_watched(
        py,
        move |token| embed::resume(options, token, progress),
        "kt resume",
    )
}
