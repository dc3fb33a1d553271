//! A kernel of the naive-kernels suite (a `.cu` file and its sidecar `.toml`) turned into what tuning needs:
//! a `TunableKernel` (problem size, flops/bytes, default launch) and the description of its inputs.

use std::path::{Path, PathBuf};

use crate::compile::kernel_file::{KernelFile, KernelSource};
use crate::error::TunerError;
use crate::model::args::{ParamSpec, SuiteInputs};
use crate::model::space::TunableParam;
use crate::model::tunable_kernel::TunableKernel;
use crate::session::setup::config_from_block;

#[derive(Debug, Clone)]
pub struct SuiteKernel {
    pub kernel: TunableKernel,
    pub inputs: SuiteInputs,
    pub params: Vec<ParamSpec>,
    pub default_block: [i64; 3],
    /// The kernel's template parameters with their defaults (`template <int TILE = 16>`), in order.
    pub template_params: Vec<(String, Option<String>)>,
}

/// The sidecar of kernel `kernel` in `file`: `NAME.KERNEL.toml` beside `NAME.cu` when the file holds
/// several kernels (`softmax_forward.softmax_forward_kernel2.toml`), else `NAME.toml`; None when neither
/// exists.
pub fn sidecar_for(file: &Path, kernel: Option<&str>) -> Option<PathBuf> {
    let per_kernel = kernel.and_then(|k| {
        let stem = file.file_stem()?.to_string_lossy().into_owned();
        Some(file.with_file_name(format!("{stem}.{k}.toml")))
    });
    per_kernel
        .into_iter()
        .chain([kt_cuda::Sidecar::path_for(file)])
        .find(|p| p.is_file())
}

/// The template parameters of a parsed kernel as `(name, default)`.
pub fn template_params(kernel: &kt_cuda::Kernel) -> Vec<(String, Option<String>)> {
    kernel
        .template_params
        .iter()
        .map(|t| (t.name.clone(), t.default.clone()))
        .collect()
}

impl SuiteKernel {
    /// Parses `source`, picks the sidecar's kernel (or `kernel_name`), and checks the sidecar against it;
    /// what is compiled is the kernel's own unit (host code and other kernels left out).
    pub fn new(
        source: &str,
        sidecar: &kt_cuda::Sidecar,
        kernel_name: Option<&str>,
    ) -> Result<Self, TunerError> {
        let file = KernelFile::from_text(&sidecar.kernel, source, &[])?;
        let unit = file.select(Some(kernel_name.unwrap_or(&sidecar.kernel)))?;
        Self::from_unit(&file, &unit, sidecar)
    }

    /// The kernel `unit` of `file` described by `sidecar`, compiling the unit.
    pub fn from_unit(
        file: &KernelFile,
        unit: &KernelSource,
        sidecar: &kt_cuda::Sidecar,
    ) -> Result<Self, TunerError> {
        let mut suite = Self::from_parsed(
            &unit.unit.text,
            &file.parsed,
            sidecar,
            Some(&unit.kernel.name),
        )?;
        unit.compile_as(&mut suite.kernel);
        Ok(suite)
    }

    /// As [`SuiteKernel::new`] for a source already parsed (with its headers followed, kernels in a
    /// `.cuh` included).
    pub fn from_parsed(
        source: &str,
        parsed: &kt_cuda::CudaSource,
        sidecar: &kt_cuda::Sidecar,
        kernel_name: Option<&str>,
    ) -> Result<Self, TunerError> {
        let k = parsed
            .select_kernel(Some(kernel_name.unwrap_or(&sidecar.kernel)))
            .map_err(|e| TunerError::Source(e.to_string()))?;
        if let Err(problems) = sidecar.check_against(k) {
            let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
            return Err(TunerError::Source(format!(
                "the sidecar disagrees with kernel `{}`: {}",
                k.name,
                problems.join("; ")
            )));
        }
        let mut kernel = TunableKernel::new(
            source,
            k.name.clone(),
            sidecar.problem_size.iter().map(|p| p.text()).collect(),
        );
        kernel.flops = Some(sidecar.flops.text());
        kernel.flops_exact = sidecar.flops_exact;
        kernel.bytes = Some(sidecar.bytes.text());
        kernel.geometry.shared_mem = sidecar.shared_mem.as_ref().map(|s| s.text());
        kernel.geometry.divide_by_kernel_tiles(k);
        let mut block = [1i64; 3];
        for (i, b) in sidecar.default_block.iter().take(3).enumerate() {
            block[i] = *b as i64;
        }
        Ok(SuiteKernel {
            kernel,
            inputs: SuiteInputs::for_kernel(sidecar, k),
            params: ParamSpec::from_kernel(k),
            default_block: block,
            template_params: template_params(k),
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

    const CU: &str = include_str!("../../../../naive-kernels/matmul.cu");
    const TOML: &str = include_str!("../../../../naive-kernels/matmul.toml");

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
                crate::model::args::SizeChoice::Test,
                &Default::default(),
                1,
            )
            .unwrap();
        assert_eq!(tests.tests[0].scalars()["B_width"], 93.0);
    }

    #[test]
    fn a_per_kernel_sidecar_is_preferred_when_the_kernel_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let cu = dir.path().join("softmax.cu");
        std::fs::write(&cu, "").unwrap();
        assert_eq!(sidecar_for(&cu, Some("k2")), None);
        std::fs::write(dir.path().join("softmax.toml"), "").unwrap();
        assert_eq!(
            sidecar_for(&cu, Some("k2")),
            Some(dir.path().join("softmax.toml"))
        );
        std::fs::write(dir.path().join("softmax.k2.toml"), "").unwrap();
        assert_eq!(
            sidecar_for(&cu, Some("k2")),
            Some(dir.path().join("softmax.k2.toml"))
        );
        assert_eq!(
            sidecar_for(&cu, None),
            Some(dir.path().join("softmax.toml"))
        );
    }

    #[test]
    fn the_corpus_per_kernel_sidecars_load_for_their_kernels() {
        let root =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/programs/bench-style");
        let cu = root.join("softmax_forward.cu");
        let path = sidecar_for(&cu, Some("softmax_forward_kernel2")).unwrap();
        assert!(path.ends_with("softmax_forward.softmax_forward_kernel2.toml"));
        let sc = kt_cuda::Sidecar::load(&path).unwrap();
        let file = KernelFile::load(&cu, &[]).unwrap();
        let unit = file.select(Some("softmax_forward_kernel2")).unwrap();
        let k = SuiteKernel::from_unit(&file, &unit, &sc).unwrap();
        assert_eq!(k.kernel.kernel_name, "softmax_forward_kernel2");
        assert!(!k.kernel.source.contains("main("));
        assert_eq!(
            k.kernel.geometry.shared_mem.as_deref(),
            Some("block_size_x * 4")
        );
    }

    #[test]
    fn template_parameters_of_a_corpus_kernel_are_offered() {
        let root =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/programs/sample-style");
        let src = std::fs::read_to_string(root.join("reduction_kernels.cuh")).unwrap();
        let parsed = kt_cuda::parse(&src).unwrap();
        let k = parsed.select_kernel(Some("reduce3")).unwrap();
        assert_eq!(template_params(k), vec![("blockSize".to_string(), None)]);
    }

    #[test]
    fn default_2d_space_matches_the_matrix_add_benchmark() {
        let (params, restrict) = default_block_space(2);
        let r: Vec<crate::model::space::Restriction> = restrict
            .into_iter()
            .map(crate::model::space::Restriction::Expr)
            .collect();
        let space =
            crate::model::space::SearchSpace::build(&params, &r, &Default::default(), Some(1024))
                .unwrap();
        assert_eq!(space.len(), 19);
    }
}
