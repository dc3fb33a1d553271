//! The shapes of the Stage 1 LLM answers. Each type is named in the front matter of its prompt template
//! (`answer = "..."`), and its schemars schema is what structured output constrains the answer to.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the kernel computes (answer of `stage1-describe`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KernelDescription {
    /// One or two sentences: the operation, inputs and outputs by parameter name, the data layout.
    pub description: String,
}

/// How many grid dimensions the kernel indexes (answer of `stage1-dimensions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LaunchDimensionality {
    /// 1, 2 or 3.
    pub dimensions: u32,
}

/// The problem size per grid dimension (answer of `stage1-problem-size`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProblemSizeAnswer {
    /// One expression over scalar parameter names per grid dimension, x first (`n`, `width * height`).
    pub dimensions: Vec<String>,
}

/// The pointer parameters the kernel writes (answer of `stage1-outputs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OutputsAnswer {
    /// Names of the pointer parameters the kernel writes.
    pub outputs: Vec<String>,
    /// The names in `outputs` that the kernel also reads before writing (in place, accumulation, atomics).
    #[serde(default)]
    pub inputs_and_outputs: Vec<String>,
}

/// The answer type names as the templates spell them.
pub(crate) mod names {
    pub const DESCRIBE: &str = "KernelDescription";
    pub const DIMENSIONS: &str = "LaunchDimensionality";
    pub const PROBLEM_SIZE: &str = "ProblemSizeAnswer";
    pub const OUTPUTS: &str = "OutputsAnswer";
}
