//! [`BackendError`]: why the GPU side of Stage 3 could not do its job at all (as opposed to a candidate
//! failing, which is a verdict). It lives beside [`super::PipelineError`], which carries it, so the crate's error
//! needs nothing from the stages above it.

use serde::{Deserialize, Serialize};

/// Why the backend could not do its job at all (as opposed to a candidate
/// failing, which is a verdict of the tuning backend).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub enum BackendError {
    /// No GPU, driver or NVRTC: the run stops here and can be resumed on a machine that has them.
    #[error("a CUDA GPU is needed from here on: {detail}")]
    GpuUnavailable { detail: String },
    /// Anything else the tuner reports (bad tests directory, worker failure that is not the candidate's fault).
    #[error("tuning failed: {detail}")]
    Failed { detail: String },
}

#[cfg(test)]
mod tests {
    use super::BackendError;

    #[test]
    fn a_missing_gpu_says_one_is_needed() {
        let e = BackendError::GpuUnavailable {
            detail: "no driver".into(),
        };
        assert_eq!(
            e.to_string(),
            "a CUDA GPU is needed from here on: no driver"
        );
    }
}
