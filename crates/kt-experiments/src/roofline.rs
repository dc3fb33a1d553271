//! Per kernel, the device's roofline with the naive kernel and each strategy variant's best kernel on it,
//! from the `roofline` of the cells' result.json (the device's theoretical peaks, the kernel's arithmetic
//! intensity and the GFLOP/s kt measured), drawn by kt-profile as `roofline_<kernel>.svg`.

use std::path::{Path, PathBuf};

use kt_profile::{RooflinePoint, roofline_svg};

use crate::error::ExperimentError;
use crate::report::{CellPoint, Report};

/// The points of one kernel: its naive kernel (from the first cell with one), then per strategy variant
/// the best kernel with the highest GFLOP/s among its correct cells.
fn kernel_points(cells: &[&CellPoint]) -> Vec<RooflinePoint> {
    let mut points = Vec::new();
    if let Some(naive) = cells
        .iter()
        .find_map(|c| c.roofline.as_ref().and_then(|r| r.point("naive")))
    {
        points.push(naive.clone());
    }
    let mut variants: Vec<&str> = Vec::new();
    for c in cells {
        if !variants.contains(&c.variant.as_str()) {
            variants.push(&c.variant);
        }
    }
    for v in variants {
        let best = cells
            .iter()
            .filter(|c| c.variant == v && c.correct)
            .filter_map(|c| c.roofline.as_ref().and_then(|r| r.point("best")))
            .max_by(|a, b| a.gflop_s.total_cmp(&b.gflop_s));
        if let Some(p) = best {
            points.push(RooflinePoint {
                label: v.to_string(),
                ..p.clone()
            });
        }
    }
    points
}

fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes `roofline_<kernel>.svg` into `dir` for every kernel whose cells recorded a roofline.
pub fn write_rooflines(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, ExperimentError> {
    let mut kernels: Vec<&str> = Vec::new();
    for p in &report.points {
        if p.roofline.is_some() && !kernels.contains(&p.kernel.as_str()) {
            kernels.push(&p.kernel);
        }
    }
    let mut written = Vec::new();
    for kernel in kernels {
        let cells: Vec<&CellPoint> = report
            .points
            .iter()
            .filter(|p| p.kernel == kernel && p.roofline.is_some())
            .collect();
        let Some(first) = cells.first().and_then(|c| c.roofline.as_ref()) else {
            continue;
        };
        let points = kernel_points(&cells);
        let path = dir.join(format!("roofline_{}.svg", file_safe(kernel)));
        let fail = |detail: String| ExperimentError::Plot {
            path: path.clone(),
            detail,
        };
        let svg = roofline_svg(
            &format!("{kernel} on {}", first.device),
            &first.peaks,
            &points,
        )
        .map_err(|e| fail(e.to_string()))?;
        std::fs::write(&path, svg).map_err(|e| fail(e.to_string()))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ledger::CellRecord;
    use serde_json::json;

    fn record(id: &str, variant: &str, best_gflops: Option<f64>) -> CellRecord {
        let mut points = vec![json!({"label": "naive", "intensity": 683.0, "gflop_s": 1900.0})];
        if let Some(g) = best_gflops {
            points.push(json!({"label": "best", "intensity": 683.0, "gflop_s": g}));
        }
        serde_json::from_value(json!({
            "cell_id": id, "kernel": "matmul", "kernel_file": "naive-kernels/matmul.cu",
            "strategy": variant, "variant": variant, "settings": {}, "model": "m", "repeat": 0,
            "seed": 0, "studies": [], "status": "finished", "attempts": 1, "elapsed_s": 1.0,
            "recorded": "",
            "result": {
                "status": "finished", "correct": best_gflops.is_some(), "speedup": 2.0,
                "roofline": {
                    "device": "NVIDIA H100 80GB HBM3",
                    "peaks": {"bandwidth_gb_s": 3352.0, "fp32_gflop_s": 66908.0},
                    "points": points
                }
            }
        }))
        .unwrap()
    }

    #[test]
    fn each_kernel_gets_a_roofline_with_its_naive_point_and_each_strategys_best() {
        let records = [
            record("a", "explicit", Some(5000.0)),
            record("b", "explicit", Some(9000.0)),
            record("c", "autonomous", Some(21000.0)),
            record("d", "one-prompt", None),
        ];
        let report = Report::from_records(None, None, &records);
        let cells: Vec<&CellPoint> = report.points.iter().collect();
        let points = kernel_points(&cells);
        let labels: Vec<(&str, f64)> = points
            .iter()
            .map(|p| (p.label.as_str(), p.gflop_s))
            .collect();
        assert_eq!(
            labels,
            vec![
                ("naive", 1900.0),
                ("explicit", 9000.0),
                ("autonomous", 21000.0)
            ],
            "the best cell per variant; a variant without a correct kernel has no point"
        );
        let dir = tempfile::tempdir().unwrap();
        let files = write_rooflines(&report, dir.path()).unwrap();
        assert_eq!(files, vec![dir.path().join("roofline_matmul.svg")]);
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            svg.contains("matmul on NVIDIA H100"),
            "the title names kernel and device"
        );
        assert!(svg.contains("autonomous") && svg.contains("naive"));
    }

    #[test]
    fn results_without_a_roofline_draw_none() {
        let mut r = record("a", "explicit", Some(5000.0));
        r.result
            .as_mut()
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove("roofline");
        let report = Report::from_records(None, None, &[r]);
        let dir = tempfile::tempdir().unwrap();
        assert!(write_rooflines(&report, dir.path()).unwrap().is_empty());
    }
}
