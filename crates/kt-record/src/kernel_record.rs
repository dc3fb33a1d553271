//! `kernels/NNN-<step>.json`: what the run knows of one kernel it wrote to `kernels/NNN-<step>.cu` — the
//! step that made it, its tunable space, and how its tuning went (docs/run-format.md). Stage 3 writes one per
//! candidate and one for the original; the reports read them beside the code.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::RecordError;
use crate::layout::write_json;
use crate::lenient::or_default;

/// The step name of the user's own kernel (`kernels/000-original.cu`, the naive kernel of profiles).
pub const ORIGINAL_STEP: &str = "original";

/// One tunable parameter and the values its space takes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParameterRecord {
    pub name: String,
    pub values: Vec<i64>,
}

/// A kernel file's record. Read leniently: a field that is missing or of another type reads as absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelRecord {
    /// The step that made the kernel (`original` for the user's).
    #[serde(deserialize_with = "or_default")]
    pub step: String,
    #[serde(deserialize_with = "or_default")]
    pub parameters: Vec<ParameterRecord>,
    /// Boolean expressions over the parameters that every configuration meets.
    #[serde(deserialize_with = "or_default")]
    pub restrictions: Vec<String>,
    /// Per dimension x, y, z: the names whose product divides the problem size.
    #[serde(deserialize_with = "or_default")]
    pub grid_divisors: [Vec<String>; 3],
    /// Dynamic shared memory in bytes, as an expression over the parameters.
    #[serde(deserialize_with = "or_default")]
    pub dynamic_shared_memory: Option<String>,
    /// `verified`, `compile error`, `wrong answer`, `timeout`, `crashed` or `no valid configuration`; null for
    /// the original and for a candidate that never reached the tuner.
    #[serde(deserialize_with = "or_default")]
    pub verdict: Option<String>,
    /// The tuning's outcome in detail (time and noise, or the compile log, the first mismatches, …): Stage 3's
    /// tuning outcome as JSON, tagged by its verdict; null when `verdict` is.
    #[serde(deserialize_with = "or_default")]
    pub outcome: Option<serde_json::Value>,
    /// The best configuration found.
    #[serde(deserialize_with = "or_default")]
    pub best_params: BTreeMap<String, i64>,
}

impl KernelRecord {
    /// The record at `path`; None when there is none or it is not JSON.
    pub fn read(path: &Path) -> Option<KernelRecord> {
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes the record to `path` atomically.
    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        write_json(path, self)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_record_round_trips_and_an_odd_field_reads_as_absent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("001-tiling.json");
        let record = KernelRecord {
            step: "tiling".into(),
            parameters: vec![ParameterRecord {
                name: "block_size_x".into(),
                values: vec![16, 32],
            }],
            verdict: Some("verified".into()),
            best_params: BTreeMap::from([("block_size_x".to_string(), 32)]),
            ..KernelRecord::default()
        };
        record.write(&path).unwrap();
        assert_eq!(KernelRecord::read(&path), Some(record));
        std::fs::write(&path, r#"{"step": "x", "verdict": 3, "new_field": true}"#).unwrap();
        let odd = KernelRecord::read(&path).unwrap();
        assert_eq!((odd.step.as_str(), odd.verdict), ("x", None));
        assert_eq!(KernelRecord::read(&dir.path().join("none.json")), None);
    }
}
