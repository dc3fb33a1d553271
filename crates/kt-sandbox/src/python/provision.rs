//! Making kt's own Python environment (a virtual environment with the pinned numpy): once per machine, 10–70 s.
//! It says on stderr what it is doing, since a first run would otherwise sit silent that long, and it holds an
//! exclusive lock on `venv.lock` next to the environment, so two kt commands started together on a fresh
//! machine do not build it over each other (the second waits, says so, and takes what the first made).

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::probe::inspect;
use super::{PINNED_NUMPY, PythonError, PythonRuntime, RuntimeSource, last_line};

/// Creates (or completes) a virtual environment in `dir` with `base_python` and installs the pinned numpy,
/// saying so on stderr.
pub(super) fn provision(dir: &Path, base_python: &str) -> Result<PythonRuntime, PythonError> {
    provision_noting(dir, base_python, &mut |line| eprintln!("{line}"))
}

/// The lock file that serialises provisioning of `dir` (beside it: the environment itself may not exist yet).
pub(super) fn lock_path(dir: &Path) -> PathBuf {
    dir.with_extension("lock")
}

/// [`provision`], with what it says going to `note`.
fn provision_noting(
    dir: &Path,
    base_python: &str,
    note: &mut dyn FnMut(&str),
) -> Result<PythonRuntime, PythonError> {
    let err = |step: &'static str, detail: String| PythonError::Provision {
        dir: dir.to_path_buf(),
        step,
        detail,
    };
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| err("creating the data directory", e.to_string()))?;
    }
    let lock_file = lock_path(dir);
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_file)
        .map_err(|e| {
            err(
                "opening its lock file",
                format!("{}: {e}", lock_file.display()),
            )
        })?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            note(&format!(
                "kt: another kt is preparing the sandbox's Python environment in {}; waiting for it to finish \
                 (lock {})",
                dir.display(),
                lock_file.display()
            ));
            lock.lock()
                .map_err(|e| err("waiting for its lock", e.to_string()))?;
        }
        Err(TryLockError::Error(e)) => return Err(err("taking its lock", e.to_string())),
    }
    // the lock is held until `lock` drops: the whole environment is made by one kt at a time
    let python = dir.join("bin/python3");
    if let Ok(rt) = inspect(&python.to_string_lossy(), RuntimeSource::ManagedVenv)
        && rt.numpy_version == PINNED_NUMPY
    {
        // another kt made it while this one waited
        return Ok(rt);
    }
    note(&format!(
        "kt: preparing the sandbox's Python environment (numpy {PINNED_NUMPY}) in {}; once per machine, \
         usually 10-70 s",
        dir.display()
    ));
    if !python.exists() {
        run_step(
            Command::new(base_python).arg("-m").arg("venv").arg(dir),
            "python3 -m venv",
        )
        .map_err(|d| err("python3 -m venv", d))?;
    }
    run_step(
        Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            &format!("numpy=={PINNED_NUMPY}"),
        ]),
        "pip install numpy",
    )
    .map_err(|d| err("pip install numpy", d))?;
    inspect(&python.to_string_lossy(), RuntimeSource::ManagedVenv)
}

fn run_step(command: &mut Command, what: &str) -> Result<(), String> {
    let out = command
        .output()
        .map_err(|e| format!("{what} could not start: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(last_line(&out.stderr))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;

    #[test]
    fn provisioning_without_python3_fails_with_an_actionable_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = provision(&dir.path().join("venv"), "/nonexistent/python3").unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(
                err,
                PythonError::Provision {
                    step: "python3 -m venv",
                    ..
                }
            ),
            "{text}"
        );
        assert!(
            text.contains("python3-venv") && text.contains("KT_PYTHON"),
            "{text}"
        );
    }

    fn script(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Stands in for python3: `-m venv DIR` takes a second (as the real one does, or longer) and makes a
    /// DIR/bin/python3 whose `-m pip` takes a moment and which otherwise is this machine's python with numpy.
    /// Each step writes `begin STEP` and `end STEP` to `log`.
    fn fake_base_python(work: &Path, log: &Path) -> PathBuf {
        let real = super::super::PythonRuntime::probe().unwrap().interpreter;
        let venv_python = work.join("venv-python3");
        script(
            &venv_python,
            &format!(
                "#!/bin/sh\nif [ \"$1\" = -m ] && [ \"$2\" = pip ]; then\n  echo 'begin pip' >> '{log}'; \
                 sleep 0.3; echo 'end pip' >> '{log}'; exit 0\nfi\nexec '{real}' \"$@\"\n",
                log = log.display(),
                real = real.display()
            ),
        );
        let base = work.join("base-python3");
        script(
            &base,
            &format!(
                "#!/bin/sh\necho 'begin venv' >> '{log}'\nsleep 1\nmkdir -p \"$3/bin\"\n\
                 cp '{venv}' \"$3/bin/python3\"\necho 'end venv' >> '{log}'\n",
                log = log.display(),
                venv = venv_python.display()
            ),
        );
        base
    }

    /// Issue 49: two kt commands started together on a fresh machine made the environment over each other, and
    /// the second failed with a misleading "install python3-venv". With the lock, one makes it while the other
    /// waits and says so; no step of one overlaps a step of the other.
    #[test]
    fn two_provisionings_at_once_take_turns_and_the_second_says_it_waits() {
        let work = tempfile::tempdir().unwrap();
        let log = work.path().join("steps.log");
        let base = fake_base_python(work.path(), &log);
        let venv = work.path().join("data/venv");
        let notes = Arc::new(Mutex::new(Vec::<String>::new()));
        let start = |delay: u64| {
            let (venv, base, notes) = (venv.clone(), base.clone(), notes.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(delay));
                provision_noting(&venv, &base.to_string_lossy(), &mut |line| {
                    notes.lock().unwrap().push(line.to_string())
                })
            })
        };
        let (first, second) = (start(0), start(300));
        let (first, second) = (first.join().unwrap(), second.join().unwrap());
        assert!(first.is_ok() && second.is_ok(), "{first:?} {second:?}");
        let steps = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = steps.lines().collect();
        for pair in lines.chunks(2) {
            let step = pair[0].strip_prefix("begin ").unwrap_or("?");
            assert_eq!(
                pair.get(1).copied(),
                Some(format!("end {step}").as_str()),
                "steps overlapped:\n{steps}"
            );
        }
        assert_eq!(
            lines.iter().filter(|l| **l == "begin venv").count(),
            1,
            "the environment was made twice:\n{steps}"
        );
        let notes = notes.lock().unwrap();
        assert!(
            notes
                .iter()
                .any(|n| n.contains("preparing the sandbox's Python environment (numpy")),
            "{notes:?}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("another kt is preparing") && n.contains("waiting")),
            "{notes:?}"
        );
        assert!(lock_path(&venv).is_file());
    }
}
