//! A kernel of the naive-kernels suite (a `.cu` file and its sidecar `.toml`) turned into what tuning needs:
//! a `TunableKernel` (problem size, flops/bytes, default launch) and the description of its inputs.

use crate::args::{ParamSpec, SuiteInputs};
use crate::error::TunerError;
use crate::session::setup::{TunableKernel, config_from_block};
use crate::space::TunableParam;

#[derive(Debug, Clone)]
pub struct SuiteKernel {
    pub kernel: TunableKernel,
    pub inputs: SuiteInputs,
    pub params: Vec<ParamSpec>,
    pub default_block: [i64; 3],
}

impl SuiteKernel {
    /// Parses `source`, picks the sidecar's kernel (or `kernel_name`), and checks the sidecar against it.
    pub fn new(
        source: &str,
        sidecar: &kt_cuda::Sidecar,
        kernel_name: Option<&str>,
    ) -> Result<Self, TunerError> {
        let parsed = kt_cuda::parse(source).map_err(|e| TunerError::Source(e.to_string()))?;
        let k = parsed
            .select_kernel(Some(kernel_name.unwrap_or(&sidecar.kernel)))
            .map_err(|e| TunerError::Source(e.to_string()))?;
        if let Err(problems) = sidecar.check_against(k) {
            return Err(TunerError::Source(format!(
                "the sidecar disagrees with kernel `{}`: {problems:?}",
                k.name
            )));
        }
        let mut kernel = TunableKernel::new(
            source,
            k.name.clone(),
            sidecar.problem_size.iter().map(|p| p.text()).collect(),
        );
        kernel.flops = Some(sidecar.flops.text());
        kernel.bytes = Some(sidecar.bytes.text());
        kernel.geometry.shared_mem = sidecar.shared_mem.as_ref().map(|s| s.text());
        let mut block = [1i64; 3];
        for (i, b) in sidecar.default_block.iter().take(3).enumerate() {
            block[i] = *b as i64;
        }
        Ok(SuiteKernel {
            kernel,
            inputs: SuiteInputs::from_sidecar(sidecar),
            params: ParamSpec::from_kernel(k),
            default_block: block,
        })
    }

    /// Sets the tunable parameters and makes the sidecar's default block the reference launch.
    pub fn with_params(mut self, params: Vec<TunableParam>) -> Self {
        self.kernel.reference = Some(config_from_block(&params, self.default_block));
        self.kernel.params = params;
        self
    }
}

/// A block-size space when the user names none: 1-D problems tune `block_size_x` over 32..1024; 2-D
/// problems tune x over 16..256 and y over 1..16 with 64 to 1024 threads per block.
pub fn default_block_space(dimensions: usize) -> (Vec<TunableParam>, Vec<String>) {
    if dimensions <= 1 {
        (
            vec![TunableParam::new(
                "block_size_x",
                [32, 64, 128, 256, 512, 1024],
            )],
            vec![],
        )
    } else {
        (
            vec![
                TunableParam::new("block_size_x", [16, 32, 64, 128, 256]),
                TunableParam::new("block_size_y", [1, 2, 4, 8, 16]),
            ],
            vec![
                "block_size_x*block_size_y >= 64 and block_size_x*block_size_y <= 1024".to_string(),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CU: &str = include_str!("../../../naive-kernels/matmul.cu");
    const TOML: &str = include_str!("../../../naive-kernels/matmul.toml");

    #[test]
    fn suite_kernel_has_reference_launch_and_typed_params() {
        let sc = kt_cuda::Sidecar::from_toml(TOML, std::path::Path::new("matmul.toml")).unwrap();
        let (params, _) = default_block_space(2);
        let s = SuiteKernel::new(CU, &sc, None).unwrap().with_params(params);
        assert_eq!(s.kernel.kernel_name, "matrixMultiply");
        assert_eq!(
            s.kernel.reference.as_ref().unwrap().to_string(),
            "block_size_x=16 block_size_y=16"
        );
        assert_eq!(s.params.len(), 6);
        assert!(s.params[0].is_pointer && !s.params[3].is_pointer);
        let tests = s
            .inputs
            .make_tests(
                &s.params,
                crate::args::SizeChoice::Test,
                &Default::default(),
                1,
            )
            .unwrap();
        assert_eq!(tests.tests[0].scalars()["B_width"], 93.0);
    }

    #[test]
    fn default_2d_space_matches_the_matrix_add_benchmark() {
        let (params, restrict) = default_block_space(2);
        let r: Vec<crate::space::Restriction> = restrict
            .into_iter()
            .map(crate::space::Restriction::Expr)
            .collect();
        let space =
            crate::space::SearchSpace::build(&params, &r, &Default::default(), Some(1024)).unwrap();
        assert_eq!(space.len(), 19);
    }
}
