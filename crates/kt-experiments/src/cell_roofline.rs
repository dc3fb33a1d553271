//! A cell's roofline as its run's result.json records it (the device's theoretical peaks, the naive and best
//! kernel's points): read by the report for each cell, drawn per kernel by `roofline`.

use kt_profile::{DevicePeaks, RooflinePoint};
use serde::{Deserialize, Serialize};

/// A run's roofline as result.json records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellRoofline {
    pub device: String,
    pub peaks: DevicePeaks,
    pub points: Vec<RooflinePoint>,
}

impl CellRoofline {
    /// The `roofline` of a result.json value, when it has a readable one.
    pub fn of(result: &serde_json::Value) -> Option<CellRoofline> {
        serde_json::from_value(result.get("roofline")?.clone()).ok()
    }

    pub(crate) fn point(&self, label: &str) -> Option<&RooflinePoint> {
        self.points.iter().find(|p| p.label == label)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_result_without_a_roofline_has_none_and_one_with_it_is_read() {
        assert!(CellRoofline::of(&serde_json::json!({"speedup": 2.0})).is_none());
        let r = serde_json::json!({"roofline": {"device": "H100", "peaks": {"bandwidth_gb_s": 3352.0, "fp32_gflop_s": 66908.0},
            "points": [{"label": "naive", "intensity": 500.0, "gflop_s": 5600.0}]}});
        let c = CellRoofline::of(&r).unwrap();
        assert_eq!(c.device, "H100");
        assert!(c.point("naive").is_some() && c.point("best").is_none());
    }
}
