//! GPU tests of kernels as people write them: C++ linkage (plain `__global__`, namespaces, templates
//! tuned over their template parameter), includes NVRTC cannot open by itself, a user header, half
//! data, and the five verdicts, each reported as itself. Run on a GPU machine with
//! `cargo test -p kt-tuner --test gpu_kernels -- --include-ignored --test-threads=1`.
//! The worker is this test executable itself, re-executed with only `gpu_worker_entry` selected.

#![allow(clippy::unwrap_used)]

use kt_tuner::model::args::TestSet;
use kt_tuner::model::space::TunableParam;
use kt_tuner::session::{TunableKernel, TuneOptions, Verdict};

mod gpu_support;
use gpu_support::{config_of, tuner};

#[test]
fn gpu_worker_entry() {
    gpu_support::serve_if_worker();
}

/// Tests for `scale(in, out, n)`: `n` = 1000 elements of `dtype`, in random, out zeros.
fn scale_tests(dtype: &str) -> TestSet {
    gpu_support::in_out_n_tests(dtype, 1000.0, "n", &[]).0
}

fn kernel(source: &str, name: &str) -> TunableKernel {
    let mut k = TunableKernel::new(source, name, vec!["n".into()]);
    k.params = vec![TunableParam::new("block_size_x", [64, 128, 256])];
    k
}

const REFERENCE: &str = r#"extern "C" __global__ void scale(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}
"#;

/// Tunes `k` on the scale tests and checks every configuration verified.
fn tunes_cleanly(k: &TunableKernel) {
    let mut t = tuner();
    let r = t
        .tune(
            k,
            &scale_tests("float32"),
            &TuneOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    for m in &r.measurements {
        assert!(m.verdict.is_ok(), "{}: {}", m.config, m.verdict.reason());
    }
    assert!(r.best.is_some());
}

/// Verifies `candidate` against the extern "C" reference; returns the first test's verdict.
fn verdict_of(candidate: &TunableKernel) -> Verdict {
    let mut t = tuner();
    let reference = kernel(REFERENCE, "scale");
    let c = config_of(&[("block_size_x", 128)]);
    let report = t
        .verify(&reference, &c, candidate, &c, &scale_tests("float32"))
        .unwrap();
    report.tests[0].verdict.clone()
}

#[test]
#[ignore = "needs a GPU"]
fn a_plain_global_kernel_without_extern_c_is_tuned_and_verified() {
    let src = "__global__ void scale(const float* in, float* out, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = 2.0f * in[i];\n}\n";
    tunes_cleanly(&kernel(src, "scale"));
    assert_eq!(verdict_of(&kernel(src, "scale")), Verdict::Ok);
}

#[test]
#[ignore = "needs a GPU"]
fn a_kernel_in_a_namespace_is_found_by_its_qualified_name() {
    let src = "namespace ops {\n__device__ float twice(float v) { return 2.0f * v; }\n__global__ void scale(const float* in, float* out, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = twice(in[i]);\n}\n}\n";
    tunes_cleanly(&kernel(src, "ops::scale"));
    assert_eq!(verdict_of(&kernel(src, "ops::scale")), Verdict::Ok);
}

#[test]
#[ignore = "needs a GPU"]
fn a_templated_kernel_is_tuned_over_its_template_parameter() {
    // each thread scales ITEMS consecutive elements: the grid shrinks as ITEMS grows
    let src = "template <typename T, int ITEMS>\n__global__ void scale(const T* in, T* out, int n) {\n    int base = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS;\n    for (int j = 0; j < ITEMS; j++) if (base + j < n) out[base + j] = 2 * in[base + j];\n}\n";
    let mut k = kernel(src, "scale");
    k.params.push(TunableParam::new("ITEMS", [1, 2, 4]));
    k.template_args = vec!["float".into(), "ITEMS".into()];
    k.geometry.grid_div[0] = vec!["block_size_x".into(), "ITEMS".into()];
    let mut t = tuner();
    let r = t
        .tune(
            &k,
            &scale_tests("float32"),
            &TuneOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(r.measurements.len(), 9);
    for m in &r.measurements {
        assert!(m.verdict.is_ok(), "{}: {}", m.config, m.verdict.reason());
    }
}

#[test]
#[ignore = "needs a GPU"]
fn runtime_and_standard_includes_and_a_user_header_compile() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("common.h"),
        "#pragma once\n#define FACTOR 2.0f\ntypedef float real;\n",
    )
    .unwrap();
    let src = "#include <cuda_runtime.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <math.h>\n#include <cstdint>\n#include <assert.h>\n#include \"common.h\"\n__global__ void scale(const real* in, real* out, int32_t n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = FACTOR * in[i];\n    if (i == n) printf(\"done\\n\");\n}\n";
    // (host code is left out before NVRTC by the kernel's unit: whole programs are tested in gpu_corpus.rs)
    let mut k = kernel(src, "scale");
    k.include_dirs = vec![dir.path().to_path_buf()];
    tunes_cleanly(&k);
}

#[test]
#[ignore = "needs a GPU"]
fn a_half_precision_kernel_is_tuned_and_verified() {
    let src = "#include <cuda_fp16.h>\n__global__ void scale(const __half* in, __half* out, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = __float2half(2.0f * __half2float(in[i]));\n}\n";
    let k = kernel(src, "scale");
    let mut t = tuner();
    let tests = scale_tests("float16");
    let r = t
        .tune(&k, &tests, &TuneOptions::default(), &mut |_| {})
        .unwrap();
    for m in &r.measurements {
        assert!(m.verdict.is_ok(), "{}: {}", m.config, m.verdict.reason());
    }
}

#[test]
#[ignore = "needs a GPU"]
fn a_missing_kernel_is_reported_as_kernel_not_found() {
    let v = verdict_of(&kernel(REFERENCE, "scale_missing"));
    assert!(matches!(v, Verdict::KernelNotFound { .. }), "{v:?}");
    assert!(v.reason().starts_with("kernel not found"), "{}", v.reason());
}

#[test]
#[ignore = "needs a GPU"]
fn a_syntax_error_is_reported_as_a_compile_error() {
    let src = "__global__ void scale(const float* in, float* out, int n) { out[0] = in[0] }\n";
    let v = verdict_of(&kernel(src, "scale"));
    assert!(matches!(v, Verdict::CompileError { .. }), "{v:?}");
}

#[test]
#[ignore = "needs a GPU"]
fn a_refused_launch_is_reported_as_a_launch_error() {
    // at most 32 threads per block, launched with 128
    let src = "__global__ void __launch_bounds__(32) scale(const float* in, float* out, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = 2.0f * in[i];\n}\n";
    let v = verdict_of(&kernel(src, "scale"));
    assert!(matches!(v, Verdict::Invalid { .. }), "{v:?}");
    assert!(v.reason().starts_with("launch error"), "{}", v.reason());
}

#[test]
#[ignore = "needs a GPU"]
fn a_hung_kernel_is_reported_as_a_timeout() {
    // a clock loop: an empty loop over a local may be compiled away, the clock is read every iteration
    let src = "__global__ void scale(const float* in, float* out, int n) {\n    long long t0 = clock64();\n    while (clock64() - t0 >= 0) {}\n    out[0] = in[0];\n}\n";
    let v = verdict_of(&kernel(src, "scale"));
    assert!(matches!(v, Verdict::Timeout { .. }), "{v:?}");
}

#[test]
#[ignore = "needs a GPU"]
fn a_wrong_result_is_reported_as_a_wrong_answer() {
    let src = "__global__ void scale(const float* in, float* out, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) out[i] = 3.0f * in[i];\n}\n";
    let v = verdict_of(&kernel(src, "scale"));
    assert!(matches!(v, Verdict::WrongAnswer { .. }), "{v:?}");
}

#[test]
#[ignore = "needs a GPU"]
fn host_typedefs_and_gcc_builtins_compile_under_nvrtc_without_nvcc() {
    // what kernels written for nvcc use from glibc and gcc: NVRTC alone knows none of it (probe.py)
    let src = "constexpr float BIG = INFINITY;\n__device__ const float LOW = -HUGE_VALF;\n\
               __global__ void k(uint *counts, ulong n, float *out) {\n\
               ushort s = 1; uchar c = 2;\n\
               uint i = blockIdx.x * blockDim.x + threadIdx.x;\n\
               if (i < n) {\n\
                 counts[i] = __builtin_popcount(i) + __builtin_clz(i | 1) + s + c;\n\
                 float v = fminf(BIG, __builtin_huge_valf()) + LOW;\n\
                 out[i] = isnan(NAN) && isnan(__builtin_nanf(\"\")) ? __builtin_fabsf(v) : 0.0f;\n\
               }\n}\n";
    let unit = format!(
        "{}{}",
        kt_tuner::compile::nvrtc_prelude::standard_prelude(src),
        src
    );
    // a compile only (no launch): sm_90 is in every NVRTC this project supports
    let arch = kt_tuner::compile::nvrtc::arch_option((9, 0));
    let compiled = kt_tuner::compile::nvrtc::compile(&unit, &[arch]).unwrap();
    if let Err(failure) = compiled {
        panic!("NVRTC refused kt's prelude:\n{unit}\n{}", failure.log);
    }
}
