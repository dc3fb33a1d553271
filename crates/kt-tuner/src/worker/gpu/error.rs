//! What goes wrong on the GPU side of the worker. The parent reads it as the text of a reply
//! (`Reply::Error`, `Reply::LoadFailed`, a run's invalid or crashed status), so each message says what the
//! worker was doing and the driver's or CUPTI's own name for the failure.

use super::counters::CuptiError;
use crate::worker::protocol::KERNEL_NOT_FOUND;

#[derive(Debug, Clone, thiserror::Error)]
pub enum GpuError {
    /// A CUDA driver call failed; `code` is the driver's result code.
    #[error("{context}: {code}")]
    Cuda { context: String, code: String },
    #[error("libcuda.so not found: this machine has no NVIDIA driver")]
    NoDriver,
    /// A request that needs the context came before `Hello` made it.
    #[error("no context")]
    NoContext,
    /// A loaded module without the kernel the parent named (its name expression or `extern "C"` is off).
    #[error("{}: the module has no symbol `{kernel}` ({cause})", KERNEL_NOT_FOUND)]
    KernelNotFound {
        kernel: String,
        cause: Box<GpuError>,
    },
    /// Something a request names that the worker does not hold: a module, a test, an array, a utility kernel.
    #[error("{0}")]
    Missing(String),
    /// A request the worker cannot carry out as asked: a name with a NUL, a shape that does not fit.
    #[error("{0}")]
    Refused(String),
    /// Reading an input file or writing an output file.
    #[error("{0}")]
    Io(String),
    #[error(transparent)]
    Cupti(#[from] CuptiError),
}

/// A driver call's failure, with what the worker was doing.
pub(super) fn cuda(context: &str, e: cudarc::driver::DriverError) -> GpuError {
    GpuError::Cuda {
        context: context.to_string(),
        code: format!("{:?}", e.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_kernel_keeps_the_marker_the_parent_reads() {
        let e = GpuError::KernelNotFound {
            kernel: "k".into(),
            cause: Box::new(GpuError::Cuda {
                context: "cuModuleGetFunction".into(),
                code: "CUDA_ERROR_NOT_FOUND".into(),
            }),
        };
        let text = e.to_string();
        assert!(text.starts_with(KERNEL_NOT_FOUND), "{text}");
        assert!(
            text.ends_with("no symbol `k` (cuModuleGetFunction: CUDA_ERROR_NOT_FOUND)"),
            "{text}"
        );
    }
}
