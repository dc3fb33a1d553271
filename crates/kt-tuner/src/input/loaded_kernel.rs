//! What loading a kernel gives: the kernel with its tunable description, kept apart from `load` so that the
//! steps that fill it in (`host_defaults`) and the loader use it without importing each other.

use std::path::PathBuf;

use crate::model::args::{ParamSpec, SuiteInputs};
use crate::model::tunable_kernel::TunableKernel;

/// The kernel, its parameter specs and how to make inputs: from the sidecar when there is one.
#[derive(Debug, Clone)]
pub struct LoadedKernel {
    /// Compiles the kernel's own unit (no host code), not the user's whole file.
    pub kernel: TunableKernel,
    pub params: Vec<ParamSpec>,
    pub inputs: Option<SuiteInputs>,
    pub default_block: Option<[i64; 3]>,
    pub dims: usize,
    /// The parsed kernel (signature, template parameters).
    pub parsed: kt_cuda::Kernel,
    /// The sidecar the description came from.
    pub sidecar: Option<PathBuf>,
    /// Host code of the file left out of what is compiled (`main`, host functions): names, in order.
    pub host_code_left_out: Vec<String>,
    /// One line for the user when host code was left out.
    pub host_code_note: Option<String>,
    /// The template argument lists the file's own host code launches the kernel with.
    pub instantiations: Vec<Vec<String>>,
    /// What was taken from the file's own launch (block, grid, shared memory), a line each with where.
    pub host_launch_lines: Vec<String>,
}
