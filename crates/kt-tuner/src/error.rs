//! The one error type of kt-tuner. Per-config failures (a kernel that does not compile, hangs or writes
//! wrong values) are *not* errors: they are `Verdict`s inside a successful `TuneResult`, because one bad
//! configuration must never abort a tuning run. Errors are what stops the whole run.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum TunerError {
    #[error(
        "no CUDA driver found (libcuda.so): run on a machine with an NVIDIA GPU and driver ({0})"
    )]
    NoDriver(String),
    #[error(
        "NVRTC not found (libnvrtc.so): install the CUDA toolkit's NVRTC and make it visible to the loader (LD_LIBRARY_PATH)"
    )]
    NoNvrtc,
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    #[error("CUDA call failed: {context}: {message}")]
    Cuda { context: String, message: String },
    #[error("NVRTC failed outside the compilation itself: {0}")]
    Nvrtc(String),
    #[error("invalid expression `{expr}`: {message}")]
    Expression { expr: String, message: String },
    #[error("invalid search space: {0}")]
    Space(String),
    #[error("invalid kernel arguments: {0}")]
    Arguments(String),
    #[error("cannot read {path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("kernel source problem: {0}")]
    Source(String),
    #[error("the GPU worker failed: {0}")]
    Worker(String),
    /// No hardware counters for a profiled launch (CUPTI missing, no permission to read counters, a GPU it
    /// does not support); the worker is still usable.
    #[error("no hardware counters: {0}")]
    Counters(String),
    #[error(
        "the reference launch failed on test {test}: {reason}; expected outputs cannot be computed, fix the reference kernel or its inputs"
    )]
    Reference { test: String, reason: String },
    /// The reference kernel faulted on the GPU (an illegal address, a misaligned access, a trap): most
    /// often an input sized or indexed wrong, rarely the kernel itself.
    #[error(
        "the reference launch failed on test {test}: {reason}; expected outputs cannot be computed, fix the reference kernel or its inputs"
    )]
    ReferenceFault { test: String, reason: String },
    /// The GPU had no room for a test's arrays (CUDA_ERROR_OUT_OF_MEMORY): most often another process holds
    /// its memory. Not the kernel's fault, so it is no reference or argument error.
    #[error(
        "the GPU has no room for test {test}: {what} (another process may hold its memory: `nvidia-smi` lists them; run again when it is free)"
    )]
    GpuMemory { test: String, what: String },
    #[error("with the sidecar {}", path.display())]
    InSidecar {
        path: PathBuf,
        #[source]
        source: Box<TunerError>,
    },
    #[error(transparent)]
    Sidecar(kt_cuda::CudaError),
    #[error("--template {name}=…: kernel `{kernel}` has no template parameter `{name}` (it has: {})", known.join(", "))]
    UnknownTemplateParam {
        kernel: String,
        name: String,
        known: Vec<String>,
    },
    #[error("{0} (a type parameter: --template NAME=TYPE)")]
    TemplateArgs(Box<TunerError>),
    #[error("no sidecar next to the kernel, so inputs cannot be generated: give --tests-dir DIR")]
    NoInputs,
    #[error(
        "no problem size: give --problem-size (names or expressions over scalar arguments, x first)"
    )]
    NoProblemSize,
    #[error("tuning cache {path}: {message}")]
    Cache { path: PathBuf, message: String },
    #[error("Kernel Tuner file {path}: {message}")]
    KernelTuner { path: PathBuf, message: String },
}

/// The driver's name for an allocation that found no room.
const OUT_OF_MEMORY: &str = "CUDA_ERROR_OUT_OF_MEMORY";

impl TunerError {
    /// `message`, the worker's account of a failure on `test`, as a `GpuMemory` error when the device ran out
    /// of memory, otherwise as `otherwise` makes it.
    pub fn on_test(
        test: &str,
        message: String,
        otherwise: impl FnOnce(String) -> TunerError,
    ) -> Self {
        if message.contains(OUT_OF_MEMORY) {
            TunerError::GpuMemory {
                test: test.to_string(),
                what: message,
            }
        } else {
            otherwise(message)
        }
    }

    /// The test the GPU had no room for, if that is what stopped the run.
    pub fn no_room_for(&self) -> Option<&str> {
        match self {
            TunerError::GpuMemory { test, .. } => Some(test),
            TunerError::InSidecar { source, .. } => source.no_room_for(),
            _ => None,
        }
    }
}

/// A tests-format record the tuner cannot use: a bad dtype or scalar is a bad argument, a bad file cannot be read.
impl From<kt_record::RecordError> for TunerError {
    fn from(e: kt_record::RecordError) -> Self {
        match e {
            kt_record::RecordError::Dtype(message) => TunerError::Arguments(message),
            kt_record::RecordError::Npy { path, message } => TunerError::Io { path, message },
            kt_record::RecordError::Io { path, source, .. } => TunerError::io(path, source),
            kt_record::RecordError::BadFile { path, message, .. } => TunerError::io(path, message),
            // A full disk keeps its whole message (bytes needed and free).
            kt_record::RecordError::DiskFull { ref path, .. } => TunerError::io(path.clone(), &e),
        }
    }
}

impl TunerError {
    /// Whether a reference launch faulted on the GPU (as opposed to not compiling, being refused, or
    /// disagreeing with expected values): the one failure that points at the inputs.
    pub fn is_kernel_fault(&self) -> bool {
        matches!(self, TunerError::ReferenceFault { .. })
    }

    pub(crate) fn io(path: impl Into<PathBuf>, err: impl std::fmt::Display) -> Self {
        TunerError::Io {
            path: path.into(),
            message: err.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_allocation_without_room_is_named_as_such_not_as_the_kernels_fault() {
        let full = TunerError::on_test(
            "bench",
            "allocating a (1073741824 bytes): CUDA_ERROR_OUT_OF_MEMORY".into(),
            TunerError::Arguments,
        );
        assert_eq!(full.no_room_for(), Some("bench"));
        let text = full.to_string();
        assert!(
            text.starts_with("the GPU has no room for test bench: allocating a"),
            "{text}"
        );
        assert!(
            text.contains("nvidia-smi") && !text.contains("invalid kernel arguments"),
            "{text}"
        );
        let other = TunerError::on_test("bench", "CUDA_ERROR_ILLEGAL_ADDRESS".into(), |reason| {
            TunerError::Reference {
                test: "bench".into(),
                reason,
            }
        });
        assert!(matches!(other, TunerError::Reference { .. }));
        assert_eq!(other.no_room_for(), None);
        let in_sidecar = TunerError::InSidecar {
            path: "k.toml".into(),
            source: Box::new(full),
        };
        assert_eq!(in_sidecar.no_room_for(), Some("bench"));
    }
}
