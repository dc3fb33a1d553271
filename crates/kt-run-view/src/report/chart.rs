//! The speedup-per-step chart as inline SVG: one point per step (its own speedup, coloured by verdict) and
//! the best-so-far line, over the original kernel (1×).

use super::graph_svg::esc;
use serde::Serialize;

/// Speedup after one step (for the chart).
#[derive(Debug, Clone, Serialize)]
pub struct StepPoint {
    pub label: String,
    pub status: String,
    /// The step's own speedup over the original (its best candidate), when it verified.
    pub step_speedup: Option<f64>,
    /// The best speedup so far after this step.
    pub best_speedup: f64,
}

pub(crate) fn speedup_svg(points: &[StepPoint]) -> String {
    let (w, h, left, right, top, bottom) = (760.0, 300.0, 56.0, 16.0, 16.0, 90.0);
    let n = points.len().max(1) as f64;
    let max = points
        .iter()
        .flat_map(|p| [p.step_speedup.unwrap_or(0.0), p.best_speedup])
        .fold(1.0f64, f64::max)
        * 1.15;
    let x = |i: usize| left + (i as f64 + 0.5) * (w - left - right) / n;
    let y = |v: f64| top + (1.0 - v / max) * (h - top - bottom);
    let mut s = format!(
        r#"<svg id="speedup-svg" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="speedup per step">"#
    );
    // axes and gridlines at whole multiples
    let step = if max > 10.0 { (max / 5.0).ceil() } else { 1.0 };
    let mut v = 0.0;
    while v <= max {
        s.push_str(&format!(
            r##"<line x1="{left}" x2="{}" y1="{y0}" y2="{y0}" stroke="#e5e5e5"/><text x="{}" y="{}" font-size="11" text-anchor="end" font-family="sans-serif">{v}×</text>"##,
            w - right,
            left - 6.0,
            y(v) + 4.0,
            y0 = y(v)
        ));
        v += step;
    }
    s.push_str(&format!(
        r##"<line x1="{left}" x2="{}" y1="{y1}" y2="{y1}" stroke="#555" stroke-dasharray="4,3"/>"##,
        w - right,
        y1 = y(1.0)
    ));
    if !points.is_empty() {
        let line: Vec<String> = points
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{:.1},{:.1}", x(i), y(p.best_speedup)))
            .collect();
        s.push_str(&format!(
            r##"<polyline id="best-line" points="{}" fill="none" stroke="#e08a00" stroke-width="2.5"/>"##,
            line.join(" ")
        ));
    }
    for (i, p) in points.iter().enumerate() {
        if let Some(v) = p.step_speedup {
            let color = if p.status == "accepted" {
                "#2a9d3a"
            } else {
                "#c0392b"
            };
            s.push_str(&format!(
                r#"<circle class="point" cx="{:.1}" cy="{:.1}" r="5" fill="{color}"><title>{}: {} ({v:.2}×)</title></circle>"#,
                x(i),
                y(v),
                esc(&p.label),
                esc(&p.status)
            ));
        }
        let label: String = p.label.chars().take(22).collect();
        s.push_str(&format!(
            r#"<text x="{:.1}" y="{:.1}" font-size="11" font-family="sans-serif" transform="rotate(35 {:.1} {:.1})">{}</text>"#,
            x(i),
            h - bottom + 14.0,
            x(i),
            h - bottom + 14.0,
            esc(&label)
        ));
    }
    s.push_str("</svg>");
    s
}
