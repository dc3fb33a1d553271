//! Profiles through the whole graph on the CPU: the fake backend answers every profile with kt-profile's
//! real ncu capture. A kernel is profiled when a prompt about to be asked reads its profile (or, with
//! `profile_every_best`, as it becomes the best), recorded in the state, and rendered into the prompts the
//! strategy names inside a measured section that leaves the prompt, once removed, exactly as it reads
//! without profiles.

use kt_llm::without_measured;

use crate::job::recorded_run::matmul_rewrite as rewrite;
use crate::stage3::profiling::run_profiles::captured_profile;
use crate::stage3::steps::graph_tests::{
    Harness, harness_with, plan, prompts_of, restrictions, run, valid,
};
use crate::stage3::*;
use crate::strategy::{ProfilePrompt, StrategyOverrides};
use std::sync::Arc;

/// Plan two steps (the first accepted at 10 ms, the second at `second`), then replan once with nothing.
fn autonomous_with(backend: FakeBackend, second: &str) -> Harness {
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
            ("stage3.apply", rewrite(second)),
            ("stage3.restrictions", restrictions(&[])),
            ("stage3.replan", plan(&[])),
        ],
        backend,
    )
}

/// As [`autonomous_with`], the second step rejected (not faster than the first).
fn autonomous(backend: FakeBackend) -> Harness {
    autonomous_with(backend, "ok 9.99")
}

/// `h` with its strategy's settings changed by `change`.
fn with_settings(
    mut h: Harness,
    change: impl FnOnce(&mut crate::strategy::StrategySettings),
) -> Harness {
    let cx = Arc::get_mut(&mut h.cx).expect("the harness's context is not shared yet");
    change(&mut cx.strategy.settings);
    h
}

fn profiled_steps(s: &Stage3State) -> Vec<&str> {
    s.profiles.iter().map(|r| r.step.as_str()).collect()
}

fn peaks() -> kt_profile::DevicePeaks {
    kt_profile::DevicePeaks {
        bandwidth_gb_s: 3352.0,
        fp32_gflop_s: 66908.0,
    }
}

#[tokio::test]
async fn by_default_only_the_kernels_a_prompt_reads_are_profiled() {
    // Both steps accepted: the plan reads the naive kernel's profile, the replan the second step's; the
    // first step's kernel is never in a prompt and is not profiled.
    let h = autonomous_with(
        FakeBackend::new(20.0).with_profile(captured_profile()),
        "ok 5.0",
    );
    let s = run(&h).await.unwrap();
    assert_eq!(profiled_steps(&s), vec!["original", "register tiling"]);
    assert_eq!(h.backend.profiled().len(), 2);
    assert!(h.cx.strategy.settings.takes_profiles());
    // apply prompts do not read profiles by default
    assert!(
        prompts_of(&h, "stage3.apply")
            .iter()
            .all(|p| !p.contains("<measured>"))
    );
    let replan = prompts_of(&h, "stage3.replan");
    assert!(
        replan.iter().all(|p| p.contains("<measured>")),
        "{replan:?}"
    );
}

#[tokio::test]
async fn with_profile_every_best_the_naive_kernel_and_each_accepted_step_are_profiled_and_recorded()
{
    let h = with_settings(
        autonomous(FakeBackend::new(20.0).with_profile(captured_profile())),
        |s| s.profile_every_best = true,
    );
    let s = run(&h).await.unwrap();
    assert_eq!(
        profiled_steps(&s),
        vec!["original", "tunable block size"],
        "the rejected step is not profiled, and the replan reuses the first step's profile"
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
async fn apply_prompts_that_read_profiles_get_each_accepted_steps_profile_once() {
    let h = with_settings(
        autonomous_with(
            FakeBackend::new(20.0).with_profile(captured_profile()),
            "ok 5.0",
        ),
        |s| s.profile_in.push(ProfilePrompt::Apply),
    );
    let s = run(&h).await.unwrap();
    // plan: the naive kernel; apply of step 2: step 1's kernel; replan: step 2's kernel
    assert_eq!(
        profiled_steps(&s),
        vec!["original", "tunable block size", "register tiling"]
    );
    assert_eq!(h.backend.profiled().len(), 3);
}

#[tokio::test]
async fn profile_facts_reach_plan_replan_and_apply_prompts_in_measured_sections_only() {
    let all_prompts = |s: &mut crate::strategy::StrategySettings| {
        s.profile_in = vec![
            ProfilePrompt::Plan,
            ProfilePrompt::Replan,
            ProfilePrompt::Apply,
        ];
    };
    let profiled = with_settings(
        autonomous(FakeBackend::new(20.0).with_profile(captured_profile())),
        all_prompts,
    );
    run(&profiled).await.unwrap();
    let plain = with_settings(autonomous(FakeBackend::new(20.0)), all_prompts);
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
async fn a_strategy_without_profile_true_profiles_nothing_unless_asked_to_record_every_best() {
    let one_prompt = || {
        harness_with(
            "one-prompt",
            StrategyOverrides::default(),
            &[
                ("stage3.apply", rewrite("ok 10.0")),
                ("stage3.restrictions", restrictions(&[])),
            ],
            FakeBackend::new(20.0).with_profile(captured_profile()),
        )
    };
    let h = one_prompt();
    assert!(!h.cx.strategy.settings.profile);
    assert!(!h.cx.strategy.settings.takes_profiles());
    let s = run(&h).await.unwrap();
    assert!(s.profiles.is_empty() && h.backend.profiled().is_empty());
    assert!(run_profiles(&s, 10.0).is_none());

    let h = with_settings(one_prompt(), |s| s.profile_every_best = true);
    assert!(h.cx.strategy.settings.takes_profiles());
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

#[tokio::test]
async fn a_best_kernel_at_its_ceiling_is_not_replanned() {
    // The original at 1000 GFLOP/s of a 66908 GFLOP/s ceiling; a step 64x faster lands at 95.6 %: the plan is
    // used up and no replan is asked for, though replans are left.
    let h = harness_with(
        "autonomous",
        StrategyOverrides::default(),
        &[
            ("stage3.plan", plan(&["all at once"])),
            ("stage3.validate", valid(true)),
            ("stage3.apply", rewrite("ok 0.3125")),
            ("stage3.restrictions", restrictions(&[])),
        ],
        FakeBackend::new(20.0).with_roofline(peaks(), 683.0, 1000.0),
    );
    let s = run(&h).await.unwrap();
    let share = s.best.as_ref().unwrap().percent_of_peak.unwrap();
    assert!((95.0..=110.0).contains(&share), "{share}");
    assert_eq!(s.replans_used, 0);
    assert!(prompts_of(&h, "stage3.replan").is_empty());
}
