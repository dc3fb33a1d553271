//! One writer per run: the process that works on a run (`kt transform`, `kt resume`, `kt testgen`) holds an
//! exclusive lock on `RUN/.lock` for as long as it runs. The kernel drops the lock when the process dies, however
//! it dies, so a killed run never stays locked. The file says who holds it (pid, host, since), so a second writer
//! can say who is in the way instead of failing later inside the run's database.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::PipelineError;

/// The lock on one run; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

/// Whether to wait for a lock another process holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenHeld {
    Refuse,
    Wait,
}

impl RunLock {
    /// Takes the lock on the run at `root`. With [`WhenHeld::Refuse`] a held lock is
    /// [`PipelineError::RunBusy`], naming the holder.
    pub fn acquire(root: &Path, when_held: WhenHeld) -> Result<RunLock, PipelineError> {
        let path = lock_path(root);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            // a link planted in the run after it was checked is not followed (ELOOP) and the holder's
            // name is the user's only
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .mode(0o600)
            .open(&path)
            .map_err(|e| PipelineError::io("opening the run's lock", &path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let holder = holder_of(&mut file);
                if when_held == WhenHeld::Refuse {
                    return Err(PipelineError::RunBusy {
                        run: root.to_path_buf(),
                        holder,
                    });
                }
                eprintln!(
                    "waiting for {} to finish with run {}",
                    holder,
                    root.display()
                );
                file.lock()
                    .map_err(|e| PipelineError::io("locking", &path, e))?;
            }
            Err(TryLockError::Error(e)) => return Err(PipelineError::io("locking", &path, e)),
        }
        let me = format!(
            "pid {} on {} since {}\n",
            std::process::id(),
            host_name(),
            kt_record::layout::rfc3339(time::OffsetDateTime::now_utc())
        );
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(me.as_bytes()))
            .map_err(|e| PipelineError::io("writing", &path, e))?;
        Ok(RunLock { _file: file })
    }
}

fn lock_path(root: &Path) -> PathBuf {
    root.join(".lock")
}

fn holder_of(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let text = text.trim();
    if text.is_empty() {
        "another kt process (it has not said which yet)".to_string()
    } else {
        format!("kt ({text})")
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "this host".to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_told_who_holds_the_run_and_gets_it_once_released() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunLock::acquire(dir.path(), WhenHeld::Refuse).unwrap();
        let err = RunLock::acquire(dir.path(), WhenHeld::Refuse).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, PipelineError::RunBusy { .. }), "{text}");
        assert!(
            text.contains(&format!("pid {}", std::process::id())) && text.contains("since"),
            "{text}"
        );
        assert!(text.contains("--wait"), "{text}");
        drop(first);
        RunLock::acquire(dir.path(), WhenHeld::Refuse).unwrap();
    }

    #[test]
    fn a_link_planted_as_the_lock_after_the_run_was_checked_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        std::os::unix::fs::symlink(&victim, lock_path(&run)).unwrap();
        let err = RunLock::acquire(&run, WhenHeld::Refuse)
            .unwrap_err()
            .to_string();
        assert!(err.contains(".lock"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
    }

    #[test]
    fn a_waiting_writer_proceeds_when_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunLock::acquire(dir.path(), WhenHeld::Refuse).unwrap();
        let root = dir.path().to_path_buf();
        let waiter = std::thread::spawn(move || RunLock::acquire(&root, WhenHeld::Wait).is_ok());
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!waiter.is_finished());
        drop(first);
        assert!(waiter.join().unwrap());
    }
}
