//! The tuning distribution as inline SVG: one row per tuning (a kernel version), one dot per verified
//! configuration at its time, the best marked — where a person sees at a glance how wide the search space
//! spread and how far the best is from the typical configuration. (The speedup-per-step chart is kt-runs'.)

use kt_runs::report::TuningRow;

use crate::tuning_progress::TuningProgress;

/// Rows to draw: the tuner's own per-configuration times when its results files are there, else each
/// candidate's best time (runs whose tuning left no results file, such as the fake backend's).
pub fn tuning_series(progress: &[TuningProgress], rows: &[TuningRow]) -> Vec<(String, Vec<f64>)> {
    let from_cache: Vec<(String, Vec<f64>)> = progress
        .iter()
        .filter(|p| !p.times_ms.is_empty())
        .map(|p| (p.source.chars().take(8).collect(), p.times_ms.clone()))
        .collect();
    if !from_cache.is_empty() {
        return from_cache;
    }
    rows.iter()
        .filter_map(|r| {
            r.time_ms
                .map(|t| (format!("round {} · #{}", r.round, r.index), vec![t]))
        })
        .collect()
}

/// `<svg id="tuning-svg">`: the series as dot rows over a shared time axis.
pub fn tuning_distribution_svg(series: &[(String, Vec<f64>)]) -> String {
    let (w, left, right, row, top) = (760.0, 130.0, 20.0, 26.0, 24.0);
    let h = top + row * series.len().max(1) as f64 + 36.0;
    let max = series
        .iter()
        .flat_map(|(_, t)| t.iter().copied())
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.05;
    let x = |v: f64| left + v / max * (w - left - right);
    let mut s = format!(
        r#"<svg id="tuning-svg" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="tuning distribution">"#
    );
    if series.is_empty() {
        s.push_str(r##"<text x="10" y="40" font-family="sans-serif" font-size="13" fill="#777">no configuration measured yet</text></svg>"##);
        return s;
    }
    let axis_y = top + row * series.len() as f64 + 6.0;
    for i in 0..=4 {
        let v = max * i as f64 / 4.0;
        s.push_str(&format!(
            r##"<line x1="{x0}" x2="{x0}" y1="{top}" y2="{axis_y}" stroke="#eee"/><text x="{x0}" y="{}" font-size="11" text-anchor="middle" font-family="sans-serif">{v:.3} ms</text>"##,
            axis_y + 16.0,
            x0 = x(v)
        ));
    }
    for (i, (label, times)) in series.iter().enumerate() {
        let y = top + row * i as f64 + row / 2.0;
        s.push_str(&format!(
            r#"<text x="{}" y="{}" font-size="12" text-anchor="end" font-family="monospace">{}</text>"#,
            left - 8.0,
            y + 4.0,
            esc(label)
        ));
        let best = times.iter().copied().fold(f64::INFINITY, f64::min);
        for t in times {
            let (r, fill) = if *t == best {
                (5.0, "#e08a00")
            } else {
                (3.0, "#4a78b5")
            };
            s.push_str(&format!(
                r#"<circle cx="{:.1}" cy="{y}" r="{r}" fill="{fill}" fill-opacity="0.7"><title>{t:.4} ms</title></circle>"#,
                x(*t)
            ));
        }
    }
    s.push_str("</svg>");
    s
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_dot_per_configuration_and_the_best_is_marked() {
        let svg = tuning_distribution_svg(&[
            ("abc".into(), vec![2.0, 1.0, 3.0]),
            ("d".into(), vec![4.0]),
        ]);
        assert_eq!(svg.matches("<circle").count(), 4);
        assert_eq!(svg.matches("#e08a00").count(), 2, "one best per row");
        assert!(tuning_distribution_svg(&[]).contains("no configuration measured yet"));
    }

    #[test]
    fn candidates_stand_in_when_the_tuner_left_no_results_file() {
        let row = TuningRow {
            round: 1,
            index: 0,
            verdict: "accepted".into(),
            time_ms: Some(4.0),
            noise_ms: None,
            best_params: String::new(),
            configs_tried: None,
            configs_failed: None,
            detail: String::new(),
        };
        assert_eq!(
            tuning_series(&[], &[row]),
            vec![("round 1 · #0".to_string(), vec![4.0])]
        );
    }
}
