//! The roofline: a device's peak FP32 rate and memory bandwidth as the roof, each kernel as a point at its
//! arithmetic intensity (FLOP per DRAM byte) and achieved rate, on log-log axes, drawn as SVG.

use crate::error::ProfileError;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};
use std::sync::Once;

/// A device's theoretical peaks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DevicePeaks {
    /// DRAM (HBM/GDDR) bandwidth, GB/s.
    pub bandwidth_gb_s: f64,
    /// FP32 rate, GFLOP/s.
    pub fp32_gflop_s: f64,
}

/// What the driver reports about a device, enough for its theoretical peaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSpec {
    pub sm_count: u32,
    /// SM clock, kHz.
    pub clock_khz: u32,
    /// Memory clock, kHz.
    pub memory_clock_khz: u32,
    pub memory_bus_bits: u32,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
}

impl DevicePeaks {
    /// Peaks from the driver's figures: bandwidth = 2 (double data rate) × memory clock × bus width / 8;
    /// FP32 = SMs × FP32 cores per SM × clock × 2 (an FMA is two FLOPs). `None` for an architecture whose
    /// cores per SM are not known here.
    pub fn theoretical(spec: &DeviceSpec) -> Option<DevicePeaks> {
        let cores = fp32_cores_per_sm(spec.compute_capability)?;
        let bandwidth =
            2.0 * f64::from(spec.memory_clock_khz) * 1e3 * f64::from(spec.memory_bus_bits) / 8.0;
        let flops =
            f64::from(spec.sm_count) * f64::from(cores) * f64::from(spec.clock_khz) * 1e3 * 2.0;
        Some(DevicePeaks {
            bandwidth_gb_s: bandwidth / 1e9,
            fp32_gflop_s: flops / 1e9,
        })
    }

    /// The arithmetic intensity (FLOP/byte) where the bandwidth roof meets the compute roof.
    pub fn ridge(&self) -> f64 {
        self.fp32_gflop_s / self.bandwidth_gb_s
    }

    /// The attainable GFLOP/s at an arithmetic intensity.
    pub fn roof(&self, intensity: f64) -> f64 {
        (self.bandwidth_gb_s * intensity).min(self.fp32_gflop_s)
    }
}

/// FP32 cores per SM: 64 on Volta/Turing (7.x) and A100 (8.0), 128 on GA10x (8.6), Ada (8.9) and Hopper (9.0).
fn fp32_cores_per_sm((major, minor): (u32, u32)) -> Option<u32> {
    match (major, minor) {
        (7, _) | (8, 0) => Some(64),
        (8, 6) | (8, 7) | (8, 9) | (9, 0) => Some(128),
        _ => None,
    }
}

/// One kernel on the roofline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RooflinePoint {
    pub label: String,
    /// FLOP per DRAM byte.
    pub intensity: f64,
    /// Achieved GFLOP/s.
    pub gflop_s: f64,
}

impl RooflinePoint {
    /// From a kernel's work and one measured time: FLOPs, bytes moved to and from DRAM, milliseconds.
    pub fn from_work(
        label: impl Into<String>,
        flops: f64,
        bytes: f64,
        time_ms: f64,
    ) -> RooflinePoint {
        RooflinePoint {
            label: label.into(),
            intensity: flops / bytes,
            gflop_s: flops / (time_ms * 1e6),
        }
    }
}

const WIDTH: u32 = 720;
const HEIGHT: u32 = 480;
const FONT: &[u8] = include_bytes!("../fonts/DejaVuSansMono.ttf");
const FAMILY: &str = "sans-serif";
const ROOF: RGBColor = RGBColor(0, 114, 178);
const POINT: RGBColor = RGBColor(213, 94, 0);

/// Draws the roofline of `peaks` with `points` as an SVG document.
pub fn roofline_svg(
    title: &str,
    peaks: &DevicePeaks,
    points: &[RooflinePoint],
) -> Result<String, ProfileError> {
    check(peaks, points)?;
    register_font();
    let ridge = peaks.ridge();
    let (x_range, y_range) = ranges(peaks, points);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FAMILY, 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x_range.clone().log_scale(), y_range.log_scale())
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("arithmetic intensity (FLOP/byte, log)")
            .y_desc("GFLOP/s (log)")
            .label_style((FAMILY, 12))
            .draw()
            .map_err(plot_err)?;
        // The roof: the bandwidth slope up to the ridge, then flat at the FP32 peak.
        let roof = [x_range.start, ridge, x_range.end].map(|x| (x, peaks.roof(x)));
        chart
            .draw_series(LineSeries::new(roof, ROOF.stroke_width(2)))
            .map_err(plot_err)?
            .label(format!(
                "{:.0} GB/s, {:.0} GFLOP/s FP32",
                peaks.bandwidth_gb_s, peaks.fp32_gflop_s
            ))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], ROOF.stroke_width(2)));
        let ridge_label = format!("ridge {ridge:.1} FLOP/B");
        let below = Pos::new(HPos::Left, VPos::Top);
        chart
            .draw_series([EmptyElement::at((ridge, peaks.fp32_gflop_s))
                + Circle::new((0, 0), 5, ROOF.filled())
                + Text::new(
                    ridge_label,
                    (6, 6),
                    (FAMILY, 12).into_font().color(&ROOF).pos(below),
                )])
            .map_err(plot_err)?;
        let above = Pos::new(HPos::Left, VPos::Bottom);
        chart
            .draw_series(points.iter().map(|p| {
                EmptyElement::at((p.intensity, p.gflop_s))
                    + Circle::new((0, 0), 4, POINT.filled())
                    + Text::new(
                        p.label.clone(),
                        (6, -4),
                        TextStyle::from((FAMILY, 12).into_font()).pos(above),
                    )
            }))
            .map_err(plot_err)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .label_font((FAMILY, 12))
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

fn check(peaks: &DevicePeaks, points: &[RooflinePoint]) -> Result<(), ProfileError> {
    let positive = |v: f64| v.is_finite() && v > 0.0;
    if !positive(peaks.bandwidth_gb_s) || !positive(peaks.fp32_gflop_s) {
        return Err(ProfileError::BadRoofline(format!("{peaks:?}")));
    }
    if let Some(p) = points
        .iter()
        .find(|p| !positive(p.intensity) || !positive(p.gflop_s))
    {
        return Err(ProfileError::BadRoofline(format!("{p:?}")));
    }
    Ok(())
}

/// Axis ranges that hold the ridge, every point and a decade of roof on either side, in whole decades.
fn ranges(
    peaks: &DevicePeaks,
    points: &[RooflinePoint],
) -> (std::ops::Range<f64>, std::ops::Range<f64>) {
    let ridge = peaks.ridge();
    let xs = points
        .iter()
        .map(|p| p.intensity)
        .chain([ridge / 10.0, ridge * 10.0]);
    let ys = points
        .iter()
        .map(|p| p.gflop_s)
        .chain([peaks.roof(ridge / 10.0), peaks.fp32_gflop_s * 2.0]);
    (decades(xs), decades(ys))
}

fn decades(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    10f64.powf(lo.log10().floor())..10f64.powf(hi.log10().ceil())
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_err() {
            tracing::warn!(
                "the embedded plot font could not be loaded; the roofline will lack text"
            );
        }
    });
}

fn plot_err(e: impl std::fmt::Display) -> ProfileError {
    ProfileError::Plot(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100_sxm() -> DeviceSpec {
        DeviceSpec {
            sm_count: 132,
            clock_khz: 1_980_000,
            memory_clock_khz: 2_619_000,
            memory_bus_bits: 5120,
            compute_capability: (9, 0),
        }
    }

    #[test]
    fn hopper_peaks_come_from_the_driver_figures() {
        let p = DevicePeaks::theoretical(&h100_sxm()).unwrap();
        assert!((p.bandwidth_gb_s - 3352.32).abs() < 0.01, "{p:?}");
        assert!((p.fp32_gflop_s - 66_908.16).abs() < 0.01, "{p:?}");
        assert!((p.ridge() - 19.96).abs() < 0.01);
    }

    #[test]
    fn a100_has_half_the_fp32_cores_per_sm_of_ampere_consumer_parts() {
        let a100 = DeviceSpec {
            compute_capability: (8, 0),
            sm_count: 108,
            clock_khz: 1_410_000,
            ..h100_sxm()
        };
        let ga102 = DeviceSpec {
            compute_capability: (8, 6),
            ..a100
        };
        let (a, g) = (
            DevicePeaks::theoretical(&a100).unwrap(),
            DevicePeaks::theoretical(&ga102).unwrap(),
        );
        assert!((g.fp32_gflop_s / a.fp32_gflop_s - 2.0).abs() < 1e-9);
        assert!((a.fp32_gflop_s - 19_491.84).abs() < 0.01);
        assert_eq!(
            DevicePeaks::theoretical(&DeviceSpec {
                compute_capability: (3, 5),
                ..a100
            }),
            None
        );
    }

    #[test]
    fn the_roof_rises_with_bandwidth_until_the_ridge_then_stays_flat() {
        let p = DevicePeaks {
            bandwidth_gb_s: 1000.0,
            fp32_gflop_s: 10_000.0,
        };
        assert_eq!(p.ridge(), 10.0);
        assert_eq!(p.roof(1.0), 1000.0);
        assert_eq!(p.roof(100.0), 10_000.0);
    }

    #[test]
    fn a_point_from_work_has_its_intensity_and_rate() {
        // naive 1024³ matmul: 2n³ FLOPs, 3 n² floats, 10 ms
        let n = 1024.0_f64;
        let p = RooflinePoint::from_work("naive", 2.0 * n * n * n, 12.0 * n * n, 10.0);
        assert!((p.intensity - 170.67).abs() < 0.01);
        assert!((p.gflop_s - 214.75).abs() < 0.01);
    }

    #[test]
    fn the_svg_shows_the_roof_the_ridge_and_every_labelled_point() {
        let peaks = DevicePeaks::theoretical(&h100_sxm()).unwrap();
        let points = [
            RooflinePoint {
                label: "naive".into(),
                intensity: 0.25,
                gflop_s: 300.0,
            },
            RooflinePoint {
                label: "tiled".into(),
                intensity: 8.0,
                gflop_s: 12_000.0,
            },
        ];
        let svg = roofline_svg("matmul on H100", &peaks, &points).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        for text in [
            "matmul on H100",
            "naive",
            "tiled",
            "ridge 20.0 FLOP/B",
            "3352 GB/s, 66908 GFLOP/s FP32",
        ] {
            assert!(svg.contains(text), "missing {text}");
        }
        assert!(svg.contains("<polyline"), "no roof line");
        assert_eq!(svg.matches("<circle").count(), 3, "ridge + two points");
    }

    #[test]
    fn non_positive_inputs_are_refused_rather_than_drawn() {
        let peaks = DevicePeaks {
            bandwidth_gb_s: 1000.0,
            fp32_gflop_s: 10_000.0,
        };
        let bad = [RooflinePoint {
            label: "x".into(),
            intensity: 0.0,
            gflop_s: 1.0,
        }];
        assert!(matches!(
            roofline_svg("t", &peaks, &bad),
            Err(ProfileError::BadRoofline(_))
        ));
        let no_bw = DevicePeaks {
            bandwidth_gb_s: 0.0,
            ..peaks
        };
        assert!(roofline_svg("t", &no_bw, &[]).is_err());
    }
}
