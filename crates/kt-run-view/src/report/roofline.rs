//! The report's "Profiles and roofline" section: the naive and the best kernel under the device's roof
//! (kt-profile's drawing, from the run's own timings and the device's theoretical peaks), and each profiled
//! kernel's Nsight Compute summary in words.

use std::fmt::Write as _;

use kt_profile::DevicePeaks;
use kt_record::{ORIGINAL_STEP, ProfileRecord, RunRoofline};
use serde::Deserialize;

use super::graph_svg::esc;
use crate::record::Fields;

/// What the roofline needs of Stage 3's `reference` field.
#[derive(Deserialize)]
struct Reference {
    device: String,
    theoretical_peaks: Option<DevicePeaks>,
    arithmetic_intensity: Option<f64>,
    gflops: Option<f64>,
}

/// What the roofline needs of Stage 3's `best` field.
#[derive(Deserialize)]
struct Best {
    step: String,
    gflops: Option<f64>,
}

/// The roofline of a run's state (None without the device's peaks, the kernel's work or a timing): read from
/// the checkpoint's fields, so that a running run shows it before its result.json exists.
pub(super) fn roofline_of(fields: &Fields) -> Option<RunRoofline> {
    let field = |name: &str| fields.get(name).cloned();
    let reference: Reference = serde_json::from_value(field("reference")?).ok()?;
    let best = field("best")
        .and_then(|b| serde_json::from_value::<Best>(b).ok())
        .filter(|b| b.step != ORIGINAL_STEP);
    Some(RunRoofline::of(
        &reference.device,
        reference.theoretical_peaks?,
        reference.arithmetic_intensity?,
        reference.gflops?,
        best.and_then(|b| b.gflops),
    ))
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
