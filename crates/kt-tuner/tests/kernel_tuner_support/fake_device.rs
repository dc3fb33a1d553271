//! Tuning results without a GPU: kt's own search space, restrictions and strategies, measured on a fake
//! device whose launch times are a fixed function of the configuration (a few launches each, their mean a
//! little above their median, as on a real GPU) and which fails chosen configurations. Also the real tuner
//! with kt's fake worker process, where NVRTC and a driver exist.

use std::path::PathBuf;

use kt_record::DType;
use kt_tuner::check::measure::TimingStats;
use kt_tuner::export::KernelTunerExport;
use kt_tuner::model::args::{ArrayArg, ArraySource, Distribution, KernelTest, TestArg, TestSet};
use kt_tuner::model::constants::ConstantArg;
use kt_tuner::model::space::{Config, Restriction, SearchSpace, TunableParam};
use kt_tuner::search::{History, Limits, Strategy, drive};
use kt_tuner::session::{Measurement, Phases, TunableKernel, TuneResult, Verdict};
use kt_tuner::worker::protocol::DeviceInfo;
use serde_json::{Value, json};

pub fn fake_device() -> DeviceInfo {
    DeviceInfo {
        ordinal: 0,
        name: "NVIDIA Fake Device".into(),
        uuid: "GPU-fake".into(),
        pci_bus_id: String::new(),
        compute_capability: (9, 0),
        sm_count: 132,
        max_threads_per_block: 1024,
        max_threads_per_sm: 2048,
        max_shared_per_block: 48 << 10,
        max_shared_per_block_optin: 227 << 10,
        registers_per_block: 65536,
        l2_bytes: 50 << 20,
        total_memory: 80 << 30,
        driver_version: 13000,
        clock_khz: 1_980_000,
        context_ms: 0.0,
    }
}

fn array(name: &str, elements: u64, is_output: bool) -> TestArg {
    TestArg::Array(ArrayArg {
        name: name.into(),
        dtype: DType::Float32,
        lanes: 1,
        elements,
        source: ArraySource::Generate {
            dist: Distribution::Randn,
            seed: 1,
        },
        is_output,
        expected: None,
    })
}

fn scalar(name: &str, value: i32) -> TestArg {
    TestArg::Scalar(kt_tuner::model::args::ScalarArg {
        name: name.into(),
        dtype: DType::Int32,
        value: value as f64,
        bytes: value.to_le_bytes().to_vec(),
    })
}

/// Steps between two powers of two, weighted differently below and above the optimum.
fn steps(v: i64, best: i64, below: f64, above: f64) -> f64 {
    let d = (v as f64).log2() - (best as f64).log2();
    if d < 0.0 { -d * below } else { d * above }
}

type Model = fn(&Config, usize) -> Result<f64, Verdict>;

/// A naive matmul's block sizes: fastest at 32×4, which gives a wrong answer; 256×4 does not compile, 8×4
/// hangs.
fn matmul_model(c: &Config, _test: usize) -> Result<f64, Verdict> {
    let (x, y) = (
        c.get("block_size_x").unwrap(),
        c.get("block_size_y").unwrap(),
    );
    match (x, y) {
        (32, 4) => Err(Verdict::WrongAnswer {
            details: vec!["test t0: C differs from the reference at 12 of 262144 elements".into()],
            reports: vec![],
        }),
        (256, 4) => Err(Verdict::CompileError {
            log: "error: too many resources".into(),
        }),
        (8, 4) => Err(Verdict::Timeout { after_s: 2.0 }),
        _ => Ok(1.0 + steps(x, 32, 0.3, 0.35) + steps(y, 4, 0.25, 0.2)),
    }
}

/// A vector kernel with more work per thread: the first test is fastest at 256×4, the second at 64×2, their
/// sum at 64×4.
fn vector_model(c: &Config, test: usize) -> Result<f64, Verdict> {
    let (x, w) = (
        c.get("block_size_x").unwrap(),
        c.get("work_per_thread").unwrap(),
    );
    Ok(match test {
        0 => 1.0 + steps(x, 256, 0.1, 0.1) + steps(w, 4, 0.15, 0.15),
        _ => 2.0 + steps(x, 64, 0.3, 0.3) + steps(w, 2, 0.1, 0.1),
    })
}

/// One tuning run on the fake device, and the directory its export is written to.
pub struct FakeRun {
    pub kernel: TunableKernel,
    pub tests_count: usize,
    /// The `__constant__` contents of every test (none by default).
    pub constants: Vec<ConstantArg>,
    pub result: TuneResult,
    model: Model,
    tests: TestSet,
    dir: tempfile::TempDir,
}

pub trait BestValues {
    fn best_values(&self) -> Vec<i64>;
}

impl BestValues for TuneResult {
    fn best_values(&self) -> Vec<i64> {
        self.best
            .as_ref()
            .map(|b| b.config.0.iter().filter_map(|(_, v)| v.as_int()).collect())
            .unwrap_or_default()
    }
}

fn as_json(c: &Config) -> Value {
    Value::Object(c.0.iter().map(|(n, v)| (n.clone(), json!(v))).collect())
}

impl FakeRun {
    fn new(kernel: TunableKernel, model: Model) -> Self {
        let result = TuneResult {
            kernel_name: kernel.kernel_name.clone(),
            device: fake_device(),
            strategy: Strategy::BruteForce,
            space_size: 0,
            best: None,
            reference: None,
            measurements: Vec::new(),
            phases: Phases::default(),
            peak_gbps: None,
            peak_fp32_gflops: None,
            worker_restarts: 0,
            theoretical_peaks: None,
            efficiency: None,
        };
        FakeRun {
            kernel,
            tests_count: 1,
            constants: Vec::new(),
            result,
            model,
            tests: TestSet::default(),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Naive matmul's space (Kernel Tuner's 27 configurations), tuned by brute force.
    pub fn matmul() -> Self {
        Self::matmul_with(Strategy::BruteForce, None)
    }

    pub fn matmul_with(strategy: Strategy, max_evals: Option<usize>) -> Self {
        let mut k = TunableKernel::new(
            "__global__ void matmul(float *out, const float *a, int n) {}",
            "matmul",
            vec!["n".into(), "n".into()],
        );
        k.params = vec![
            TunableParam::new("block_size_x", [8, 16, 32, 64, 128, 256]),
            TunableParam::new("block_size_y", [1, 2, 4, 8, 16, 32]),
        ];
        k.restrictions = vec![Restriction::Expr(
            "32 <= block_size_x*block_size_y and block_size_x*block_size_y <= 1024".into(),
        )];
        k.flops = Some("2*n*n*n".into());
        let mut run = FakeRun::new(k, matmul_model);
        run.tune(strategy, max_evals);
        run
    }

    /// A vector kernel with a work-per-thread parameter; not tuned yet (`tune`).
    pub fn vector(restrictions: Vec<Restriction>) -> Self {
        let mut k = TunableKernel::new(
            "__global__ void vector(float *out, const float *a, int n) {}",
            "vector",
            vec!["n".into()],
        );
        k.params = vec![
            TunableParam::new("block_size_x", [32, 64, 128, 256, 512, 1024]),
            TunableParam::new("work_per_thread", [1, 2, 4, 8]),
        ];
        k.restrictions = restrictions;
        k.geometry.grid_div[0] = vec!["block_size_x".into(), "work_per_thread".into()];
        FakeRun::new(k, vector_model)
    }

    fn make_tests(&self) -> TestSet {
        let n: i32 = if self.kernel.kernel_name == "matmul" {
            512
        } else {
            6144
        };
        let elements = if self.kernel.kernel_name == "matmul" {
            (n * n) as u64
        } else {
            n as u64
        };
        TestSet {
            tests: (0..self.tests_count)
                .map(|i| KernelTest {
                    id: format!("t{i}"),
                    args: vec![
                        array("out", elements, true),
                        array("a", elements, false),
                        scalar("n", n),
                    ],
                    tolerances: Default::default(),
                    constants: self.constants.clone(),
                })
                .collect(),
        }
    }

    fn measure(&self, config: &Config) -> Measurement {
        let mut per_test = Vec::new();
        let mut first = None;
        for i in 0..self.tests.tests.len() {
            match (self.model)(config, i) {
                Err(v) => return Measurement::synthetic(config.clone(), v, None),
                Ok(t) => {
                    let stats =
                        TimingStats::from_samples(&[t * 1.04, t, t * 0.99, t * 1.01]).unwrap();
                    per_test.push(stats.median_ms);
                    first.get_or_insert(stats);
                }
            }
        }
        let mut m =
            Measurement::synthetic(config.clone(), Verdict::Ok, Some(per_test.iter().sum()));
        m.timing = first;
        m.per_test_ms = per_test;
        m.compile_ms = 40.0;
        m.benchmark_ms = 5.0;
        m
    }

    /// kt's search over the space on the fake device, best chosen as the tuner chooses it.
    pub fn tune(&mut self, strategy: Strategy, max_evals: Option<usize>) {
        self.tests = self.make_tests();
        let space = SearchSpace::build(
            &self.kernel.params,
            &self.kernel.restrictions,
            &self.tests.tests[0].scalars(),
            Some(1024),
        )
        .unwrap();
        let mut measurements = Vec::new();
        let mut history = History::default();
        let limits = Limits {
            max_evals,
            time_limit: None,
        };
        drive(
            strategy.build(7).as_mut(),
            &space,
            limits,
            &mut history,
            |batch| {
                batch
                    .iter()
                    .map(|&i| {
                        let m = self.measure(&space.configs[i]);
                        let v = m.objective_ms().unwrap_or(f64::INFINITY);
                        measurements.push(m);
                        v
                    })
                    .collect()
            },
        );
        let best = measurements
            .iter()
            .filter(|m| m.objective_ms().is_some())
            .min_by(|a, b| a.objective.unwrap().total_cmp(&b.objective.unwrap()))
            .cloned();
        self.result.strategy = strategy;
        self.result.space_size = space.len();
        self.result.best = best;
        self.result.measurements = measurements;
    }

    pub fn kt_best(&self) -> Value {
        as_json(&self.result.best.as_ref().unwrap().config)
    }

    /// The configuration with the smallest mean launch on the first test: Kernel Tuner's `time`.
    pub fn fastest_on_first_test(&self) -> Value {
        let mean = |m: &Measurement| {
            m.timing
                .as_ref()
                .map(|t| t.mean_ms)
                .unwrap_or(f64::INFINITY)
        };
        let m = self
            .result
            .measurements
            .iter()
            .filter(|m| m.verdict.is_ok())
            .min_by(|a, b| mean(a).total_cmp(&mean(b)))
            .unwrap();
        as_json(&m.config)
    }

    /// Writes the export (cache, script, source) and returns its directory.
    pub fn export(&self) -> PathBuf {
        let dir = self.dir.path().join("kernel_tuner");
        KernelTunerExport::new(&self.kernel, &self.tests, &self.result)
            .unwrap()
            .write(&dir, None)
            .unwrap();
        dir
    }
}

/// Serves kt's fake worker when this test binary was started as one (see `tune_with_fake_worker`).
pub fn serve_fake_worker_if_asked() {
    if std::env::var(kt_tuner::worker::FAKE_ENV).is_ok()
        && std::env::var(kt_tuner::worker::process::PROTOCOL_ENV).is_ok()
    {
        let _ = kt_tuner::worker::serve();
        std::process::exit(0);
    }
}

/// The real tuner (NVRTC compiles every configuration) with kt's fake worker process as the device: its
/// launches take |block_size_x - 64| / 64 + 1 ms. Returns the export's temporary home, its directory and
/// kt's best.
pub fn tune_with_fake_worker() -> (tempfile::TempDir, PathBuf, Value) {
    use kt_tuner::session::{TuneOptions, Tuner, TunerConfig};
    use kt_tuner::worker::process::WorkerCommand;
    let worker = WorkerCommand {
        program: std::env::current_exe().unwrap(),
        args: vec![
            "--exact".into(),
            "fake_worker_entry".into(),
            "--nocapture".into(),
            "--test-threads=1".into(),
        ],
        env: vec![(kt_tuner::worker::FAKE_ENV.into(), "ok".into())],
        under_profiler: false,
    };
    let mut tuner = Tuner::new(TunerConfig {
        worker: Some(worker),
        ..TunerConfig::default()
    })
    .unwrap();
    let mut k = TunableKernel::new(
        "extern \"C\" __global__ void copy(float *out, const float *a, int n) {\n  int i = blockIdx.x * block_size_x + threadIdx.x;\n  if (i < n) out[i] = a[i];\n}\n",
        "copy",
        vec!["n".into()],
    );
    k.params = vec![TunableParam::new("block_size_x", [32, 64, 128, 256])];
    let mut run = FakeRun::new(k, vector_model);
    run.tests_count = 1;
    run.kernel.kernel_name = "copy".into();
    run.tests = run.make_tests();
    let options = TuneOptions {
        measure_peak: false,
        ..TuneOptions::default()
    };
    run.result = tuner
        .tune(&run.kernel, &run.tests, &options, &mut |_| {})
        .unwrap();
    let best = run.kt_best();
    let dir = run.export();
    (run.dir, dir, best)
}
