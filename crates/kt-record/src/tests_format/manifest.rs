//! manifest.json of a test directory (docs/tests-format.md): written by kt-sandbox's generator harness,
//! completed by Stage 2 with the expected outputs, read by kt-tuner. Fields other than `args` are optional on
//! reading, so that hand-written tests directories need only what the tuner uses.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The format version kt writes.
pub const FORMAT: u32 = 1;

/// One test's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestManifest {
    #[serde(default)]
    pub format: u32,
    #[serde(default)]
    pub kernel: String,
    #[serde(default)]
    pub seed: u64,
    pub args: Vec<ManifestArg>,
    /// The contents of the `__constant__` symbols the kernel reads (none for most kernels; absent then).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constants: Vec<ManifestConstant>,
    #[serde(default)]
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
        /// Written always; a hand-written manifest may leave it to the .npy header.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shape: Option<Vec<u64>>,
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

/// The contents of one `__constant__` symbol: an array no argument carries, written into the loaded module
/// before each launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestConstant {
    /// The symbol's name in the source.
    pub name: String,
    pub dtype: String,
    /// Written always; a hand-written manifest may leave it to the .npy header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    /// Relative to the test directory: `constants/<name>.npy`.
    pub file: String,
    /// The CUDA vector struct the last dimension stands for (`float4`).
    #[serde(rename = "struct", default, skip_serializing_if = "Option::is_none")]
    pub struct_name: Option<String>,
}

impl TestManifest {
    /// The file of each expected output, by output name (none before Stage 2 ran the original kernel).
    pub fn expected_file(&self, output: &str) -> Option<&str> {
        self.expected.as_ref()?.get(output).map(String::as_str)
    }
}

impl ManifestArg {
    /// The data file of an array argument (None for a scalar).
    pub fn file(&self) -> Option<&str> {
        match self {
            ManifestArg::Array { file, .. } => Some(file),
            ManifestArg::Scalar { .. } => None,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            ManifestArg::Array { name, .. } | ManifestArg::Scalar { name, .. } => name,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_read_and_a_manifest_without_them_writes_no_key() {
        let text = r#"{"format": 1, "args": [{"kind": "scalar", "name": "n", "dtype": "int32", "value": 7}],
            "constants": [{"name": "coeffs", "dtype": "float32", "shape": [16], "file": "constants/coeffs.npy"}]}"#;
        let m: TestManifest = serde_json::from_str(text).unwrap();
        assert_eq!(m.constants[0].name, "coeffs");
        assert_eq!(m.constants[0].shape, Some(vec![16]));
        assert_eq!(m.constants[0].file, "constants/coeffs.npy");
        let back: TestManifest = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        let without = TestManifest {
            constants: Vec::new(),
            ..m
        };
        assert!(
            !serde_json::to_string(&without)
                .unwrap()
                .contains("constants")
        );
        assert_eq!(without.args[0].file(), None);
    }
}
