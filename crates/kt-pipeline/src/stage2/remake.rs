//! Test data remade where it is used. A run handed between machines (a login node with the LLM, a GPU node
//! without one) carries its tests as manifests and the generator program kept beside each
//! (`tests/<id>/generator.py`), not as gigabytes of arrays: where the arrays are missing, the program runs
//! again in the sandbox with the manifest's seed, and the data it makes must hash to the test's id, so a
//! remade test is the test that was made, bit for bit, or the run stops and says so.
//!
//! Expected outputs are the original kernel's outputs (Stage 3 writes them after its baseline): a test whose
//! expected files are gone has them dropped from its manifest here, and the tuner backend makes them again
//! from the original kernel before its first tuning ([`EXPECTED_REMADE_MARK`]).

use std::path::{Path, PathBuf};

use kt_cuda::Kernel;
use kt_sandbox::generator::{ManifestArg, TestManifest, run_generator};
use kt_sandbox::{PythonRuntime, Sandbox};

use super::make_test::generator_spec;
use super::state::Stage2Options;
use crate::error::PipelineError;
use crate::kernel_info::KernelInfo;

/// A file in the tests directory that tells the tuner backend to make expected outputs again from the
/// original kernel (their files were not carried to this machine). It lists the tests concerned.
pub const EXPECTED_REMADE_MARK: &str = ".expected-from-original";

/// What [`remake_missing_data`] did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Remade {
    /// Tests whose arrays were made again by their generator.
    pub inputs: Vec<String>,
    /// Tests whose expected outputs must be made again from the original kernel.
    pub expected: Vec<String>,
}

impl Remade {
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty() && self.expected.is_empty()
    }
}

/// Where a test's data stands on this machine.
#[derive(Debug, PartialEq)]
enum Missing {
    Nothing,
    ExpectedOnly,
    Inputs,
}

/// The files of a test's inputs: its arrays and its `__constant__` contents.
fn input_files(manifest: &TestManifest) -> impl Iterator<Item = &str> {
    (manifest.args.iter().filter_map(ManifestArg::file))
        .chain(manifest.constants.iter().map(|c| c.file.as_str()))
}

fn missing_data(dir: &Path, manifest: &TestManifest) -> Missing {
    let inputs_missing = input_files(manifest).any(|file| !dir.join(file).is_file());
    if inputs_missing {
        return Missing::Inputs;
    }
    let expected_missing = manifest
        .expected
        .as_ref()
        .is_some_and(|e| e.values().any(|f| !dir.join(f).is_file()));
    if expected_missing {
        Missing::ExpectedOnly
    } else {
        Missing::Nothing
    }
}

fn read_manifest(dir: &Path) -> Result<TestManifest, PipelineError> {
    let path = dir.join("manifest.json");
    let text =
        std::fs::read_to_string(&path).map_err(|e| PipelineError::io("reading", &path, e))?;
    serde_json::from_str(&text).map_err(|e| PipelineError::TestsRemade {
        test: dir_name(dir),
        reason: format!("its manifest {} does not parse: {e}", path.display()),
    })
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether any test in `tests_dir` lacks an array or an expected output its manifest names (cheap: no
/// program runs). False for a directory that cannot be read: the run then says so where it reads its tests.
pub fn data_missing(tests_dir: &Path) -> bool {
    test_dirs(tests_dir).is_ok_and(|dirs| {
        dirs.iter()
            .any(|dir| read_manifest(dir).is_ok_and(|m| missing_data(dir, &m) != Missing::Nothing))
    })
}

/// Makes again, in `tests_dir`, every array (or constant) a test's manifest names but this machine lacks, by running the
/// test's own `generator.py` with its seed; drops expected outputs whose files are missing and marks them
/// for the tuner backend. Tests with all their files are left untouched (nothing runs).
pub fn remake_missing_data(
    tests_dir: &Path,
    kernel: &Kernel,
    info: &KernelInfo,
    options: &Stage2Options,
    sandbox: &Sandbox,
    python: &PythonRuntime,
) -> Result<Remade, PipelineError> {
    let mut remade = Remade::default();
    for dir in test_dirs(tests_dir)? {
        let mut manifest = read_manifest(&dir)?;
        match missing_data(&dir, &manifest) {
            Missing::Nothing => continue,
            Missing::Inputs => {
                remake_inputs(&dir, &manifest, kernel, info, options, sandbox, python)?;
                remade.inputs.push(dir_name(&dir));
            }
            Missing::ExpectedOnly => {}
        }
        if manifest.expected.is_some() && missing_data(&dir, &manifest) != Missing::Nothing {
            manifest.expected = None;
            kt_record::layout::write_json(&dir.join("manifest.json"), &manifest)?;
            remade.expected.push(dir_name(&dir));
        }
    }
    let mark = tests_dir.join(EXPECTED_REMADE_MARK);
    if remade.expected.is_empty() {
        if mark.exists() {
            std::fs::remove_file(&mark).map_err(|e| PipelineError::io("removing", &mark, e))?;
        }
    } else {
        kt_record::layout::write_json(&mark, &remade.expected)?;
    }
    Ok(remade)
}

/// Sub-directories holding a manifest, in name order.
fn test_dirs(tests_dir: &Path) -> Result<Vec<PathBuf>, PipelineError> {
    let entries = std::fs::read_dir(tests_dir)
        .map_err(|e| PipelineError::io("listing the tests directory", tests_dir, e))?;
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("manifest.json").is_file())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Runs the test's generator into a scratch directory beside the tests and moves its arrays in, once the
/// data is shown to be the same test (same content id).
fn remake_inputs(
    dir: &Path,
    manifest: &TestManifest,
    kernel: &Kernel,
    info: &KernelInfo,
    options: &Stage2Options,
    sandbox: &Sandbox,
    python: &PythonRuntime,
) -> Result<(), PipelineError> {
    let id = dir_name(dir);
    let program = dir.join("generator.py");
    let script = std::fs::read_to_string(&program).map_err(|e| PipelineError::TestsRemade {
        test: id.clone(),
        reason: format!(
            "its arrays are missing and so is its program {} ({e}); copy the run's tests/ directory with \
             its .npy files to this machine",
            program.display()
        ),
    })?;
    let parent = dir.parent().unwrap_or(dir);
    let scratch = tempfile::Builder::new()
        .prefix(".remake-")
        .tempdir_in(parent)
        .map_err(|e| PipelineError::io("creating a scratch directory in", parent, e))?;
    let spec = generator_spec(kernel, info, options);
    let generated = run_generator(
        sandbox,
        python,
        &script,
        &spec,
        manifest.seed,
        scratch.path(),
    )?;
    if generated.id != id {
        return Err(PipelineError::TestsRemade {
            test: id,
            reason: format!(
                "its generator, run again with seed {}, made different data (content id {}): the program \
                 is not deterministic or this machine's numpy differs; copy the run's tests/ directory with \
                 its .npy files to this machine",
                manifest.seed, generated.id
            ),
        });
    }
    for file in input_files(manifest) {
        let (from, to) = (generated.dir.join(file), dir.join(file));
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| PipelineError::io("creating", parent, e))?;
        }
        std::fs::rename(&from, &to).map_err(|e| PipelineError::io("moving", &from, e))?;
    }
    tracing::info!(test = %id, seed = manifest.seed, "test inputs made again by the test's generator");
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn manifest(expected: bool) -> TestManifest {
        serde_json::from_value(serde_json::json!({
            "format": 1, "kernel": "k", "seed": 3,
            "args": [
                {"name": "a", "kind": "array", "dtype": "float32", "shape": [4], "file": "args/a.npy"},
                {"name": "n", "kind": "scalar", "dtype": "int32", "value": 4}
            ],
            "outputs": ["a"],
            "expected": if expected { serde_json::json!({"a": "expected/a.npy"}) } else { serde_json::Value::Null }
        }))
        .unwrap()
    }

    #[test]
    fn a_test_with_its_files_needs_nothing_and_one_without_arrays_needs_its_inputs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("args")).unwrap();
        assert_eq!(missing_data(dir.path(), &manifest(false)), Missing::Inputs);
        std::fs::write(dir.path().join("args/a.npy"), b"x").unwrap();
        assert_eq!(missing_data(dir.path(), &manifest(false)), Missing::Nothing);
        assert_eq!(
            missing_data(dir.path(), &manifest(true)),
            Missing::ExpectedOnly
        );
        std::fs::create_dir_all(dir.path().join("expected")).unwrap();
        std::fs::write(dir.path().join("expected/a.npy"), b"x").unwrap();
        assert_eq!(missing_data(dir.path(), &manifest(true)), Missing::Nothing);
    }

    #[test]
    fn a_test_without_the_file_of_a_constant_needs_its_inputs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("args")).unwrap();
        std::fs::write(dir.path().join("args/a.npy"), b"x").unwrap();
        let mut m = manifest(false);
        m.constants = vec![kt_sandbox::generator::ManifestConstant {
            name: "coeffs".into(),
            dtype: "float32".into(),
            shape: Some(vec![16]),
            file: "constants/coeffs.npy".into(),
            struct_name: None,
        }];
        assert_eq!(missing_data(dir.path(), &m), Missing::Inputs);
        std::fs::create_dir_all(dir.path().join("constants")).unwrap();
        std::fs::write(dir.path().join("constants/coeffs.npy"), b"x").unwrap();
        assert_eq!(missing_data(dir.path(), &m), Missing::Nothing);
    }
}
