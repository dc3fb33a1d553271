//! End-to-end tests of `kt tune`, `kt verify` and `kt selftest` through the real binary on a machine without
//! a GPU (CI): each must stop with an actionable message and a failure exit code, never a panic. On a GPU
//! machine (KT_GPU=1) the real runs are covered by `kt selftest --gpu` and kt-tuner's GPU tests instead.

#![allow(clippy::unwrap_used)]

use std::process::Output;

mod support;
use support::{gpu_enabled, kt_command, output};

/// Runs kt with a fresh home, so that no module cache or configuration of the user's is used.
fn kt(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    output(
        kt_command(home.path())
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .args(args),
    )
}

fn assert_clear_failure(out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("NVRTC") || err.contains("driver") || err.contains("GPU"),
        "{err}"
    );
}

#[test]
fn tune_without_a_gpu_fails_with_a_clear_message() {
    if gpu_enabled() {
        return;
    }
    assert_clear_failure(&kt(&[
        "tune",
        "naive-kernels/matmul.cu",
        "--test-size",
        "--param",
        "block_size_x=16,32",
        "--param",
        "block_size_y=4,8",
    ]));
}

#[test]
fn verify_and_selftest_without_a_gpu_fail_with_a_clear_message() {
    if gpu_enabled() {
        return;
    }
    assert_clear_failure(&kt(&[
        "verify",
        "naive-kernels/vectorAdd.cu",
        "naive-kernels/vectorAdd.cu",
    ]));
    assert_clear_failure(&kt(&["selftest", "--gpu"]));
}

#[test]
fn bad_tuning_arguments_are_reported_before_any_gpu_work() {
    let out = kt(&[
        "tune",
        "naive-kernels/matmul.cu",
        "--param",
        "block_size_x=16,big",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("block_size_x=16,big") && err.contains("integers"),
        "{err}"
    );
    let out = kt(&["tune", "naive-kernels/matmul.cu", "--strategy", "telepathy"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown strategy `telepathy`"), "{err}");
}

#[test]
fn the_worker_mode_refuses_to_run_by_hand() {
    let out = kt(&["__tuner-worker"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("fd 3"), "{err}");
}
