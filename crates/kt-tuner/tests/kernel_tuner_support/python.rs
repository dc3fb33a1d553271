//! Running an exported script with Kernel Tuner: the export directory is copied to a fresh place first (the
//! script must run wherever it is copied) and run from yet another working directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// The Python the tests use: `KT_PYTHON` (scripts/test.sh sets it) or python3.
pub fn python() -> String {
    std::env::var("KT_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Fails the test, saying how to fix it, unless Kernel Tuner 1.5 and numpy import.
pub fn require_kernel_tuner() {
    static CHECKED: OnceLock<Result<String, String>> = OnceLock::new();
    let outcome = CHECKED.get_or_init(|| {
        let out = Command::new(python())
            .args([
                "-c",
                "import numpy, kernel_tuner, importlib.metadata as m; print(m.version('kernel_tuner'))",
            ])
            .output()
            .map_err(|e| format!("cannot start `{}`: {e}", python()))?;
        let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() {
            return Err(format!(
                "`{}` cannot import Kernel Tuner and numpy:\n{}",
                python(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        if !version.starts_with("1.5") {
            return Err(format!("Kernel Tuner {version} found, these tests are for 1.5"));
        }
        Ok(version)
    });
    if let Err(why) = outcome {
        panic!(
            "{why}\nInstall it with scripts/test.sh (it runs `python3 -m pip install \
             \"kernel_tuner==1.5.*\"`), or point KT_PYTHON at a Python that has it."
        );
    }
}

/// What Kernel Tuner printed for one run of an exported script.
pub struct Simulated {
    /// Kernel Tuner's best configuration (`env["best_config"]`), parameters only.
    pub best: Value,
    /// kt's best as the script states it.
    pub kt_best_printed: Value,
    pub stdout: String,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn line_json(stdout: &str, prefix: &str) -> Value {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{stdout}"));
    serde_json::from_str(line.trim()).unwrap()
}

/// The export's script (`tune_*.py`), run with `--simulate --objective OBJECTIVE` from a copy of its directory.
pub fn simulate(export: &Path, objective: &str) -> Simulated {
    require_kernel_tuner();
    let elsewhere = tempfile::tempdir().unwrap();
    let copy = elsewhere.path().join("copied export");
    copy_dir(export, &copy);
    let script = std::fs::read_dir(&copy)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("tune_") && n.ends_with(".py")
        })
        .unwrap_or_else(|| panic!("no tune_*.py in {}", export.display()));
    let cwd = tempfile::tempdir().unwrap();
    let out = Command::new(python())
        .arg(&script)
        .args(["--simulate", "--objective", objective])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "Kernel Tuner failed on the export of {}:\n{stdout}\n{}",
        export.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Simulated {
        best: line_json(&stdout, "Kernel Tuner best: "),
        kt_best_printed: line_json(&stdout, "kt best: "),
        stdout,
    }
}

pub fn recorded_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kernel_tuner/recorded")
}

/// Every export directory (one holding a `*_cache.json`) under the recorded fixtures.
pub fn recorded_exports() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(recorded_dir()) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && std::fs::read_dir(p).is_ok_and(|mut d| {
                    d.any(|f| {
                        f.is_ok_and(|f| f.file_name().to_string_lossy().ends_with("_cache.json"))
                    })
                })
        })
        .collect();
    dirs.sort();
    dirs
}
