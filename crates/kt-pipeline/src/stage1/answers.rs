//! The shapes of the Stage 1 LLM answers. Each type is named in the front matter of its prompt template
//! (`answer = "..."`), and its schemars schema is what structured output constrains the answer to.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `stage1-describe`: what the kernel computes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KernelDescription {
    /// One or two sentences.
    pub description: String,
}

/// `stage1-dimensions`: how many grid dimensions the kernel indexes (1, 2 or 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LaunchDimensionality {
    pub dimensions: u32,
}

/// `stage1-problem-size`: one expression over scalar parameters per grid dimension, x first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProblemSizeAnswer {
    pub dimensions: Vec<String>,
}

/// `stage1-outputs`: the pointer parameters written, and those also read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OutputsAnswer {
    pub outputs: Vec<String>,
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
