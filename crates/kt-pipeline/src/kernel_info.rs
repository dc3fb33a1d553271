//! [`KernelInfo`]: what Stage 1 knows about a kernel. Shared by every later version of the kernel, because a
//! transformation must keep the signature, the outputs and the meaning of the size parameters.

use serde::{Deserialize, Serialize};

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
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
