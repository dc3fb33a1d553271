//! End-to-end tests of `kt tune`, `kt verify` and `kt selftest` through the real binary on a machine without
//! a GPU (CI): each must stop with an actionable message and a failure exit code, never a panic. On a GPU
//! machine (KT_GPU=1) the real runs are covered by `kt selftest --gpu` and kt-tuner's GPU tests instead.

#![allow(clippy::unwrap_used)]

use std::process::Output;

mod support;
use support::{kt_command, output, require_no_gpu};

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
    require_no_gpu();
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
    require_no_gpu();
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

/// A failure before any GPU work: exit code 1, no panic, and every piece of `expected` in the message.
fn assert_input_error(out: &Output, expected: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for e in expected {
        assert!(err.contains(e), "`{e}` missing from: {err}");
    }
    assert!(
        !err.contains("on a GPU and could not start one"),
        "reached the GPU: {err}"
    );
}

#[test]
fn a_file_without_a_kernel_is_named_with_what_kt_needs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("host_only.cu");
    std::fs::write(
        &file,
        "#include <stdio.h>\nint main() { printf(\"hi\\n\"); return 0; }\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    for args in [vec!["tune", f, "--test-size"], vec!["verify", f, f]] {
        assert_input_error(&kt(&args), &["host_only.cu", "no __global__ function"]);
    }
}

#[test]
fn a_struct_passed_by_value_is_refused_with_what_to_do() {
    // the thesis's matMulNaiveKernel(Matrix A, Matrix B, Matrix C)
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("matrix_struct.cu");
    std::fs::write(
        &file,
        "typedef struct { int width; int height; float* elements; } Matrix;\n\
         __global__ void matMulNaiveKernel(Matrix A, Matrix B, Matrix C) {\n\
             int row = blockIdx.y * blockDim.y + threadIdx.y;\n\
             int col = blockIdx.x * blockDim.x + threadIdx.x;\n\
             if (row < C.height && col < C.width) C.elements[row * C.width + col] = A.elements[row] * B.elements[col];\n\
         }\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    for args in [
        vec!["tune", f, "--problem-size", "1024,1024"],
        vec!["verify", f, f],
    ] {
        assert_input_error(
            &kt(&args),
            &[
                "matrix_struct.cu",
                "`A`",
                "by value",
                "16 bytes",
                "Pass its fields as parameters",
            ],
        );
    }
}

#[test]
fn two_kernels_and_no_kernel_flag_ask_for_one_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two.cu");
    std::fs::write(
        &file,
        "__global__ void scale(float *x, int n) { x[0] *= 2; }\n\
         __global__ void shift(float *x, int n) { x[0] += 1; }\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    for args in [
        vec!["tune", f, "--problem-size", "n", "--size", "n=10"],
        vec!["verify", f, f],
    ] {
        assert_input_error(&kt(&args), &["two.cu", "scale, shift", "--kernel NAME"]);
    }
}

#[test]
fn a_kernel_whose_header_is_missing_names_the_file_the_header_and_the_include_flag() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("uses_header.cu");
    std::fs::write(
        &file,
        "#include \"params.h\"\n__global__ void scale(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] *= FACTOR; }\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    for args in [
        vec!["tune", f, "--problem-size", "n", "--size", "n=10"],
        vec!["verify", f, f],
    ] {
        assert_input_error(
            &kt(&args),
            &["uses_header.cu:1", "\"params.h\"", "--include DIR"],
        );
    }
}

#[test]
fn a_whole_program_is_tuned_as_its_kernel_and_the_user_is_told_host_code_was_left_out() {
    require_no_gpu();
    let out = kt(&[
        "tune",
        "tests/corpus/wild/vector_add_program.cu",
        "--test-size",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("host code left out: ") && err.contains("main"),
        "{err}"
    );
    // the input was fine: what stops it here is the missing GPU
    assert_clear_failure(&out);
}

#[test]
fn a_template_block_size_brings_the_block_size_along_unless_told_not_to() {
    require_no_gpu();
    let base = [
        "tune",
        "tests/corpus/programs/sample-style/reduction.cu",
        "--kernel",
        "reduce3",
        "--param",
        "blockSize=128,256",
        "--test-size",
    ];
    let out = kt(&base);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("block_size_x added to the space with the values [128, 256]")
            && err.contains("restriction from the code: block_size_x == blockSize"),
        "{err}"
    );
    assert_clear_failure(&out);
    let mut off = base.to_vec();
    off.push("--no-derived-restrictions");
    let out = kt(&off);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("restriction from the code"), "{err}");
    assert_clear_failure(&out);
}
