//! The Python interpreter that runs generators: a python3 with numpy, found or provisioned once.
//!
//! Order: `KT_PYTHON` when set (the user's choice is final: no fallback that would hide a typo), else `python3` on
//! PATH if it has numpy (found by its files for a run, imported for `kt doctor`: see `probe.rs`), else kt's own
//! virtual environment (created on first use with a pinned numpy under
//! `$KT_HOME/venv`, else `$XDG_DATA_HOME/kt/venv`, else `~/.local/share/kt/venv`). What the lookup finds is
//! kept across runs while nothing it depends on changes (see `cache.rs`); `kt doctor` always looks again.

mod cache;
mod probe;
mod provision;
mod watch;

use std::ffi::OsString;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use cache::ProbeCache;
use probe::{Depth, inspect, inspect_watched};
use provision::provision;
use watch::Watched;

/// numpy version installed into kt's own virtual environment (a version known to build arrays the tests format
/// expects; pinned so that generated tests are reproducible across machines).
pub const PINNED_NUMPY: &str = "2.4.6";

/// Where a runtime came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeSource {
    /// `KT_PYTHON`.
    EnvVar,
    /// `python3` found on PATH.
    Path,
    /// kt's own virtual environment.
    ManagedVenv,
}

/// A Python interpreter that imports numpy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PythonRuntime {
    /// The interpreter binary (`sys.executable`: the real binary behind a pyenv shim; inside a virtual
    /// environment its bin/python3, not the base interpreter it links to, so the environment stays active).
    pub interpreter: PathBuf,
    pub version: String,
    pub numpy_version: String,
    pub source: RuntimeSource,
    /// Directories the interpreter reads (its prefix — a venv's root —, the base interpreter's prefix and binary
    /// directory, numpy's site directory). A sandbox makes them visible read-only whatever it hides (a private
    /// /tmp, a home the unprivileged uid cannot enter): see `Policy::readable_paths`.
    pub readable_paths: Vec<PathBuf>,
}

/// Why no usable Python is available.
#[derive(Debug, thiserror::Error)]
pub enum PythonError {
    #[error(
        "`{python}` cannot be started: {source}; install python3 (e.g. `apt-get install python3`) or point KT_PYTHON at one"
    )]
    NotFound {
        python: String,
        source: std::io::Error,
    },

    #[error(
        "`{python}` does not work: {detail}; install python3 or point KT_PYTHON at a working one"
    )]
    Broken { python: String, detail: String },

    #[error(
        "`{python}` cannot import numpy ({detail}); run scripts/test.sh (it provisions kt's own environment) or `{python} -m pip install numpy`"
    )]
    NumpyMissing { python: String, detail: String },

    #[error(
        "`{python}` has numpy {version} installed, but it does not import: {detail}\nRepair that installation \
         (`{python} -m pip install --force-reinstall numpy`), or set KT_PYTHON to a python3 whose numpy imports \
         (`kt doctor` imports it and says which works)"
    )]
    NumpyUnusable {
        python: String,
        version: String,
        detail: String,
    },

    #[error(
        "could not create kt's Python environment in {dir} ({step}): {detail}; {fix}, or install numpy yourself \
         and set KT_PYTHON",
        fix = provision_fix(step)
    )]
    Provision {
        dir: PathBuf,
        step: &'static str,
        detail: String,
    },
}

/// What to check when a provisioning step fails: only making the environment needs python3-venv.
fn provision_fix(step: &str) -> &'static str {
    match step {
        "python3 -m venv" => {
            "check that python3-venv is installed (`apt-get install python3-venv`)"
        }
        "pip install numpy" => {
            "check that the package index (pypi.org or PIP_INDEX_URL) is reachable"
        }
        _ => {
            "check that kt's data directory (KT_HOME, XDG_DATA_HOME or ~/.local/share) is writable"
        }
    }
}

impl PythonRuntime {
    /// Finds a python3 with numpy without installing anything: `KT_PYTHON`, else `python3` on PATH, else kt's
    /// virtual environment if one was created earlier. This is what `kt doctor` reports.
    /// Never cached: it is the diagnostic.
    pub fn probe() -> Result<PythonRuntime, PythonError> {
        probe_in(&Lookup::from_env(), &mut Watched::off(), Depth::Import)
    }

    /// Like [`PythonRuntime::probe`], but when `python3` lacks numpy (and KT_PYTHON is unset) creates kt's own
    /// virtual environment with numpy [`PINNED_NUMPY`] (needs python3-venv and the package index; minutes once).
    /// The answer comes from kt's cache while nothing it depends on changed (`KT_PYTHON_PROBE_CACHE=off`: never).
    pub fn find_or_provision() -> Result<PythonRuntime, PythonError> {
        let lookup = Lookup::from_env();
        match ProbeCache::from_env() {
            Some(cache) => cache.find(&lookup, |watched| find_or_provision_in(&lookup, watched)),
            None => find_or_provision_in(&lookup, &mut Watched::off()),
        }
    }

    /// kt's own virtual environment (see the module documentation), created with the pinned numpy when it does
    /// not work yet, whatever `python3` on PATH offers. The test script uses it so that every test, and Kernel
    /// Tuner installed next to numpy, runs with the interpreter kt itself would provision.
    pub fn provision_managed() -> Result<PythonRuntime, PythonError> {
        let dir = managed_venv_dir();
        let python = dir.join("bin/python3");
        match inspect(&python.to_string_lossy(), RuntimeSource::ManagedVenv) {
            Ok(rt) if rt.numpy_version == PINNED_NUMPY => Ok(rt),
            _ => provision(&dir, "python3"),
        }
    }

    /// Adds what this interpreter needs to read to a sandbox policy.
    pub fn apply_to(&self, policy: &mut crate::policy::Policy) {
        for path in &self.readable_paths {
            if !policy.readable_paths.contains(path) {
                policy.readable_paths.push(path.clone());
            }
        }
    }
}

/// What decides which interpreter kt finds, read from the environment once.
#[derive(Debug, Clone)]
pub(crate) struct Lookup {
    pub(crate) kt_python: Option<OsString>,
    pub(crate) path_var: Option<OsString>,
    pub(crate) venv_dir: PathBuf,
    /// The variables Python builds its import path from, by name.
    pub(crate) python_env: Vec<(&'static str, Option<OsString>)>,
}

/// Variables that change what an interpreter imports (HOME: its user site directory).
const PYTHON_ENV: [&str; 8] = [
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH",
    "PYTHONPLATLIBDIR",
    "HOME",
    "LD_LIBRARY_PATH",
];

impl Lookup {
    pub(crate) fn from_env() -> Lookup {
        Lookup {
            kt_python: std::env::var_os("KT_PYTHON"),
            path_var: std::env::var_os("PATH"),
            venv_dir: managed_venv_dir(),
            python_env: PYTHON_ENV
                .map(|name| (name, std::env::var_os(name)))
                .to_vec(),
        }
    }
}

/// [`PythonRuntime::probe`] for `lookup`, noting in `watched` what the answer depends on; `depth`: whether
/// numpy is imported or only found.
pub(crate) fn probe_in(
    lookup: &Lookup,
    watched: &mut Watched,
    depth: Depth,
) -> Result<PythonRuntime, PythonError> {
    let path = lookup.path_var.as_deref();
    if let Some(python) = &lookup.kt_python {
        return inspect_watched(
            &python.to_string_lossy(),
            RuntimeSource::EnvVar,
            path,
            watched,
            depth,
        );
    }
    match inspect_watched("python3", RuntimeSource::Path, path, watched, depth) {
        Ok(rt) => Ok(rt),
        Err(err) => {
            let venv_python = lookup.venv_dir.join("bin/python3");
            if venv_python.exists() {
                inspect_watched(
                    &venv_python.to_string_lossy(),
                    RuntimeSource::ManagedVenv,
                    path,
                    watched,
                    depth,
                )
                .or(Err(err))
            } else {
                Err(err)
            }
        }
    }
}

/// [`PythonRuntime::find_or_provision`] for `lookup`, noting in `watched` what the answer depends on.
pub(crate) fn find_or_provision_in(
    lookup: &Lookup,
    watched: &mut Watched,
) -> Result<PythonRuntime, PythonError> {
    // a run finds numpy without importing it (a quarter of a second); the generator harness imports it
    match probe_in(lookup, watched, Depth::Quick) {
        Ok(rt) => Ok(rt),
        Err(PythonError::NumpyMissing { .. }) if lookup.kt_python.is_none() => {
            // the next run probes the environment just made and keeps that answer
            watched.unsure("kt's Python environment was just created");
            provision(&lookup.venv_dir, "python3")
        }
        Err(err) => Err(err),
    }
}

/// kt's data directory for its own virtual environment.
pub fn managed_venv_dir() -> PathBuf {
    venv_dir_for(
        std::env::var_os("KT_HOME").map(PathBuf::from),
        std::env::var_os("XDG_DATA_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(PathBuf::from),
    )
}

/// `$KT_HOME/venv`, else `$XDG_DATA_HOME/kt/venv`, else `$HOME/.local/share/kt/venv`.
fn venv_dir_for(
    kt_home: Option<PathBuf>,
    xdg_data: Option<PathBuf>,
    home: Option<PathBuf>,
) -> PathBuf {
    if let Some(home) = kt_home {
        return home.join("venv");
    }
    if let Some(data) = xdg_data {
        return data.join("kt/venv");
    }
    home.unwrap_or_else(|| PathBuf::from("."))
        .join(".local/share/kt/venv")
}

pub(super) fn last_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no error output")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::probe::{readable_paths, run_probe};
    use super::*;

    #[test]
    fn this_machine_has_a_python_with_numpy_or_says_how_to_get_one() {
        match PythonRuntime::probe() {
            Ok(rt) => {
                assert!(rt.interpreter.is_absolute(), "{rt:?}");
                assert!(!rt.readable_paths.is_empty(), "{rt:?}");
            }
            Err(err) => {
                panic!("{err} (the sandbox tests need numpy: run scripts/test.sh)")
            }
        }
    }

    /// Issue 25: kt's venv under a HOME (or XDG_DATA_HOME) in /tmp was hidden by the sandbox's private /tmp.
    #[test]
    fn an_interpreter_under_a_home_in_tmp_runs_in_the_sandbox_with_its_venv_active() {
        use crate::{NetworkIsolation, Policy, Sandbox};
        let home = tempfile::Builder::new()
            .prefix("kt-home-")
            .tempdir_in("/tmp")
            .unwrap();
        let home = home.path().canonicalize().unwrap();
        // Open to all, as a real home under /tmp often is: only the private /tmp can hide it then.
        std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        std::fs::write(home.join("not-for-the-sandbox"), "x").unwrap();
        let under_home = venv_dir_for(None, None, Some(home.clone()));
        let under_xdg = venv_dir_for(None, Some(home.join("data")), Some(home.clone()));
        assert_eq!(under_home, home.join(".local/share/kt/venv"));
        assert_eq!(under_xdg, home.join("data/kt/venv"));
        for venv in [under_home, under_xdg] {
            let made = Command::new("python3")
                .args(["-m", "venv", "--without-pip"])
                .arg(&venv)
                .output()
                .unwrap();
            assert!(made.status.success(), "{}", last_line(&made.stderr));
            let python = venv.join("bin/python3");
            let report = run_probe(&python.to_string_lossy(), None, probe::Depth::Import).unwrap();
            let mut policy = Policy::for_generator();
            policy.network = NetworkIsolation::BestEffort;
            policy.readable_paths = readable_paths(&report);
            assert!(
                policy.readable_paths.contains(&venv),
                "{:?}",
                policy.readable_paths
            );
            let sandbox = Sandbox::new(policy);
            let script = format!(
                "import os, sys; print(sys.prefix); print(os.path.exists({:?}))",
                home.join("not-for-the-sandbox")
            );
            let outcome = sandbox
                .run(&python, &["-c", script.as_str()], None)
                .unwrap();
            assert!(outcome.success(), "{outcome:?}");
            let out = outcome.stdout_text();
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(
                lines[0],
                venv.to_string_lossy(),
                "the venv is active: {out}"
            );
            let hidden = sandbox.protections().mount_namespace;
            assert_eq!(lines[1], if hidden { "False" } else { "True" }, "{out}");
        }
    }

    #[test]
    fn a_missing_interpreter_is_reported_with_a_fix() {
        let err = inspect("/nonexistent/python3", RuntimeSource::EnvVar).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, PythonError::NotFound { .. }), "{text}");
        assert!(text.contains("KT_PYTHON"), "{text}");
    }
}
