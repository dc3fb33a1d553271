//! Profiles and the roofline of a run. A kernel is profiled with Nsight Compute at its best configuration when
//! a prompt about to be asked reads its profile (the strategy's `profile` and `profile_in`) and it was not
//! profiled yet, or, with `profile_every_best`, whenever it becomes the best kernel ([`ProfileRecord`]s in
//! the state, `profiles` in result.json). The summary goes into the prompt inside a measured section
//! (`<measured>` … `</measured>`), which a request's identity leaves out so a recorded run replays on another
//! GPU. The roofline places the naive and
//! the best kernel under the device's theoretical peaks, at the kernel's arithmetic intensity.

use std::collections::BTreeMap;

#[cfg(test)]
use kt_profile::{DevicePeaks, KernelProfile};

use crate::stage3::context::Stage3Context;
pub use crate::stage3::profiling::profile_record::ProfileRecord;
use crate::stage3::state::Stage3State;
use crate::stage3::tunable_code::ORIGINAL_STEP;
use crate::strategy::ProfilePrompt;
pub use kt_record::{RunProfiles, RunRoofline};

/// The profiles of a run for result.json; `wall_s` is the run's wall time (for the overhead). None when no
/// profiling was attempted (a run that stopped before its baseline).
pub fn run_profiles(state: &Stage3State, wall_s: f64) -> Option<RunProfiles> {
    if state.profiles.is_empty() {
        return None;
    }
    let seconds: f64 = state.profiles.iter().map(|r| r.seconds).sum();
    let naive = state.profiles.iter().find(|r| r.is_naive()).cloned();
    let steps: Vec<ProfileRecord> = state
        .profiles
        .iter()
        .filter(|r| !r.is_naive())
        .cloned()
        .collect();
    let off = if state.profiles.iter().all(|r| r.profile.is_none()) {
        state.profiles.iter().find_map(|r| r.skipped.clone())
    } else {
        None
    };
    Some(RunProfiles {
        naive,
        steps,
        seconds,
        overhead_pct: (wall_s > 0.0).then(|| 100.0 * seconds / wall_s),
        off,
    })
}

/// The roofline of a run: needs the device's peaks, the kernel's arithmetic intensity and the naive
/// kernel's GFLOP/s (kt's own timing); the best kernel is added when a step was accepted and its GFLOP/s are
/// known.
pub fn run_roofline(state: &Stage3State) -> Option<RunRoofline> {
    let reference = state.reference.as_ref()?;
    let best = state.best.as_ref().filter(|b| b.step != ORIGINAL_STEP);
    Some(RunRoofline::of(
        &reference.device,
        reference.theoretical_peaks?,
        reference.arithmetic_intensity?,
        reference.gflops?,
        best.and_then(|b| b.gflops),
    ))
}

/// The profile record of the best kernel at its configuration, when one was taken.
pub(crate) fn best_profile(state: &Stage3State) -> Option<&ProfileRecord> {
    let best = state.best.as_ref()?;
    state
        .profiles
        .iter()
        .rev()
        .find(|r| r.step == best.step && r.params == best.best_params)
}

/// The best kernel's profile summary for a prompt of kind `prompt`, when the strategy puts profiles into
/// that prompt and the best kernel was profiled; the template wraps it in a measured section.
pub(crate) fn prompt_profile(
    cx: &Stage3Context,
    state: &Stage3State,
    prompt: ProfilePrompt,
) -> Option<String> {
    if !cx.strategy.settings.prompt_reads_profile(prompt) {
        return None;
    }
    best_profile(state).and_then(|r| r.summary.clone())
}

/// Where the best kernel stands against the ceiling that binds it on this GPU, in one sentence for the
/// planner's measured section: the roofline at the kernel's arithmetic intensity (memory bandwidth × FLOPs per
/// byte, or the FP32 rate where that is lower) and the best kernel's share of it. None without the sidecar's
/// work expressions or the device's peaks. The share is as measured, never clamped.
pub(crate) fn ceiling_sentence(state: &Stage3State) -> Option<String> {
    let best = state.best.as_ref()?;
    let reference = state.reference.as_ref()?;
    let (peaks, intensity) = (
        reference.theoretical_peaks?,
        reference.arithmetic_intensity?,
    );
    let share = best.percent_of_peak?;
    let memory_roof = peaks.bandwidth_gb_s * intensity;
    let (roof, bound) = if memory_roof < peaks.fp32_gflop_s {
        (memory_roof, "memory bandwidth")
    } else {
        (peaks.fp32_gflop_s, "the FP32 rate")
    };
    let gap = if share < 100.0 {
        format!("{:.1}x from it", 100.0 / share.max(0.1))
    } else {
        "at it".to_string()
    };
    Some(format!(
        "Ceiling: at {intensity:.2} FLOP/byte this kernel is bound by {bound} ({:.0} GFLOP/s on this GPU);          the best version so far reaches {share:.0} % of it, {gap}.",
        roof
    ))
}

/// The profile summary a planning prompt reads, with the ceiling sentence after it.
pub(crate) fn with_ceiling(profile: Option<String>, state: &Stage3State) -> Option<String> {
    match (profile, ceiling_sentence(state)) {
        (Some(p), Some(c)) => Some(format!("{p}\n{c}")),
        (p, None) => p,
        (None, Some(c)) => Some(c),
    }
}

/// A record from a profiling run: the summary rendered from the profile (a rendering failure only loses
/// the summary).
pub(crate) fn record(
    step: &str,
    params: &BTreeMap<String, i64>,
    run: crate::stage3::backend::tuning_backend::ProfileRun,
) -> ProfileRecord {
    let summary = run
        .profile
        .as_ref()
        .and_then(|p| match kt_profile::summarize(p) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(step, error = %e, "the profile could not be summarised");
                None
            }
        });
    if let Some(reason) = &run.skipped {
        tracing::debug!(step, %reason, "kernel not profiled");
    }
    ProfileRecord {
        step: step.to_string(),
        params: params.clone(),
        profile: run.profile,
        summary,
        skipped: run.skipped,
        seconds: run.seconds,
        from_cache: run.cached,
    }
}

/// kt-profile's real ncu capture of the naive matmul on an H100, parsed.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn captured_profile() -> KernelProfile {
    KernelProfile::parse(include_str!(
        "../../../../kt-profile/tests/fixtures/captured-matmul-naive-h100.csv"
    ))
    .unwrap()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::stage3::backend::tuning_backend::{ProfileRun, Reference};

    fn captured() -> KernelProfile {
        captured_profile()
    }

    fn reference() -> Reference {
        Reference {
            time_ms: 10.0,
            noise_ms: 0.1,
            percent_of_peak: None,
            gflops: Some(2000.0),
            device: "NVIDIA H100".into(),
            theoretical_peaks: Some(DevicePeaks {
                bandwidth_gb_s: 3350.0,
                fp32_gflop_s: 66900.0,
            }),
            arithmetic_intensity: Some(170.0),
        }
    }

    #[test]
    fn a_profile_is_recorded_with_its_summary_in_words() {
        let run = ProfileRun {
            profile: Some(captured()),
            skipped: None,
            seconds: 3.5,
            cached: false,
        };
        let r = record(ORIGINAL_STEP, &BTreeMap::new(), run);
        assert!(r.is_naive());
        let summary = r.summary.unwrap();
        assert!(
            summary.lines().count() <= kt_profile::MAX_LINES,
            "{summary}"
        );
        assert!(summary.contains("`matmul`"), "{summary}");
    }

    #[test]
    fn without_ncu_the_run_says_once_why_profiles_are_off() {
        let state = Stage3State {
            profiles: vec![
                record(
                    ORIGINAL_STEP,
                    &BTreeMap::new(),
                    ProfileRun::skipped("ncu was not found"),
                ),
                record(
                    "tiling",
                    &BTreeMap::new(),
                    ProfileRun::skipped("ncu was not found"),
                ),
            ],
            ..Stage3State::default()
        };
        let p = run_profiles(&state, 100.0).unwrap();
        assert_eq!(p.off.as_deref(), Some("ncu was not found"));
        assert!(p.naive.is_some() && p.steps.len() == 1);
        assert!(run_profiles(&Stage3State::default(), 1.0).is_none());
    }

    #[test]
    fn the_overhead_is_the_profiling_time_over_the_run_wall_time() {
        let run = |s| ProfileRun {
            profile: Some(captured()),
            skipped: None,
            seconds: s,
            cached: false,
        };
        let state = Stage3State {
            profiles: vec![
                record(ORIGINAL_STEP, &BTreeMap::new(), run(3.0)),
                record("tiling", &BTreeMap::new(), run(2.0)),
            ],
            ..Stage3State::default()
        };
        let p = run_profiles(&state, 100.0).unwrap();
        assert_eq!(p.seconds, 5.0);
        assert_eq!(p.overhead_pct, Some(5.0));
        assert!(p.off.is_none());
        assert_eq!(p.steps[0].step, "tiling");
    }

    #[test]
    fn the_roofline_places_naive_and_best_at_the_kernels_intensity() {
        let mut state = Stage3State {
            reference: Some(reference()),
            ..Stage3State::default()
        };
        let roof = run_roofline(&state).unwrap();
        assert_eq!(roof.points.len(), 1);
        assert_eq!(roof.points[0].label, "naive");
        state.best = Some(crate::stage3::KernelVersion {
            kernel: crate::stage3::TunableCode {
                code: String::new(),
                parameters: Vec::new(),
                restrictions: Vec::new(),
                grid_divisors: Default::default(),
                dynamic_shared_memory: None,
                seeds: Vec::new(),
            },
            time_ms: 1.0,
            noise_ms: 0.01,
            best_params: BTreeMap::new(),
            step: "tiling".into(),
            file: None,
            percent_of_peak: None,
            gflops: Some(20000.0),
        });
        let roof = run_roofline(&state).unwrap();
        assert_eq!(roof.points.len(), 2);
        assert!(roof.points.iter().all(|p| p.intensity == 170.0));
        let svg = roof.svg("matrixMultiply on NVIDIA H100").unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        assert!(svg.contains("naive") && svg.contains("best"));
        state.reference.as_mut().unwrap().theoretical_peaks = None;
        assert!(run_roofline(&state).is_none(), "no roof without peaks");
    }

    #[test]
    fn the_planner_reads_the_binding_ceiling_and_the_best_kernels_share_unclamped() {
        let best = |share: Option<f64>| crate::stage3::KernelVersion {
            kernel: crate::stage3::TunableCode {
                code: String::new(),
                parameters: Vec::new(),
                restrictions: Vec::new(),
                grid_divisors: Default::default(),
                dynamic_shared_memory: None,
                seeds: Vec::new(),
            },
            time_ms: 1.0,
            noise_ms: 0.01,
            best_params: BTreeMap::new(),
            step: "tiling".into(),
            file: None,
            percent_of_peak: share,
            gflops: None,
        };
        let mut state = Stage3State {
            reference: Some(reference()),
            best: Some(best(Some(41.0))),
            ..Stage3State::default()
        };
        // 170 FLOP/byte x 3350 GB/s is above 66.9 TFLOP/s: compute-bound
        let s = ceiling_sentence(&state).unwrap();
        assert!(
            s.contains("the FP32 rate (66900 GFLOP/s") && s.contains("41 %") && s.contains("2.4x"),
            "{s}"
        );
        state.reference.as_mut().unwrap().arithmetic_intensity = Some(0.25);
        state.best = Some(best(Some(180.0)));
        let s = ceiling_sentence(&state).unwrap();
        assert!(
            s.contains("memory bandwidth (838 GFLOP/s")
                && s.contains("180 %")
                && s.contains("at it"),
            "{s}"
        );
        assert_eq!(
            with_ceiling(Some("profile".into()), &state).unwrap(),
            format!("profile\n{s}")
        );
        state.best = Some(best(None));
        assert!(ceiling_sentence(&state).is_none());
        assert_eq!(with_ceiling(Some("p".into()), &state).as_deref(), Some("p"));
    }
}
