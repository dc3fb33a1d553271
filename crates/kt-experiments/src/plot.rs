//! The report's plots, each as PNG and SVG: mean gain per kernel per strategy (grouped bars with ± one
//! standard deviation, like the thesis's figure 13), and gain against transformation time and against tokens
//! (one point per cell, coloured by strategy).
//!
//! Text is drawn with DejaVu Sans Mono, embedded in the crate (fonts/, Bitstream Vera license), so plots look
//! the same on a machine without any system fonts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::ExperimentError;
use crate::report::{CellPoint, Report};
use crate::stats::{mean, std_dev};

const FONT: &[u8] = include_bytes!("../fonts/DejaVuSansMono.ttf");
const FAMILY: &str = "sans-serif";
static FONT_ONCE: Once = Once::new();

fn register_font() {
    FONT_ONCE.call_once(|| {
        if plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_err() {
            tracing::warn!("the embedded plot font could not be loaded; plots will lack text");
        }
    });
}

/// Colours of successive strategies (colour-blind-friendly Okabe–Ito palette).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// The plots of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plot {
    GainPerKernel,
    TimeVsGain,
    TokensVsGain,
}

impl Plot {
    pub const ALL: [Plot; 3] = [Plot::GainPerKernel, Plot::TimeVsGain, Plot::TokensVsGain];

    pub fn file_stem(self) -> &'static str {
        match self {
            Plot::GainPerKernel => "gain_per_kernel",
            Plot::TimeVsGain => "time_vs_gain",
            Plot::TokensVsGain => "tokens_vs_gain",
        }
    }

    fn draw<DB: DrawingBackend>(
        self,
        root: &DrawingArea<DB, Shift>,
        report: &Report,
    ) -> Result<(), String> {
        match self {
            Plot::GainPerKernel => gain_per_kernel(root, report),
            Plot::TimeVsGain => time_vs_gain(root, report),
            Plot::TokensVsGain => tokens_vs_gain(root, report),
        }
    }
}

const SIZE: (u32, u32) = (1200, 700);

/// Writes every plot of `report` into `dir` as PNG and SVG; returns the files written.
pub fn write_plots(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, ExperimentError> {
    register_font();
    std::fs::create_dir_all(dir)
        .map_err(|e| ExperimentError::io(dir, "creating the plot directory", e))?;
    let mut written = Vec::new();
    for plot in Plot::ALL {
        let png = dir.join(format!("{}.png", plot.file_stem()));
        let fail = |path: &Path, detail: String| ExperimentError::Plot {
            path: path.to_path_buf(),
            detail,
        };
        {
            let root = BitMapBackend::new(&png, SIZE).into_drawing_area();
            plot.draw(&root, report).map_err(|d| fail(&png, d))?;
            root.present().map_err(|e| fail(&png, e.to_string()))?;
        }
        let svg = dir.join(format!("{}.svg", plot.file_stem()));
        {
            let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
            plot.draw(&root, report).map_err(|d| fail(&svg, d))?;
            root.present().map_err(|e| fail(&svg, e.to_string()))?;
        }
        written.extend([png, svg]);
    }
    written.extend(crate::roofline::write_rooflines(report, dir)?);
    Ok(written)
}

fn gain_per_kernel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    report: &Report,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (root, legend_area) = root.split_horizontally(LEGEND_X);
    let root = &root;
    let kernels: Vec<String> = ordered(report.points.iter().map(|p| p.kernel.clone()));
    let variants: Vec<String> = ordered(report.points.iter().map(|p| p.variant.clone()));
    let mut gains: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    for p in &report.points {
        let k = kernels.iter().position(|x| *x == p.kernel).unwrap_or(0);
        let v = variants.iter().position(|x| *x == p.variant).unwrap_or(0);
        gains.entry((k, v)).or_default().push(p.gain_pct);
    }
    let bars: Vec<(usize, usize, f64, f64)> = gains
        .iter()
        .filter_map(|(&(k, v), g)| mean(g).map(|m| (k, v, m, std_dev(g).unwrap_or(0.0))))
        .collect();
    let lo = bars.iter().map(|b| b.2 - b.3).fold(0.0_f64, f64::min);
    let hi = bars.iter().map(|b| b.2 + b.3).fold(1.0_f64, f64::max);
    let pad = (hi - lo) * 0.08;
    let n = kernels.len().max(1) as f64;

    let mut chart = ChartBuilder::on(root)
        .caption("Mean gain per kernel and strategy (± 1 std)", (FAMILY, 24))
        .margin(16)
        .x_label_area_size(70)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..(n - 0.5), (lo - pad)..(hi + pad))
        .map_err(|e| e.to_string())?;
    // Kernel names are drawn by hand under their group, in two staggered rows when there are many, so
    // that long names (verlet_integration, sigmoidActivation) never overlap.
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(kernels.len().max(1))
        .x_label_formatter(&|_| String::new())
        .y_desc("gain % = (speedup − 1) × 100")
        .x_desc("kernel")
        .label_style((FAMILY, 14))
        .draw()
        .map_err(|e| e.to_string())?;
    let stagger = kernels.len() > 4;
    for (i, kernel) in kernels.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64, lo - pad));
        let row = if stagger { 16 * (i as i32 % 2) } else { 0 };
        let style =
            TextStyle::from((FAMILY, 14).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(kernel.as_str(), (x, y + 10 + row), style))
            .map_err(|e| e.to_string())?;
    }

    let width = 0.8 / variants.len().max(1) as f64;
    for vi in 0..variants.len() {
        let colour = PALETTE[vi % PALETTE.len()];
        let mine: Vec<&(usize, usize, f64, f64)> = bars.iter().filter(|b| b.1 == vi).collect();
        let x0 = |k: usize| k as f64 - 0.4 + vi as f64 * width;
        chart
            .draw_series(mine.iter().map(|b| {
                Rectangle::new(
                    [(x0(b.0), 0.0), (x0(b.0) + width * 0.9, b.2)],
                    colour.filled(),
                )
            }))
            .map_err(|e| e.to_string())?;
        // Error bars: a vertical line from mean − std to mean + std.
        chart
            .draw_series(mine.iter().filter(|b| b.3 > 0.0).map(|b| {
                let xc = x0(b.0) + width * 0.45;
                PathElement::new(
                    vec![(xc, b.2 - b.3), (xc, b.2 + b.3)],
                    BLACK.stroke_width(1),
                )
            }))
            .map_err(|e| e.to_string())?;
    }
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(-0.5, 0.0), (n - 0.5, 0.0)],
            BLACK.stroke_width(1),
        )))
        .map_err(|e| e.to_string())?;
    legend(&legend_area, &variants, Marker::Bar)
}

fn time_vs_gain<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    report: &Report,
) -> Result<(), String> {
    scatter(
        root,
        report,
        "Gain against transformation time (one point per cell)",
        "transformation time (s)",
        |p| p.time_s,
    )
}

fn tokens_vs_gain<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    report: &Report,
) -> Result<(), String> {
    scatter(
        root,
        report,
        "Gain against LLM tokens (one point per cell)",
        "tokens (input + output)",
        |p| p.tokens as f64,
    )
}

fn scatter<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    report: &Report,
    title: &str,
    x_desc: &str,
    x_of: impl Fn(&CellPoint) -> f64,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (root, legend_area) = root.split_horizontally(LEGEND_X);
    let root = &root;
    let variants: Vec<String> = ordered(report.points.iter().map(|p| p.variant.clone()));
    let x_max = report
        .points
        .iter()
        .map(&x_of)
        .fold(0.0_f64, f64::max)
        .max(1.0)
        * 1.05;
    let y_lo = report
        .points
        .iter()
        .map(|p| p.gain_pct)
        .fold(0.0_f64, f64::min);
    let y_hi = report
        .points
        .iter()
        .map(|p| p.gain_pct)
        .fold(1.0_f64, f64::max);
    let pad = (y_hi - y_lo) * 0.08;
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FAMILY, 24))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, (y_lo - pad)..(y_hi + pad))
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("gain %")
        .label_style((FAMILY, 14))
        .draw()
        .map_err(|e| e.to_string())?;
    for (vi, variant) in variants.iter().enumerate() {
        let colour = PALETTE[vi % PALETTE.len()];
        chart
            .draw_series(
                report
                    .points
                    .iter()
                    .filter(|p| p.variant == *variant)
                    .map(|p| Circle::new((x_of(p), p.gain_pct), 5, colour.filled())),
            )
            .map_err(|e| e.to_string())?;
    }
    legend(&legend_area, &variants, Marker::Dot)
}

/// Where the plot ends and the legend column begins, in pixels.
const LEGEND_X: u32 = 880;

#[derive(Clone, Copy)]
enum Marker {
    Bar,
    Dot,
}

/// The strategies' colours in a column right of the chart, so the legend never hides data.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    variants: &[String],
    marker: Marker,
) -> Result<(), String> {
    area.draw(&Text::new("strategy", (10, 40), (FAMILY, 16)))
        .map_err(|e| e.to_string())?;
    for (i, variant) in variants.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let y = 70 + 24 * i32::try_from(i).unwrap_or(i32::MAX / 48);
        match marker {
            Marker::Bar => area.draw(&Rectangle::new([(10, y - 7), (24, y + 7)], colour.filled())),
            Marker::Dot => area.draw(&Circle::new((17, y), 6, colour.filled())),
        }
        .map_err(|e| e.to_string())?;
        area.draw(&Text::new(variant.as_str(), (32, y - 8), (FAMILY, 14)))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Distinct values, sorted (kernels and strategies appear alphabetically, in every plot alike).
fn ordered(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = items.collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::cell::CellId;
    use crate::ledger::{CellRecord, CellStatus};

    #[test]
    fn plots_of_a_thesis_sized_matrix_are_written_as_png_and_svg() {
        let kernels = [
            "assign_clusters",
            "game_of_life",
            "mandelbrot",
            "matmul",
            "matrixAdd",
            "matrixTranspose",
            "sigmoidActivation",
            "verlet_integration",
        ];
        let variants = [
            "one-prompt",
            "explicit",
            "autonomous",
            "autonomous[breakdown=0,replan=0]",
        ];
        let mut records = Vec::new();
        for (k, kernel) in kernels.iter().enumerate() {
            for (v, variant) in variants.iter().enumerate() {
                for repeat in 0..3_u32 {
                    let speedup =
                        1.0 + 0.1 * (k as f64) * (v as f64 + 1.0) / (f64::from(repeat) + 1.0);
                    records.push(CellRecord {
                        cell_id: CellId(format!("{kernel}-{v}-{repeat}")),
                        kernel: (*kernel).into(),
                        kernel_file: format!("naive-kernels/{kernel}.cu"),
                        strategy: variant.split('[').next().unwrap_or(variant).into(),
                        variant: (*variant).into(),
                        settings: BTreeMap::new(),
                        model: "openai:gpt-4.1".into(),
                        repeat,
                        seed: 0,
                        studies: vec![],
                        status: CellStatus::Finished,
                        over_budget: None,
                        run_dir: None,
                        attempts: 1,
                        elapsed_s: 0.0,
                        llm_tokens: 0,
                        llm_cost_usd: 0.0,
                        error: None,
                        gpu: None,
                        recorded: String::new(),
                        result: Some(serde_json::json!({
                            "status": "finished", "correct": true, "speedup": speedup,
                            "tokens_in": 10000 * (v + 1), "tokens_out": 2000 * (k + 1),
                            "wall_time_s": {"total": 300.0 * (v as f64 + 1.0) + 40.0 * k as f64}
                        })),
                    });
                }
            }
        }
        let report = Report::from_records(None, None, &records);
        let dir = tempfile::tempdir().unwrap();
        let files = write_plots(&report, dir.path()).unwrap();
        assert_eq!(files.len(), 6);
        for f in &files {
            assert!(
                std::fs::metadata(f).unwrap().len() > 1000,
                "{}",
                f.display()
            );
        }
        let svg = std::fs::read_to_string(dir.path().join("gain_per_kernel.svg")).unwrap();
        for kernel in kernels {
            assert!(svg.contains(kernel), "the x axis names {kernel}");
        }
        assert!(
            svg.contains("autonomous[breakdown=0,replan=0]"),
            "the legend names every strategy"
        );
    }
}
