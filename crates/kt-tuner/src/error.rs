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
