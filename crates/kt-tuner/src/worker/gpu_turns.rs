//! Taking turns on a shared GPU. kt processes that share one GPU (a model-in-the-loop round's cells, an
//! experiment matrix's, a user's `kt tune`s side by side) would otherwise time their launches while the
//! others' kernels hold the GPU, and take that noise for the kernel's. Each request that runs work on the
//! GPU is sent under an exclusive advisory lock (`flock`) on a file named after the GPU's UUID, so one
//! process's launches, checks and timed samples never overlap another's; compiling, making inputs and
//! asking an LLM still go on side by side. The wait comes before the request is sent, so it never counts
//! against a launch's watchdog. `KT_GPU_TURNS=off` turns it off; programs that are not kt do not take turns.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `off` (or `0`): no turns. Any other value, or none: turns, with lock files in the temporary directory.
pub const TURNS_ENV: &str = "KT_GPU_TURNS";

/// A wait longer than this is logged (a user wondering why a run is slow learns that it queued).
const NOTED_WAIT: Duration = Duration::from_secs(1);

/// The turns on one GPU, taken by one worker client.
#[derive(Debug)]
pub struct GpuTurns {
    file: File,
    path: PathBuf,
    waited: Duration,
}

/// A turn on the GPU: the lock is released when it is dropped.
#[derive(Debug)]
pub struct Turn(File);

impl Drop for Turn {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

impl GpuTurns {
    /// The turns of the GPU with `uuid`: None when turns are off or the GPU is kt's fake. A lock file kt
    /// cannot open leaves kt without turns (logged), never without a run.
    pub fn for_gpu(uuid: &str) -> Option<Self> {
        if std::env::var(TURNS_ENV)
            .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "no"))
        {
            return None;
        }
        if uuid.contains("fake") {
            return None;
        }
        Self::in_dir(&std::env::temp_dir(), uuid)
    }

    /// The turns of the GPU with `uuid`, with its lock file in `dir`.
    pub fn in_dir(dir: &Path, uuid: &str) -> Option<Self> {
        let safe: String = uuid
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("kt-gpu-{safe}.lock"));
        // another user's lock file may be read-only to this one: a lock needs no write access
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .or_else(|_| File::open(&path));
        match file {
            Ok(file) => Some(GpuTurns {
                file,
                path,
                waited: Duration::ZERO,
            }),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "no lock file for taking turns on the GPU: timings may share it with other kt processes");
                None
            }
        }
    }

    /// Waits for the GPU and holds it until the turn is dropped; None (go on without) if locking fails.
    pub fn take(&mut self) -> Option<Turn> {
        let handle = self.file.try_clone().ok()?;
        match handle.try_lock() {
            Ok(()) => return Some(Turn(handle)),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => {
                tracing::warn!(path = %self.path.display(), error = %e, "cannot lock the GPU's turn file; going on without turns");
                return None;
            }
        }
        let start = Instant::now();
        let taken = handle.lock().ok().map(|()| Turn(handle));
        let waited = start.elapsed();
        self.waited += waited;
        if waited >= NOTED_WAIT {
            tracing::info!(
                waited_s = waited.as_secs_f64(),
                "waited for another kt process's turn on the GPU"
            );
        }
        taken
    }

    /// How long this client has waited for turns in all.
    pub fn waited(&self) -> Duration {
        self.waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    #[test]
    fn a_second_client_waits_until_the_first_turn_ends() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = GpuTurns::in_dir(dir.path(), "GPU-1234").unwrap();
        let mut second = GpuTurns::in_dir(dir.path(), "GPU-1234").unwrap();
        let turn = first.take().expect("a free GPU is taken at once");
        let (tx, rx) = channel();
        let waiter = std::thread::spawn(move || {
            let t = second.take();
            tx.send(t.is_some()).unwrap();
            second.waited()
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "the second client took a turn the first still held"
        );
        drop(turn);
        assert!(rx.recv_timeout(Duration::from_secs(5)).unwrap());
        assert!(waiter.join().unwrap() >= Duration::from_millis(150));
    }

    #[test]
    fn different_gpus_do_not_wait_for_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = GpuTurns::in_dir(dir.path(), "GPU-aaaa").unwrap();
        let mut b = GpuTurns::in_dir(dir.path(), "GPU-bbbb").unwrap();
        let _ta = a.take().unwrap();
        let _tb = b.take().unwrap();
        assert_eq!(b.waited(), Duration::ZERO);
    }

    #[test]
    fn the_fake_device_and_kt_gpu_turns_off_take_no_turns() {
        assert!(GpuTurns::for_gpu("GPU-fake").is_none());
    }

    #[test]
    fn a_uuid_cannot_name_a_file_outside_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let t = GpuTurns::in_dir(dir.path(), "../../etc/x").unwrap();
        assert_eq!(t.path.parent(), Some(dir.path()));
    }
}
