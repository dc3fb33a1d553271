//! GPU tests of the checks against reward hacks (issues 29 and 48): guard bytes around every array, the last
//! timed launch checked like the first (the default launch's too), a kernel with state checked after many
//! launches, tests reloaded and then run back to back, and honest kernels still delivered. Run
//! on a GPU machine with `cargo test -p kt-tuner --test gpu_hacks -- --include-ignored --test-threads=1`.
//! The worker is this test executable itself, re-executed with only `gpu_worker_entry` selected.

#![allow(clippy::unwrap_used)]

use kt_tuner::model::args::TestSet;
use kt_tuner::model::space::TunableParam;
use kt_tuner::session::{TunableKernel, TuneOptions, Verdict};

mod gpu_support;
use gpu_support::{block, tuner};

#[test]
fn gpu_worker_entry() {
    gpu_support::serve_if_worker();
}

fn tests() -> TestSet {
    gpu_support::in_out_n_tests("float32", 10007.0, "n", &[]).0
}

const DOUBLE: &str = r#"__global__ void twice(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}
"#;

/// Right everywhere, and one float past the end of `out` too.
const ONE_PAST: &str = r#"__global__ void twice(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i] = i < n ? 2.0f * in[i] : 0.0f;
}
"#;

/// Right everywhere, and one float before the start of `out`.
const ONE_BEFORE: &str = r#"__global__ void twice(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) out[-1] = 0.0f;
    if (i < n) out[i] = 2.0f * in[i];
}
"#;

/// Right for three launches after its module loads, then idle.
const IDLE_AFTER_THREE: &str = r#"__device__ unsigned int launches = 0;
__global__ void twice(const float* in, float* out, int n) {
    __shared__ unsigned int seen;
    if (threadIdx.x == 0) seen = atomicAdd(&launches, 0u);
    __syncthreads();
    if (seen >= 3 * gridDim.x) return;
    if (threadIdx.x == 0) atomicAdd(&launches, 1u);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}
"#;

/// Right for forty launches after its module loads (past the verifying launch and ten samples), then idle.
const IDLE_AFTER_FORTY: &str = r#"__device__ unsigned int launches = 0;
__global__ void twice(const float* in, float* out, int n) {
    __shared__ unsigned int seen;
    if (threadIdx.x == 0) seen = atomicAdd(&launches, 0u);
    __syncthreads();
    if (seen >= 40 * gridDim.x) return;
    if (threadIdx.x == 0) atomicAdd(&launches, 1u);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}
"#;

/// Keeps its first input in a `__device__` array and doubles that on every later launch.
const FIRST_INPUT_CACHED: &str = r#"__device__ float kept[1 << 20];
__device__ unsigned int blocks_done = 0;
__device__ unsigned int launches_done = 0;
__global__ void twice(const float* in, float* out, int n) {
    bool warm = *(volatile unsigned int*)&launches_done > 0;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i < (1 << 20)) {
        if (!warm) kept[i] = in[i];
        out[i] = 2.0f * kept[i];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(&blocks_done, 1u) == gridDim.x - 1) {
            blocks_done = 0;
            atomicAdd(&launches_done, 1u);
        }
    }
}
"#;

fn kernel(src: &str) -> TunableKernel {
    TunableKernel::new(src, "twice", vec!["n".into()])
}

#[test]
#[ignore = "needs a GPU"]
fn a_write_past_the_end_is_out_of_bounds_though_every_output_is_right() {
    let reference = kernel(DOUBLE);
    let mut t = tuner();
    for (src, words) in [
        (ONE_PAST, "wrote 4 bytes past the end of `out`"),
        (ONE_BEFORE, "bytes before the start of `out`"),
    ] {
        let report = t
            .verify(&reference, &block(256), &kernel(src), &block(256), &tests())
            .unwrap();
        let v = &report.tests[0].verdict;
        assert!(
            matches!(v, Verdict::OutOfBounds { .. }) && v.reason().contains(words),
            "{v:?}"
        );
        assert!(report.tests[0].outputs.iter().all(|o| o.passed()));
    }
    // the guards were restored: the honest kernel passes on the same worker afterwards
    let honest = t
        .verify(&reference, &block(256), &reference, &block(128), &tests())
        .unwrap();
    assert!(honest.passed(), "{:?}", honest.tests[0].verdict);
}

#[test]
#[ignore = "needs a GPU"]
fn a_kernel_idle_after_its_first_launches_is_refused_at_its_default_launch() {
    let mut k = kernel(IDLE_AFTER_THREE);
    k.params = vec![TunableParam::new("block_size_x", [64, 128])];
    k.reference = Some(block(256));
    // the default launch's own timed launches are checked now: its idle samples were the baseline
    let err = tuner()
        .tune(&k, &tests(), &TuneOptions::default(), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("timed launches are not the work its first launch did")
            && err.contains("never written"),
        "{err}"
    );
}

#[test]
#[ignore = "needs a GPU"]
fn a_launch_counter_past_the_samples_fails_the_check_after_many_launches() {
    let report = tuner()
        .verify(
            &kernel(DOUBLE),
            &block(256),
            &kernel(IDLE_AFTER_FORTY),
            &block(256),
            &tests(),
        )
        .unwrap();
    let v = &report.tests[0].verdict;
    assert!(
        matches!(v, Verdict::TimedRunDiffers { .. })
            && v.reason().contains("more launches in the same module"),
        "{v:?}"
    );
}

#[test]
#[ignore = "needs a GPU"]
fn verification_reloads_the_module_between_tests_then_runs_them_back_to_back() {
    let reference = kernel(DOUBLE);
    let mut tests = tests();
    let mut more = tests.tests.clone();
    for (i, t) in more.iter_mut().enumerate() {
        t.id = format!("again{i}");
    }
    tests.tests.extend(more);
    let report = tuner()
        .verify(
            &reference,
            &block(256),
            &kernel(FIRST_INPUT_CACHED),
            &block(256),
            &tests,
        )
        .unwrap();
    assert!(report.modules_reloaded && report.back_to_back);
    // right on the first test of the back-to-back pass, wrong on the next (another input)
    assert!(report.tests[0].verdict.is_ok(), "{:?}", report.tests[0]);
    let v = &report.tests[1].verdict;
    assert!(
        matches!(v, Verdict::CarriesState { .. })
            && v.reason().contains("right from a freshly loaded module"),
        "{v:?}"
    );
}

#[test]
#[ignore = "needs a GPU"]
fn an_honest_kernel_passes_every_new_check_and_is_delivered() {
    let mut k = kernel(DOUBLE);
    k.params = vec![TunableParam::new(
        "block_size_x",
        [32, 64, 128, 256, 512, 1024],
    )];
    let r = tuner()
        .tune(&k, &tests(), &TuneOptions::default(), &mut |_| {})
        .unwrap();
    for m in &r.measurements {
        assert!(m.verdict.is_ok(), "{}: {}", m.config, m.verdict.reason());
    }
    assert!(r.best.is_some());
}
