//! What `kt tune` and `kt verify` read before the GPU is touched, and the rules that decide it: the kernel and
//! its sidecar (a per-kernel `NAME.KERNEL.toml` first), its template parameters (given, tuned, or the values
//! the file's own launches instantiate), a candidate's launch when it has no sidecar of its own, the space to
//! tune with the restrictions kt reads from the code, and the tests (generated from the sidecar, with arrays
//! sized over the configurations that will run). Beside them: the suite's kernels (`suite`), `kt verify`'s
//! default tests (`default_tests`), restrictions read from the code (`derived`), a candidate's arguments
//! matched by name (`arg_map`) and a Kernel Tuner call as plain data (`tune_call`).
//!
//! It does not parse command lines (kt-cli does) and it needs no GPU: a space is counted, a restriction
//! checked and tests made on any machine.

pub mod arg_map;
mod candidate;
pub mod default_tests;
pub mod derived;
mod host_defaults;
mod instances;
mod load;
mod loaded_kernel;
pub mod suite;
mod tests_for;
pub mod tune_call;
mod tune_space;

pub use candidate::{CandidateSpec, load_candidate, reference_kernel_name};
pub use instances::{FromInstances, from_instances, single_from_instances};
pub use load::{LoadedKernel, SidecarChoice, load_kernel, load_kernel_with};
pub use tests_for::{TestSource, load_tests};
pub use tune_space::{SpaceRequest, TuneSpace};
