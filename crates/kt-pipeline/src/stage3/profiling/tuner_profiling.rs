//! How the real backend profiles a kernel: the profile cache first, else CUPTI in the tuner's worker
//! (`profiler_choice.rs`), else the launch `kt __profile-launch` runs, handed to the standby ncu started while
//! the kernel was tuned (`profile_standby.rs`) or to a new ncu.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::stage3::backend::tuner_backend::TunerBackend;
use crate::stage3::backend::tuning_backend::ProfileRun;
use crate::stage3::profiling::profile_cache::{ProfileCache, ProfileKey};
use crate::stage3::profiling::profile_launch::ProfileLaunch;
use crate::stage3::profiling::profiler_choice::{self, Profiler, cupti_failed, profiler};
use crate::stage3::tunable_code::TunableCode;

/// The longest one profile may take (ncu replays the kernel for each group of metrics).
const PROFILE_TIMEOUT: Duration = Duration::from_secs(300);

/// A profile about to be taken: by a standby that already started (with the launch to write to it), or
/// by ncu started now.
enum ProfileVia {
    Standby(kt_profile::RunningProfile, String),
    Direct(kt_profile::ProfileCommand),
}

impl ProfileVia {
    fn run(self) -> Result<kt_profile::KernelProfile, kt_profile::ProfileError> {
        match self {
            ProfileVia::Standby(run, line) => {
                tracing::debug!("profiling through the standby");
                run.finish(Some(line.as_bytes()), PROFILE_TIMEOUT)
            }
            ProfileVia::Direct(command) => command.run(PROFILE_TIMEOUT),
        }
    }
}

impl TunerBackend {
    /// The profile of `kernel` at `params` (the kernel of step `label`): from the profile cache, else
    /// through the waiting standby or a new ncu; a profile that cannot be taken says why.
    pub(in crate::stage3) async fn profile_kernel(
        &self,
        label: &str,
        kernel: &TunableCode,
        params: &BTreeMap<String, i64>,
    ) -> ProfileRun {
        let profiler = match profiler() {
            Ok(p) => p,
            Err(why) => return ProfileRun::skipped(why),
        };
        let started = std::time::Instant::now();
        let cached = self.profile_cache_entry(&profiler, kernel, params);
        if let Some((cache, key)) = &cached
            && let Some(profile) = cache.get(key)
        {
            tracing::info!(step = label, "using the cached profile of this kernel");
            return ProfileRun {
                profile: Some(profile),
                skipped: None,
                seconds: started.elapsed().as_secs_f64(),
                cached: true,
            };
        }
        let ncu = match profiler {
            Profiler::Cupti(lib) => match self.profile_with_cupti(label, kernel, params, lib).await
            {
                Ok(profile) => {
                    if let Some((cache, key)) = &cached {
                        cache.put(key, &profile);
                    }
                    return ProfileRun {
                        profile: Some(profile),
                        skipped: None,
                        seconds: started.elapsed().as_secs_f64(),
                        cached: false,
                    };
                }
                Err(why) => {
                    cupti_failed(&why);
                    match profiler_choice::profiler() {
                        Ok(Profiler::Ncu(ncu)) => ncu,
                        Ok(Profiler::Cupti(_)) => return ProfileRun::skipped(why),
                        Err(also) => return ProfileRun::skipped(format!("{why}; {also}")),
                    }
                }
            },
            Profiler::Ncu(ncu) => ncu,
        };
        self.profile_with_ncu(label, kernel, params, &ncu, started)
            .await
    }

    /// The profile through Nsight Compute: the waiting standby, or ncu started now.
    async fn profile_with_ncu(
        &self,
        label: &str,
        kernel: &TunableCode,
        params: &BTreeMap<String, i64>,
        ncu: &kt_profile::NcuPath,
        started: std::time::Instant,
    ) -> ProfileRun {
        let cached = self.profile_cache_entry(&Profiler::Ncu(ncu.clone()), kernel, params);
        let profile = match self
            .profile_launch(kernel, params)
            .and_then(|launch| self.profile_via(ncu, &launch))
        {
            Ok(p) => p,
            Err(why) => return ProfileRun::skipped(why),
        };
        tracing::info!(
            step = label,
            "profiling the best configuration with Nsight Compute"
        );
        let joined = tokio::task::spawn_blocking(move || profile.run()).await;
        let seconds = started.elapsed().as_secs_f64();
        match joined {
            Ok(Ok(profile)) => {
                if let Some((cache, key)) = &cached {
                    cache.put(key, &profile);
                }
                ProfileRun {
                    profile: Some(profile),
                    skipped: None,
                    seconds,
                    cached: false,
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(step = label, error = %e, "no profile");
                ProfileRun {
                    seconds,
                    ..ProfileRun::skipped(e.to_string())
                }
            }
            Err(e) => ProfileRun::skipped(format!("the profiling thread failed: {e}")),
        }
    }

    /// The profile of one launch of `kernel` at `params` on the first test, through CUPTI in the tuner's
    /// worker; the error says why CUPTI could not read counters.
    async fn profile_with_cupti(
        &self,
        label: &str,
        kernel: &TunableCode,
        params: &BTreeMap<String, i64>,
        cupti: std::path::PathBuf,
    ) -> Result<kt_profile::KernelProfile, String> {
        tracing::info!(step = label, "profiling the kernel with CUPTI");
        let session = self.session.clone();
        let config = self.config.clone();
        let tuner_kernel = self.to_tuner_kernel(kernel);
        let params = kt_tuner::Config::ints(params.iter().map(|(k, v)| (k.as_str(), *v)));
        let name = self.config.kernel.name.clone();
        let job = tokio::task::spawn_blocking(move || -> Result<_, String> {
            let mut guard = session.lock().unwrap_or_else(|p| p.into_inner());
            let s = crate::stage3::backend::session::open_session(&mut guard, &config)
                .map_err(|e| e.to_string())?;
            let test = s
                .tests
                .tests
                .first()
                .cloned()
                .ok_or("the tests are not loaded yet")?;
            s.tuner
                .count_launch(
                    &tuner_kernel,
                    &params,
                    &test,
                    kt_profile::SUMMARY_METRICS,
                    &cupti,
                )
                .map_err(|e| e.to_string())
        });
        let report = job
            .await
            .map_err(|e| format!("the profiling thread failed: {e}"))??;
        tracing::debug!(
            passes = report.passes,
            ms = report.ms,
            phases = ?report.phases_ms,
            "CUPTI profile taken"
        );
        Ok(kt_profile::KernelProfile::from_raw(
            &kt_profile::RawLaunch::from_metrics(&name, &report.values),
        ))
    }

    /// Whether the original kernel's profile at its default configuration is in the profile cache (the plan
    /// prompt will then not need a standby). Opens the tuner session and waits for its worker, which the
    /// baseline needs next anyway, so that the GPU and the first test are known.
    pub(in crate::stage3) async fn original_profile_cached(&self, original: &TunableCode) -> bool {
        let Ok(profiler) = profiler() else {
            return false;
        };
        let session = self.session.clone();
        let config = self.config.clone();
        let device = tokio::task::spawn_blocking(move || {
            let mut guard = session.lock().unwrap_or_else(|p| p.into_inner());
            let s = crate::stage3::backend::session::open_session(&mut guard, &config).ok()?;
            s.tuner.wait_for_device().ok()
        })
        .await
        .ok()
        .flatten();
        let Some(device) = device else {
            return false;
        };
        *self.gpu.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(crate::gpu_record::gpu_record(&device));
        let params: BTreeMap<String, i64> = original
            .parameters
            .iter()
            .filter_map(|p| p.values.first().map(|v| (p.name.clone(), *v)))
            .collect();
        self.profile_cache_entry(&profiler, original, &params)
            .is_some_and(|(cache, key)| cache.get(&key).is_some())
    }

    /// The launch `kt __profile-launch` profiles for `kernel` at `params` on the first test; the kernel's code
    /// is written under the tuning cache. The error says why there can be no profile.
    fn profile_launch(
        &self,
        kernel: &TunableCode,
        params: &BTreeMap<String, i64>,
    ) -> Result<ProfileLaunch, String> {
        let first = {
            let guard = self.session.lock().unwrap_or_else(|p| p.into_inner());
            guard
                .as_ref()
                .and_then(|s| s.tests.tests.first().map(|t| t.id.clone()))
        };
        let test = first.ok_or("the tests are not loaded yet")?;
        let dir = self.config.cache_dir.join("profiles");
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let file = dir.join(format!("{}.cu", kernel.content_hash()));
        std::fs::write(&file, &kernel.code)
            .map_err(|e| format!("writing {}: {e}", file.display()))?;
        Ok(ProfileLaunch {
            kernel_file: file,
            kernel: self.config.kernel.name.clone(),
            params: params.clone(),
            geometry: self.to_tuner_kernel(kernel).geometry,
            test: self.config.tests_dir.join(test),
            include: Vec::new(),
            cache_dir: Some(self.config.tuner_dir().to_path_buf()),
        })
    }

    /// How `launch` will be profiled: through the waiting standby when there is one (only the launch is
    /// left to do), else by starting ncu on `kt __profile-launch` now.
    fn profile_via(
        &self,
        ncu: &kt_profile::NcuPath,
        launch: &ProfileLaunch,
    ) -> Result<ProfileVia, String> {
        if let Some(run) = self.standby.take() {
            let line =
                serde_json::to_string(launch).map_err(|e| format!("the launch as JSON: {e}"))?;
            // what a user needs to take this profile again by hand (`kt __profile-launch --standby` reads it)
            tracing::debug!(launch = %line, "handing the launch to the waiting standby");
            return Ok(ProfileVia::Standby(run, line + "\n"));
        }
        // kt's own command line: this executable, or the host's (kt's Python module)
        let kt = kt_tuner::host::self_command::self_command().map_err(|e| e.to_string())?;
        Ok(ProfileVia::Direct(
            kt_profile::ProfileCommand::new(ncu.clone(), launch.kernel.clone(), kt.program)
                .args(kt.args)
                .args(launch.args())
                .metrics(kt_profile::SUMMARY_METRICS),
        ))
    }

    /// The profile cache and this profile's key, when the cache is on and the GPU is known (after a tuning).
    fn profile_cache_entry(
        &self,
        profiler: &Profiler,
        kernel: &TunableCode,
        params: &BTreeMap<String, i64>,
    ) -> Option<(ProfileCache, ProfileKey)> {
        let dir = self.config.profile_cache.clone()?;
        let gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
        let test = {
            let guard = self.session.lock().unwrap_or_else(|p| p.into_inner());
            guard.as_ref()?.tests.tests.first()?.id.clone()
        };
        let key = ProfileKey {
            kernel_hash: kernel.content_hash(),
            params: params.clone(),
            geometry: serde_json::to_string(&self.to_tuner_kernel(kernel).geometry).ok()?,
            test,
            gpu: if gpu.uuid.is_empty() {
                gpu.name
            } else {
                gpu.uuid
            },
            driver: gpu.driver_version,
            ncu: profiler.identity(),
        };
        Some((ProfileCache::new(dir), key))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::stage3::backend::tuner_backend::tests::small_backend;

    #[test]
    fn a_profile_before_the_tests_are_loaded_says_so_and_writes_nothing_to_launch() {
        let dir = tempfile::tempdir().unwrap();
        let (backend, original) = small_backend(dir.path());
        let err = backend
            .profile_launch(&original, &BTreeMap::new())
            .unwrap_err();
        assert!(err.contains("tests are not loaded"), "{err}");
        assert!(!dir.path().join("tuning/profiles").exists());
    }

    #[test]
    fn without_a_known_gpu_there_is_no_cache_key() {
        let dir = tempfile::tempdir().unwrap();
        let (backend, original) = small_backend(dir.path());
        let ncu = Profiler::Ncu(kt_profile::NcuPath("/nonexistent/ncu".into()));
        assert!(
            backend
                .profile_cache_entry(&ncu, &original, &BTreeMap::new())
                .is_none()
        );
    }
}
