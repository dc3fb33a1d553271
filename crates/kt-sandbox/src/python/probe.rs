//! The probe: python3 runs a small script that says what it is, where it reads from and which numpy it imports.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use super::watch::Watched;
use super::{PythonError, PythonRuntime, RuntimeSource, last_line};

/// What the probe script prints, as JSON on one line.
#[derive(Debug, Deserialize)]
pub(super) struct ProbeReport {
    executable: String,
    version: String,
    prefix: String,
    base_prefix: String,
    /// The directory of the binary behind `executable` (a venv's bin/python3 is a link to it).
    real_dir: String,
    numpy: Option<String>,
    numpy_dir: Option<String>,
    numpy_error: Option<String>,
    /// The directories the interpreter imports from (absolute `sys.path` entries, and its user site whether it
    /// exists or not): a numpy installed in any of them changes the answer.
    #[serde(default)]
    watch: Vec<String>,
}

pub(super) const PROBE_SCRIPT: &str = r#"
import json, os, site, sys
r = {"executable": os.path.abspath(sys.executable), "version": sys.version.split()[0],
     "prefix": sys.prefix, "base_prefix": sys.base_prefix,
     "real_dir": os.path.dirname(os.path.realpath(sys.executable)), "numpy": None, "numpy_dir": None, "numpy_error": None}
try:
    import numpy
    r["numpy"] = numpy.__version__
    r["numpy_dir"] = os.path.dirname(os.path.dirname(os.path.realpath(numpy.__file__)))
except Exception as e:
    r["numpy_error"] = "%s: %s" % (type(e).__name__, e)
r["watch"] = [p for p in sys.path if os.path.isabs(p)]
if getattr(site, "ENABLE_USER_SITE", False) and getattr(site, "USER_SITE", None):
    r["watch"].append(site.USER_SITE)
print(json.dumps(r))
"#;

/// Runs the probe script with `python` (a name is looked up in `path_var` when given).
pub(super) fn run_probe(
    python: &str,
    path_var: Option<&OsStr>,
) -> Result<ProbeReport, PythonError> {
    let mut command = Command::new(python);
    if let Some(path_var) = path_var {
        command.env("PATH", path_var);
    }
    let out = command
        .args(["-c", PROBE_SCRIPT])
        .output()
        .map_err(|e| PythonError::NotFound {
            python: python.to_string(),
            source: e,
        })?;
    if !out.status.success() {
        return Err(PythonError::Broken {
            python: python.to_string(),
            detail: last_line(&out.stderr),
        });
    }
    serde_json::from_slice(&out.stdout).map_err(|e| PythonError::Broken {
        python: python.to_string(),
        detail: format!("unexpected probe output ({e}); is it Python 3?"),
    })
}

/// The directories an interpreter reads, without duplicates.
pub(super) fn readable_paths(report: &ProbeReport) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for p in [
        Some(&report.prefix),
        Some(&report.base_prefix),
        Some(&report.real_dir),
        report.numpy_dir.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        let p = PathBuf::from(p);
        if p.is_dir() && !paths.contains(&p) {
            paths.push(p);
        }
    }
    paths
}

pub(super) fn inspect(python: &str, source: RuntimeSource) -> Result<PythonRuntime, PythonError> {
    inspect_watched(python, source, None, &mut Watched::off())
}

/// Runs the probe with `python` and notes in `watched` what its answer depends on: the interpreter, the
/// directories it imports from, numpy's files and the directories it reads.
pub(super) fn inspect_watched(
    python: &str,
    source: RuntimeSource,
    path_var: Option<&OsStr>,
    watched: &mut Watched,
) -> Result<PythonRuntime, PythonError> {
    let report = run_probe(python, path_var).inspect_err(|e| watched.unsure(&e.to_string()))?;
    watched.interpreter(python, Path::new(&report.executable));
    for dir in [&report.prefix, &report.base_prefix, &report.real_dir]
        .into_iter()
        .chain(&report.watch)
        .chain(&report.numpy_dir)
    {
        watched.add(dir);
    }
    // a virtual environment's settings (whether it sees the system's packages) are edited in place
    watched.add(Path::new(&report.prefix).join("pyvenv.cfg"));
    if let Some(dir) = &report.numpy_dir {
        let numpy = Path::new(dir).join("numpy");
        watched.add(numpy.join("__init__.py"));
        watched.add(numpy.join("version.py"));
    }
    let readable_paths = readable_paths(&report);
    let Some(numpy_version) = report.numpy else {
        return Err(PythonError::NumpyMissing {
            python: python.to_string(),
            detail: report.numpy_error.unwrap_or_else(|| "import failed".into()),
        });
    };
    Ok(PythonRuntime {
        interpreter: PathBuf::from(report.executable),
        version: report.version,
        numpy_version,
        source,
        readable_paths,
    })
}
