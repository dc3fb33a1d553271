//! The tests a kernel is tuned or verified on: read from a tests directory (the `__constant__` contents its
//! tests do not carry from the sidecar), or generated from its sidecar with arrays sized over the configurations that will run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::TunerError;
use crate::model::args::{KernelTest, SizeChoice, SuiteInputs, TestSet};
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
            let mut set = TestSet::load_dir(dir, &loaded.params, &tolerances)?;
            fill_constants_from_sidecar(loaded, &mut set)?;
            Ok(set)
        }
        TestSource::Generate { size, count } => {
            let inputs = loaded.inputs.as_ref().ok_or(TunerError::NoInputs)?;
            inputs.make_tests_for(&loaded.params, size, sizes, count, configs)
        }
    }
}

/// A test of a tests directory carries the `__constant__` symbols its generator filled (Stage 2's tests
/// do); those it does not carry are filled from the sidecar's `constants` (seeded per test), so a kernel
/// that reads one no test fills needs a sidecar.
fn fill_constants_from_sidecar(loaded: &LoadedKernel, set: &mut TestSet) -> Result<(), TunerError> {
    let read = &loaded.parsed.constant_memory;
    let unfilled = |t: &KernelTest| -> Vec<String> {
        read.iter()
            .filter(|c| !t.constants.iter().any(|given| given.name == c.name))
            .map(|c| c.name.clone())
            .collect()
    };
    let missing: BTreeSet<String> = set.tests.iter().flat_map(unfilled).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let Some(inputs) = &loaded.inputs else {
        let names: Vec<&str> = missing.iter().map(String::as_str).collect();
        let entries: Vec<String> = names.iter().map(|n| format!("{n} = \"randn\"")).collect();
        return Err(TunerError::Arguments(format!(
            "kernel `{}` reads constant memory ({}), which the tests directory does not carry: give a \
             sidecar with `constants = {{ {} }}`, or make the tests again (kt testgen) so that they fill it",
            loaded.parsed.name,
            names.join(", "),
            entries.join(", ")
        )));
    };
    for (i, t) in set.tests.iter_mut().enumerate() {
        let unfilled = unfilled(t);
        let from_sidecar = constant_inputs(inputs).args(&t.scalars(), i as u64 + 1)?;
        t.constants.extend(
            from_sidecar
                .into_iter()
                .filter(|c| unfilled.contains(&c.name)),
        );
    }
    Ok(())
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

    const BLUR: &str = "__constant__ float w[3];\n__global__ void blur(float *o, const float *i, int n) {\n\
        int x = threadIdx.x; if (x < n) o[x] = w[0] * i[x] + w[1] * i[x + 1] + w[2] * i[x + 2]; }\n";

    /// A tests directory under `dir` with one test of `blur` (n = 4), with `w` when `with_constant`.
    fn blur_tests(dir: &Path, with_constant: bool) -> PathBuf {
        use kt_record::tests_format::npy::write_npy;
        let test = dir.join("tests/t1");
        std::fs::create_dir_all(test.join("args")).unwrap();
        std::fs::create_dir_all(test.join("constants")).unwrap();
        write_npy(&test.join("args/o.npy"), "<f4", &[4], &[0; 16]).unwrap();
        write_npy(&test.join("args/i.npy"), "<f4", &[6], &[0; 24]).unwrap();
        write_npy(&test.join("constants/w.npy"), "<f4", &[3], &[0; 12]).unwrap();
        let constants = if with_constant {
            r#", "constants": [{"name": "w", "dtype": "float32", "shape": [3], "file": "constants/w.npy"}]"#
        } else {
            ""
        };
        let manifest = format!(
            r#"{{"args": [{{"kind": "array", "name": "o", "dtype": "float32", "file": "args/o.npy"}},
                {{"kind": "array", "name": "i", "dtype": "float32", "file": "args/i.npy"}},
                {{"kind": "scalar", "name": "n", "dtype": "int32", "value": 4}}]{constants}}}"#
        );
        std::fs::write(test.join("manifest.json"), manifest).unwrap();
        dir.join("tests")
    }

    fn blur(dir: &Path) -> LoadedKernel {
        let file = dir.join("blur.cu");
        std::fs::write(&file, BLUR).unwrap();
        crate::input::load_kernel_with(&file, None, crate::input::SidecarChoice::Without, &[])
            .unwrap()
    }

    #[test]
    fn a_tests_directory_for_a_kernel_reading_constant_memory_needs_a_sidecar_saying_so() {
        let dir = tempfile::tempdir().unwrap();
        let tests = blur_tests(dir.path(), false);
        let err = load_tests(
            &blur(dir.path()),
            TestSource::Dir(&tests),
            &BTreeMap::new(),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("reads constant memory (w)")
                && err.contains("`constants = { w = \"randn\" }`"),
            "{err}"
        );
    }

    #[test]
    fn the_constants_a_tests_directory_carries_need_no_sidecar() {
        let dir = tempfile::tempdir().unwrap();
        let tests = blur_tests(dir.path(), true);
        let set = load_tests(
            &blur(dir.path()),
            TestSource::Dir(&tests),
            &BTreeMap::new(),
            &[],
        )
        .unwrap();
        let w = &set.tests[0].constants;
        assert_eq!(w.len(), 1);
        assert_eq!(
            (w[0].name.as_str(), w[0].dtype, w[0].elements),
            ("w", kt_record::DType::Float32, Some(3))
        );
        assert!(
            matches!(&w[0].source, crate::model::args::ArraySource::Npy { path, .. } if path.ends_with("t1/constants/w.npy"))
        );
    }
}
