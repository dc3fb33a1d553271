//! Kernel Tuner's `cmem_args` in an export: the `__constant__` contents of the stated test, as the script
//! passes them. A test's .npy file travels beside the script; generated contents are drawn in the script
//! from the same distribution, as large as the test gives or the symbol's declaration says.

use std::path::PathBuf;

use crate::error::TunerError;
use crate::model::args::{ArraySource, KernelTest};
use crate::model::constants::ConstantArg;
use kt_record::DType;

use super::script::{generated, npy_load};

/// One entry of `cmem_args`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct CmemArg {
    pub name: String,
    /// The symbol's contents as a Python expression.
    pub python: String,
    /// For contents read from a file: the test's file and the name of its copy beside the script.
    pub file: Option<(PathBuf, String)>,
}

/// The constants of `test` for the script of a kernel whose source is `source`; `file_for` names the copy
/// beside the script of a constant read from a file.
pub(super) fn cmem_args(
    test: &KernelTest,
    source: &str,
    file_for: impl Fn(&str) -> String,
) -> Result<Vec<CmemArg>, TunerError> {
    test.constants
        .iter()
        .map(|c| {
            let dt = c.dtype.numpy_name();
            Ok(match &c.source {
                ArraySource::Npy { path, .. } => {
                    let file = file_for(&c.name);
                    CmemArg {
                        name: c.name.clone(),
                        python: npy_load(&file, dt),
                        file: Some((path.clone(), file)),
                    }
                }
                ArraySource::Generate { dist, .. } => CmemArg {
                    name: c.name.clone(),
                    python: generated(dist, elements(c, source)?, dt),
                    file: None,
                },
            })
        })
        .collect()
}

/// Scalar elements of generated contents: the test's count, else the whole symbol as declared.
fn elements(c: &ConstantArg, source: &str) -> Result<u64, TunerError> {
    if let Some(n) = c.elements {
        return Ok(n);
    }
    let declared = kt_cuda::parse(source)
        .ok()
        .and_then(|parsed| {
            parsed
                .constant_symbols
                .into_iter()
                .find(|s| s.name == c.name)
        })
        .and_then(|s| {
            let lanes = s
                .dtype
                .as_deref()
                .and_then(|d| DType::parse_numpy(d).ok())
                .map_or(1, |(_, lanes)| u64::from(lanes));
            Some(s.length? * lanes)
        });
    declared.ok_or_else(|| {
        TunerError::Arguments(format!(
            "constant `{}`: its length is known only when the kernel is compiled, and the Kernel Tuner script \
             needs it; give its element count in the sidecar's `sizes`",
            c.name
        ))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::args::Distribution;

    fn test(constants: Vec<ConstantArg>) -> KernelTest {
        KernelTest {
            id: "t0".into(),
            args: Vec::new(),
            tolerances: Default::default(),
            constants,
        }
    }

    fn constant(name: &str, elements: Option<u64>, source: ArraySource) -> ConstantArg {
        ConstantArg {
            name: name.into(),
            dtype: DType::Float32,
            elements,
            source,
        }
    }

    const SOURCE: &str = "#ifndef TAPS\n#define TAPS 8\n#endif\n__constant__ float coeffs[16];\n\
        __constant__ float4 taps[TAPS];\n__global__ void k(float *o) { o[0] = coeffs[0] + taps[0].x; }\n";

    #[test]
    fn a_file_travels_beside_the_script_and_generated_contents_fill_the_declared_symbol() {
        let file = constant(
            "coeffs",
            Some(16),
            ArraySource::Npy {
                path: "/t/constants/coeffs.npy".into(),
                offset: 128,
            },
        );
        let randn = ArraySource::Generate {
            dist: Distribution::Randn,
            seed: 1,
        };
        let args = cmem_args(
            &test(vec![file, constant("coeffs", None, randn)]),
            SOURCE,
            |n| format!("t0_cmem_{n}.npy"),
        )
        .unwrap();
        assert_eq!(
            args[0].python,
            "np.load(os.path.join(HERE, \"t0_cmem_coeffs.npy\")).astype(np.float32).ravel()"
        );
        assert_eq!(
            args[0].file,
            Some((
                PathBuf::from("/t/constants/coeffs.npy"),
                "t0_cmem_coeffs.npy".into()
            ))
        );
        assert_eq!(args[1].python, "rng.standard_normal(16).astype(np.float32)");
        assert_eq!(args[1].file, None);
    }

    #[test]
    fn a_generated_symbol_whose_length_a_tunable_macro_sets_needs_a_size() {
        let randn = ArraySource::Generate {
            dist: Distribution::Zeros,
            seed: 1,
        };
        let err = cmem_args(
            &test(vec![constant("taps", None, randn.clone())]),
            SOURCE,
            |n| n.to_string(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("constant `taps`") && err.contains("`sizes`"),
            "{err}"
        );
        let sized = cmem_args(
            &test(vec![constant("taps", Some(32), randn)]),
            SOURCE,
            |n| n.to_string(),
        )
        .unwrap();
        assert_eq!(sized[0].python, "np.zeros(32, dtype=np.float32)");
    }
}
