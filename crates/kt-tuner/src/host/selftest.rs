//! `kt selftest --gpu`: the one command to run on a GPU machine. It compiles, launches, verifies and times
//! a few suite kernels, then tunes a deliberately broken kernel whose configurations hang, write out of
//! bounds, exceed the launch bounds, compute a wrong value, leave an element unwritten and fail to compile,
//! and checks that each gets its verdict while the tuning run carries on.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::check::measure::TimingPolicy;
use crate::error::TunerError;
use crate::input::suite::{SuiteKernel, default_block_space};
use crate::model::args::SizeChoice;
use crate::model::space::{Config, TunableParam};
use crate::search::Strategy;
use crate::session::{TuneOptions, TuneResult, Tuner, TunerConfig, Verdict};

/// A broken-kernel mode, what it shows, and the verdict it must get.
type Expectation = (i64, &'static str, fn(&Verdict) -> bool);

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

const SUITE: &[(&str, &str, &str)] = &[
    (
        "vectorAdd",
        include_str!("../../../../naive-kernels/vectorAdd.cu"),
        include_str!("../../../../naive-kernels/vectorAdd.toml"),
    ),
    (
        "matrixAdd",
        include_str!("../../../../naive-kernels/matrixAdd.cu"),
        include_str!("../../../../naive-kernels/matrixAdd.toml"),
    ),
    (
        "matmul",
        include_str!("../../../../naive-kernels/matmul.cu"),
        include_str!("../../../../naive-kernels/matmul.toml"),
    ),
    (
        "saxpy",
        include_str!("../../../../naive-kernels/saxpy.cu"),
        include_str!("../../../../naive-kernels/saxpy.toml"),
    ),
    (
        "histogram",
        include_str!("../../../../naive-kernels/histogram.cu"),
        include_str!("../../../../naive-kernels/histogram.toml"),
    ),
    (
        "verlet_integration",
        include_str!("../../../../naive-kernels/verlet_integration.cu"),
        include_str!("../../../../naive-kernels/verlet_integration.toml"),
    ),
];

/// A vector add whose `mode` parameter selects a failure.
pub const BROKEN_KERNEL: &str = r#"
#if mode == 6
#define BOUND 64
#else
#define BOUND 1024
#endif
extern "C" __global__ void __launch_bounds__(BOUND) broken(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if mode == 1
    if (i == 0) { long long t0 = clock64(); while (clock64() - t0 >= 0) { } }
#endif
#if mode == 5
    this line is not C++;
#endif
    if (i < n) {
#if mode == 2
        c[i + (1ll << 40)] = 1.0f;
#elif mode == 3
        c[i] = a[i] + b[i] + (i == n / 2 ? 1.0f : 0.0f);
#elif mode == 4
        if (i != n - 1) c[i] = a[i] + b[i];
#else
        c[i] = a[i] + b[i];
#endif
    }
}
"#;

fn options() -> TuneOptions {
    TuneOptions {
        strategy: Strategy::BruteForce,
        timing: TimingPolicy {
            max_total_ms: 50.0,
            ..TimingPolicy::default()
        },
        measure_peak: false,
        ..TuneOptions::default()
    }
}

fn suite_kernel(name: &str, source: &str, toml: &str) -> Result<(SuiteKernel, usize), TunerError> {
    let sc = kt_cuda::Sidecar::from_toml(toml, std::path::Path::new(&format!("{name}.toml")))
        .map_err(|e| TunerError::Source(e.to_string()))?;
    let dims = sc.problem_size.len();
    Ok((SuiteKernel::new(source, &sc, None)?, dims))
}

fn tune_suite(
    tuner: &mut Tuner,
    name: &str,
    source: &str,
    toml: &str,
) -> Result<TuneResult, TunerError> {
    let (sk, dims) = suite_kernel(name, source, toml)?;
    let (params, restrict) = default_block_space(dims);
    let mut sk = sk.with_params(params);
    sk.kernel.restrictions = restrict
        .into_iter()
        .map(crate::model::space::Restriction::Expr)
        .collect();
    let tests = sk
        .inputs
        .make_tests(&sk.params, SizeChoice::Test, &BTreeMap::new(), 2)?;
    tuner.tune(&sk.kernel, &tests, &options(), &mut |_| {})
}

/// Runs every check; `Err` only when no GPU session could be set up at all.
pub fn run(config: TunerConfig) -> Result<Vec<Check>, TunerError> {
    let mut checks = Checks::default();
    let mut tuner = Tuner::new(config)?;
    checks.push(
        "nvrtc + driver",
        true,
        format!("compiling for sm_{}{}", tuner.arch().0, tuner.arch().1),
    );
    for (name, source, toml) in SUITE {
        check_suite_kernel(&mut checks, &mut tuner, name, source, toml);
    }
    let (vk, _) = suite_kernel("vectorAdd", SUITE[0].1, SUITE[0].2)?;
    let bk = broken_kernel(&vk);
    check_broken_kernel(&mut checks, &mut tuner, &bk)?;
    check_verify(&mut checks, &mut tuner, &vk, &bk)?;
    check_peak(&mut checks, &mut tuner);
    Ok(checks.0)
}

/// The checks so far, in order.
#[derive(Default)]
struct Checks(Vec<Check>);

impl Checks {
    fn push(&mut self, name: &str, passed: bool, detail: String) {
        self.0.push(Check {
            name: name.into(),
            passed,
            detail,
        })
    }
}

/// A suite kernel tuned over its default block space: every configuration verifies, a best is found.
fn check_suite_kernel(
    checks: &mut Checks,
    tuner: &mut Tuner,
    name: &str,
    source: &str,
    toml: &str,
) {
    let r = match tune_suite(tuner, name, source, toml) {
        Ok(r) => r,
        Err(e) => return checks.push(&format!("tune {name}"), false, e.to_string()),
    };
    let bad: Vec<String> = r
        .measurements
        .iter()
        .filter(|m| !m.verdict.is_ok())
        .map(|m| format!("{}: {:?}", m.config, m.verdict))
        .collect();
    let best = r.best.as_ref().and_then(|b| b.objective_ms());
    let ok = bad.is_empty() && best.is_some();
    checks.push(
        &format!("tune {name} (test size, 2 tests, {} configs)", r.space_size),
        ok,
        if ok {
            format!(
                "all verified; best {} at {:.4} ms; device {}",
                r.best
                    .as_ref()
                    .map(|b| b.config.to_string())
                    .unwrap_or_default(),
                best.unwrap_or(0.0),
                r.device.name
            )
        } else {
            bad.join("; ")
        },
    );
}

/// vectorAdd's launch and inputs with the broken kernel's code: `mode` picks the failure.
fn broken_kernel(vk: &SuiteKernel) -> SuiteKernel {
    let params = vec![
        TunableParam::new("mode", 0..7),
        TunableParam::new("block_size_x", [256]),
    ];
    let mut bk = vk.clone().with_params(params);
    bk.kernel.source = BROKEN_KERNEL.to_string();
    bk.kernel.kernel_name = "broken".into();
    bk.kernel.reference = Some(Config::ints([("mode", 0), ("block_size_x", 256)]));
    bk
}

/// What each mode of the broken kernel must be found to be.
const BROKEN_MODES: [Expectation; 7] = [
    (0, "correct configuration passes", |v| {
        matches!(v, Verdict::Ok)
    }),
    (1, "hung kernel is killed by the watchdog", |v| {
        matches!(v, Verdict::Timeout { .. })
    }),
    (2, "out-of-bounds write is caught as a crash", |v| {
        matches!(v, Verdict::Crashed { .. })
    }),
    (
        3,
        "wrong answer is found with its index",
        |v| matches!(v, Verdict::WrongAnswer { reports, .. } if reports.iter().any(|r| r.mismatches == 1 && r.never_written == 0)),
    ),
    (
        4,
        "unwritten element is reported as never written",
        |v| matches!(v, Verdict::WrongAnswer { reports, .. } if reports.iter().any(|r| r.never_written == 1)),
    ),
    (
        5,
        "compile error keeps NVRTC's log",
        |v| matches!(v, Verdict::CompileError { log } if log.contains("error")),
    ),
    (
        6,
        "too many threads for the launch bounds is invalid",
        |v| matches!(v, Verdict::Invalid { .. }),
    ),
];

/// The broken kernel: every failure mode in one tuning run, which must carry on past each.
fn check_broken_kernel(
    checks: &mut Checks,
    tuner: &mut Tuner,
    bk: &SuiteKernel,
) -> Result<(), TunerError> {
    let tests = bk
        .inputs
        .make_tests(&bk.params, SizeChoice::Test, &BTreeMap::new(), 1)?;
    let r = match tuner.tune(&bk.kernel, &tests, &options(), &mut |_| {}) {
        Ok(r) => r,
        Err(e) => {
            checks.push("broken kernel tuning run", false, e.to_string());
            return Ok(());
        }
    };
    for (mode, what, ok) in BROKEN_MODES {
        let v = r
            .measurements
            .iter()
            .find(|m| m.config.get("mode") == Some(mode))
            .map(|m| m.verdict.clone());
        let passed = v.as_ref().is_some_and(ok);
        let detail = match &v {
            Some(Verdict::WrongAnswer { details, .. }) => details.join("; "),
            Some(Verdict::CompileError { log }) => log.lines().next().unwrap_or("").to_string(),
            Some(other) => format!("{other:?}"),
            None => "not measured".into(),
        };
        checks.push(&format!("broken mode={mode}: {what}"), passed, detail);
    }
    checks.push(
        "tuning continued past every failure",
        r.measurements.len() == 7 && r.best.as_ref().and_then(|b| b.config.get("mode")) == Some(0),
        format!(
            "{} configs measured, {} worker restarts",
            r.measurements.len(),
            r.worker_restarts
        ),
    );
    Ok(())
}

/// verify: candidate against reference on the same inputs, a correct one and a wrong one.
fn check_verify(
    checks: &mut Checks,
    tuner: &mut Tuner,
    vk: &SuiteKernel,
    bk: &SuiteKernel,
) -> Result<(), TunerError> {
    let tests = vk
        .inputs
        .make_tests(&vk.params, SizeChoice::Test, &BTreeMap::new(), 2)?;
    let cfg = |m: i64| Config::ints([("mode", m), ("block_size_x", 256)]);
    let ref_cfg = Config(vec![]);
    match tuner.verify(&vk.kernel, &ref_cfg, &bk.kernel, &cfg(0), &tests) {
        Ok(rep) => checks.push(
            "verify: correct candidate passes every test",
            rep.passed() && rep.tests.len() == 2,
            format!("{} tests", rep.tests.len()),
        ),
        Err(e) => checks.push("verify: correct candidate", false, e.to_string()),
    }
    match tuner.verify(&vk.kernel, &ref_cfg, &bk.kernel, &cfg(3), &tests) {
        Ok(rep) => checks.push(
            "verify: wrong candidate fails every test",
            rep.tests.iter().all(|t| !t.verdict.is_ok()),
            rep.tests
                .iter()
                .map(|t| format!("{}: {}", t.test, t.verdict.short()))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Err(e) => checks.push("verify: wrong candidate", false, e.to_string()),
    }
    Ok(())
}

/// The device's copy bandwidth is measured and plausible.
fn check_peak(checks: &mut Checks, tuner: &mut Tuner) {
    let device = tuner.device_info();
    match device.map(|d| tuner.measure_peak(&d)) {
        Some(Ok(g)) => checks.push(
            "copy bandwidth measured",
            g > 10.0,
            format!("{g:.0} GB/s (read + write)"),
        ),
        Some(Err(e)) => checks.push("copy bandwidth measured", false, e.to_string()),
        None => checks.push("copy bandwidth measured", false, "no device".into()),
    }
}
