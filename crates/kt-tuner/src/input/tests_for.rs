//! The tests a kernel is tuned or verified on: read from a tests directory, or generated from its sidecar
//! with arrays sized over the configurations that will run.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::TunerError;
use crate::model::args::{SizeChoice, TestSet};
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
        TestSource::Dir(dir) => TestSet::load_dir(dir, &loaded.params, &tolerances),
        TestSource::Generate { size, count } => {
            let inputs = loaded.inputs.as_ref().ok_or(TunerError::NoInputs)?;
            inputs.make_tests_for(&loaded.params, size, sizes, count, configs)
        }
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
}
