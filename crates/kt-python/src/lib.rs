//! kt-python: the compiled half of kt's Python module (`kt._kt`). `kt.tune_kernel` (python/kt) takes Kernel
//! Tuner's arguments, saves the arrays as `.npy` files and sends the rest here as JSON (kt-tuner's
//! `tune_call::TuneCall`); this tunes with kt's tuner and returns kt's `TuneResult` as JSON for the Python
//! side to shape as Kernel Tuner's `(results, env)`.
//!
//! It deliberately holds no tuning rules (they are kt-tuner's) and no result shaping (Python's). What it
//! adds: callable restrictions (a Python function of a dict of parameter values) as tuner closures, and the
//! worker's entry point. kt's tuner launches kernels in a worker process; inside Python there is no `kt`
//! binary to start, so the worker is this same module run by the same interpreter:
//! `python -c "import kt._kt; kt._kt.tuner_worker()"` (see `kt/_worker.py`).
//!
//! `kt.transform`, `kt.resume` and `kt.runs` (`transform.rs`, `runs.rs`) are the command line's own code
//! (kt-cli's `embed` with typed options, kt-runs' catalog); `main` is kt's command line: the package's `kt`
//! console command and the processes kt starts itself as. `KtError` is the base of kt's Python exceptions.

mod runs;
mod transform;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use kt_tuner::export::KernelTunerExport;
use kt_tuner::input::tune_call::TuneCall;
use kt_tuner::session::{Tuner, TunerConfig};
use kt_tuner::worker::process::WorkerCommand;
use kt_tuner::{Config, ParamValue, Restriction, TunerError};

pyo3::create_exception!(
    kt,
    KtError,
    PyRuntimeError,
    "What kt could not do: a run that failed, no GPU or NVRTC, a worker that could not start. kt's message says \
     what to do. `kt.RunStopped` is one."
);

/// A tuner error as the Python exception a caller expects: bad input is a ValueError, the rest (no GPU,
/// no NVRTC, a worker that cannot start) a `kt.KtError`.
fn to_py(e: TunerError) -> PyErr {
    match e {
        TunerError::Arguments(_) | TunerError::Space(_) | TunerError::Expression { .. } => {
            PyValueError::new_err(e.to_string())
        }
        other => KtError::new_err(other.to_string()),
    }
}

/// Refuses to tune on a machine without a CUDA GPU, saying so before anything asks for NVRTC (which such a
/// machine usually lacks too, and whose absence would hide the real cause).
fn require_gpu() -> PyResult<()> {
    match kt_tuner::host::cuda_probe::gpu_missing() {
        Some(reason) => Err(KtError::new_err(format!(
            "kt.tune_kernel needs a CUDA GPU: {reason}. Run it on a machine with an NVIDIA GPU (`kt doctor` \
             checks one)"
        ))),
        None => Ok(()),
    }
}

/// The configuration as the dict a Kernel Tuner restriction function receives.
fn config_dict<'py>(py: Python<'py>, config: &Config) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, value) in &config.0 {
        match value {
            ParamValue::Int(v) => d.set_item(name, v)?,
            ParamValue::Float(v) => d.set_item(name, v)?,
            ParamValue::Bool(v) => d.set_item(name, v)?,
            ParamValue::Str(v) => d.set_item(name, v)?,
        }
    }
    Ok(d)
}

/// A Python callable as a restriction. The tuner's closures cannot fail, so the first exception a
/// callable raises is kept in `raised` (the configuration counts as excluded) and re-raised after tuning.
fn callable_restriction(f: Py<PyAny>, raised: Arc<Mutex<Option<PyErr>>>) -> Restriction {
    Restriction::closure(move |config| {
        Python::attach(|py| {
            let verdict = config_dict(py, config)
                .and_then(|d| f.bind(py).call1((d,)))
                .and_then(|r| r.is_truthy());
            verdict.unwrap_or_else(|e| {
                let mut slot = raised.lock().unwrap_or_else(|p| p.into_inner());
                slot.get_or_insert(e);
                false
            })
        })
    })
}

/// Tunes the request (`TuneCall` JSON) and returns `{"result": TuneResult, "verdicts": [..],
/// "kernel_tuner_cache": text or null}` as JSON. `worker` is the
/// command that starts kt's worker (program first); `callables` are restriction functions.
#[pyfunction]
#[pyo3(signature = (request, worker, worker_env, callables, cache_dir=None))]
fn tune(
    py: Python<'_>,
    request: &str,
    worker: Vec<String>,
    worker_env: Vec<(String, String)>,
    callables: Vec<Py<PyAny>>,
    cache_dir: Option<PathBuf>,
) -> PyResult<String> {
    let call = TuneCall::from_json(request).map_err(to_py)?;
    let mut kernel = call.kernel().map_err(to_py)?;
    let tests = call.tests().map_err(to_py)?;
    let mut options = call.options().map_err(to_py)?;
    let raised = Arc::new(Mutex::new(None));
    for f in callables {
        kernel
            .restrictions
            .push(callable_restriction(f, raised.clone()));
    }
    let (program, args) = worker
        .split_first()
        .ok_or_else(|| PyValueError::new_err("no worker command"))?;
    let fake = worker_env
        .iter()
        .any(|(k, _)| k == kt_tuner::worker::FAKE_ENV);
    // the fake worker has no copy bandwidth to measure, and needs no GPU
    options.measure_peak = !fake;
    // Without a driver library there is nothing to start (a dlopen, cheap). The full probe initialises the
    // driver: asked before the tuner starts, it would hold back the worker's own start-up on every call, so it
    // is asked only when the tuner could not start, to say why in a GPU's terms rather than NVRTC's.
    if !fake && !kt_tuner::host::cuda_probe::driver_present() {
        require_gpu()?;
    }
    let config = TunerConfig {
        worker: Some(WorkerCommand {
            program: PathBuf::from(program),
            args: args.to_vec(),
            env: worker_env,
            under_profiler: false,
        }),
        cache_dir,
        ..TunerConfig::default()
    };
    let outcome = py.detach(|| -> Result<_, PyErr> {
        let mut tuner = match Tuner::new(config) {
            Ok(t) => t,
            Err(e) if !fake => {
                require_gpu()?;
                return Err(to_py(e));
            }
            Err(e) => return Err(to_py(e)),
        };
        let result = tuner
            .tune(&kernel, &tests, &options, &mut |_| {})
            .map_err(to_py)?;
        let cache = match &call.cache {
            Some(_) => Some(
                KernelTunerExport::new(&kernel, &tests, &result)
                    .and_then(|export| export.cache_json())
                    .map_err(to_py)?,
            ),
            None => None,
        };
        Ok((result, cache))
    });
    if let Some(e) = raised.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    let (result, cache) = outcome?;
    // each measurement's verdict in words ("ok", "compile error", "wrong answer", …), in order
    let verdicts: Vec<&str> = result
        .measurements
        .iter()
        .map(|m| m.verdict.short())
        .collect();
    let json =
        serde_json::json!({ "result": result, "verdicts": verdicts, "kernel_tuner_cache": cache });
    Ok(json.to_string())
}

/// kt's worker process: reads launch requests on stdin until told to stop. Started by `tune`, not by hand.
#[pyfunction]
fn tuner_worker() -> PyResult<()> {
    kt_tuner::worker::serve().map_err(to_py)
}

/// kt's command line with `args` (the subcommand first): the package's `kt` console command, and the process
/// kt starts itself as (the worker, the program Nsight Compute watches); `kt_command` is how this process's kt
/// starts kt in turn. Returns the `kt` binary's exit status (errors are printed as it prints them).
#[pyfunction]
fn main(py: Python<'_>, args: Vec<String>, kt_command: Vec<String>) -> PyResult<u8> {
    transform::set_kt_command(kt_command)?;
    let args = args.into_iter().map(std::ffi::OsString::from).collect();
    Ok(py.detach(|| kt_cli::embed::main_from(args)))
}

#[pymodule]
fn _kt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tune, m)?)?;
    m.add_function(wrap_pyfunction!(tuner_worker, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(transform::transform, m)?)?;
    m.add_function(wrap_pyfunction!(transform::resume, m)?)?;
    m.add("KtError", m.py().get_type::<KtError>())?;
    m.add_function(wrap_pyfunction!(runs::runs_list, m)?)?;
    m.add_function(wrap_pyfunction!(runs::runs_open, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
