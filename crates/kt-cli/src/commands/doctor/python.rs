//! python3 + numpy probe: the sandbox runs LLM-written input generators with them (kt-sandbox's `PythonRuntime`
//! decides which interpreter: KT_PYTHON, else python3 on PATH, else kt's own virtual environment).

use kt_sandbox::python::RuntimeSource;
use kt_sandbox::{PythonError, PythonRuntime};

use super::Check;

const NUMPY_FIX: &str = "run scripts/test.sh or `python3 -m pip install numpy`; without it kt creates its own \
                         environment on first use (needs python3-venv and the package index)";

pub fn probe() -> Vec<Check> {
    match PythonRuntime::probe() {
        Ok(rt) => {
            let origin = match rt.source {
                RuntimeSource::EnvVar => "KT_PYTHON",
                RuntimeSource::Path => "python3 on PATH",
                RuntimeSource::ManagedVenv => "kt's own environment",
            };
            vec![
                Check::ok(
                    "python3",
                    format!(
                        "Python {} ({}, {origin})",
                        rt.version,
                        rt.interpreter.display()
                    ),
                ),
                Check::ok("numpy", format!("numpy {}", rt.numpy_version)),
            ]
        }
        Err(PythonError::NumpyMissing { python, detail }) => {
            vec![
                Check::ok("python3", format!("`{python}` runs")),
                Check::missing("numpy", detail, NUMPY_FIX),
            ]
        }
        Err(err) => vec![
            Check::missing(
                "python3",
                err.to_string(),
                "install python3 (e.g. `apt-get install python3`) or point KT_PYTHON at one",
            ),
            Check::missing("numpy", "no usable python3", "see the python3 line"),
        ],
    }
}
