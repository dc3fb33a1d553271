//! `tuning/results-<kernel-hash>.jsonl`: the tuner's results cache, one line per measured configuration,
//! appended the moment it is measured. kt-tuner writes each line as a [`TuningLine`] of its full measurement;
//! readers that only watch progress (kt studio) read a [`TuningLine`] of [`MeasuredConfig`], the part of a
//! measurement they need, so they need no tuner.

use serde::{Deserialize, Serialize};

/// Which results a line belongs to: the device, the kernel's source with its name and compile options
/// (hashed), and the problem (tests and timing policy), so that a changed kernel or another GPU never reuses
/// a stale result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TuningScope {
    pub device_uuid: String,
    pub source_hash: String,
    pub problem: String,
}

impl TuningScope {
    pub fn new(
        device_uuid: &str,
        source: &str,
        kernel_name: &str,
        options: &[String],
        problem: &str,
    ) -> Self {
        let mut h = blake3::Hasher::new();
        h.update(source.as_bytes());
        h.update(b"\0");
        h.update(kernel_name.as_bytes());
        for o in options {
            h.update(b"\0");
            h.update(o.as_bytes());
        }
        TuningScope {
            device_uuid: device_uuid.into(),
            source_hash: h.finalize().to_hex()[..32].to_string(),
            problem: problem.into(),
        }
    }
}

/// One line of the results cache: its scope and the measurement (`M`: the tuner's whole measurement when
/// written, [`MeasuredConfig`] when watched).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuningLine<M> {
    pub scope: TuningScope,
    pub measurement: M,
}

/// How a measured configuration ended: `ok` or why not (`wrong_answer`, `compile_error`, …), the tag of
/// the tuner's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct VerdictKind {
    pub kind: String,
}

/// What a watcher reads of one measurement: the configuration, its verdict and its objective (the sum over
/// the tests of its median times, ms).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MeasuredConfig {
    /// Parameter name → value, as the tuner wrote it.
    pub config: serde_json::Value,
    pub verdict: VerdictKind,
    #[serde(default)]
    pub objective: Option<f64>,
    /// GPU time of its timed launches, spent and needed (`crate::tuning_efficiency`); absent in lines written
    /// before kt recorded it, and read as absent when malformed.
    #[serde(default, deserialize_with = "crate::lenient::or_default")]
    pub gpu: Option<crate::GpuTime>,
}

impl MeasuredConfig {
    /// The objective of a configuration that verified; None for one that failed.
    pub fn verified_ms(&self) -> Option<f64> {
        self.objective.filter(|_| self.verdict.kind == "ok")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_watcher_reads_the_configuration_verdict_and_time_of_a_written_line() {
        let written = TuningLine {
            scope: TuningScope::new("GPU-1", "__global__ void k() {}", "k", &[], "p"),
            measurement: serde_json::json!({"config": {"block_size_x": 64}, "verdict": {"kind": "ok"},
                "objective": 1.5, "per_test_ms": [1.5], "compile_ms": 30.0}),
        };
        let text = serde_json::to_string(&written).unwrap();
        let read: TuningLine<MeasuredConfig> = serde_json::from_str(&text).unwrap();
        assert_eq!(read.scope, written.scope);
        assert_eq!(read.scope.source_hash.len(), 32);
        assert_eq!(read.measurement.verified_ms(), Some(1.5));
        let failed: MeasuredConfig = serde_json::from_value(serde_json::json!(
            {"config": {}, "verdict": {"kind": "wrong_answer", "detail": "x"}, "objective": 2.0}))
        .unwrap();
        assert_eq!(failed.verified_ms(), None);
        assert_eq!(failed.gpu, None);
    }

    #[test]
    fn a_lines_gpu_time_is_read_when_present_and_ignored_when_malformed() {
        let line = |gpu: serde_json::Value| -> MeasuredConfig {
            serde_json::from_value(serde_json::json!(
                {"config": {}, "verdict": {"kind": "ok"}, "objective": 1.0, "gpu": gpu}))
            .unwrap()
        };
        let g = line(serde_json::json!({"spent_ms": 3.0, "needed_ms": 1.0}))
            .gpu
            .unwrap();
        assert_eq!((g.spent_ms, g.needed_ms), (3.0, 1.0));
        assert_eq!(line(serde_json::json!("garbage")).gpu, None);
    }

    #[test]
    fn the_scope_changes_with_the_source_name_and_options() {
        let s =
            |src: &str, name: &str, opts: &[String]| TuningScope::new("G", src, name, opts, "p");
        let base = s("a", "k", &[]);
        assert_ne!(base, s("b", "k", &[]));
        assert_ne!(base, s("a", "k2", &[]));
        assert_ne!(base, s("a", "k", &["-O3".to_string()]));
    }
}
