//! One configuration of a kernel compiled exactly as the tuner compiles it — the same program (unit,
//! defines, include directories, built-in headers, name expression) for a given architecture — with no GPU
//! and no worker: `kt tune --compile-only`, and the real-world benchmark's CPU-side check.

use std::path::Path;

use crate::compile::headers;
use crate::compile::nvrtc::{CompileFailure, Compiled};
use crate::error::TunerError;
use crate::model::expr::Bindings;
use crate::model::space::Config;
use crate::session::{TunableKernel, kernel_program};

/// Compiles `kernel` at `config` for `arch` with NVRTC and, where NVRTC fails and `nvcc` is given, with
/// nvcc (as the tuner's compile pool does).
pub fn compile_configuration(
    kernel: &TunableKernel,
    config: &Config,
    scalars: &Bindings,
    arch: (i32, i32),
    nvcc: Option<&Path>,
) -> Result<Result<Compiled, CompileFailure>, TunerError> {
    let (program, _) = kernel_program(
        kernel,
        config,
        scalars,
        false,
        arch,
        &headers::cuda_include_dirs(),
    )?;
    crate::compile::nvcc::compile_with_fallback(&program, nvcc)
}

/// `sm_90` or `90` → (9, 0).
pub fn parse_arch(text: &str) -> Option<(i32, i32)> {
    let digits = text
        .trim()
        .trim_start_matches("sm_")
        .trim_start_matches("compute_");
    if digits.len() < 2 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::space::TunableParam;

    #[test]
    fn architectures_are_read_as_nvcc_spells_them() {
        assert_eq!(parse_arch("sm_90"), Some((9, 0)));
        assert_eq!(parse_arch("120"), Some((12, 0)));
        assert_eq!(parse_arch("sm_9"), None);
        assert_eq!(parse_arch("gpu"), None);
    }

    #[test]
    #[ignore = "needs NVRTC"]
    fn a_kernel_compiles_for_an_architecture_without_a_gpu() {
        let mut k = TunableKernel::new(
            "__global__ void add(float *x, int n) { int i = blockIdx.x * block_size_x + threadIdx.x; if (i < n) x[i] += M_PI; }",
            "add",
            vec!["n".into()],
        );
        k.params = vec![TunableParam::new("block_size_x", [128])];
        let config = Config::ints([("block_size_x", 128)]);
        let scalars: Bindings = [("n".to_string(), 1000.0)].into_iter().collect();
        let c = compile_configuration(&k, &config, &scalars, (9, 0), None)
            .unwrap()
            .unwrap();
        assert!(!c.cubin.is_empty());
    }
}
