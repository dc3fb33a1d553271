//! The report's "Profiles and roofline" section: the naive and the best kernel under the device's roof
//! (kt-profile's drawing, from the run's own timings and the device's theoretical peaks), and each profiled
//! kernel's Nsight Compute summary in words.

use std::fmt::Write as _;

use kt_pipeline::stage3::{ProfileRecord, RunRoofline, Stage3State, run_roofline};

use super::graph_svg::esc;
use crate::record::Fields;

/// The roofline of a run's state (None without the device's peaks, the kernel's work or a timing).
pub(super) fn roofline_of(fields: &Fields) -> Option<RunRoofline> {
    let state: Stage3State =
        serde_json::from_value(serde_json::Value::Object(fields.clone())).ok()?;
    run_roofline(&state)
}

/// Appends the section to `h`.
pub(super) fn section(
    h: &mut String,
    kernel: &str,
    roofline: Option<&RunRoofline>,
    profiles: &[ProfileRecord],
    run_seconds: Option<f64>,
) {
    h.push_str("<h2>Profiles and roofline</h2><div id=\"roofline\" class=\"flex\">");
    match roofline.map(|r| (r, r.svg(&format!("{kernel} on {}", r.device)))) {
        Some((_, Ok(svg))) => {
            let _ = write!(
                h,
                "<div>{svg}<p class=\"muted\">Roof: the device's theoretical DRAM bandwidth and FP32 rate. Points: \
                 the naive and the best kernel's GFLOP/s (kt's own timing, first test) at the kernel's arithmetic \
                 intensity (its FLOPs per byte moved, from the sidecar).</p></div>"
            );
        }
        Some((_, Err(e))) => {
            let _ = write!(
                h,
                "<p class=\"muted\">The roofline could not be drawn: {}</p>",
                esc(&e.to_string())
            );
        }
        None => h.push_str(
            "<p class=\"muted\">No roofline: it needs the device's theoretical peaks and the kernel's FLOPs and \
             bytes (a sidecar's <code>flops</code> and <code>bytes</code>).</p>",
        ),
    }
    h.push_str("<div>");
    let lines = crate::profiles::profile_lines(profiles, run_seconds);
    if lines.is_empty() {
        h.push_str("<p class=\"muted\">No kernel was profiled.</p>");
    } else {
        let _ = write!(h, "<p>{}</p>", esc(&lines[0]));
    }
    for r in profiles.iter().filter(|r| r.summary.is_some()) {
        let name = if r.is_naive() {
            "naive kernel"
        } else {
            r.step.as_str()
        };
        let _ = write!(
            h,
            "<details open><summary>{}</summary><pre>{}</pre></details>",
            esc(name),
            esc(r.summary.as_deref().unwrap_or_default())
        );
    }
    h.push_str("</div></div>");
}
