//! result.json's `profiles` and `roofline`: what profiling found of the naive kernel and each accepted step's
//! kernel, and where they stand under the device's roof. Stage 3 keeps [`ProfileRecord`]s in its state as it
//! profiles; the reports (kt runs, the HTML page, kt studio, experiment reports) read them from here.

use std::collections::BTreeMap;

use kt_profile::{DevicePeaks, KernelProfile, RooflinePoint};
use serde::{Deserialize, Serialize};

use crate::kernel_record::ORIGINAL_STEP;

/// One profiled kernel: the naive one (`step` = "original") or an accepted step's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileRecord {
    /// The step that made the kernel ("original" for the naive kernel).
    pub step: String,
    /// The configuration profiled (the kernel's best).
    pub params: BTreeMap<String, i64>,
    pub profile: Option<KernelProfile>,
    /// The profile in a CUDA programmer's words (at most ten lines): what prompts get.
    pub summary: Option<String>,
    /// Why there is no profile.
    pub skipped: Option<String>,
    /// Wall time the profiling took, seconds.
    pub seconds: f64,
    /// The profile was read from the profile cache, not measured in this run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_cache: bool,
}

impl ProfileRecord {
    /// Whether this is the naive kernel's profile.
    pub fn is_naive(&self) -> bool {
        self.step == ORIGINAL_STEP
    }
}

/// result.json's `profiles`: the naive kernel's and each accepted step's, and what they cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunProfiles {
    pub naive: Option<ProfileRecord>,
    pub steps: Vec<ProfileRecord>,
    /// Seconds spent profiling, in all.
    pub seconds: f64,
    /// `seconds` as a share of the run's wall time, %.
    pub overhead_pct: Option<f64>,
    /// Why no kernel was profiled, when none was (said once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off: Option<String>,
}

/// result.json's `roofline`: the device's roof and the naive and best kernels under it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRoofline {
    pub device: String,
    pub peaks: DevicePeaks,
    pub points: Vec<RooflinePoint>,
}

impl RunRoofline {
    /// The roofline of a run: the device's theoretical peaks, the kernel's arithmetic intensity (FLOPs per byte,
    /// the same for every version of it) and the naive kernel's GFLOP/s, with the best kernel's when a step was
    /// accepted and its GFLOP/s are known.
    pub fn of(
        device: &str,
        peaks: DevicePeaks,
        intensity: f64,
        naive_gflops: f64,
        best_gflops: Option<f64>,
    ) -> RunRoofline {
        let point = |label: &str, gflop_s: f64| RooflinePoint {
            label: label.to_string(),
            intensity,
            gflop_s,
        };
        let mut points = vec![point("naive", naive_gflops)];
        points.extend(best_gflops.map(|g| point("best", g)));
        RunRoofline {
            device: device.to_string(),
            peaks,
            points,
        }
    }

    /// The roofline as an SVG document.
    pub fn svg(&self, title: &str) -> Result<String, kt_profile::ProfileError> {
        kt_profile::roofline_svg(title, &self.peaks, &self.points)
    }

    /// The point labelled `label` (`naive`, `best`).
    pub fn point(&self, label: &str) -> Option<&RooflinePoint> {
        self.points.iter().find(|p| p.label == label)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_roofline_reads_from_result_json_and_finds_its_points() {
        let r: RunRoofline = serde_json::from_value(serde_json::json!({
            "device": "H100", "peaks": {"bandwidth_gb_s": 3352.0, "fp32_gflop_s": 66908.0},
            "points": [{"label": "naive", "intensity": 683.0, "gflop_s": 1900.0}]}))
        .unwrap();
        assert_eq!(r.point("naive").unwrap().gflop_s, 1900.0);
        assert!(r.point("best").is_none());
        assert!(r.svg("matmul on H100").unwrap().starts_with("<svg"));
    }

    #[test]
    fn the_naive_kernels_profile_is_the_originals() {
        let record = |step: &str| ProfileRecord {
            step: step.into(),
            params: BTreeMap::new(),
            profile: None,
            summary: None,
            skipped: Some("ncu was not found".into()),
            seconds: 0.0,
            from_cache: false,
        };
        assert!(record(ORIGINAL_STEP).is_naive());
        assert!(!record("tiling").is_naive());
    }
}
