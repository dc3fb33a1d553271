//! The tuner started early. Starting kt-tuner (its worker process and that worker's CUDA context, the
//! driver and NVRTC here) takes most of a second, and Stage 3 is the first to need it. `kt transform` knows
//! much earlier that the machine has a GPU, so it starts the tuner on a thread while Stages 1 and 2 run
//! (the LLM's answers, the sandboxed generators), and the backend takes it over on its first call. The
//! tuner starts no kernel until it is asked to, so nothing it does competes with a measurement.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use kt_tuner::TunerError;
use kt_tuner::session::{Tuner, TunerConfig};

type Starting = (PathBuf, JoinHandle<Result<Tuner, TunerError>>);

/// A tuner being started for a run's tuning cache, or nothing.
#[derive(Clone, Default)]
pub struct EarlyTuner(Arc<Mutex<Option<Starting>>>);

impl std::fmt::Debug for EarlyTuner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f.debug_struct("EarlyTuner")
            .field("cache_dir", &slot.as_ref().map(|(dir, _)| dir))
            .finish()
    }
}

/// The tuner configuration of a run's backend with its cache in `cache_dir`.
pub(super) fn tuner_config(cache_dir: &Path) -> TunerConfig {
    TunerConfig {
        cache_dir: Some(cache_dir.to_path_buf()),
        ..TunerConfig::default()
    }
}

impl EarlyTuner {
    /// Starts a tuner with its cache in `cache_dir` (the run's `tuning/`) on a thread.
    pub fn start(cache_dir: PathBuf) -> Self {
        let dir = cache_dir.clone();
        let handle = std::thread::spawn(move || {
            std::fs::create_dir_all(&dir)
                .map_err(|e| TunerError::Worker(format!("creating {}: {e}", dir.display())))?;
            Tuner::new(tuner_config(&dir))
        });
        Self(Arc::new(Mutex::new(Some((cache_dir, handle)))))
    }

    /// The early tuner, once started, when it was started for `cache_dir`; None when there is none (or
    /// it was for another cache, and is then dropped with its worker).
    pub(super) fn take(&self, cache_dir: &Path) -> Option<Result<Tuner, TunerError>> {
        let (dir, handle) = self.0.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        let started = handle.join().unwrap_or_else(|_| {
            Err(TunerError::Worker(
                "the thread starting the tuner panicked".into(),
            ))
        });
        (dir == cache_dir).then_some(started)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nothing_started_gives_nothing_and_a_start_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        assert!(EarlyTuner::default().take(dir.path()).is_none());
        // Without a GPU (or NVRTC) here the start fails; what matters is that its outcome is handed over
        // once, to the backend of the same cache, and that the cache directory was made.
        let early = EarlyTuner::start(dir.path().join("tuning"));
        assert!(early.take(&dir.path().join("tuning")).is_some());
        assert!(early.take(&dir.path().join("tuning")).is_none());
        assert!(dir.path().join("tuning").is_dir());
    }

    #[test]
    fn a_tuner_started_for_another_cache_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let early = EarlyTuner::start(dir.path().join("a"));
        assert!(early.take(&dir.path().join("b")).is_none());
        assert!(
            early.take(&dir.path().join("a")).is_none(),
            "and it is gone"
        );
    }
}
