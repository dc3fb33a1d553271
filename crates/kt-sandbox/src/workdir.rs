//! The directory a sandboxed program starts in: a fresh empty one per run unless the caller gives one.

use std::path::{Path, PathBuf};

use crate::error::SandboxError;
use crate::identity::RunIdentity;

/// Fresh work directories are `<tmp>/kt-sandbox-<pid of kt>-<random>`.
const PREFIX: &str = "kt-sandbox-";

/// Removes the work directories that kt processes no longer alive left in the temporary directory (a kt killed
/// with SIGKILL cannot clean up after itself). Returns how many were removed.
pub fn remove_stale_workdirs() -> usize {
    remove_stale_in(&std::env::temp_dir())
}

fn remove_stale_in(dir: &Path) -> usize {
    remove_in(dir, |pid| !process_alive(pid))
}

/// Removes this process's own work directories: for kt's exit after a signal, once its programs are killed
/// (a thread abandoned mid-run never gets to drop its [`Workdir`]).
pub fn remove_own_workdirs() -> usize {
    let me = std::process::id() as i32;
    remove_in(&std::env::temp_dir(), |pid| pid == me)
}

fn remove_in(dir: &Path, stale: impl Fn(i32) -> bool) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && stale(pid) && std::fs::remove_dir_all(entry.path()).is_ok() {
            tracing::info!(dir = %entry.path().display(), "removed a sandbox work directory");
            removed += 1;
        }
    }
    removed
}

/// True unless `pid` certainly names no process (a live process of another user counts as alive).
fn process_alive(pid: i32) -> bool {
    if pid <= 0 {
        return true;
    }
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}

/// A work directory. A fresh one is deleted (with everything the program left in it) when dropped.
#[derive(Debug)]
pub struct Workdir {
    path: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl Workdir {
    /// A new empty directory under the system's temporary directory, readable only by its owner.
    pub fn fresh() -> Result<Self, SandboxError> {
        // The pid in the name lets a later kt remove what a killed one left (see [`remove_stale_workdirs`]).
        let temp = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{}-", std::process::id()))
            .tempdir()
            .map_err(|source| SandboxError::Workdir {
                path: std::env::temp_dir(),
                source,
            })?;
        // Canonical, because the mount plan compares it with canonical paths (/tmp may be a symlink).
        let path = temp
            .path()
            .canonicalize()
            .map_err(|source| SandboxError::Workdir {
                path: temp.path().to_path_buf(),
                source,
            })?;
        Ok(Self {
            path,
            _temp: Some(temp),
        })
    }

    /// An existing directory chosen by the caller; it is not deleted afterwards.
    pub fn existing(path: &Path) -> Result<Self, SandboxError> {
        let path = path
            .canonicalize()
            .map_err(|source| SandboxError::Workdir {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Self { path, _temp: None })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Hands the directory to the run's unprivileged identity (owner, mode 0700) so that it is the one place the
    /// program can write. Files kt put there before stay kt's, readable by the program.
    pub(crate) fn grant(&self, identity: RunIdentity) -> Result<(), SandboxError> {
        use std::os::unix::fs::PermissionsExt;
        let err = |source| SandboxError::Workdir {
            path: self.path.clone(),
            source,
        };
        std::os::unix::fs::chown(&self.path, Some(identity.uid), Some(identity.gid))
            .map_err(err)?;
        std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o700)).map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_of_dead_kt_processes_go_and_those_of_live_ones_stay() {
        let tmp = tempfile::tempdir().unwrap();
        // A pid that is certainly dead: a child we started and reaped.
        let mut child = std::process::Command::new("/bin/true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = tmp.path().join(format!("{PREFIX}{dead}-abc"));
        let live = tmp
            .path()
            .join(format!("{PREFIX}{}-def", std::process::id()));
        let other = tmp.path().join("kt-sandbox-notapid");
        for d in [&stale, &live, &other] {
            std::fs::create_dir_all(d.join("out")).unwrap();
        }
        assert_eq!(remove_stale_in(tmp.path()), 1);
        assert!(!stale.exists() && live.exists() && other.exists());
    }

    #[test]
    fn a_fresh_directory_carries_kt_pid_and_is_removed_when_dropped() {
        let w = Workdir::fresh().unwrap();
        let name = w.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(&format!("{PREFIX}{}-", std::process::id())),
            "{name}"
        );
        let path = w.path().to_path_buf();
        drop(w);
        assert!(!path.exists());
    }
}
