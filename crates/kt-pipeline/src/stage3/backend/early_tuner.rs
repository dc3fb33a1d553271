//! The tuner started early. Starting kt-tuner (its worker process and that worker's CUDA context, the
//! driver and NVRTC here) takes most of a second, and Stage 3 is the first to need it. `kt transform` knows
//! much earlier that the machine has a GPU, so it starts the tuner on a thread while Stages 1 and 2 run
//! (the LLM's answers, the sandboxed generators), and the backend takes it over on its first call. The
//! tuner starts no kernel until it is asked to, so nothing it does competes with a measurement. Where ncu
//! is installed, the first profile's standby (`profile_standby.rs`) starts at the same time: the naive
//! kernel is profiled right after the baseline, too soon for a standby started by the baseline itself.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use kt_tuner::TunerError;
use kt_tuner::session::{Tuner, TunerConfig};

use crate::stage3::profiling::profile_standby::ProfileStandby;

type Starting = (PathBuf, JoinHandle<Result<Tuner, TunerError>>);

/// A tuner being started for a run's tuning cache (or nothing), and the profile standby the backend uses.
#[derive(Clone, Default)]
pub struct EarlyTuner {
    tuner: Arc<Mutex<Option<Starting>>>,
    pub(in crate::stage3) standby: Arc<ProfileStandby>,
}

impl std::fmt::Debug for EarlyTuner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let slot = self.tuner.lock().unwrap_or_else(|p| p.into_inner());
        f.debug_struct("EarlyTuner")
            .field("cache_dir", &slot.as_ref().map(|(dir, _)| dir))
            .finish()
    }
}

/// A standby for `kernel` in `standby` where profiles are taken with ncu, unless one is waiting there.
fn ensure_standby(standby: &ProfileStandby, cache_dir: &Path, kernel: &str) {
    if crate::stage3::profiling::profiler_choice::profiles_with_ncu()
        && let Some(ncu) = kt_profile::ncu_once()
        && std::fs::create_dir_all(cache_dir).is_ok()
    {
        standby.ensure(ncu, kernel, cache_dir);
    }
}

/// The tuner configuration of a run's backend with its cache in `cache_dir`.
pub(in crate::stage3) fn tuner_config(cache_dir: &Path) -> TunerConfig {
    TunerConfig {
        cache_dir: Some(cache_dir.to_path_buf()),
        ..TunerConfig::default()
    }
}

impl EarlyTuner {
    /// Only the first profile's standby for `kernel`, with the tuner's cache in `cache_dir`, started on a
    /// thread (finding ncu may take a moment): what `kt transform` starts first of all, before the run
    /// exists, since the plan prompt waits for the naive kernel's profile right after the baseline.
    pub fn with_standby(cache_dir: PathBuf, kernel: &str) -> Self {
        let early = Self::default();
        let standby = early.standby.clone();
        let kernel = kernel.to_string();
        std::thread::spawn(move || ensure_standby(&standby, &cache_dir, &kernel));
        early
    }

    /// Starts a tuner with its cache in `cache_dir` (the run's `tuning/`) on a thread, and, with
    /// `standby_profile` (the strategy takes profiles), CUPTI started in its worker where profiles are taken
    /// with CUPTI, else a profile standby for `kernel` where ncu is installed (unless one is waiting).
    pub fn start(self, cache_dir: PathBuf, kernel: &str, standby_profile: bool) -> Self {
        let dir = cache_dir.clone();
        let handle = std::thread::spawn(move || {
            std::fs::create_dir_all(&dir)
                .map_err(|e| TunerError::Worker(format!("creating {}: {e}", dir.display())))?;
            let mut tuner = Tuner::new(tuner_config(&dir))?;
            if standby_profile {
                crate::stage3::profiling::profiler_choice::prepare_counters(&mut tuner);
            }
            Ok(tuner)
        });
        if standby_profile {
            ensure_standby(&self.standby, &cache_dir, kernel);
        }
        *self.tuner.lock().unwrap_or_else(|p| p.into_inner()) = Some((cache_dir, handle));
        self
    }

    /// The early tuner, once started, when it was started for `cache_dir`; None when there is none (or
    /// it was for another cache, and is then dropped with its worker).
    pub(in crate::stage3) fn take(&self, cache_dir: &Path) -> Option<Result<Tuner, TunerError>> {
        let (dir, handle) = self
            .tuner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()?;
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
        let early = EarlyTuner::default().start(dir.path().join("tuning"), "k", true);
        assert!(early.take(&dir.path().join("tuning")).is_some());
        assert!(early.take(&dir.path().join("tuning")).is_none());
        assert!(dir.path().join("tuning").is_dir());
    }

    #[test]
    fn a_tuner_started_for_another_cache_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let early = EarlyTuner::default().start(dir.path().join("a"), "k", true);
        assert!(early.take(&dir.path().join("b")).is_none());
        assert!(
            early.take(&dir.path().join("a")).is_none(),
            "and it is gone"
        );
    }
}
