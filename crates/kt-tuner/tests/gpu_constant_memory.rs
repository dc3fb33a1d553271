//! GPU tests of kernels that read `__constant__` memory: a 2-D convolution whose filter comes from
//! Kernel Tuner's `cmem_args` (as `kt.tune_kernel` sends it) and is checked against an answer computed on
//! the host, so a filter left unwritten (all zeros) fails; and a sidecar kernel whose constants are generated
//! and whose symbol's length is a macro only the compiled module knows. Run on a GPU machine with
//! `cargo test -p kt-tuner --test gpu_constant_memory -- --include-ignored --test-threads=1`.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use kt_tuner::input::suite::SuiteKernel;
use kt_tuner::input::tune_call::TuneCall;
use kt_tuner::model::args::SizeChoice;
use kt_tuner::model::space::TunableParam;
use kt_tuner::session::{TunableKernel, TuneOptions, Verdict};

mod gpu_support;
use gpu_support::{block, tuner};

#[test]
fn gpu_worker_entry() {
    gpu_support::serve_if_worker();
}

/// Each thread computes one output pixel of a `width` x `height` image from an input padded by the filter's
/// size minus one in each direction; the filter lives in constant memory.
const CONVOLUTION: &str = r#"
#define FILTER_H 5
#define FILTER_W 7
__constant__ float d_filter[FILTER_H * FILTER_W];

extern "C" __global__ void conv2d(float *out, const float *in, int width, int height) {
    int x = blockIdx.x * block_size_x + threadIdx.x;
    int y = blockIdx.y * block_size_y + threadIdx.y;
    if (x >= width || y >= height) return;
    int padded = width + FILTER_W - 1;
    float acc = 0.0f;
    for (int i = 0; i < FILTER_H; i++)
        for (int j = 0; j < FILTER_W; j++)
            acc += d_filter[i * FILTER_W + j] * in[(y + i) * padded + x + j];
    out[y * width + x] = acc;
}
"#;

/// A little-endian float32 .npy file of `values`.
fn npy(dir: &Path, name: &str, values: &[f32]) -> PathBuf {
    let header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}",
        values.len()
    );
    let mut text = format!("{header:<117}\n").into_bytes();
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(text.len() as u16).to_le_bytes());
    bytes.append(&mut text);
    bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A deterministic value in [-1, 1) for index `i` (no random crate needed).
fn wave(i: usize, k: f32) -> f32 {
    ((i as f32 * k).sin() * 1000.0).fract()
}

#[test]
#[ignore = "needs a GPU"]
fn a_convolution_reading_its_filter_from_cmem_args_verifies_against_the_host_answer() {
    let (w, h, fh, fw) = (200usize, 120usize, 5usize, 7usize);
    let (pw, ph) = (w + fw - 1, h + fh - 1);
    let input: Vec<f32> = (0..pw * ph).map(|i| wave(i, 0.37)).collect();
    let filter: Vec<f32> = (0..fh * fw).map(|i| wave(i, 1.91)).collect();
    let mut answer = vec![0.0f32; w * h];
    for y in 0..h {
        for x in 0..w {
            let mut acc = 0.0f32;
            for i in 0..fh {
                for j in 0..fw {
                    acc += filter[i * fw + j] * input[(y + i) * pw + x + j];
                }
            }
            answer[y * w + x] = acc;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = |p: PathBuf| serde_json::to_string(&p).unwrap();
    let out = path(npy(dir.path(), "out.npy", &vec![0.0; w * h]));
    let request = format!(
        r#"{{"kernel_name": "conv2d", "kernel_source": {src}, "problem_size": ["{w}", "{h}"],
            "arguments": [
                {{"kind": "array", "dtype": "float32", "path": {out}, "answer": {answer}}},
                {{"kind": "array", "dtype": "float32", "path": {input}}},
                {{"kind": "scalar", "dtype": "int32", "value": {w}, "bytes": {wb:?}}},
                {{"kind": "scalar", "dtype": "int32", "value": {h}, "bytes": {hb:?}}}],
            "constants": [{{"name": "d_filter", "dtype": "float32", "path": {filter}}}],
            "tune_params": [["block_size_x", [16, 32, 64]], ["block_size_y", [2, 4, 8]]],
            "atol": 1e-4}}"#,
        src = serde_json::to_string(CONVOLUTION).unwrap(),
        answer = path(npy(dir.path(), "answer.npy", &answer)),
        input = path(npy(dir.path(), "in.npy", &input)),
        filter = path(npy(dir.path(), "filter.npy", &filter)),
        wb = (w as i32).to_le_bytes(),
        hb = (h as i32).to_le_bytes(),
    );
    let call = TuneCall::from_json(&request).unwrap();
    let (kernel, tests, options) = (
        call.kernel().unwrap(),
        call.tests().unwrap(),
        call.options().unwrap(),
    );
    assert!(options.verify);
    let r = tuner()
        .tune(&kernel, &tests, &options, &mut |_| {})
        .unwrap();
    assert_eq!(r.measurements.len(), 9);
    for m in &r.measurements {
        assert!(m.verdict.is_ok(), "{}: {}", m.config, m.verdict.reason());
    }
}

/// A 1-D filter whose length is a tunable-style macro (`#ifndef TAPS`): kt-cuda cannot know it, the worker
/// takes it from the compiled module's symbol.
const SMOOTH: &str = r#"
#ifndef TAPS
#define TAPS 9
#endif
__constant__ float taps[TAPS];
__constant__ float gain;

extern "C" __global__ void smooth(float *out, const float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < TAPS; k++) acc += taps[k] * in[i + k];
    out[i] = gain * acc;
}
"#;

const SMOOTH_SIDECAR: &str = r#"
kernel = "smooth"
description = "1-D filter and gain in constant memory"
problem_size = ["n"]
outputs = ["out"]
default_block = [128, 1, 1]
bench = { n = 100000 }
test = { n = 5000 }
inputs = { out = "zeros", in = "randn" }
constants = { taps = "randn", gain = "rand" }
sizes = { out = "n", in = "n + 8" }
flops = "18 * n"
bytes = "8 * n"
"#;

#[test]
#[ignore = "needs a GPU"]
fn generated_constants_sized_by_the_module_are_filled_for_every_configuration_and_test() {
    let sidecar = kt_cuda::Sidecar::from_toml(SMOOTH_SIDECAR, Path::new("smooth.toml")).unwrap();
    let suite = SuiteKernel::new(SMOOTH, &sidecar, None)
        .unwrap()
        .with_params(vec![TunableParam::new("block_size_x", [32, 128, 512])]);
    let tests = suite
        .inputs
        .make_tests(&suite.params, SizeChoice::Test, &Default::default(), 2)
        .unwrap();
    assert!(tests.tests.iter().all(|t| t.constants.len() == 2));
    let r = tuner()
        .tune(&suite.kernel, &tests, &TuneOptions::default(), &mut |_| {})
        .unwrap();
    // with the constants unwritten the reference computes zeros over zeros: kt reports a reference that
    // does no work instead of tuning
    for m in &r.measurements {
        assert!(m.verdict.is_ok(), "{}: {}", m.config, m.verdict.reason());
    }
    assert!(r.best.is_some());
}

/// The same sums without constant memory: what `smooth` computes when its taps and gain are all ones.
const PLAIN_SUM: &str = r#"
extern "C" __global__ void smooth(float *out, const float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < 9; k++) acc += in[i + k];
    out[i] = acc;
}
"#;

#[test]
#[ignore = "needs a GPU"]
fn generated_constants_fill_the_whole_symbol_the_module_reports() {
    // all ones: the reference equals a plain sum over the symbol's 9 taps only when every tap is written
    // (unwritten constants are zeros, a symbol filled short sums fewer taps)
    let text = SMOOTH_SIDECAR.replace(
        r#"constants = { taps = "randn", gain = "rand" }"#,
        r#"constants = { taps = "ones", gain = "ones" }"#,
    );
    let sidecar = kt_cuda::Sidecar::from_toml(&text, Path::new("smooth.toml")).unwrap();
    let suite = SuiteKernel::new(SMOOTH, &sidecar, None)
        .unwrap()
        .with_params(vec![TunableParam::new("block_size_x", [128])]);
    let tests = suite
        .inputs
        .make_tests(&suite.params, SizeChoice::Test, &Default::default(), 2)
        .unwrap();
    let mut plain = TunableKernel::new(PLAIN_SUM, "smooth", vec!["n".into()]);
    plain.params = vec![TunableParam::new("block_size_x", [128])];
    // the plain kernel's module has no such symbols: they are skipped, not an error
    let report = tuner()
        .verify(&suite.kernel, &block(128), &plain, &block(128), &tests)
        .unwrap();
    for t in &report.tests {
        assert_eq!(
            t.verdict,
            Verdict::Ok,
            "test {}: {}",
            t.test,
            t.verdict.reason()
        );
    }
}
