//! [`KernelInfo`]: what Stage 1 knows about a kernel. Shared by every later version of the kernel, because a
//! transformation must keep the signature, the outputs and the meaning of the size parameters.

use kt_record::RunDir;
use serde::{Deserialize, Serialize};

use crate::error::PipelineError;

/// One dimension of the problem size: an expression over the kernel's scalar parameters (often just a name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemDimension {
    /// e.g. `"B_width"` or `"num_points"` or `"width * height"`.
    pub expression: String,
}

/// Everything Stage 1 learned about a kernel, checked against its parsed signature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelInfo {
    /// The kernel's name as declared.
    pub name: String,
    /// The parameter names in declaration order (the signature itself lives in kt-cuda's `Kernel`).
    pub parameters: Vec<String>,
    /// What the kernel computes, in one or two sentences (from the LLM).
    pub description: String,
    /// Problem size per dimension, x first; its length is the launch dimensionality (1, 2 or 3).
    pub problem_size: Vec<ProblemDimension>,
    /// Pointer parameters the kernel writes.
    pub outputs: Vec<String>,
    /// Pointer parameters the kernel both reads and writes (a subset of `outputs`).
    pub inputs_and_outputs: Vec<String>,
    /// The block shape the naive launch uses (from the sidecar when present, else 256×1×1 for 1-D, 16×16×1 for 2-D).
    pub default_block: [u32; 3],
}

impl KernelInfo {
    /// The launch dimensionality: how many problem-size dimensions there are.
    pub fn dimensions(&self) -> usize {
        self.problem_size.len()
    }

    /// Writes `kernel_info.json` in `dir`.
    pub fn save(&self, dir: &RunDir) -> Result<(), PipelineError> {
        Ok(kt_record::layout::write_json(
            &dir.kernel_info_json(),
            self,
        )?)
    }

    /// Reads `kernel_info.json` of `dir`.
    pub fn load(dir: &RunDir) -> Result<KernelInfo, PipelineError> {
        Ok(kt_record::layout::read_json(
            &dir.kernel_info_json(),
            "kernel_info.json",
        )?)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kt_record::{NewRun, RunLlm, RunSettings};

    #[test]
    fn kernel_info_round_trips_and_open_refuses_a_non_run() {
        let tmp = tempfile::tempdir().unwrap();
        let cu = tmp.path().join("k.cu");
        std::fs::write(&cu, "x").unwrap();
        let llm = RunLlm {
            provider: "scripted".into(),
            model: "scripted".into(),
            ..RunLlm::default()
        };
        let new_run = NewRun {
            kernel_file: &cu,
            kernel: "vectorAdd",
            strategy: "testgen",
            settings: RunSettings::default(),
            llm,
        };
        let run = RunDir::create(tmp.path(), new_run).unwrap();
        let info = KernelInfo {
            name: "vectorAdd".into(),
            parameters: vec!["a".into(), "n".into()],
            description: "adds".into(),
            problem_size: vec![ProblemDimension {
                expression: "n".into(),
            }],
            outputs: vec!["a".into()],
            inputs_and_outputs: vec!["a".into()],
            default_block: [256, 1, 1],
        };
        info.save(&run).unwrap();
        assert_eq!(KernelInfo::load(&run).unwrap(), info);
        let err = RunDir::open(tmp.path()).unwrap_err();
        assert!(err.to_string().contains("run.json"), "{err}");
    }

    #[test]
    fn dimensionality_is_the_number_of_problem_size_expressions() {
        let info = KernelInfo {
            name: "matrixAdd".into(),
            parameters: vec![
                "A".into(),
                "B".into(),
                "C".into(),
                "width".into(),
                "height".into(),
            ],
            description: "C = A + B".into(),
            problem_size: vec![
                ProblemDimension {
                    expression: "width".into(),
                },
                ProblemDimension {
                    expression: "height".into(),
                },
            ],
            outputs: vec!["C".into()],
            inputs_and_outputs: vec![],
            default_block: [16, 16, 1],
        };
        assert_eq!(info.dimensions(), 2);
        let json = serde_json::to_string(&info).unwrap();
        assert_eq!(serde_json::from_str::<KernelInfo>(&json).unwrap(), info);
    }
}
