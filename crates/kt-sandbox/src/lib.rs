//! Running untrusted programs: the Python/numpy input generators an LLM writes, and the tuner's long-lived GPU
//! worker.
//!
//! A [`Sandbox`] runs a program under a [`Policy`]: its own empty work directory, a scrubbed environment (no API
//! keys, no proxies), a wall-clock timeout that kills its whole process group, rlimits on CPU time, address space,
//! file size, open files and (when kt is root, by switching to a fresh unprivileged uid) processes, a cap on
//! captured output, and no network (a network namespace). What works depends on the machine; [`Protections`]
//! detects it once and says so (`kt doctor`). A run ends in a typed [`Outcome`] that names the limit that stopped
//! it. On top of that, [`python`] finds or provisions a Python with numpy, and [`generator`] runs an LLM-written
//! generator through kt's own harness and writes a content-addressed test directory (see the tests format).
//!
//! With a mount namespace the program sees the host read-only and none of the user's home, /root, sources or runs
//! (`view.rs`); a small seccomp filter refuses Unix sockets, the kernel keyring and io_uring (`syscall_filter.rs`).
//! The memory of a run's whole process tree has one cap: a cgroup of the run's own where kt can make one
//! (`memory_cgroup.rs`), else measured (`tree.rs`).
//!
//! What it deliberately does not do: it is no defence against a determined attacker with a kernel exploit (the
//! filter refuses a few system calls, it is no allow-list), it knows nothing of CUDA kernels (the pipeline maps kernel parameters to
//! [`generator::ArgSpec`]), and it does not talk to an LLM. All `unsafe` code lives in `confine/`.

// Tests may unwrap (COMMON rules); library code may not.
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod cache_dir;
mod capture;
mod child;
mod confine;
pub mod disk_quota;
pub mod environment;
mod error;
pub mod generator;
mod identity;
#[cfg(test)]
mod isolation_tests;
mod live;
mod memory_cgroup;
mod one_shot;
mod optin;
mod outcome;
mod policy;
mod prepare;
mod protections;
pub mod python;
mod sandbox;
mod spawn;
mod syscall_filter;
mod tree;
mod view;
mod workdir;

pub use cache_dir::kt_cache_dir;
pub use child::SandboxedChild;
pub use error::SandboxError;
pub use generator::{ArgSpec, GeneratedTest, GeneratorError, GeneratorSpec, run_generator};
pub use live::stop_all;
pub use memory_cgroup::memory_cgroup;
pub use optin::{SandboxSettings, allow_unsandboxed_in, settings_in};
pub use outcome::{Ending, Limit, Outcome};
pub use policy::{
    DEFAULT_DISK_QUOTA, EnvPolicy, NetworkIsolation, Policy, StderrMode, UserPolicy,
    default_hidden_paths,
};
pub use protections::{ProtectionLine, Protections, detect_protections};
pub use python::{PythonError, PythonRuntime};
pub use sandbox::Sandbox;
pub use spawn::SpawnOptions;
pub use workdir::{Workdir, remove_own_workdirs, remove_stale_workdirs};
