//! GPU tests of the checks added for real programs: bfloat16 data end to end, array sizes that follow the
//! configuration, a candidate that launches its own way with its parameters matched by name, reruns that
//! expose a race (and reruns with the same NaNs that agree), compute-sanitizer's findings, and % of peak
//! against the theoretical ceilings. Run on a GPU machine with `cargo test -p kt-tuner --test gpu_checks -- --include-ignored --test-threads=1`.
//! The worker is this test executable itself, re-executed with only `gpu_worker_entry` selected.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use kt_tuner::host::sanitize::{SanitizerReport, run_tools};
use kt_tuner::input::arg_map::match_arguments;
use kt_tuner::model::args::{SuiteInputs, TestSet};
use kt_tuner::model::space::{Config, TunableParam};
use kt_tuner::session::{TunableKernel, TuneOptions, Tuner, Verdict};

mod gpu_support;
use gpu_support::{block, config};

#[test]
fn gpu_worker_entry() {
    gpu_support::serve_if_worker();
}

/// Tests of a kernel `(in, out, n)` over `dtype` arrays of `n` = 10007 elements; `out_size` is out's
/// element count.
fn tests_for(dtype: &str, out_size: &str, configs: &[Config]) -> (TestSet, SuiteInputs) {
    gpu_support::in_out_n_tests(dtype, 10007.0, out_size, configs)
}

const BF16_SCALE: &str = r#"#include <cuda_bf16.h>
__global__ void scale_bf16(const __nv_bfloat16* in, __nv_bfloat16* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float2bfloat16(1.5f * __bfloat162float(in[i]));
}
"#;

#[test]
#[ignore = "needs a GPU"]
fn bfloat16_data_is_generated_tuned_and_verified() {
    let (tests, _) = tests_for("bfloat16", "n", &[]);
    let mut k = TunableKernel::new(BF16_SCALE, "scale_bf16", vec!["n".into()]);
    k.params = vec![TunableParam::new("block_size_x", [64, 256])];
    let r = Tuner::new(config())
        .unwrap()
        .tune(&k, &tests, &TuneOptions::default(), &mut |_| {})
        .unwrap();
    for m in &r.measurements {
        assert!(m.verdict.is_ok(), "{}: {}", m.config, m.verdict.reason());
    }
}

const PARTIAL_SUMS: &str = r#"__global__ void partial_sums(const float* in, float* out, int n) {
    extern __shared__ float s[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (t < h) s[t] += s[t + h];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
"#;

fn partial_sums() -> TunableKernel {
    let mut k = TunableKernel::new(PARTIAL_SUMS, "partial_sums", vec!["n".into()]);
    k.geometry.shared_mem = Some("block_size_x * 4".into());
    k.geometry
        .array_sizes
        .insert("out".into(), "ceil_div(n, block_size_x)".into());
    k
}

#[test]
#[ignore = "needs a GPU"]
fn an_output_sized_by_the_block_size_is_checked_at_each_configuration() {
    let configs = [block(128), block(256)];
    let (tests, _) = tests_for("float32", "ceil_div(n, block_size_x)", &configs);
    assert_eq!(tests.tests[0].arrays().nth(1).unwrap().elements, 79);
    let k = partial_sums();
    let report = Tuner::new(config())
        .unwrap()
        .verify(&k, &block(128), &k, &block(128), &tests)
        .unwrap();
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.tests[0].outputs[0].elements, 79);
}

/// The partial sums into an output sized for the smallest block (64): a larger block writes fewer slots and
/// leaves the rest unwritten. Only the total of the output means anything, and by its total every block
/// size verifies; element by element only the reference's does.
#[test]
#[ignore = "needs a GPU"]
fn partial_sums_laid_out_by_the_block_size_verify_by_their_total() {
    let (tests, _) = tests_for("float32", "ceil_div(n, 64)", &[]);
    let mut k = TunableKernel::new(PARTIAL_SUMS, "partial_sums", vec!["n".into()]);
    k.geometry.shared_mem = Some("block_size_x * 4".into());
    k.params = vec![TunableParam::new("block_size_x", [64, 128, 256])];
    k.reference = Some(block(64));
    let with = |total: bool| {
        let mut tests = tests.clone();
        for t in &mut tests.tests {
            t.tolerances.insert(
                "out".into(),
                kt_tuner::Tolerance {
                    total,
                    ..Default::default()
                },
            );
        }
        Tuner::new(config())
            .unwrap()
            .tune(&k, &tests, &TuneOptions::default(), &mut |_| {})
            .unwrap()
    };
    let others = |r: &kt_tuner::session::TuneResult| {
        r.measurements
            .iter()
            .filter(|m| m.config != block(64))
            .map(|m| (m.config.to_string(), m.verdict.clone()))
            .collect::<Vec<_>>()
    };
    let r = with(true);
    assert_eq!(others(&r).len(), 2);
    for m in &r.measurements {
        assert!(m.verdict.is_ok(), "{}: {}", m.config, m.verdict.reason());
    }
    for (config, verdict) in others(&with(false)) {
        assert_eq!(
            verdict.short(),
            "wrong answer",
            "{config}: {}",
            verdict.reason()
        );
    }
}

const TWO_PER_THREAD: &str = r#"__global__ void scale2(float* out, const float* __restrict__ in, int n, int per_thread) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * per_thread;
    for (int j = 0; j < per_thread; j++) if (i + j < n) out[i + j] = 1.5f * in[i + j];
}
"#;

const SCALE: &str = r#"__global__ void scale(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 1.5f * in[i];
}
"#;

#[test]
#[ignore = "needs a GPU"]
fn a_candidate_with_its_own_launch_and_parameter_order_verifies() {
    let (tests, _) = tests_for("float32", "n", &[]);
    let reference = TunableKernel::new(SCALE, "scale", vec!["n".into()]);
    let mut cand = TunableKernel::new(TWO_PER_THREAD, "scale2", vec!["n".into()]);
    cand.geometry.grid_div[0] = vec!["block_size_x".into(), "2".into()];
    let parse = |s: &str| kt_cuda::parse(s).unwrap().kernels[0].clone();
    let given = BTreeMap::from([("per_thread".to_string(), "2".to_string())]);
    cand.arguments = match_arguments(&parse(SCALE), &parse(TWO_PER_THREAD), &given).unwrap();
    let mut t = Tuner::new(config()).unwrap();
    let report = t
        .verify(&reference, &block(256), &cand, &block(64), &tests)
        .unwrap();
    assert!(report.passed(), "{report:?}");
    assert!(
        t.check_determinism(&cand, &block(64), &tests)
            .unwrap()
            .is_ok()
    );
}

/// Each thread takes a ticket from a global counter: which thread gets which ticket changes from run to
/// run. The output tolerates any mismatch against the reference, so only the reruns can tell.
const TICKETS: &str = r#"__global__ void tickets(const float* in, float* out, int n) {
    __shared__ unsigned int base;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) base = 0;
    __syncthreads();
    unsigned int mine = atomicAdd(&base, 1u);
    if (i < n) out[i] = (float)(blockIdx.x * blockDim.x + mine) + 0.0f * in[i];
}
"#;

#[test]
#[ignore = "needs a GPU"]
fn reruns_that_differ_are_a_nondeterministic_verdict() {
    let (mut tests, _) = tests_for("float32", "n", &[]);
    for t in &mut tests.tests {
        t.tolerances.insert(
            "out".into(),
            kt_tuner::Tolerance {
                max_mismatch_fraction: 1.0,
                ..Default::default()
            },
        );
    }
    let k = TunableKernel::new(TICKETS, "tickets", vec!["n".into()]);
    let mut t = Tuner::new(config()).unwrap();
    assert!(
        t.verify(&k, &block(1024), &k, &block(1024), &tests)
            .unwrap()
            .passed()
    );
    let v = t.check_determinism(&k, &block(1024), &tests).unwrap();
    assert!(
        matches!(&v, Verdict::Nondeterministic { details } if details[0].contains("first at index")),
        "{v:?}"
    );
}

/// Deterministic NaNs: sqrt of the negative half of randn inputs; `LAST` is where it stops writing.
const SQRT_SOME_NAN: &str = r#"__global__ void root(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < LAST) out[i] = sqrtf(in[i]);
}
"#;

/// Also the API without a `verify` before it: `check_determinism` uploads its tests itself.
#[test]
#[ignore = "needs a GPU"]
fn reruns_with_the_same_nans_agree() {
    let (tests, _) = tests_for("float32", "n", &[]);
    let kernel = |last: &str| {
        let src = SQRT_SOME_NAN.replace("LAST", last);
        TunableKernel::new(&src, "root", vec!["n".into()])
    };
    let mut t = Tuner::new(config()).unwrap();
    let v = t
        .check_determinism(&kernel("n"), &block(256), &tests)
        .unwrap();
    assert!(matches!(v, Verdict::Ok), "{v:?}");
    // Outputs are poisoned between reruns only once a reference run has shown that the kernel overwrites
    // them (poisoning an output a kernel accumulates into would make every rerun differ): a verify first,
    // as every kt command does, whose verdict on the lazy kernel does not matter here.
    let _ = t
        .verify(
            &kernel("n"),
            &block(256),
            &kernel("n - 1"),
            &block(256),
            &tests,
        )
        .unwrap();
    // an element never written holds poison after the poisoned run and its initial zero after the run
    // started from the initial contents (what a kernel that skips written outputs would show): named
    let v = t
        .check_determinism(&kernel("n - 1"), &block(256), &tests)
        .unwrap();
    assert!(
        matches!(&v, Verdict::Nondeterministic { details }
            if details[0].contains("initial contents instead of poison")
                && details[0].contains("first at index 10006")),
        "{v:?}"
    );
}

/// Reads its neighbour's shared-memory slot with no barrier between the write and the read.
const SHARED_RACE: &str = r#"__global__ void shift(const float* in, float* out, int n) {
    extern __shared__ float s[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? in[i] : 0.0f;
    float v = s[(t + 32) % blockDim.x];
    if (i < n) out[i] = v;
}
"#;

#[test]
#[ignore = "needs a GPU and compute-sanitizer"]
fn compute_sanitizer_reports_a_shared_memory_race() {
    let (tests, _) = tests_for("float32", "n", &[]);
    let mut k = TunableKernel::new(SHARED_RACE, "shift", vec!["n".into()]);
    k.geometry.shared_mem = Some("block_size_x * 4".into());
    let report = run_tools(&config(), &k, &block(256), &tests).unwrap();
    let SanitizerReport::Ran { tools } = &report else {
        panic!("{:?}", report.lines());
    };
    let race = tools.iter().find(|t| t.tool == "racecheck").unwrap();
    assert!(race.errors + race.warnings > 0, "{:?}", report.lines());
    let mem = tools.iter().find(|t| t.tool == "memcheck").unwrap();
    assert!(mem.clean(), "{:?}", report.lines());
}

#[test]
#[ignore = "needs a GPU"]
fn percent_of_peak_is_taken_against_ceilings_kt_confirmed() {
    let (tests, _) = tests_for("float32", "n", &[]);
    let mut k = TunableKernel::new(SCALE, "scale", vec!["n".into()]);
    k.params = vec![TunableParam::new("block_size_x", [128, 256])];
    k.bytes = Some("8 * n".into());
    k.flops = Some("n".into());
    let r = Tuner::new(config())
        .unwrap()
        .tune(&k, &tests, &TuneOptions::default(), &mut |_| {})
        .unwrap();
    let peaks = r
        .theoretical_peaks
        .expect("the driver or nvidia-smi gives the clocks");
    assert!(
        peaks.bandwidth_gb_s > 100.0 && peaks.fp32_gflop_s > 1000.0,
        "{peaks:?}"
    );
    // kt's own copy and FMA kernel confirm both ceilings: neither is above its theoretical figure
    assert!(r.peak_gbps.unwrap() <= peaks.bandwidth_gb_s * 1.05, "{r:?}");
    let fp32 = r.peak_fp32_gflops.unwrap();
    assert!(
        fp32 <= peaks.fp32_gflop_s * 1.05 && fp32 > peaks.fp32_gflop_s * 0.5,
        "FMA rate {fp32} against {peaks:?}"
    );
    // shares are as measured: one above 100 % (a test whose data sits in L2) says why
    for m in &r.measurements {
        assert!(
            m.percent_of_peak
                .is_none_or(|p| p <= 100.0 || m.peak_note.is_some()),
            "{m:?}"
        );
    }
}
