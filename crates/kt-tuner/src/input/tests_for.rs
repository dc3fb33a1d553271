//! The tests a kernel is tuned or verified on: read from a tests directory (its `__constant__` contents from
//! the sidecar), or generated from its sidecar with arrays sized over the configurations that will run.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::TunerError;
use crate::model::args::{SizeChoice, SuiteInputs, TestSet};
use crate::model::constants::ConstantInputs;
use crate::model::space::Config;

use super::LoadedKernel;

/// Where a command's tests come from.
#[derive(Debug, Clone, Copy)]
pub enum TestSource<'a> {
    /// A tests directory (docs/tests-format.md).
    Dir(&'a Path),
    /// `count` seeded tests generated from the sidecar at one of its sizes.
    Generate { size: SizeChoice, count: usize },
}

/// The tests of `loaded` from `source`; `sizes` override scalar arguments of generated tests and `configs`
/// are the configurations that will run (arrays sized per configuration take the largest).
pub fn load_tests(
    loaded: &LoadedKernel,
    source: TestSource,
    sizes: &BTreeMap<String, f64>,
    configs: &[Config],
) -> Result<TestSet, TunerError> {
    let tolerances = loaded
        .inputs
        .as_ref()
        .map(|i| i.tolerances_for(&loaded.params))
        .unwrap_or_default();
    match source {
        TestSource::Dir(dir) => {
            let sidecar = sidecar_constants(loaded)?;
            let mut set = TestSet::load_dir(dir, &loaded.params, &tolerances)?;
            if let Some(inputs) = sidecar {
                for (i, t) in set.tests.iter_mut().enumerate() {
                    t.constants = constant_inputs(inputs).args(&t.scalars(), i as u64 + 1)?;
                }
            }
            Ok(set)
        }
        TestSource::Generate { size, count } => {
            let inputs = loaded.inputs.as_ref().ok_or(TunerError::NoInputs)?;
            inputs.make_tests_for(&loaded.params, size, sizes, count, configs)
        }
    }
}

/// A tests directory carries arrays and scalars only: the `__constant__` symbols the kernel reads are filled
/// from its sidecar's `constants` (seeded per test), so a kernel that reads any needs a sidecar. `None` when
/// it reads none.
fn sidecar_constants(loaded: &LoadedKernel) -> Result<Option<&SuiteInputs>, TunerError> {
    let read = &loaded.parsed.constant_memory;
    if read.is_empty() {
        return Ok(None);
    }
    match &loaded.inputs {
        Some(inputs) => Ok(Some(inputs)),
        None => {
            let names: Vec<&str> = read.iter().map(|c| c.name.as_str()).collect();
            let entries: Vec<String> = names.iter().map(|n| format!("{n} = \"randn\"")).collect();
            Err(TunerError::Arguments(format!(
                "kernel `{}` reads constant memory ({}), which a tests directory does not carry: give a \
                 sidecar with `constants = {{ {} }}`",
                loaded.parsed.name,
                names.join(", "),
                entries.join(", ")
            )))
        }
    }
}

fn constant_inputs(inputs: &SuiteInputs) -> ConstantInputs<'_> {
    ConstantInputs {
        distributions: &inputs.constants,
        dtypes: &inputs.dtypes,
        declared_dtypes: &inputs.constant_dtypes,
        sizes: &inputs.sizes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::load_kernel;
    use crate::model::space::{TunableParam, every_config};
    use std::path::PathBuf;

    fn corpus(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(rel)
    }

    #[test]
    fn the_reduction_sizes_its_output_by_the_block_size() {
        let mut loaded = load_kernel(&corpus("naive-kernels/reduce_sum.cu"), None, &[]).unwrap();
        loaded.size_arrays_per_configuration();
        assert_eq!(
            loaded
                .kernel
                .geometry
                .array_sizes
                .get("output")
                .map(String::as_str),
            Some("ceil_div(n, block_size_x)")
        );
        let configs = every_config(&[TunableParam::new("block_size_x", [64, 256])], &[]);
        let source = TestSource::Generate {
            size: SizeChoice::Test,
            count: 1,
        };
        let tests = load_tests(&loaded, source, &BTreeMap::new(), &configs).unwrap();
        let out = tests.tests[0]
            .arrays()
            .find(|a| a.name == "output")
            .unwrap();
        assert_eq!(out.elements, 10007u64.div_ceil(64));
    }

    #[test]
    fn a_kernel_without_a_sidecar_needs_a_tests_directory() {
        let file = corpus("tests/corpus/wild/namespace_saxpy.cu");
        let loaded =
            crate::input::load_kernel_with(&file, None, crate::input::SidecarChoice::Without, &[])
                .unwrap();
        let source = TestSource::Generate {
            size: SizeChoice::Test,
            count: 1,
        };
        let err = load_tests(&loaded, source, &BTreeMap::new(), &[]).unwrap_err();
        assert!(matches!(err, TunerError::NoInputs), "{err}");
        assert!(err.to_string().contains("give --tests-dir DIR"), "{err}");
    }

    #[test]
    fn a_tests_directory_for_a_kernel_reading_constant_memory_needs_a_sidecar_saying_so() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("blur.cu");
        std::fs::write(
            &file,
            "__constant__ float w[3];\n__global__ void blur(float *o, const float *i, int n) {\n\
             int x = threadIdx.x; if (x < n) o[x] = w[0] * i[x] + w[1] * i[x + 1] + w[2] * i[x + 2]; }\n",
        )
        .unwrap();
        let loaded =
            crate::input::load_kernel_with(&file, None, crate::input::SidecarChoice::Without, &[])
                .unwrap();
        let err = load_tests(&loaded, TestSource::Dir(dir.path()), &BTreeMap::new(), &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("reads constant memory (w)")
                && err.contains("`constants = { w = \"randn\" }`"),
            "{err}"
        );
    }
}
