//! What can go wrong while profiling, each saying what to do.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "ncu printed no raw CSV report (no line starting with \"ID\"); its output ended with:\n{excerpt}"
    )]
    NoReport { excerpt: String },

    #[error(
        "ncu profiled no launch of kernel `{kernel}`: check the kernel's name (ncu matched it as {regex}) and \
         that the program launches it; ncu's output ended with:\n{excerpt}"
    )]
    NoKernelProfiled {
        kernel: String,
        regex: String,
        excerpt: String,
    },

    #[error(
        "the GPU's performance counters are restricted to administrators (ERR_NVGPUCTRPERM): run kt as root, \
         or load the NVIDIA driver with NVreg_RestrictProfilingToAdminUsers=0 to allow profiles"
    )]
    CountersRestricted,

    #[error("could not run ncu ({path}): {source}")]
    Spawn {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("ncu did not finish within {seconds} s profiling kernel `{kernel}`; it was stopped")]
    Timeout { kernel: String, seconds: u64 },

    #[error("could not {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },

    #[error("could not render the profile summary: {0}")]
    Template(#[from] minijinja::Error),

    #[error("could not draw the roofline: {0}")]
    Plot(String),

    #[error("the roofline needs positive peaks and points (got {0})")]
    BadRoofline(String),
}
