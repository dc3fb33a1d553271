//! Kernel Tuner itself (1.5, from PyPI: scripts/test.sh installs it) reads kt's exports: each
//! export directory is copied elsewhere and its script is run there in Kernel Tuner's simulation mode, which
//! fails on a cache it cannot read, on a problem size that differs from the script's, and on any
//! configuration of the restricted space missing from the cache. Kernel Tuner's best must be kt's.
//!
//! Tuning results come from kt's own space, restrictions and search strategies driven by a fake device (the
//! tuner proper needs NVRTC and a driver: the test with kt's fake worker process is ignored without them),
//! and from exports recorded on a GPU under tests/fixtures/kernel_tuner/recorded/.

#![allow(clippy::unwrap_used)]

mod kernel_tuner_support;

use kernel_tuner_support::*;
use kt_tuner::model::space::Restriction;
use kt_tuner::search::Strategy;

#[test]
fn kernel_tuner_picks_kts_best_and_never_a_configuration_kt_saw_fail() {
    let run = FakeRun::matmul();
    // the fastest configuration by the device's model gives a wrong answer: kt skips it, so must Kernel Tuner
    assert_eq!(run.result.best_values(), vec![32, 8]);
    let export = run.export();
    let kt = simulate(&export, "time");
    assert_eq!(kt.best, run.kt_best(), "{}", kt.stdout);
    assert_eq!(kt.kt_best_printed, run.kt_best(), "{}", kt.stdout);
}

#[test]
fn a_partial_random_search_is_replayed_over_the_configurations_kt_measured() {
    let run = FakeRun::matmul_with(Strategy::Random, Some(9));
    assert_eq!(run.result.measurements.len(), 9);
    let export = run.export();
    let kt = simulate(&export, "time");
    assert_eq!(kt.best, run.kt_best(), "{}", kt.stdout);
}

#[test]
fn restrictions_over_scalar_arguments_and_rust_predicates_reach_kernel_tuner() {
    let mut run = FakeRun::vector(vec![
        Restriction::Expr("n % (block_size_x * work_per_thread) == 0".into()),
        Restriction::closure(|c| c.get("block_size_x") != Some(512)),
    ]);
    run.tune(Strategy::BruteForce, None);
    let export = run.export();
    let script = std::fs::read_to_string(export.join("tune_vector.py")).unwrap();
    assert!(
        script.contains("\"6144 % (block_size_x * work_per_thread) == 0\""),
        "{script}"
    );
    assert!(
        script.contains("a Rust predicate cannot be written in Python"),
        "{script}"
    );
    let kt = simulate(&export, "time");
    assert_eq!(kt.best, run.kt_best(), "{}", kt.stdout);
}

#[test]
fn over_several_tests_kernel_tuner_ranks_by_one_launch_and_kts_objective_by_the_sum() {
    let mut run = FakeRun::vector(vec![]);
    run.tests_count = 2;
    run.tune(Strategy::BruteForce, None);
    let export = run.export();
    let by_objective = simulate(&export, "kt_objective_ms");
    assert_eq!(by_objective.best, run.kt_best(), "{}", by_objective.stdout);
    // `time` is one launch of the first test: Kernel Tuner's best is the fastest there
    let by_time = simulate(&export, "time");
    assert_eq!(
        by_time.best,
        run.fastest_on_first_test(),
        "{}",
        by_time.stdout
    );
    assert_ne!(
        by_time.best, by_objective.best,
        "the fake device should make the two differ"
    );
}

#[test]
fn a_kernel_reading_constant_memory_is_exported_with_cmem_args_that_kernel_tuner_takes() {
    let mut run = FakeRun::vector(vec![]);
    run.kernel.source = "__constant__ float coeffs[16];\n\
        __global__ void vector(float *out, const float *a, int n) { out[0] = coeffs[0] * a[0]; }"
        .into();
    run.constants = vec![kt_tuner::model::constants::ConstantArg {
        name: "coeffs".into(),
        dtype: kt_record::DType::Float32,
        elements: None,
        source: kt_tuner::model::args::ArraySource::Generate {
            dist: kt_tuner::model::args::Distribution::Randn,
            seed: 1,
        },
    }];
    run.tune(Strategy::BruteForce, None);
    let export = run.export();
    let script = std::fs::read_to_string(export.join("tune_vector.py")).unwrap();
    assert!(
        script.contains("cmem_args[\"coeffs\"] = rng.standard_normal(16).astype(np.float32)")
            && script.contains("cmem_args=cmem_args,"),
        "{script}"
    );
    let kt = simulate(&export, "time");
    assert_eq!(kt.best, run.kt_best(), "{}", kt.stdout);
}

#[test]
fn recorded_gpu_exports_replay_in_kernel_tuner_with_kts_best() {
    let recorded = recorded_exports();
    assert!(
        !recorded.is_empty(),
        "no export directory under {}: record one with experiments/kernel-tuner/record-export.sh",
        recorded_dir().display()
    );
    for dir in recorded {
        // kt's best is the best over all of the run's tests (`kt_objective_ms`); Kernel Tuner's `time` is the
        // first test's alone, which can rank another configuration first when the run had several tests
        let kt = simulate(&dir, "kt_objective_ms");
        assert_eq!(
            kt.best,
            kt.kt_best_printed,
            "{}: {}",
            dir.display(),
            kt.stdout
        );
    }
}

#[test]
#[ignore = "needs NVRTC and a CUDA driver: the tuner compiles every configuration before the fake worker runs it"]
fn tuning_with_kts_fake_worker_exports_a_cache_kernel_tuner_replays() {
    let (_home, export, best) = tune_with_fake_worker();
    let kt = simulate(&export, "time");
    assert_eq!(kt.best, best, "{}", kt.stdout);
    // racing: block 256 (4 ms on the fake, four times the best) stopped after its verifying launch, and its
    // entry, with one launch in `times` and the evidence, is one Kernel Tuner read to find the same best
    let cache: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(export.join("copy_cache.json")).unwrap())
            .unwrap();
    let slow = cache["cache"]
        .as_object()
        .unwrap()
        .values()
        .find(|e| e["block_size_x"] == 256)
        .unwrap();
    assert_eq!(slow["times"].as_array().map(Vec::len), Some(1), "{slow}");
    assert_eq!(slow["kt_aborted_early"]["samples"], 1, "{slow}");
    assert!(
        slow["kt_aborted_early"]["fastest_ms"].as_f64()
            > slow["kt_aborted_early"]["bound_ms"].as_f64(),
        "{slow}"
    );
}

/// The worker process of the test above: this test binary, re-executed with only this test selected.
#[test]
fn fake_worker_entry() {
    serve_fake_worker_if_asked();
}
