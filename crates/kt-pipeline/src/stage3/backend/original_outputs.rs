//! After the baseline, the original kernel's outputs become the tests' expected outputs: Stage 2's late
//! reference run (`stage2/expected_outputs.rs`) on the backend's open session, on the blocking pool.

use crate::stage2::expected_outputs::keep_original_outputs;
use crate::stage3::backend::session::open_session;
use crate::stage3::backend::tuner_backend::TunerBackend;
use crate::stage3::backend::tuning_job::first_values;
use crate::stage3::tunable_code::TunableCode;

impl TunerBackend {
    /// After the baseline: the original kernel's outputs become the tests' expected outputs
    /// (`stage2/expected_outputs.rs`); a failure is logged and leaves the check against the original in place.
    pub(in crate::stage3) async fn keep_expected_outputs(
        &self,
        original: &TunableCode,
        times_ms: Vec<f64>,
    ) {
        let session = self.session.clone();
        let config = self.config.clone();
        let kernel = self.to_tuner_kernel(original);
        let values = first_values(original);
        let job = tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let mut guard = session.lock().unwrap_or_else(|p| p.into_inner());
            let kept = open_session(&mut guard, &config)
                .map_err(|e| e.to_string())
                .and_then(|s| {
                    keep_original_outputs(
                        &mut s.tuner,
                        &mut s.tests,
                        &config.run_tests(),
                        &kernel,
                        &values,
                        &times_ms,
                    )
                });
            (kept, started.elapsed().as_secs_f64() * 1e3)
        });
        match job.await {
            Ok((Ok(true), ms)) => tracing::debug!(
                ms,
                "the original kernel's outputs are now the tests' expected outputs"
            ),
            Ok((Ok(false), _)) => {}
            Ok((Err(why), _)) => tracing::warn!(
                reason = %why,
                "the tests keep no expected outputs; each tuning checks its fastest configurations against the original kernel instead"
            ),
            Err(e) => tracing::warn!(error = %e, "the thread keeping expected outputs failed"),
        }
    }
}
