//! kt-python: the compiled half of kt's Python module (`kt._kt`). `kt.tune_kernel` (python/kt) takes Kernel
//! Tuner's arguments, saves the arrays as `.npy` files and sends the rest here as JSON (kt-tuner's
//! `tune_call::TuneCall`); this tunes with kt's tuner and returns kt's `TuneResult` as JSON for the Python
//! side to shape as Kernel Tuner's `(results, env)`.
//!
//! It deliberately holds no tuning rules (they are kt-tuner's) and no result shaping (Python's). What it
//! adds: callable restrictions (a Python function of a dict of parameter values) and code generators (a
//! Python function from that dict to the source) as tuner closures, `record` (the kernel run at given
//! configurations with its arrays handed back: `kt.run_kernel`, and `verify` functions), and the worker's
//! entry point. kt's tuner launches kernels in a worker process; inside Python there is no `kt`
//! binary to start, so the worker is this same module run by the same interpreter:
//! `python -c "import kt._kt; kt._kt.tuner_worker()"` (see `kt/_worker.py`).
//!
//! `kt.transform`, `kt.resume` and `kt.runs` (`transform.rs`, `runs.rs`) are the command line's own code
//! (kt-cli's `embed` with typed options, kt-runs' catalog); `main` is kt's command line: the package's `kt`
//! console command and the processes kt starts itself as. `KtError` is the base of kt's Python exceptions.

mod kept_tuner;
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
use kt_tuner::{
    Config, ParamValue, Progress, ReferenceOutputs, Restriction, SourceGenerator, TestArg,
    TunerError,
};

use kept_tuner::TunerKey;

/// The first exception a Python callable raised inside the tuner (whose closures cannot fail with one),
/// re-raised when the call returns.
type Raised = Arc<Mutex<Option<PyErr>>>;

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
fn callable_restriction(f: Py<PyAny>, raised: Raised) -> Restriction {
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

/// A Python code generator (Kernel Tuner's callable `kernel_source`: a function of the configuration's dict
/// that returns the source) as the kernel's source generator. Its exception is kept in `raised` and the
/// configuration's compilation fails with its message (the tuning stops, as Kernel Tuner's does).
fn python_generator(f: Py<PyAny>, raised: Raised) -> SourceGenerator {
    SourceGenerator::new(move |config| {
        Python::attach(|py| {
            let text = config_dict(py, config)
                .and_then(|d| f.bind(py).call1((d,)))
                .and_then(|r| r.extract::<String>());
            text.map_err(|e| {
                let message = e.to_string();
                let mut slot = raised.lock().unwrap_or_else(|p| p.into_inner());
                slot.get_or_insert(e);
                message
            })
        })
    })
}

/// The tuner with kt's worker started by `worker` (program first). Without a driver library there is
/// nothing to start (a dlopen, cheap). The full probe initialises the driver: asked before the tuner starts,
/// it would hold back the worker's own start-up on every call, so it is asked only when the tuner could not
/// start, to say why in a GPU's terms rather than NVRTC's.
fn start_tuner(key: &TunerKey) -> PyResult<Tuner> {
    let (program, args) = key
        .worker
        .split_first()
        .ok_or_else(|| PyValueError::new_err("no worker command"))?;
    let fake = is_fake(&key.worker_env);
    if !fake && !kt_tuner::host::cuda_probe::driver_present() {
        require_gpu()?;
    }
    let config = TunerConfig {
        worker: Some(WorkerCommand {
            program: PathBuf::from(program),
            args: args.to_vec(),
            env: key.worker_env.clone(),
            under_profiler: false,
        }),
        cache_dir: key.cache_dir.clone(),
        ..TunerConfig::default()
    };
    match Tuner::new(config) {
        Ok(t) => Ok(t),
        Err(e) if !fake => {
            require_gpu()?;
            Err(to_py(e))
        }
        Err(e) => Err(to_py(e)),
    }
}

fn is_fake(worker_env: &[(String, String)]) -> bool {
    worker_env
        .iter()
        .any(|(k, _)| k == kt_tuner::worker::FAKE_ENV)
}

fn take_raised(raised: &Raised) -> Option<PyErr> {
    raised.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// A Python callable told of each configuration as the tuning finishes it:
/// `progress(done, total, config_dict, verdict, time_ms or None)` ("ok", "compile error", "wrong answer", …),
/// so a long tuning prints as it goes, as Kernel Tuner's does. Its first exception is kept in `raised` and
/// raised after the tuning.
fn progress_reporter(f: Py<PyAny>, raised: Raised) -> impl FnMut(&Progress) {
    move |p: &Progress| {
        Python::attach(|py| {
            let called = config_dict(py, &p.config).and_then(|d| {
                f.bind(py)
                    .call1((p.done, p.total, d, p.verdict.as_str(), p.time_ms))
            });
            if let Err(e) = called {
                let mut slot = raised.lock().unwrap_or_else(|p| p.into_inner());
                slot.get_or_insert(e);
            }
        })
    }
}

/// Tunes the request (`TuneCall` JSON) and returns `{"result": TuneResult, "verdicts": [..],
/// "kernel_tuner_cache": text or null}` as JSON. `worker` is the
/// command that starts kt's worker (program first); `callables` are restriction functions; `progress`
/// hears of each configuration as it is finished ([`progress_reporter`]).
#[pyfunction]
#[pyo3(signature = (request, worker, worker_env, callables, cache_dir=None, generator=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn tune(
    py: Python<'_>,
    request: &str,
    worker: Vec<String>,
    worker_env: Vec<(String, String)>,
    callables: Vec<Py<PyAny>>,
    cache_dir: Option<PathBuf>,
    generator: Option<Py<PyAny>>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let call = TuneCall::from_json(request).map_err(to_py)?;
    let mut kernel = call.kernel().map_err(to_py)?;
    let tests = call.tests().map_err(to_py)?;
    let mut options = call.options().map_err(to_py)?;
    let raised: Raised = Arc::new(Mutex::new(None));
    for f in callables {
        kernel
            .restrictions
            .push(callable_restriction(f, raised.clone()));
    }
    if let Some(f) = generator {
        kernel.generator = Some(python_generator(f, raised.clone()));
    }
    // the fake worker has no copy bandwidth to measure, and needs no GPU
    options.measure_peak = !is_fake(&worker_env);
    let key = TunerKey {
        worker,
        worker_env,
        cache_dir,
    };
    let keep = kept_tuner::small_enough_to_keep(&tests);
    let mut report: Box<dyn FnMut(&Progress) + Send> = match progress {
        Some(f) => Box::new(progress_reporter(f, raised.clone())),
        None => Box::new(|_: &Progress| {}),
    };
    let outcome = py.detach(|| -> Result<_, PyErr> {
        let result = kept_tuner::with_tuner(key, keep, start_tuner, |tuner| {
            tuner
                .tune(&kernel, &tests, &options, &mut *report)
                .map_err(to_py)
        })?;
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
    if let Some(e) = take_raised(&raised) {
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

/// Runs the request's kernel once at each of `configs` (JSON: a list of `[[name, value], …]`) and hands the
/// arrays numbered in `outputs` (argument indices) back as they are after the launch: for each
/// configuration `on_outputs(i, [(argument index, .npy path), …], None)`, or `on_outputs(i, None, message)`
/// when it could not run (compile error, fault). The files are in `out_dir/<i>/`; the callback reads them
/// (and may delete them) before the next configuration runs. An exception the callback raises stops the
/// run and is raised. What `kt.run_kernel` and `tune_kernel`'s `verify` functions use.
#[pyfunction]
#[pyo3(signature = (request, worker, worker_env, configs, outputs, out_dir, on_outputs, cache_dir=None, generator=None))]
#[allow(clippy::too_many_arguments)]
fn record(
    py: Python<'_>,
    request: &str,
    worker: Vec<String>,
    worker_env: Vec<(String, String)>,
    configs: &str,
    outputs: Vec<usize>,
    out_dir: PathBuf,
    on_outputs: Py<PyAny>,
    cache_dir: Option<PathBuf>,
    generator: Option<Py<PyAny>>,
) -> PyResult<()> {
    let call = TuneCall::from_json(request).map_err(to_py)?;
    let mut kernel = call.kernel().map_err(to_py)?;
    let mut tests = call.tests().map_err(to_py)?;
    let configs: Vec<Vec<(String, ParamValue)>> = serde_json::from_str(configs)
        .map_err(|e| PyValueError::new_err(format!("configurations kt cannot read: {e}")))?;
    let raised: Raised = Arc::new(Mutex::new(None));
    if let Some(f) = generator {
        kernel.generator = Some(python_generator(f, raised.clone()));
    }
    let Some(test) = tests.tests.first_mut() else {
        return Err(PyValueError::new_err("no arguments to run the kernel on"));
    };
    let mut names = Vec::new();
    // exactly the arrays asked for come back (the request's own outputs are what tuning compares)
    for (i, arg) in test.args.iter_mut().enumerate() {
        if let TestArg::Array(a) = arg {
            a.is_output = outputs.contains(&i);
        }
        names.push(arg.name().to_string());
    }
    let key = TunerKey {
        worker,
        worker_env,
        cache_dir,
    };
    let keep = kept_tuner::small_enough_to_keep(&tests);
    let outcome = py.detach(|| -> PyResult<()> {
        kept_tuner::with_tuner(key, keep, start_tuner, |tuner| {
            for (i, config) in configs.into_iter().enumerate() {
                let config = Config(config);
                let dir = out_dir.join(i.to_string());
                let ran =
                    tuner.record_outputs(&kernel, &config, &tests, std::slice::from_ref(&dir));
                if let Some(e) = take_raised(&raised) {
                    return Err(e);
                }
                Python::attach(|py| hand_back(py, &on_outputs, i, ran, &names))?;
            }
            Ok(())
        })
    });
    if let Some(e) = take_raised(&raised) {
        return Err(e);
    }
    outcome
}

/// Calls `on_outputs` with what configuration `i`'s run left: its output files by argument index, or why it
/// could not run.
fn hand_back(
    py: Python<'_>,
    on_outputs: &Py<PyAny>,
    i: usize,
    ran: Result<Vec<ReferenceOutputs>, TunerError>,
    names: &[String],
) -> PyResult<()> {
    let f = on_outputs.bind(py);
    match ran {
        Ok(runs) => {
            let files: Vec<(usize, String)> = runs
                .iter()
                .flat_map(|r| r.outputs.iter())
                .filter_map(|o| {
                    let index = names.iter().position(|n| *n == o.name)?;
                    Some((index, o.path.to_string_lossy().into_owned()))
                })
                .collect();
            f.call1((i, files, py.None()))?;
        }
        Err(e) => {
            f.call1((i, py.None(), e.to_string()))?;
        }
    }
    Ok(())
}

/// Shuts down the worker kept between calls (`kt` registers it with `atexit`).
#[pyfunction]
fn release_tuner() {
    kept_tuner::release();
}

/// Whether a worker is kept for the next call (what kt's tests check).
#[pyfunction]
fn tuner_kept() -> bool {
    kept_tuner::is_kept()
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
    m.add_function(wrap_pyfunction!(record, m)?)?;
    m.add_function(wrap_pyfunction!(tuner_worker, m)?)?;
    m.add_function(wrap_pyfunction!(release_tuner, m)?)?;
    m.add_function(wrap_pyfunction!(tuner_kept, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(transform::transform, m)?)?;
    m.add_function(wrap_pyfunction!(transform::resume, m)?)?;
    m.add("KtError", m.py().get_type::<KtError>())?;
    m.add_function(wrap_pyfunction!(runs::runs_list, m)?)?;
    m.add_function(wrap_pyfunction!(runs::runs_open, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
