//! python3 + numpy probe: the sandbox runs LLM-written input generators with them.

use std::process::Command;

use super::Check;

/// The interpreter kt uses: `KT_PYTHON` when set, else `python3` from PATH.
pub fn interpreter() -> String {
    std::env::var("KT_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

pub fn probe() -> Vec<Check> {
    let python = interpreter();
    let version = match Command::new(&python).arg("--version").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(if out.stdout.is_empty() { &out.stderr } else { &out.stdout }).trim().to_string(),
        Ok(out) => {
            return vec![
                Check::missing("python3", format!("`{python} --version` failed: {}", String::from_utf8_lossy(&out.stderr).trim()), "install python3 (e.g. `apt-get install python3`) or point KT_PYTHON at one"),
                Check::missing("numpy", "no usable python3", "see the python3 line"),
            ];
        }
        Err(err) => {
            return vec![
                Check::missing("python3", format!("`{python}` cannot be started: {err}"), "install python3 (e.g. `apt-get install python3`) or point KT_PYTHON at one"),
                Check::missing("numpy", "no usable python3", "see the python3 line"),
            ];
        }
    };
    let python_check = Check::ok("python3", format!("{version} ({python})"));
    let numpy = Command::new(&python).args(["-c", "import numpy; print(numpy.__version__)"]).output();
    let numpy_check = match numpy {
        Ok(out) if out.status.success() => Check::ok("numpy", format!("numpy {}", String::from_utf8_lossy(&out.stdout).trim())),
        Ok(out) => {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err.lines().last().unwrap_or("import failed").trim().to_string();
            Check::missing("numpy", last, format!("`{python} -m pip install numpy` (or run scripts/install-test-deps.sh)"))
        }
        Err(err) => Check::missing("numpy", format!("could not run {python}: {err}"), "see the python3 line"),
    };
    vec![python_check, numpy_check]
}
