//! The suite's ground truth for Stage 1: a kernel's sidecar (`FILE.toml` next to `FILE.cu`). Stage 1 either
//! takes its facts from it (`--info-from-sidecar`, no LLM) or compares the LLM's answers with it and reports
//! every disagreement — a list for the user, never an error, because the point is to measure the LLM.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kt_cuda::Kernel;
use serde::{Deserialize, Serialize};

use crate::error::PipelineError;
use crate::kernel_info::KernelInfo;
#[cfg(test)]
use crate::kernel_info::ProblemDimension;

use super::answers::{OutputsAnswer, ProblemSizeAnswer};
use super::check;

/// The fields of a sidecar (kt-cuda's [`kt_cuda::Sidecar`]) that Stages 1 and 2 use, with expressions as text.
#[derive(Debug, Clone, PartialEq)]
pub struct SidecarFacts {
    pub kernel: String,
    pub description: String,
    pub problem_size: Vec<String>,
    pub outputs: Vec<String>,
    pub default_block: Option<[u32; 3]>,
    /// Initial distribution per pointer parameter (`randn`, `zeros`, ...).
    pub inputs: BTreeMap<String, String>,
    /// Element count per pointer parameter (structs count once), as expressions over scalars.
    pub sizes: BTreeMap<String, String>,
    pub path: PathBuf,
}

impl SidecarFacts {
    /// The sidecar of `kernel_file`: the same path with a `.toml` extension, when that file exists.
    pub fn path_for(kernel_file: &Path) -> Option<PathBuf> {
        let path = kt_cuda::Sidecar::path_for(kernel_file);
        path.is_file().then_some(path)
    }

    pub fn load(path: &Path) -> Result<SidecarFacts, PipelineError> {
        let sidecar = kt_cuda::Sidecar::load(path)?;
        Ok(Self::from_sidecar(&sidecar, path))
    }

    pub fn from_sidecar(sidecar: &kt_cuda::Sidecar, path: &Path) -> SidecarFacts {
        let block = &sidecar.default_block;
        SidecarFacts {
            kernel: sidecar.kernel.clone(),
            description: sidecar.description.clone(),
            problem_size: sidecar.problem_size.iter().map(|e| e.text()).collect(),
            outputs: sidecar.outputs.clone(),
            default_block: (!block.is_empty()).then(|| {
                [
                    block[0],
                    block.get(1).copied().unwrap_or(1),
                    block.get(2).copied().unwrap_or(1),
                ]
            }),
            inputs: sidecar.inputs.clone(),
            sizes: sidecar
                .sizes
                .iter()
                .map(|(k, v)| (k.clone(), v.text()))
                .collect(),
            path: path.to_path_buf(),
        }
    }

    /// A [`KernelInfo`] from the sidecar alone, with the same signature checks an LLM answer gets (a sidecar
    /// that names a missing parameter is a bug in the suite and is reported as such).
    pub fn to_kernel_info(&self, kernel: &Kernel) -> Result<KernelInfo, PipelineError> {
        let bad = |message: String| PipelineError::Sidecar {
            path: self.path.clone(),
            message,
        };
        if self.kernel != kernel.name {
            return Err(bad(format!(
                "it describes kernel `{}` but the file's kernel is `{}`",
                self.kernel, kernel.name
            )));
        }
        let problem_size = check::check_problem_size(
            kernel,
            self.problem_size.len(),
            &ProblemSizeAnswer {
                dimensions: self.problem_size.clone(),
            },
        )
        .map_err(&bad)?;
        // Outputs whose initial contents the sidecar sets to something other than zeros are read too.
        let both: Vec<String> = self
            .outputs
            .iter()
            .filter(|o| self.inputs.get(*o).is_some_and(|d| d != "zeros"))
            .cloned()
            .collect();
        let (outputs, both) = check::check_outputs(
            kernel,
            &OutputsAnswer {
                outputs: self.outputs.clone(),
                inputs_and_outputs: both,
            },
        )
        .map_err(&bad)?;
        Ok(KernelInfo {
            name: kernel.name.clone(),
            parameters: kernel.params.iter().map(|p| p.name.clone()).collect(),
            description: self.description.clone(),
            default_block: self
                .default_block
                .unwrap_or_else(|| check::default_block(problem_size.len())),
            problem_size,
            outputs,
            inputs_and_outputs: both,
        })
    }
}

/// One field where Stage 1 and the sidecar differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SidecarDisagreement {
    /// `problem_size`, `problem_size[x]`, `outputs`, `default_block`.
    pub field: String,
    pub stage1: String,
    pub sidecar: String,
}

impl std::fmt::Display for SidecarDisagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: Stage 1 says {}, the sidecar says {}",
            self.field, self.stage1, self.sidecar
        )
    }
}

/// Every disagreement between `info` and the sidecar. Expressions are compared with whitespace removed, and
/// outputs as sets; descriptions are free text and not compared.
pub fn compare_with_sidecar(info: &KernelInfo, sidecar: &SidecarFacts) -> Vec<SidecarDisagreement> {
    let mut out = Vec::new();
    let norm = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    if info.problem_size.len() != sidecar.problem_size.len() {
        out.push(SidecarDisagreement {
            field: "dimensions".into(),
            stage1: info.problem_size.len().to_string(),
            sidecar: sidecar.problem_size.len().to_string(),
        });
    }
    for ((axis, ours), theirs) in ["x", "y", "z"]
        .iter()
        .zip(&info.problem_size)
        .zip(&sidecar.problem_size)
    {
        if norm(&ours.expression) != norm(theirs) {
            out.push(SidecarDisagreement {
                field: format!("problem_size[{axis}]"),
                stage1: format!("`{}`", ours.expression),
                sidecar: format!("`{theirs}`"),
            });
        }
    }
    let set = |v: &[String]| {
        v.iter()
            .map(|s| s.trim().to_string())
            .collect::<std::collections::BTreeSet<_>>()
    };
    if set(&info.outputs) != set(&sidecar.outputs) {
        out.push(SidecarDisagreement {
            field: "outputs".into(),
            stage1: format!("{:?}", info.outputs),
            sidecar: format!("{:?}", sidecar.outputs),
        });
    }
    if let Some(block) = sidecar.default_block
        && block != info.default_block
    {
        out.push(SidecarDisagreement {
            field: "default_block".into(),
            stage1: format!("{:?}", info.default_block),
            sidecar: format!("{block:?}"),
        });
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn dimensions(exprs: &[&str]) -> Vec<ProblemDimension> {
        exprs
            .iter()
            .map(|e| ProblemDimension {
                expression: e.to_string(),
            })
            .collect()
    }

    fn suite(name: &str) -> (Kernel, SidecarFacts) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../naive-kernels");
        let src = std::fs::read_to_string(root.join(format!("{name}.cu"))).unwrap();
        let kernel = kt_cuda::parse(&src)
            .unwrap()
            .select_kernel(None)
            .unwrap()
            .clone();
        let facts = SidecarFacts::load(&root.join(format!("{name}.toml"))).unwrap();
        (kernel, facts)
    }

    #[test]
    fn every_suite_sidecar_yields_a_kernel_info_that_passes_the_signature_checks() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../naive-kernels");
        let mut checked = 0;
        for entry in std::fs::read_dir(&root).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "cu") {
                let name = path.file_stem().unwrap().to_str().unwrap().to_string();
                let (kernel, facts) = suite(&name);
                let info = facts
                    .to_kernel_info(&kernel)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(compare_with_sidecar(&info, &facts).is_empty(), "{name}");
                checked += 1;
            }
        }
        assert!(checked >= 3);
    }

    #[test]
    fn matmul_from_sidecar_has_its_two_dimensions_and_output() {
        let (kernel, facts) = suite("matmul");
        let info = facts.to_kernel_info(&kernel).unwrap();
        assert_eq!(info.problem_size, dimensions(&["B_width", "A_height"]));
        assert_eq!(info.outputs, ["C"]);
        assert!(info.inputs_and_outputs.is_empty());
        assert_eq!(info.default_block, [16, 16, 1]);
    }

    #[test]
    fn disagreements_name_the_field_and_both_values() {
        let (kernel, facts) = suite("matmul");
        let mut info = facts.to_kernel_info(&kernel).unwrap();
        info.problem_size = dimensions(&["A_width", "A_height"]);
        info.outputs = vec!["C".into(), "B".into()];
        let d = compare_with_sidecar(&info, &facts);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[0].field, "problem_size[x]");
        assert!(d[0].to_string().contains("`A_width`") && d[0].to_string().contains("`B_width`"));
        assert_eq!(d[1].field, "outputs");
    }

    #[test]
    fn sidecar_naming_a_const_input_as_output_is_a_suite_bug() {
        // vectorAdd keeps `const` on its inputs (the thesis's eight, matmul among them, have none)
        let (kernel, mut facts) = suite("vectorAdd");
        facts.outputs = vec!["a".into()];
        let err = facts.to_kernel_info(&kernel).unwrap_err();
        assert!(err.to_string().contains("const"), "{err}");
    }
}
