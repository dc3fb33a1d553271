//! Profiles through the whole graph on the CPU: the fake backend answers every profile with kt-profile's
//! real ncu capture, so the naive kernel and each accepted step are profiled, recorded in the state, and (with
//! `profile = true`) rendered into the plan, replan and apply prompts inside a measured section that leaves
//! the prompt, once removed, exactly as it reads without profiles.

use kt_llm::without_measured;

use super::graph_tests::{Harness, harness_with, plan, prompts_of, restrictions, run, valid};
use super::profiling::captured_profile;
use super::*;
use crate::job::recorded_run::matmul_rewrite as rewrite;
use crate::strategy::StrategyOverrides;

fn autonomous(backend: FakeBackend) -> Harness {
    harness_with(
        "autonomous",
        StrategyOverrides {
            replan: Some(1),
            breakdown: Some(0),
            candidates: None,
        },
        &[
            (
                "stage3.plan",
                plan(&["tunable block size", "register tiling"]),
            ),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 10.0")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 9.99")),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.replan", plan(&[])),
        ],
        backend,
    )
}

fn peaks() -> kt_profile::DevicePeaks {
    kt_profile::DevicePeaks {
        bandwidth_gb_s: 3352.0,
        fp32_gflop_s: 66908.0,
    }
}

#[tokio::test]
async fn the_naive_kernel_and_each_accepted_step_are_profiled_and_recorded() {
    let h = autonomous(FakeBackend::new(20.0).with_profile(captured_profile()));
    let s = run(&h).await.unwrap();
    let steps: Vec<&str> = s.profiles.iter().map(|r| r.step.as_str()).collect();
    assert_eq!(
        steps,
        vec!["original", "tunable block size"],
        "the rejected step is not profiled"
    );
    assert_eq!(h.backend.profiled().len(), 2);
    assert!(s.profiles.iter().all(|r| r.profile.is_some()));
    let summary = s.profiles[0].summary.as_deref().unwrap();
    assert!(summary.contains("`matmul`"), "{summary}");
    let run = run_profiles(&s, 100.0).unwrap();
    assert!(run.naive.is_some() && run.steps.len() == 1 && run.off.is_none());
    assert_eq!(
        run.overhead_pct,
        Some(1.0),
        "two fake profiles of 0.5 s each"
    );
}

#[tokio::test]
async fn profile_facts_reach_plan_replan_and_apply_prompts_in_measured_sections_only() {
    let profiled = autonomous(FakeBackend::new(20.0).with_profile(captured_profile()));
    run(&profiled).await.unwrap();
    let plain = autonomous(FakeBackend::new(20.0));
    run(&plain).await.unwrap();
    let summary = kt_profile::summarize(&captured_profile()).unwrap();
    for node in ["stage3.plan", "stage3.replan", "stage3.apply"] {
        let with = prompts_of(&profiled, node);
        let without = prompts_of(&plain, node);
        assert_eq!(with.len(), without.len(), "{node}");
        for (w, p) in with.iter().zip(&without) {
            assert!(
                w.contains("<measured>\n") && w.contains("</measured>"),
                "{node}:\n{w}"
            );
            assert!(w.contains(&summary), "{node} lacks the summary:\n{w}");
            assert!(!p.contains("<measured>"), "{node}:\n{p}");
            // Without its measured section the prompt is byte for byte the prompt without profiles, so a
            // cassette recorded without profiles (or on another GPU) still replays.
            assert_eq!(without_measured(w), p.as_str(), "{node}");
        }
    }
    // Questions that are not about planning or rewriting get no profile.
    for node in ["stage3.validate", "stage3.restrictions"] {
        assert!(
            prompts_of(&profiled, node)
                .iter()
                .all(|p| !p.contains("<measured>")),
            "{node}"
        );
    }
}

#[tokio::test]
async fn a_strategy_without_profile_true_keeps_profiles_out_of_prompts_but_records_them() {
    let h = harness_with(
        "one-prompt",
        StrategyOverrides::default(),
        &[
            ("stage3.apply", rewrite("ok 10.0")),
            ("stage3.restrictions", restrictions(&[])),
        ],
        FakeBackend::new(20.0).with_profile(captured_profile()),
    );
    assert!(!h.cx.strategy.settings.profile);
    let s = run(&h).await.unwrap();
    assert_eq!(s.profiles.len(), 2);
    assert!(
        prompts_of(&h, "stage3.apply")
            .iter()
            .all(|p| !p.contains("<measured>"))
    );
}

#[tokio::test]
async fn without_a_profiler_the_run_goes_on_and_says_why() {
    let h = autonomous(FakeBackend::new(20.0));
    let s = run(&h).await.unwrap();
    assert!(s.finished);
    let run = run_profiles(&s, 10.0).unwrap();
    assert_eq!(
        run.off.as_deref(),
        Some("the fake GPU was given no profile")
    );
}

#[tokio::test]
async fn the_roofline_shows_the_naive_and_the_best_kernel() {
    let h = autonomous(FakeBackend::new(20.0).with_roofline(peaks(), 683.0, 1000.0));
    let s = run(&h).await.unwrap();
    let roof = run_roofline(&s).unwrap();
    let labels: Vec<&str> = roof.points.iter().map(|p| p.label.as_str()).collect();
    assert_eq!(labels, vec!["naive", "best"]);
    // The accepted step halved the time: twice the GFLOP/s at the same intensity.
    assert_eq!(roof.points[1].gflop_s, 2000.0);
    assert!(roof.points.iter().all(|p| p.intensity == 683.0));
    assert_eq!(roof.peaks, peaks());
}
