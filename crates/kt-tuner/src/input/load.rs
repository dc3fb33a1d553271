//! The kernel of a file with its tunable description: from its sidecar when there is one (the per-kernel
//! `NAME.KERNEL.toml` first), else the kernel alone; template arguments filled from what the user gives or
//! tunes; arrays sized per configuration when their size names a launch parameter.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::compile::kernel_file::{KernelFile, KernelSource};
use crate::error::TunerError;
use crate::input::suite::{SuiteKernel, sidecar_for, template_params};
use crate::model::args::{ParamSpec, SuiteInputs};
use crate::model::space::TunableParam;
use crate::model::tunable_kernel::TunableKernel;
use crate::model::tunable_kernel::template_args_for;

pub use super::loaded_kernel::LoadedKernel;

/// Which sidecar describes a kernel.
#[derive(Debug, Clone, Copy)]
pub enum SidecarChoice<'a> {
    /// The one beside the file ([`sidecar_for`]), if any.
    Beside,
    /// This one (`--candidate-sidecar`).
    Given(&'a Path),
    /// None: the kernel alone, its launch and inputs to come from elsewhere.
    Without,
}

/// The kernel of `file` with its tunable description. The file's directory, then `include_dirs`, are
/// searched for its headers, both when it is parsed (a kernel may live in an included `.cuh`) and by NVRTC.
pub fn load_kernel(
    file: &Path,
    kernel: Option<&str>,
    include_dirs: &[PathBuf],
) -> Result<LoadedKernel, TunerError> {
    load_kernel_with(file, kernel, SidecarChoice::Beside, include_dirs)
}

/// As [`load_kernel`], with the sidecar chosen.
pub fn load_kernel_with(
    file: &Path,
    kernel: Option<&str>,
    sidecar: SidecarChoice,
    include_dirs: &[PathBuf],
) -> Result<LoadedKernel, TunerError> {
    let kernel_file = KernelFile::load(file, include_dirs)?;
    let sidecar_path = match sidecar {
        SidecarChoice::Given(p) => Some(p.to_path_buf()),
        SidecarChoice::Beside => sidecar_for(file, kernel),
        SidecarChoice::Without => None,
    };
    let Some(path) = sidecar_path else {
        let source = kernel_file.select(kernel)?;
        source.refuse_struct_by_value(file)?;
        let description = Description {
            kernel: source.tunable_code(Vec::new()),
            params: ParamSpec::from_kernel(&source.kernel),
            inputs: None,
            default_block: None,
            dims: 0,
            sidecar: None,
        };
        return Ok(description.of(&kernel_file, source));
    };
    let sc = kt_cuda::Sidecar::load(&path).map_err(TunerError::Sidecar)?;
    let source = kernel_file.select(Some(kernel.unwrap_or(&sc.kernel)))?;
    source.refuse_struct_by_value(file)?;
    let sk =
        SuiteKernel::from_unit(&kernel_file, &source, &sc).map_err(|e| TunerError::InSidecar {
            path: path.clone(),
            source: Box::new(e),
        })?;
    let description = Description {
        kernel: sk.kernel,
        params: sk.params,
        inputs: Some(sk.inputs),
        default_block: Some(sk.default_block),
        dims: sc.problem_size.len(),
        sidecar: Some(path),
    };
    Ok(description.of(&kernel_file, source))
}

/// What a sidecar says of a kernel (or the kernel alone says, without one).
struct Description {
    kernel: TunableKernel,
    params: Vec<ParamSpec>,
    inputs: Option<SuiteInputs>,
    default_block: Option<[i64; 3]>,
    dims: usize,
    sidecar: Option<PathBuf>,
}

impl Description {
    /// The loaded kernel: this description with what the file says of `source` (host code, launches).
    fn of(self, kernel_file: &KernelFile, source: KernelSource) -> LoadedKernel {
        let mut loaded = LoadedKernel {
            kernel: self.kernel,
            params: self.params,
            inputs: self.inputs,
            default_block: self.default_block,
            dims: self.dims,
            host_code_left_out: host_names(&source),
            host_code_note: source.host_code_note(),
            instantiations: kt_cuda::host_instantiations(
                &kernel_file.file.combined,
                &source.kernel.name,
            ),
            parsed: source.kernel,
            sidecar: self.sidecar,
            host_launch_lines: Vec::new(),
        };
        loaded.host_launch_lines = super::host_defaults::take_host_launch(&mut loaded);
        loaded
    }
}

fn host_names(source: &KernelSource) -> Vec<String> {
    source
        .host_code_dropped()
        .iter()
        .map(|i| i.name.clone())
        .collect()
}

impl LoadedKernel {
    /// Fills the template arguments of a templated kernel: a template parameter among the tuned ones is
    /// instantiated per configuration, one in `given` (`--template T=float`) or with a default takes that
    /// value; any other is an error saying which to give.
    pub fn set_template_args(
        &mut self,
        tuned: &[TunableParam],
        given: &BTreeMap<String, String>,
    ) -> Result<(), TunerError> {
        let params = template_params(&self.parsed);
        if let Some(unknown) = given.keys().find(|g| !params.iter().any(|(n, _)| n == *g)) {
            return Err(TunerError::UnknownTemplateParam {
                kernel: self.kernel.kernel_name.clone(),
                name: unknown.clone(),
                known: params.iter().map(|(n, _)| n.clone()).collect(),
            });
        }
        self.kernel.template_args =
            template_args_for(&self.kernel.kernel_name, &params, tuned, given)
                .map_err(|e| TunerError::TemplateArgs(Box::new(e)))?;
        self.type_arrays_by_template(given);
        Ok(())
    }

    /// A parameter whose element type is a template type parameter (`T *g_idata`) takes the element
    /// type the template is given (`--template T=float`, or the file's own single instantiation), where
    /// the sidecar has not said it.
    fn type_arrays_by_template(&mut self, given: &BTreeMap<String, String>) {
        for (spec, param) in self.params.iter_mut().zip(&self.parsed.params) {
            if spec.dtype.is_some() {
                continue;
            }
            if let Some(ty) = given.get(param.base_type.trim()) {
                spec.dtype = kt_record::DType::from_c_type(ty);
            }
        }
    }

    /// Makes array sizes that name launch parameters (`ceil_div(n, block_size_x)`) follow each
    /// configuration.
    pub fn size_arrays_per_configuration(&mut self) {
        if let Some(inputs) = &self.inputs {
            self.kernel.geometry.array_sizes = inputs.config_dependent_sizes(&self.params);
        }
    }

    /// For one run (`kt verify`): the value of each template parameter that `tuned` and `given` leave open
    /// and the file's own launches instantiate (the first one launched when there are several), with a
    /// line each saying so.
    pub fn launched_template_values(
        &self,
        tuned: &[TunableParam],
        given: &BTreeMap<String, String>,
    ) -> super::FromInstances {
        // a template parameter the code ties to the block size (`block_size_x == blockSize`) takes the
        // default launch's block, so the two agree
        let mut preferred = BTreeMap::new();
        for r in &self.parsed.restrictions {
            if let Some((block, name)) = r.expr.split_once("==")
                && let Some(d) = ["block_size_x", "block_size_y", "block_size_z"]
                    .iter()
                    .position(|b| *b == block.trim())
                && let Some(b) = self.default_block
            {
                preferred.insert(name.trim().to_string(), b[d]);
            }
        }
        super::single_from_instances(
            &self.kernel.kernel_name,
            &self.template_params(),
            &self.instantiations,
            tuned,
            given,
            &preferred,
        )
    }

    /// The template parameters of the kernel as `(name, default)`.
    pub fn template_params(&self) -> Vec<(String, Option<String>)> {
        template_params(&self.parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::space::Config;

    pub(super) fn corpus(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(rel)
    }

    /// Every sidecar of a corpus folder with the file and kernel it describes (`NAME.toml` → `NAME.cu`,
    /// `NAME.KERNEL.toml` → kernel KERNEL of `NAME.cu`).
    fn sidecars_in(dir: &str) -> Vec<(PathBuf, Option<String>)> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(corpus(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("toml") {
                continue;
            }
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let (file, kernel) = match stem.split_once('.') {
                Some((f, k)) => (f.to_string(), Some(k.to_string())),
                None => (stem, None),
            };
            out.push((path.with_file_name(format!("{file}.cu")), kernel));
        }
        out.sort();
        out
    }

    const CORPUS_DIRS: [&str; 3] = [
        "tests/corpus/wild",
        "tests/corpus/programs/bench-style",
        "tests/corpus/programs/sample-style",
    ];

    #[test]
    fn every_corpus_kernel_compiles_as_a_unit_without_host_code() {
        let mut files = std::collections::BTreeSet::new();
        for dir in CORPUS_DIRS {
            for (cu, kernel) in sidecars_in(dir) {
                let loaded = load_kernel(&cu, kernel.as_deref(), &[])
                    .unwrap_or_else(|e| panic!("{}: {e}", cu.display()));
                let unit = &loaded.kernel.source;
                for host in ["main(", "<<<", "cudaMalloc", "cudaMemcpy"] {
                    assert!(
                        !unit.contains(host),
                        "{}: `{host}` in\n{unit}",
                        cu.display()
                    );
                }
                assert!(
                    unit.contains(&loaded.kernel.kernel_name),
                    "{}",
                    cu.display()
                );
                assert_eq!(loaded.kernel.include_dirs[0], cu.parent().unwrap());
                let whole = std::fs::read_to_string(&cu).unwrap();
                if whole.contains("int main(") {
                    assert!(
                        loaded.host_code_left_out.iter().any(|n| n == "main"),
                        "{}: {:?}",
                        cu.display(),
                        loaded.host_code_left_out
                    );
                    assert!(loaded.host_code_note.is_some());
                }
                files.insert(cu);
            }
        }
        // every .cu of the corpus has a sidecar, so none is left untested
        for dir in CORPUS_DIRS {
            for entry in std::fs::read_dir(corpus(dir)).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().and_then(|e| e.to_str()) == Some("cu") {
                    assert!(files.contains(&path), "{} has no sidecar", path.display());
                }
            }
        }
    }

    #[test]
    fn the_namespaced_saxpy_is_looked_up_by_its_qualified_name() {
        let loaded =
            load_kernel(&corpus("tests/corpus/wild/namespace_saxpy.cu"), None, &[]).unwrap();
        let q = loaded.kernel.qualified_name.clone().unwrap();
        assert!(q.ends_with("::saxpy"), "{q}");
        assert_eq!(
            loaded.kernel.name_expression(&Config(vec![])),
            format!("&{q}")
        );
    }

    #[test]
    fn a_templated_kernel_needs_its_template_parameter_tuned_or_given() {
        let file = corpus("tests/corpus/programs/sample-style/reduction.cu");
        let mut loaded = load_kernel(&file, Some("reduce3"), &[]).unwrap();
        assert!(
            loaded
                .sidecar
                .as_ref()
                .unwrap()
                .ends_with("reduction.reduce3.toml")
        );
        let err = loaded
            .set_template_args(&[], &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("blockSize") && err.contains("--param"),
            "{err}"
        );
        loaded
            .set_template_args(
                &[TunableParam::new("blockSize", [128, 256])],
                &BTreeMap::new(),
            )
            .unwrap();
        assert_eq!(loaded.kernel.template_args, vec!["blockSize"]);
        // the file's own launches instantiate reduce3 at 512 first
        let launched = loaded.launched_template_values(&[], &BTreeMap::new());
        assert!(
            launched.fixed.contains_key("blockSize"),
            "{:?} from {:?}",
            launched,
            loaded.instantiations
        );
        let given = BTreeMap::from([("blockSize".to_string(), "256".to_string())]);
        loaded.set_template_args(&[], &given).unwrap();
        assert_eq!(loaded.kernel.template_args, vec!["256"]);
        let wrong = BTreeMap::from([("T".to_string(), "float".to_string())]);
        let err = loaded.set_template_args(&[], &wrong).unwrap_err();
        assert!(
            matches!(&err, TunerError::UnknownTemplateParam { name, .. } if name == "T"),
            "{err}"
        );
    }

    #[test]
    fn arrays_of_a_template_type_take_the_type_the_template_is_given() {
        let file = corpus("tests/corpus/real-world-classes/host_instances.cu");
        let mut loaded = load_kernel(&file, Some("block_sum"), &[]).unwrap();
        let dtype =
            |l: &LoadedKernel, name: &str| l.params.iter().find(|p| p.name == name).unwrap().dtype;
        assert_eq!(dtype(&loaded, "in"), None);
        let given = BTreeMap::from([
            ("T".to_string(), "double".to_string()),
            ("blockSize".to_string(), "128".to_string()),
            ("nIsPow2".to_string(), "true".to_string()),
        ]);
        loaded.set_template_args(&[], &given).unwrap();
        assert_eq!(dtype(&loaded, "in"), Some((kt_record::DType::Float64, 1)));
        assert_eq!(dtype(&loaded, "out"), Some((kt_record::DType::Float64, 1)));
    }
}
