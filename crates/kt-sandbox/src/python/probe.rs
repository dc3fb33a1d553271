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
    /// Whether numpy was imported (else only found: the quick probe).
    #[serde(default)]
    numpy_imported: bool,
    /// The directories the interpreter imports from (absolute `sys.path` entries, and its user site whether it
    /// exists or not): a numpy installed in any of them changes the answer.
    #[serde(default)]
    watch: Vec<String>,
}

/// The probe script. With the argument `quick` it finds numpy without importing it (importing takes a
/// quarter of a second or more, on the critical path of a first run): its package directory and the version
/// its one `numpy-*.dist-info` (or `.egg-info`) names; anything less clear imports it. A numpy installed but
/// broken then shows when the generator harness imports it (`PythonError::NumpyUnusable`); `kt doctor`
/// always imports it.
pub(super) const PROBE_SCRIPT: &str = r#"
import json, os, site, sys
r = {"executable": os.path.abspath(sys.executable), "version": sys.version.split()[0],
     "prefix": sys.prefix, "base_prefix": sys.base_prefix,
     "real_dir": os.path.dirname(os.path.realpath(sys.executable)), "numpy": None, "numpy_dir": None,
     "numpy_error": None, "numpy_imported": False}
def located():
    import glob, importlib.util
    spec = importlib.util.find_spec("numpy")
    if spec is None:
        return "missing"
    if not spec.origin or not spec.origin.endswith("__init__.py"):
        return None
    site_dir = os.path.dirname(os.path.dirname(os.path.realpath(spec.origin)))
    found = [m for pattern in ("numpy-*.dist-info", "numpy-*.egg-info")
             for m in glob.glob(os.path.join(site_dir, pattern))]
    if len(found) != 1:
        return None
    name = os.path.basename(found[0])
    return site_dir, name[len("numpy-"):].rsplit(".", 1)[0].split("-py")[0]
where = located() if sys.argv[1:] == ["quick"] else None
if where == "missing":
    r["numpy_error"] = "ModuleNotFoundError: No module named 'numpy'"
elif where is not None:
    r["numpy_dir"], r["numpy"] = where
else:
    try:
        import numpy
        r["numpy"] = numpy.__version__
        r["numpy_dir"] = os.path.dirname(os.path.dirname(os.path.realpath(numpy.__file__)))
        r["numpy_imported"] = True
    except Exception as e:
        r["numpy_error"] = "%s: %s" % (type(e).__name__, e)
r["watch"] = [p for p in sys.path if os.path.isabs(p)]
if getattr(site, "ENABLE_USER_SITE", False) and getattr(site, "USER_SITE", None):
    r["watch"].append(site.USER_SITE)
print(json.dumps(r))
"#;

/// How thoroughly the probe checks numpy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Depth {
    /// Found, not imported (what a run uses).
    Quick,
    /// Imported (`kt doctor`, kt's own environment).
    Import,
}

/// Runs the probe script with `python` (a name is looked up in `path_var` when given).
pub(super) fn run_probe(
    python: &str,
    path_var: Option<&OsStr>,
    depth: Depth,
) -> Result<ProbeReport, PythonError> {
    let mut command = Command::new(python);
    if let Some(path_var) = path_var {
        command.env("PATH", path_var);
    }
    command.args(["-c", PROBE_SCRIPT]);
    if depth == Depth::Quick {
        command.arg("quick");
    }
    let out = command.output().map_err(|e| PythonError::NotFound {
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
    inspect_watched(python, source, None, &mut Watched::off(), Depth::Import)
}

/// Runs the probe with `python` and notes in `watched` what its answer depends on: the interpreter, the
/// directories it imports from, numpy's files and the directories it reads.
pub(super) fn inspect_watched(
    python: &str,
    source: RuntimeSource,
    path_var: Option<&OsStr>,
    watched: &mut Watched,
    depth: Depth,
) -> Result<PythonRuntime, PythonError> {
    let report =
        run_probe(python, path_var, depth).inspect_err(|e| watched.unsure(&e.to_string()))?;
    tracing::debug!(
        python,
        numpy = ?report.numpy,
        imported = report.numpy_imported,
        "Python probed"
    );
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A python3 that imports from `site` first (a wrapper setting PYTHONPATH).
    fn python_with(site: &Path, dir: &Path) -> String {
        let wrapper = dir.join("python3");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nPYTHONPATH='{}' exec python3 \"$@\"\n",
                site.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        wrapper.display().to_string()
    }

    #[test]
    fn the_quick_probe_finds_numpy_by_its_files_and_the_import_probe_imports_it() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("site");
        std::fs::create_dir_all(site.join("numpy")).unwrap();
        std::fs::create_dir_all(site.join("numpy-1.2.3.dist-info")).unwrap();
        std::fs::write(
            site.join("numpy/__init__.py"),
            "raise ImportError('broken on purpose')\n",
        )
        .unwrap();
        let python = python_with(&site, dir.path());

        let quick = run_probe(&python, None, Depth::Quick).unwrap();
        assert_eq!(quick.numpy.as_deref(), Some("1.2.3"));
        assert!(!quick.numpy_imported);
        let site_dir = std::fs::canonicalize(&site).unwrap();
        assert_eq!(
            quick.numpy_dir.as_deref().map(Path::new),
            Some(site_dir.as_path())
        );

        let imported = run_probe(&python, None, Depth::Import).unwrap();
        assert_eq!(imported.numpy, None);
        assert!(
            imported
                .numpy_error
                .as_deref()
                .is_some_and(|e| e.contains("broken on purpose")),
            "{imported:?}"
        );
    }

    #[test]
    fn without_one_clear_record_of_its_version_the_quick_probe_imports_numpy() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("site");
        std::fs::create_dir_all(site.join("numpy")).unwrap();
        std::fs::write(site.join("numpy/__init__.py"), "__version__ = '7.7.7'\n").unwrap();
        // two versions recorded: ambiguous, so it is imported
        std::fs::create_dir_all(site.join("numpy-1.0.0.dist-info")).unwrap();
        std::fs::create_dir_all(site.join("numpy-2.0.0.dist-info")).unwrap();
        let python = python_with(&site, dir.path());
        let r = run_probe(&python, None, Depth::Quick).unwrap();
        assert_eq!(r.numpy.as_deref(), Some("7.7.7"));
        assert!(r.numpy_imported);
    }

    #[test]
    fn the_quick_probe_reads_egg_info_names_and_reports_a_missing_numpy() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("site");
        std::fs::create_dir_all(site.join("numpy")).unwrap();
        std::fs::write(site.join("numpy/__init__.py"), "").unwrap();
        std::fs::write(site.join("numpy-1.21.5-py3.10.egg-info"), "").unwrap();
        let python = python_with(&site, dir.path());
        let r = run_probe(&python, None, Depth::Quick).unwrap();
        assert_eq!(r.numpy.as_deref(), Some("1.21.5"));

        // an import path where numpy is absent, with the real one out of reach (-S: no site-packages)
        let bare = dir.path().join("bare");
        std::fs::write(&bare, "#!/bin/sh\nexec python3 -S \"$@\"\n").unwrap();
        std::fs::set_permissions(&bare, std::fs::Permissions::from_mode(0o755)).unwrap();
        let r = run_probe(&bare.display().to_string(), None, Depth::Quick).unwrap();
        assert_eq!(r.numpy, None);
        assert!(
            r.numpy_error
                .as_deref()
                .is_some_and(|e| e.contains("No module named 'numpy'")),
            "{r:?}"
        );
    }
}
