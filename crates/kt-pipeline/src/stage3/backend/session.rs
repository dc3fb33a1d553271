//! The tuner session of the real backend, opened on first use: the tuner (and its worker process) and the
//! run's tests, held together behind the backend's mutex.

use kt_tuner::session::Tuner;
use kt_tuner::{ParamSpec, TestSet, TunerError};

use crate::stage3::backend::backend_config::TunerBackendConfig;
use crate::stage3::backend::early_tuner::tuner_config;
use crate::stage3::backend::tuning_backend::BackendError;

pub(in crate::stage3) struct Session {
    pub(in crate::stage3) tuner: Tuner,
    pub(in crate::stage3) tests: TestSet,
}

/// A tuner failure as the backend reports it: no driver, NVRTC or GPU is the GPU being unavailable.
pub(in crate::stage3) fn backend_error(e: TunerError) -> BackendError {
    match e {
        TunerError::NoDriver(_) | TunerError::NoNvrtc | TunerError::NoGpu(_) => {
            BackendError::GpuUnavailable {
                detail: e.to_string(),
            }
        }
        other => BackendError::Failed {
            detail: other.to_string(),
        },
    }
}

/// The tuner session, started on first use: the tuner (and its worker) and the run's tests.
pub(in crate::stage3) fn open_session<'a>(
    guard: &'a mut Option<Session>,
    config: &TunerBackendConfig,
) -> Result<&'a mut Session, BackendError> {
    if guard.is_none() {
        for dir in [&config.cache_dir, config.tuner_dir()] {
            std::fs::create_dir_all(dir).map_err(|e| BackendError::Failed {
                detail: format!("creating {}: {e}", dir.display()),
            })?;
        }
        let tuner = match config.early_tuner.take(config.tuner_dir()) {
            Some(started) => started,
            None => Tuner::new(tuner_config(config.tuner_dir())).map(|mut tuner| {
                if config.takes_profiles {
                    crate::stage3::profiling::profiler_choice::prepare_counters(&mut tuner);
                }
                tuner
            }),
        }
        .map_err(backend_error)?;
        let params = ParamSpec::from_kernel(&config.kernel);
        let tests =
            TestSet::load_dir(&config.tests_dir, &params, &config.tolerances).map_err(|e| {
                BackendError::Failed {
                    detail: format!("loading the tests in {}: {e}", config.tests_dir.display()),
                }
            })?;
        *guard = Some(Session { tuner, tests });
    }
    guard.as_mut().ok_or_else(|| BackendError::Failed {
        detail: "the tuner session was not created".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_driver_nvrtc_or_gpu_is_the_gpu_unavailable_and_anything_else_a_failure() {
        for missing in [
            TunerError::NoDriver("libcuda.so not found".into()),
            TunerError::NoNvrtc,
            TunerError::NoGpu("device 1 requested".into()),
        ] {
            assert!(
                matches!(backend_error(missing), BackendError::GpuUnavailable { .. }),
                "a machine without the GPU side stops Stage 3 as needing a GPU"
            );
        }
        assert!(matches!(
            backend_error(TunerError::Space("no configuration".into())),
            BackendError::Failed { .. }
        ));
    }
}
