//! Export to Kernel Tuner 1.5: its cache file (so its tools, and its simulation mode, read kt's results) and a
//! Python script that tunes the same space with it, written together into one directory with the kernel
//! source and the test's arrays, so the directory runs wherever it is copied. `import` reads such caches
//! back (`kt tune --kt-cache`). kt's own results cache, appended a line per measured configuration, is
//! `cache`.
//!
//! What each time means is stated in the files: Kernel Tuner's `time` is the mean of one launch of one stated
//! test (`times` holds those launches); kt's objective, the sum over all tests of each test's median, is in
//! `kt_objective_ms`.

pub mod cache;
mod cache_file;
mod cmem;
pub mod import;
mod kernel_tuner;
mod python;
mod script;

pub use cache_file::{Ordered, marker, verdict_detail};
pub use kernel_tuner::{
    FailedConfig, KernelTunerExport, failed_configurations, objective_basis, script_problem_size,
};
