//! manifest.json of a test directory (see the tests format shared by kt-sandbox, kt-tuner and kt-pipeline).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The format version this crate writes.
pub const FORMAT: u32 = 1;

/// One test's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestManifest {
    pub format: u32,
    pub kernel: String,
    pub seed: u64,
    pub args: Vec<ManifestArg>,
    pub outputs: Vec<String>,
    /// Evaluated problem size (x, y, z), when the spec gave expressions for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem_size: Option<[i64; 3]>,
    /// Output name → file with the expected values; written later, by running the original kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_time_ms: Option<f64>,
}

/// One kernel argument, in parameter order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ManifestArg {
    Array {
        name: String,
        dtype: String,
        shape: Vec<u64>,
        /// Relative to the test directory: `args/<name>.npy`.
        file: String,
        /// The CUDA vector struct the last dimension stands for (`float3`).
        #[serde(rename = "struct", default, skip_serializing_if = "Option::is_none")]
        struct_name: Option<String>,
    },
    Scalar {
        name: String,
        dtype: String,
        value: serde_json::Number,
    },
}

impl ManifestArg {
    pub fn name(&self) -> &str {
        match self {
            ManifestArg::Array { name, .. } | ManifestArg::Scalar { name, .. } => name,
        }
    }
}
