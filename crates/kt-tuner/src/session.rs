//! The tuning session: the API the pipeline and the CLI call. A `Tuner` owns one worker process (restarted
//! whenever a kernel hangs or faults) and one compiler pool; `tune` runs a search over a kernel's space on a
//! set of tests and returns every configuration's `Measurement` with its `Verdict`; `verify` checks a
//! candidate kernel against a reference on the same inputs.
//!
//! Overlap is what makes a short run fast: the worker creates its context and generates the inputs while
//! the parent starts NVRTC and compiles the first batch of configurations on all cores.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::args::{KernelTest, TestArg, TestSet};
use crate::cache::{CacheScope, ResultCache};
use crate::device_kernels;
use crate::dtype::DType;
use crate::error::TunerError;
use crate::expr::{Bindings, eval_number};
use crate::geometry::{Geometry, LaunchDims, default_define};
use crate::measure::{Baseline, TimingPolicy, TimingStats};
use crate::module_cache::{CompilePool, DiskCache, ModuleOutcome};
use crate::nvrtc;
use crate::search::{History, Limits, SearchStrategy, Strategy, drive};
use crate::space::{Config, Restriction, SearchSpace, TunableParam};
use crate::verify::OutputReport;
use crate::worker::client::{WorkerClient, WorkerFailure};
use crate::worker::process::WorkerCommand;
use crate::worker::protocol::{
    DeviceInfo, FunctionInfo, LaunchArg, OutputFile, RecordedOutput, Reply, Request, RunOutcome,
    RunRequest, RunStatus,
};

/// A kernel with named tunable parameters.
#[derive(Debug, Clone)]
pub struct TunableKernel {
    pub source: String,
    pub kernel_name: String,
    pub params: Vec<TunableParam>,
    pub restrictions: Vec<Restriction>,
    pub geometry: Geometry,
    /// Extra NVRTC options (the architecture is added by the tuner).
    pub compiler_options: Vec<String>,
    /// The default launch (e.g. the sidecar's `default_block`): the reference for expected outputs and the
    /// baseline for speed-ups. None: the first configuration of the space.
    pub reference: Option<Config>,
    /// Floating-point operations and bytes moved per launch, as expressions over scalar arguments.
    pub flops: Option<String>,
    pub bytes: Option<String>,
}

impl TunableKernel {
    pub fn new(
        source: impl Into<String>,
        kernel_name: impl Into<String>,
        problem_size: Vec<String>,
    ) -> Self {
        TunableKernel {
            source: source.into(),
            kernel_name: kernel_name.into(),
            params: Vec::new(),
            restrictions: Vec::new(),
            geometry: Geometry::new(problem_size),
            compiler_options: Vec::new(),
            reference: None,
            flops: None,
            bytes: None,
        }
    }
}

/// How to tune.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TuneOptions {
    pub strategy: Strategy,
    pub limits: Limits,
    pub seed: u64,
    pub timing: TimingPolicy,
    /// Verify every configuration on every test (on by default; off only for timing studies).
    pub verify: bool,
    /// Results cache file (JSONL); None: no resume.
    pub results_cache: Option<PathBuf>,
    /// Measure the device's copy bandwidth (once per device, cached) for % of peak.
    pub measure_peak: bool,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            strategy: Strategy::BruteForce,
            limits: Limits::default(),
            seed: 1,
            timing: TimingPolicy::default(),
            verify: true,
            results_cache: None,
            measure_peak: true,
        }
    }
}

/// How the tuner itself is set up.
#[derive(Debug, Clone)]
pub struct TunerConfig {
    pub device: usize,
    pub compile_threads: usize,
    /// Module cache (CUBINs and NVRTC logs) and per-device facts; None: memory only.
    pub cache_dir: Option<PathBuf>,
    pub worker: Option<WorkerCommand>,
    /// Watchdog: a run may take max(floor, factor × reference time) plus its sampling budget.
    pub timeout_floor: Duration,
    pub timeout_factor: f64,
}

impl Default for TunerConfig {
    fn default() -> Self {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(4);
        TunerConfig {
            device: 0,
            compile_threads: threads,
            cache_dir: None,
            worker: None,
            timeout_floor: Duration::from_secs(2),
            timeout_factor: 50.0,
        }
    }
}

/// What happened to one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Verdict {
    Ok,
    WrongAnswer {
        details: Vec<String>,
        reports: Vec<OutputReport>,
    },
    CompileError {
        log: String,
    },
    Invalid {
        reason: String,
    },
    Timeout {
        after_s: f64,
    },
    Crashed {
        reason: String,
    },
}

impl Verdict {
    pub fn is_ok(&self) -> bool {
        matches!(self, Verdict::Ok)
    }

    pub fn short(&self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::WrongAnswer { .. } => "wrong answer",
            Verdict::CompileError { .. } => "compile error",
            Verdict::Invalid { .. } => "invalid",
            Verdict::Timeout { .. } => "timeout",
            Verdict::Crashed { .. } => "crashed",
        }
    }
}

/// One configuration's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub config: Config,
    pub verdict: Verdict,
    /// Timing of the first test (the objective sums the medians over all tests).
    pub timing: Option<TimingStats>,
    pub objective: Option<f64>,
    pub per_test_ms: Vec<f64>,
    pub launch: Option<LaunchDims>,
    pub compile_ms: f64,
    pub benchmark_ms: f64,
    pub registers: Option<i32>,
    pub local_bytes: Option<i32>,
    pub static_shared_bytes: Option<i32>,
    pub occupancy: Option<f64>,
    pub gbps: Option<f64>,
    pub gflops: Option<f64>,
    pub percent_of_peak: Option<f64>,
    pub from_cache: bool,
}

impl Measurement {
    pub fn objective_ms(&self) -> Option<f64> {
        if self.verdict.is_ok() {
            self.objective
        } else {
            None
        }
    }

    /// A measurement without a GPU (for tests of strategies, caches and exports).
    pub fn synthetic(config: Config, verdict: Verdict, ms: Option<f64>) -> Self {
        Measurement {
            config,
            verdict,
            timing: ms.and_then(|m| TimingStats::from_samples(&[m])),
            objective: ms,
            per_test_ms: ms.into_iter().collect(),
            launch: None,
            compile_ms: 0.0,
            benchmark_ms: 0.0,
            registers: None,
            local_bytes: None,
            static_shared_bytes: None,
            occupancy: None,
            gbps: None,
            gflops: None,
            percent_of_peak: None,
            from_cache: false,
        }
    }
}

/// Where the wall time went (milliseconds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// Worker start and CUDA context creation (overlapped with compilation).
    pub context_ms: f64,
    /// Uploading or generating the tests' arrays.
    pub upload_ms: f64,
    /// NVRTC time summed over all compilations (CPU time on the pool, overlapped).
    pub compile_cpu_ms: f64,
    /// Time the benchmark loop waited for a compilation to finish.
    pub compile_wait_ms: f64,
    /// Reference launches (expected outputs, poison probe, baseline timing).
    pub reference_ms: f64,
    /// The search itself, from the first configuration to the last.
    pub benchmark_ms: f64,
    pub total_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TuneResult {
    pub kernel_name: String,
    pub device: DeviceInfo,
    pub strategy: Strategy,
    pub space_size: usize,
    pub best: Option<Measurement>,
    /// The default launch, measured on the same tests.
    pub reference: Option<Measurement>,
    pub measurements: Vec<Measurement>,
    pub phases: Phases,
    pub peak_gbps: Option<f64>,
    pub worker_restarts: usize,
}

impl TuneResult {
    pub fn speedup(&self) -> Option<f64> {
        Some(self.reference.as_ref()?.objective_ms()? / self.best.as_ref()?.objective_ms()?)
    }
}

/// Progress events for a bar or a log.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub config: Config,
    pub verdict: String,
    pub time_ms: Option<f64>,
    pub best_ms: Option<f64>,
}

/// Per-test outcome of `verify`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestVerdict {
    pub test: String,
    pub verdict: Verdict,
    pub outputs: Vec<OutputReport>,
    pub inputs_modified: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyReport {
    pub tests: Vec<TestVerdict>,
}

impl VerifyReport {
    pub fn passed(&self) -> bool {
        self.tests.iter().all(|t| t.verdict.is_ok())
    }
}

/// The reference launch of a test: module key, arguments, dimensions.
type ReferenceLaunch = (String, Vec<LaunchArg>, LaunchDims);

struct Worker {
    client: WorkerClient,
    device: DeviceInfo,
    loaded: HashSet<String>,
    util_dtypes: Vec<Vec<DType>>,
}

/// What the session knows about one module across worker restarts.
struct ModuleEntry {
    outcome: Arc<ModuleOutcome>,
    kernel: String,
    dynamic_shared: u32,
}

pub struct Tuner {
    config: TunerConfig,
    worker: Option<Worker>,
    pending_hello: Option<(WorkerClient, Instant)>,
    pool: CompilePool,
    arch: (i32, i32),
    max_threads: u64,
    /// kt's own kernels per dtype set: compile ticket, then the CUBIN once it is known.
    util_tickets: HashMap<Vec<DType>, usize>,
    util_cubins: HashMap<Vec<DType>, Arc<Vec<u8>>>,
    modules: HashMap<String, ModuleEntry>,
    /// Tests uploaded into the current worker, and the reference module each one's expected values came from.
    uploaded: Vec<(KernelTest, Option<ReferenceLaunch>)>,
    restarts: usize,
    restoring: bool,
    ticket: usize,
}

fn device_error(e: cudarc::driver::DriverError) -> TunerError {
    TunerError::NoGpu(format!("{:?}", e.0))
}

/// Compute capability and thread limit read in the parent (no context needed), so compilation can start
/// while the worker is still creating its context.
fn query_device(ordinal: usize) -> Result<((i32, i32), u64), TunerError> {
    // SAFETY: only dlopen.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(TunerError::NoDriver("libcuda.so not found".into()));
    }
    use cudarc::driver::result;
    use cudarc::driver::sys::CUdevice_attribute as A;
    result::init().map_err(|e| TunerError::NoDriver(format!("cuInit: {:?}", e.0)))?;
    let count = result::device::get_count().map_err(device_error)?;
    if count <= ordinal as i32 {
        return Err(TunerError::NoGpu(format!(
            "device {ordinal} requested, the driver reports {count} device(s)"
        )));
    }
    let dev = result::device::get(ordinal as i32).map_err(device_error)?;
    // SAFETY: dev is a valid device handle.
    let (major, minor, threads) = unsafe {
        (
            result::device::get_attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
                .map_err(device_error)?,
            result::device::get_attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
                .map_err(device_error)?,
            result::device::get_attribute(dev, A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
                .map_err(device_error)?,
        )
    };
    Ok(((major, minor), threads as u64))
}

fn launch_args(test: &KernelTest) -> Vec<LaunchArg> {
    test.args
        .iter()
        .map(|a| match a {
            TestArg::Array(x) => LaunchArg::Array(x.name.clone()),
            TestArg::Scalar(s) => LaunchArg::Scalar(s.bytes.clone()),
        })
        .collect()
}

fn test_dtypes(test: &KernelTest) -> Vec<DType> {
    device_kernels::needed_dtypes(test.arrays().map(|a| a.dtype))
}

fn worker_failure(e: WorkerFailure) -> TunerError {
    TunerError::Worker(e.to_string())
}

impl Tuner {
    /// Starts the worker (its context is created in the background) and the compiler pool.
    pub fn new(config: TunerConfig) -> Result<Self, TunerError> {
        nvrtc::ensure_available()?;
        // SAFETY: only dlopen.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(TunerError::NoDriver("libcuda.so not found".into()));
        }
        let cmd = match &config.worker {
            Some(c) => c.clone(),
            None => WorkerCommand::current_exe()?,
        };
        // the worker creates its context while this process initialises the driver and NVRTC
        let started = Instant::now();
        let mut client = WorkerClient::start(&cmd)?;
        client
            .send(
                &Request::Hello {
                    ordinal: config.device,
                },
                &[],
            )
            .map_err(worker_failure)?;
        let (arch, max_threads) = query_device(config.device)?;
        let disk = DiskCache::new(config.cache_dir.as_ref().map(|d| d.join("modules")));
        let pool = CompilePool::new(config.compile_threads, disk)?;
        Ok(Tuner {
            config,
            worker: None,
            pending_hello: Some((client, started)),
            pool,
            arch,
            max_threads,
            util_tickets: HashMap::new(),
            util_cubins: HashMap::new(),
            modules: HashMap::new(),
            uploaded: Vec::new(),
            restarts: 0,
            restoring: false,
            ticket: 0,
        })
    }

    pub fn arch(&self) -> (i32, i32) {
        self.arch
    }

    fn next_ticket(&mut self) -> usize {
        self.ticket += 1;
        self.ticket
    }

    /// Waits for the pool to finish `ticket`, keeping other results that arrive meanwhile.
    /// Records a compiled module so later launches of `key` find it.
    fn remember_module(
        &mut self,
        key: String,
        outcome: Arc<ModuleOutcome>,
        kernel: &str,
        shared: u32,
    ) {
        self.modules.insert(
            key,
            ModuleEntry {
                outcome,
                kernel: kernel.to_string(),
                dynamic_shared: shared,
            },
        );
    }

    /// Waits for a module the run cannot do without (a reference) and records it; a compile failure is a
    /// reference error naming `what` and keeping NVRTC's log.
    #[allow(clippy::too_many_arguments)]
    fn wait_required_module(
        &mut self,
        ticket: usize,
        key: &str,
        kernel: &str,
        shared: u32,
        test: &str,
        what: &str,
        finished: &mut HashMap<usize, Result<Arc<ModuleOutcome>, TunerError>>,
    ) -> Result<Arc<ModuleOutcome>, TunerError> {
        let outcome = self.wait_ticket(ticket, finished)?;
        if let ModuleOutcome::Failed { log, .. } = &*outcome {
            return Err(TunerError::Reference {
                test: test.to_string(),
                reason: format!("{what} does not compile:\n{log}"),
            });
        }
        self.remember_module(key.to_string(), outcome.clone(), kernel, shared);
        Ok(outcome)
    }

    fn wait_ticket(
        &mut self,
        ticket: usize,
        finished: &mut HashMap<usize, Result<Arc<ModuleOutcome>, TunerError>>,
    ) -> Result<Arc<ModuleOutcome>, TunerError> {
        loop {
            if let Some(r) = finished.remove(&ticket) {
                return r;
            }
            match self.pool.next_finished() {
                Some((t, r)) => {
                    finished.insert(t, r);
                }
                None => return Err(TunerError::Nvrtc("the compiler pool stopped".into())),
            }
        }
    }

    /// Queues the compilation of kt's own kernels for these dtypes (first in the queue: the worker needs
    /// them to make the inputs).
    fn submit_util(&mut self, dtypes: &[DType]) {
        if self.util_tickets.contains_key(dtypes) || self.util_cubins.contains_key(dtypes) {
            return;
        }
        let ticket = self.next_ticket();
        self.pool.submit(
            ticket,
            device_kernels::full_source(dtypes),
            vec![nvrtc::arch_option(self.arch)],
        );
        self.util_tickets.insert(dtypes.to_vec(), ticket);
    }

    /// Makes sure the live worker has kt's kernels for these dtypes.
    fn ensure_util(
        &mut self,
        dtypes: &[DType],
        finished: &mut HashMap<usize, Result<Arc<ModuleOutcome>, TunerError>>,
    ) -> Result<(), TunerError> {
        if self
            .worker(finished)?
            .util_dtypes
            .iter()
            .any(|d| d == dtypes)
        {
            return Ok(());
        }
        let cubin = match self.util_cubins.get(dtypes) {
            Some(c) => c.clone(),
            None => {
                self.submit_util(dtypes);
                let ticket = self
                    .util_tickets
                    .remove(dtypes)
                    .ok_or_else(|| TunerError::Nvrtc("utility kernels were not queued".into()))?;
                match &*self.wait_ticket(ticket, finished)? {
                    ModuleOutcome::Compiled { cubin, .. } => {
                        self.util_cubins.insert(dtypes.to_vec(), cubin.clone());
                        cubin.clone()
                    }
                    ModuleOutcome::Failed { log, .. } => {
                        return Err(TunerError::Nvrtc(format!(
                            "kt's utility kernels did not compile for sm_{}{}: {log}",
                            self.arch.0, self.arch.1
                        )));
                    }
                }
            }
        };
        let w = self.worker(finished)?;
        match w
            .client
            .request(&Request::LoadUtilities, &cubin, Duration::from_secs(60))
            .map_err(worker_failure)?
        {
            (Reply::Done { .. }, _) => {
                w.util_dtypes.push(dtypes.to_vec());
                Ok(())
            }
            (other, _) => Err(TunerError::Worker(format!(
                "loading utility kernels: {other:?}"
            ))),
        }
    }

    /// The live worker, started (and its utilities loaded) if needed.
    fn worker(
        &mut self,
        finished: &mut HashMap<usize, Result<Arc<ModuleOutcome>, TunerError>>,
    ) -> Result<&mut Worker, TunerError> {
        if self.worker.as_ref().is_some_and(|w| w.client.is_dead()) {
            self.worker = None;
        }
        if self.worker.is_none() {
            let first = self.pending_hello.is_some();
            let (mut client, _) = match self.pending_hello.take() {
                Some(p) => p,
                None => {
                    let cmd = match &self.config.worker {
                        Some(c) => c.clone(),
                        None => WorkerCommand::current_exe()?,
                    };
                    let mut c = WorkerClient::start(&cmd)?;
                    c.send(
                        &Request::Hello {
                            ordinal: self.config.device,
                        },
                        &[],
                    )
                    .map_err(worker_failure)?;
                    (c, Instant::now())
                }
            };
            let device = match client
                .wait(Duration::from_secs(120))
                .map_err(worker_failure)?
            {
                (Reply::Hello(d), _) => d,
                (Reply::Error { message, .. }, _) => return Err(TunerError::NoGpu(message)),
                (other, _) => {
                    return Err(TunerError::Worker(format!(
                        "unexpected reply to Hello: {other:?}"
                    )));
                }
            };
            self.worker = Some(Worker {
                client,
                device,
                loaded: HashSet::new(),
                util_dtypes: Vec::new(),
            });
            if !first {
                // a fresh worker after a hang or a fault: bring back the tests and their expected values
                if self.restoring {
                    return Err(TunerError::Worker("the worker died again while its tests were being restored (does the reference kernel itself fail?)".into()));
                }
                self.restarts += 1;
                self.restoring = true;
                let restored = self.restore(finished);
                self.restoring = false;
                restored?;
            }
        }
        self.worker
            .as_mut()
            .ok_or_else(|| TunerError::Worker("no worker".into()))
    }

    /// Uploads the tests (arrays generated or read in the worker) and runs the reference launch on each.
    fn prepare(
        &mut self,
        tests: &[KernelTest],
        reference: Option<(String, Vec<Vec<LaunchArg>>, Vec<LaunchDims>)>,
        finished: &mut HashMap<usize, Result<Arc<ModuleOutcome>, TunerError>>,
    ) -> Result<(), TunerError> {
        self.uploaded.clear();
        for (i, t) in tests.iter().enumerate() {
            let dtypes = test_dtypes(t);
            self.ensure_util(&dtypes, finished)?;
            let w = self.worker(finished)?;
            match w
                .client
                .request(
                    &Request::Upload { test: t.clone() },
                    &[],
                    Duration::from_secs(600),
                )
                .map_err(worker_failure)?
            {
                (Reply::Done { .. }, _) => {}
                (Reply::Error { message, .. }, _) => {
                    return Err(TunerError::Arguments(format!("test {}: {message}", t.id)));
                }
                (other, _) => return Err(TunerError::Worker(format!("upload: {other:?}"))),
            }
            let r = reference
                .as_ref()
                .map(|(k, args, dims)| (k.clone(), args[i].clone(), dims[i]));
            self.uploaded.push((t.clone(), r));
        }
        Ok(())
    }

    /// Loads a module into the worker if it is not there yet.
    fn load(
        &mut self,
        key: &str,
        finished: &mut HashMap<usize, Result<Arc<ModuleOutcome>, TunerError>>,
    ) -> Result<Result<FunctionInfo, String>, TunerError> {
        let entry = self
            .modules
            .get(key)
            .ok_or_else(|| TunerError::Worker(format!("unknown module {key}")))?;
        let ModuleOutcome::Compiled { cubin, .. } = &*entry.outcome else {
            return Ok(Err("did not compile".into()));
        };
        let (cubin, kernel, dynamic_shared) =
            (cubin.clone(), entry.kernel.clone(), entry.dynamic_shared);
        let w = self.worker(finished)?;
        match w.client.request(
            &Request::Load {
                key: key.to_string(),
                kernel,
                dynamic_shared,
            },
            &cubin,
            Duration::from_secs(60),
        ) {
            Ok((Reply::Loaded(info), _)) => {
                w.loaded.insert(key.to_string());
                Ok(Ok(info))
            }
            Ok((Reply::LoadFailed(m), _)) => Ok(Err(m)),
            Ok((other, _)) => Err(TunerError::Worker(format!("load: {other:?}"))),
            Err(e) => Ok(Err(e.to_string())),
        }
    }

    /// Brings a fresh worker to the state the old one had: tests uploaded, expected values recomputed.
    fn restore(
        &mut self,
        finished: &mut HashMap<usize, Result<Arc<ModuleOutcome>, TunerError>>,
    ) -> Result<(), TunerError> {
        let uploaded = std::mem::take(&mut self.uploaded);
        for (t, reference) in &uploaded {
            self.ensure_util(&test_dtypes(t), finished)?;
            let w = self.worker(finished)?;
            w.client
                .request(
                    &Request::Upload { test: t.clone() },
                    &[],
                    Duration::from_secs(600),
                )
                .map_err(worker_failure)?;
            if let Some((key, args, dims)) = reference {
                if let Err(m) = self.load(key, finished)? {
                    return Err(TunerError::Reference {
                        test: t.id.clone(),
                        reason: m,
                    });
                }
                let run = RunRequest {
                    module: key.clone(),
                    test: t.id.clone(),
                    args: args.clone(),
                    dims: *dims,
                    verify: false,
                    timing: None,
                    best: None,
                };
                let w = self.worker(finished)?;
                match w
                    .client
                    .request(&Request::Reference { run }, &[], Duration::from_secs(300))
                    .map_err(worker_failure)?
                {
                    (
                        Reply::Ran(RunOutcome {
                            status: RunStatus::Ok,
                            ..
                        }),
                        _,
                    ) => {}
                    (other, _) => {
                        return Err(TunerError::Reference {
                            test: t.id.clone(),
                            reason: format!("{other:?}"),
                        });
                    }
                }
            }
        }
        self.uploaded = uploaded;
        Ok(())
    }

    /// Runs one request on the worker; a hang or death restarts the worker (restoring its tests) and is
    /// returned as the configuration's verdict.
    fn run_on_worker(
        &mut self,
        key: &str,
        req: Request,
        timeout: Duration,
        finished: &mut HashMap<usize, Result<Arc<ModuleOutcome>, TunerError>>,
    ) -> Result<Result<RunOutcome, Verdict>, TunerError> {
        let already_loaded = self.worker(finished)?.loaded.contains(key);
        if !already_loaded && let Err(m) = self.load(key, finished)? {
            return Ok(Err(Verdict::Invalid { reason: m }));
        }
        let w = self.worker(finished)?;
        let r = w.client.request(&req, &[], timeout);
        match r {
            Ok((Reply::Ran(o), _)) => {
                if let RunStatus::Crashed(reason) = &o.status {
                    // the worker exits after this reply; the next request starts a fresh one
                    let reason = reason.clone();
                    if let Some(w) = self.worker.as_mut() {
                        w.client.kill();
                    }
                    self.worker = None;
                    return Ok(Err(Verdict::Crashed { reason }));
                }
                Ok(Ok(o))
            }
            Ok((other, _)) => Ok(Err(Verdict::Crashed {
                reason: format!("unexpected reply {other:?}"),
            })),
            Err(f) => {
                self.worker = None;
                let verdict = match f {
                    WorkerFailure::Timeout { after } => Verdict::Timeout {
                        after_s: after.as_secs_f64(),
                    },
                    other => Verdict::Crashed {
                        reason: other.to_string(),
                    },
                };
                Ok(Err(verdict))
            }
        }
    }

    fn options_for(&self, kernel: &TunableKernel) -> Vec<String> {
        let mut o = vec![nvrtc::arch_option(self.arch)];
        o.extend(kernel.compiler_options.iter().cloned());
        o
    }

    /// Submits a configuration's compilation; returns its ticket and module key.
    fn submit(
        &mut self,
        kernel: &TunableKernel,
        config: &Config,
        scalars: &Bindings,
        grid_defines: bool,
    ) -> Result<(usize, String, u32), TunerError> {
        let mut defines = kernel.geometry.defines(config, scalars)?;
        if !grid_defines {
            defines.retain(|(n, _)| !n.starts_with("grid_size_"));
        }
        let source = nvrtc::full_source(&defines, &kernel.source);
        let ticket = self.next_ticket();
        let options = self.options_for(kernel);
        let key = self.pool.submit(ticket, source, options);
        let shared = kernel.geometry.launch(config, scalars)?.shared_mem;
        Ok((ticket, key, shared))
    }

    /// Tunes `kernel` on `tests`. Per-config failures become verdicts; only set-up failures are errors.
    pub fn tune(
        &mut self,
        kernel: &TunableKernel,
        tests: &TestSet,
        options: &TuneOptions,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<TuneResult, TunerError> {
        let start = Instant::now();
        let mut phases = Phases::default();
        let mut finished = HashMap::new();
        let tests = &tests.tests;
        let first = tests
            .first()
            .ok_or_else(|| TunerError::Arguments("no tests to tune on".into()))?;
        let scalars0 = first.scalars();
        let space = SearchSpace::build(
            &kernel.params,
            &kernel.restrictions,
            &scalars0,
            Some(self.max_threads),
        )?;
        if space.is_empty() {
            return Err(TunerError::Space(
                "no configuration satisfies the restrictions and the device's thread limit".into(),
            ));
        }
        // grid_size_* defines only when every test has the same launch, else one module per test would be needed
        let grid_defines = tests.iter().all(|t| {
            kernel
                .geometry
                .problem(&space.configs[0], &t.scalars())
                .ok()
                == kernel.geometry.problem(&space.configs[0], &scalars0).ok()
        });
        let reference = kernel
            .reference
            .clone()
            .unwrap_or_else(|| space.configs[0].clone());

        // Compile kt's own kernels, the reference and the strategy's first batch now, before waiting for
        // the worker.
        for t in tests {
            self.submit_util(&test_dtypes(t));
        }
        let (ref_ticket, ref_key, ref_shared) =
            self.submit(kernel, &reference, &scalars0, grid_defines)?;
        let mut strategy = options.strategy.build(options.seed);
        let mut history = History::default();
        let mut cached = HashMap::new();
        let mut prefetched: Vec<usize> = strategy.next_batch(&space, &history);
        if let Some(m) = options.limits.max_evals {
            prefetched.truncate(m);
        }
        let mut tickets: HashMap<usize, (usize, String, u32)> = HashMap::new();
        for &i in &prefetched {
            let t = self.submit(kernel, &space.configs[i], &scalars0, grid_defines)?;
            tickets.insert(i, t);
        }

        let w = self.worker(&mut finished)?;
        let device = w.device.clone();
        phases.context_ms = start.elapsed().as_secs_f64() * 1e3;

        let mut results = match &options.results_cache {
            Some(path) => {
                let problem: Vec<String> = tests.iter().map(|t| t.fingerprint()).collect();
                let scope = CacheScope::new(
                    &device.uuid,
                    &kernel.source,
                    &kernel.kernel_name,
                    &self.options_for(kernel),
                    &format!("{}|{:?}", problem.join(","), options.timing),
                );
                Some(ResultCache::open(path, scope)?)
            }
            None => None,
        };

        // Upload tests, then the reference launch on each.
        let t_up = Instant::now();
        let mut ref_args = Vec::new();
        let mut ref_dims = Vec::new();
        for t in tests {
            ref_args.push(launch_args(t));
            ref_dims.push(kernel.geometry.launch(&reference, &t.scalars())?);
        }
        self.prepare(tests, None, &mut finished)?;
        phases.upload_ms = t_up.elapsed().as_secs_f64() * 1e3;

        // the reference compiled meanwhile on the pool
        self.wait_required_module(
            ref_ticket,
            &ref_key,
            &kernel.kernel_name,
            ref_shared,
            &first.id,
            &format!("the default configuration {reference}"),
            &mut finished,
        )?;

        let t_ref = Instant::now();
        let mut ref_times = Vec::new();
        let mut ref_baselines = Vec::new();
        let mut ref_first_timing = None;
        let ref_info = match self.load(&ref_key, &mut finished)? {
            Ok(i) => i,
            Err(m) => {
                return Err(TunerError::Reference {
                    test: first.id.clone(),
                    reason: m,
                });
            }
        };
        for (i, t) in tests.iter().enumerate() {
            let run = RunRequest {
                module: ref_key.clone(),
                test: t.id.clone(),
                args: ref_args[i].clone(),
                dims: ref_dims[i],
                verify: false,
                timing: Some(options.timing),
                best: None,
            };
            let w = self.worker(&mut finished)?;
            let outcome =
                match w
                    .client
                    .request(&Request::Reference { run }, &[], Duration::from_secs(300))
                {
                    Ok((Reply::Ran(o), _)) => o,
                    Ok((other, _)) => {
                        return Err(TunerError::Reference {
                            test: t.id.clone(),
                            reason: format!("{other:?}"),
                        });
                    }
                    Err(f) => {
                        return Err(TunerError::Reference {
                            test: t.id.clone(),
                            reason: f.to_string(),
                        });
                    }
                };
            match &outcome.status {
                RunStatus::Ok => {}
                RunStatus::Invalid(m) | RunStatus::Crashed(m) => {
                    return Err(TunerError::Reference {
                        test: t.id.clone(),
                        reason: m.clone(),
                    });
                }
            }
            if let Some(bad) = outcome.outputs.iter().find(|o| !o.passed()) {
                return Err(TunerError::Reference {
                    test: t.id.clone(),
                    reason: format!(
                        "the reference launch disagrees with the test's expected values: {}",
                        bad.describe()
                    ),
                });
            }
            let ms = outcome.timing.as_ref().map(|s| s.median_ms).unwrap_or(0.0);
            if ref_first_timing.is_none() {
                ref_first_timing = outcome.timing.clone();
            }
            ref_times.push(ms);
            ref_baselines.push(Baseline {
                ms,
                noise: outcome.timing.as_ref().map(TimingStats::sample_noise),
            });
            if let Some((_, r)) = self.uploaded.get_mut(i) {
                *r = Some((ref_key.clone(), ref_args[i].clone(), ref_dims[i]));
            }
        }
        phases.reference_ms = t_ref.elapsed().as_secs_f64() * 1e3;
        let ref_total: f64 = ref_times.iter().sum();
        let mut reference_m =
            Measurement::synthetic(reference.clone(), Verdict::Ok, Some(ref_total));
        reference_m.timing = ref_first_timing;
        reference_m.per_test_ms = ref_times.clone();
        reference_m.launch = ref_dims.first().copied();
        reference_m.registers = Some(ref_info.registers);
        reference_m.local_bytes = Some(ref_info.local_bytes);
        reference_m.static_shared_bytes = Some(ref_info.static_shared_bytes);
        self.fill_rates(kernel, &scalars0, &mut reference_m, None);

        // The search.
        let t_bench = Instant::now();
        let mut measurements: Vec<Measurement> = Vec::new();
        let mut best_per_test: Vec<Option<Baseline>> = vec![None; tests.len()];
        let total = options
            .limits
            .max_evals
            .unwrap_or(space.len())
            .min(space.len());
        let mut done = 0usize;
        let mut setup_error: Option<TunerError> = None;
        {
            let mut wrapper = Prefetched {
                first: Some(prefetched),
                inner: strategy.as_mut(),
            };
            let timing = options.timing;
            let mut evaluate = |batch: &[usize]| -> Vec<f64> {
                let mut out = Vec::new();
                // submit the whole batch so compilation runs ahead of the GPU
                for &i in batch {
                    if let Some(c) = results.as_ref().and_then(|r| r.get(&space.configs[i])) {
                        cached.insert(i, c.clone());
                        continue;
                    }
                    if let std::collections::hash_map::Entry::Vacant(e) = tickets.entry(i) {
                        match self.submit(kernel, &space.configs[i], &scalars0, grid_defines) {
                            Ok(t) => {
                                e.insert(t);
                            }
                            Err(err) => {
                                setup_error.get_or_insert(err);
                            }
                        }
                    }
                }
                for &i in batch {
                    if setup_error.is_some() {
                        out.push(f64::INFINITY);
                        continue;
                    }
                    let m = if let Some(mut c) = cached.remove(&i) {
                        c.from_cache = true;
                        c
                    } else {
                        match self.evaluate(
                            kernel,
                            &space.configs[i],
                            tickets.get(&i).cloned(),
                            tests,
                            &timing,
                            options.verify,
                            &ref_baselines,
                            &mut best_per_test,
                            &mut finished,
                            &mut phases,
                        ) {
                            Ok(m) => {
                                if let Some(r) = results.as_mut()
                                    && let Err(e) = r.append(&m)
                                {
                                    tracing::warn!("results cache: {e}");
                                }
                                m
                            }
                            Err(e) => {
                                setup_error.get_or_insert(e);
                                out.push(f64::INFINITY);
                                continue;
                            }
                        }
                    };
                    let v = m.objective_ms().unwrap_or(f64::INFINITY);
                    done += 1;
                    let best = measurements
                        .iter()
                        .filter_map(|m| m.objective_ms())
                        .chain(std::iter::once(v))
                        .filter(|v| v.is_finite())
                        .min_by(f64::total_cmp);
                    progress(&Progress {
                        done,
                        total,
                        config: m.config.clone(),
                        verdict: m.verdict.short().to_string(),
                        time_ms: m.objective_ms(),
                        best_ms: best,
                    });
                    measurements.push(m);
                    out.push(v);
                }
                out
            };
            drive(
                &mut wrapper,
                &space,
                options.limits,
                &mut history,
                &mut evaluate,
            );
        }
        if let Some(e) = setup_error {
            return Err(e);
        }
        phases.benchmark_ms = t_bench.elapsed().as_secs_f64() * 1e3;

        let best = measurements
            .iter()
            .filter(|m| m.objective_ms().is_some_and(f64::is_finite))
            .min_by(|a, b| {
                a.objective
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&b.objective.unwrap_or(f64::INFINITY))
            })
            .cloned();
        phases.total_ms = start.elapsed().as_secs_f64() * 1e3;

        let peak = if options.measure_peak {
            self.peak_bandwidth(&device, &mut finished).ok()
        } else {
            None
        };
        let mut result = TuneResult {
            kernel_name: kernel.kernel_name.clone(),
            device,
            strategy: options.strategy,
            space_size: space.len(),
            best,
            reference: Some(reference_m),
            measurements,
            phases,
            peak_gbps: peak,
            worker_restarts: self.restarts,
        };
        let compute_peak = result.device.fp32_peak_gflops();
        for m in result
            .measurements
            .iter_mut()
            .chain(result.best.iter_mut())
            .chain(result.reference.iter_mut())
        {
            m.percent_of_peak = percent_of_binding_peak(m, peak, compute_peak);
        }
        Ok(result)
    }

    fn fill_rates(
        &self,
        kernel: &TunableKernel,
        scalars: &Bindings,
        m: &mut Measurement,
        _peak: Option<f64>,
    ) {
        let Some(ms) = m.per_test_ms.first().copied().filter(|v| *v > 0.0) else {
            return;
        };
        if let Some(b) = &kernel.bytes {
            m.gbps = eval_number(b, scalars)
                .ok()
                .map(|bytes| bytes / (ms * 1e-3) / 1e9);
        }
        if let Some(f) = &kernel.flops {
            m.gflops = eval_number(f, scalars)
                .ok()
                .map(|flops| flops / (ms * 1e-3) / 1e9);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn evaluate(
        &mut self,
        kernel: &TunableKernel,
        config: &Config,
        ticket: Option<(usize, String, u32)>,
        tests: &[KernelTest],
        timing: &TimingPolicy,
        verify: bool,
        refs: &[Baseline],
        best_per_test: &mut [Option<Baseline>],
        finished: &mut HashMap<usize, Result<Arc<ModuleOutcome>, TunerError>>,
        phases: &mut Phases,
    ) -> Result<Measurement, TunerError> {
        let mut m = Measurement::synthetic(config.clone(), Verdict::Ok, None);
        m.timing = None;
        let Some((ticket, key, shared)) = ticket else {
            return Err(TunerError::Worker(format!(
                "configuration {config} was never submitted for compilation"
            )));
        };
        let t_wait = Instant::now();
        let outcome = self.wait_ticket(ticket, finished)?;
        phases.compile_wait_ms += t_wait.elapsed().as_secs_f64() * 1e3;
        match &*outcome {
            ModuleOutcome::Failed { log, .. } => {
                m.verdict = Verdict::CompileError { log: log.clone() };
                return Ok(m);
            }
            ModuleOutcome::Compiled { ms, .. } => {
                m.compile_ms = *ms;
                phases.compile_cpu_ms += ms;
            }
        }
        self.remember_module(key.clone(), outcome.clone(), &kernel.kernel_name, shared);
        let t_bench = Instant::now();
        match self.load(&key, finished)? {
            Ok(info) => {
                m.registers = Some(info.registers);
                m.local_bytes = Some(info.local_bytes);
                m.static_shared_bytes = Some(info.static_shared_bytes);
            }
            Err(reason) => {
                m.verdict = Verdict::Invalid { reason };
                return Ok(m);
            }
        }
        let mut per_test = Vec::new();
        for (i, t) in tests.iter().enumerate() {
            let scalars = t.scalars();
            let dims = kernel.geometry.launch(config, &scalars)?;
            m.launch.get_or_insert(dims);
            let reference = refs.get(i).copied();
            let ref_ms = reference.map(|r| r.ms).unwrap_or(1.0);
            let budget_ms = timing.max_total_ms * 2.0 + ref_ms * (timing.max_reps as f64 + 2.0);
            let timeout = self.config.timeout_floor.max(Duration::from_secs_f64(
                (self.config.timeout_factor * ref_ms + budget_ms) / 1e3,
            ));
            // the default launch's time bounds the early stop until something faster is found
            let best = match (best_per_test[i], reference) {
                (Some(b), Some(r)) if r.ms < b.ms => Some(r),
                (Some(b), _) => Some(b),
                (None, r) => r,
            };
            let run = RunRequest {
                module: key.clone(),
                test: t.id.clone(),
                args: launch_args(t),
                dims,
                verify,
                timing: Some(*timing),
                best,
            };
            let outcome = match self.run_on_worker(&key, Request::Run { run }, timeout, finished)? {
                Ok(o) => o,
                Err(v) => {
                    m.verdict = v;
                    break;
                }
            };
            if m.occupancy.is_none() {
                m.occupancy = outcome.occupancy;
            }
            match outcome.status {
                RunStatus::Ok => {}
                RunStatus::Invalid(reason) | RunStatus::Crashed(reason) => {
                    m.verdict = Verdict::Invalid { reason };
                    break;
                }
            }
            let bad: Vec<&OutputReport> = outcome.outputs.iter().filter(|o| !o.passed()).collect();
            if !bad.is_empty() || !outcome.inputs_modified.is_empty() {
                let mut details: Vec<String> = bad
                    .iter()
                    .map(|o| format!("test {}: {}", t.id, o.describe()))
                    .collect();
                details.extend(
                    outcome
                        .inputs_modified
                        .iter()
                        .map(|n| format!("test {}: input {n} was modified by the kernel", t.id)),
                );
                m.verdict = Verdict::WrongAnswer {
                    details,
                    reports: bad.into_iter().cloned().collect(),
                };
                break;
            }
            let Some(stats) = outcome.timing else { break };
            let median = stats.median_ms;
            if !stats.aborted_early {
                let noise = Some(stats.sample_noise());
                if best_per_test[i].is_none_or(|b| median < b.ms) {
                    best_per_test[i] = Some(Baseline { ms: median, noise });
                }
            }
            // An early stop on one test does not skip the others: every test is still verified (their
            // timing will most likely stop after the verifying sample too).
            if m.timing.is_none() {
                m.timing = Some(stats);
            }
            per_test.push(median);
        }
        m.benchmark_ms = t_bench.elapsed().as_secs_f64() * 1e3;
        if m.verdict.is_ok() {
            m.objective = Some(per_test.iter().sum());
            m.per_test_ms = per_test;
            self.fill_rates(kernel, &tests[0].scalars(), &mut m, None);
        }
        Ok(m)
    }

    /// The device of the live worker, if one is running.
    pub fn device_info(&self) -> Option<DeviceInfo> {
        self.worker.as_ref().map(|w| w.device.clone())
    }

    /// Device copy bandwidth (bytes read + written), measured once per device and cached on disk.
    pub fn measure_peak(&mut self, device: &DeviceInfo) -> Result<f64, TunerError> {
        let mut finished = HashMap::new();
        self.peak_bandwidth(device, &mut finished)
    }

    fn peak_bandwidth(
        &mut self,
        device: &DeviceInfo,
        finished: &mut HashMap<usize, Result<Arc<ModuleOutcome>, TunerError>>,
    ) -> Result<f64, TunerError> {
        let file = self
            .config
            .cache_dir
            .as_ref()
            .map(|d| d.join(format!("peak-{}.json", device.uuid)));
        if let Some(f) = &file
            && let Ok(text) = std::fs::read_to_string(f)
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(g) = v.get("copy_gbps").and_then(|g| g.as_f64())
        {
            return Ok(g);
        }
        let bytes = (device.total_memory as u64 / 16).clamp(64 << 20, 2 << 30);
        let w = self.worker(finished)?;
        let gbps = match w
            .client
            .request(
                &Request::MeasureBandwidth { bytes },
                &[],
                Duration::from_secs(60),
            )
            .map_err(worker_failure)?
        {
            (Reply::Bandwidth { gbps }, _) => gbps,
            (other, _) => return Err(TunerError::Worker(format!("bandwidth: {other:?}"))),
        };
        if let Some(f) = &file {
            if let Some(d) = f.parent() {
                let _ = std::fs::create_dir_all(d);
            }
            let _ = std::fs::write(
                f,
                serde_json::json!({ "device": device.name, "copy_gbps": gbps, "bytes": bytes })
                    .to_string(),
            );
        }
        Ok(gbps)
    }

    /// Runs `kernel` at `config` on every test and writes each output to `<out_dirs[i]>/<name>.npy` (the
    /// worker streams it from the GPU, so gigabyte outputs never cross the protocol pipe): what becomes a
    /// test's `expected/`. Outputs start from the test's initial contents; a second run with the outputs
    /// poisoned reports elements the kernel never writes. With `timing`, the launch is also timed. The
    /// test set's own expected values play no part.
    pub fn run_reference(
        &mut self,
        kernel: &TunableKernel,
        config: &Config,
        tests: &TestSet,
        out_dirs: &[PathBuf],
        timing: Option<TimingPolicy>,
    ) -> Result<Vec<ReferenceOutputs>, TunerError> {
        let mut finished = HashMap::new();
        let tests = &tests.tests;
        let first = tests
            .first()
            .ok_or_else(|| TunerError::Arguments("no tests to run the reference on".into()))?;
        if out_dirs.len() != tests.len() {
            return Err(TunerError::Arguments(format!(
                "{} output directories for {} tests: give one per test",
                out_dirs.len(),
                tests.len()
            )));
        }
        for t in tests {
            self.submit_util(&test_dtypes(t));
        }
        let (ticket, key, shared) = self.submit(kernel, config, &first.scalars(), false)?;
        self.worker(&mut finished)?;
        self.wait_required_module(
            ticket,
            &key,
            &kernel.kernel_name,
            shared,
            &first.id,
            &format!("the kernel at {config}"),
            &mut finished,
        )?;
        self.prepare(tests, None, &mut finished)?;
        let mut runs = Vec::new();
        for (t, dir) in tests.iter().zip(out_dirs) {
            std::fs::create_dir_all(dir).map_err(|e| TunerError::io(dir, e))?;
            // absolute: the worker has a work directory of its own
            let dir = std::fs::canonicalize(dir).map_err(|e| TunerError::io(dir, e))?;
            let mut files = Vec::new();
            for a in t.arrays().filter(|a| a.is_output) {
                files.push(OutputFile {
                    name: a.name.clone(),
                    path: dir.join(format!("{}.npy", a.name)),
                    shape: array_shape(a)?,
                });
            }
            let run = RunRequest {
                module: key.clone(),
                test: t.id.clone(),
                args: launch_args(t),
                dims: kernel.geometry.launch(config, &t.scalars())?,
                verify: false,
                timing,
                best: None,
            };
            let failed = |reason: String| TunerError::Reference {
                test: t.id.clone(),
                reason,
            };
            let o = match self.run_on_worker(
                &key,
                Request::RecordOutputs { run, files },
                Duration::from_secs(300),
                &mut finished,
            )? {
                Ok(o) => o,
                Err(v) => return Err(failed(verdict_reason(&v))),
            };
            if let RunStatus::Invalid(m) | RunStatus::Crashed(m) = o.status {
                return Err(failed(m));
            }
            runs.push(ReferenceOutputs {
                test_id: t.id.clone(),
                outputs: o.recorded,
                timing: o.timing,
            });
        }
        Ok(runs)
    }

    /// Runs `reference` (its configuration's launch) to get expected outputs, then `candidate`, on the same
    /// inputs; reports every output of every test.
    pub fn verify(
        &mut self,
        reference: &TunableKernel,
        reference_config: &Config,
        candidate: &TunableKernel,
        candidate_config: &Config,
        tests: &TestSet,
    ) -> Result<VerifyReport, TunerError> {
        let mut finished = HashMap::new();
        let tests = &tests.tests;
        let first = tests
            .first()
            .ok_or_else(|| TunerError::Arguments("no tests to verify on".into()))?;
        let s0 = first.scalars();
        for t in tests {
            self.submit_util(&test_dtypes(t));
        }
        let (rt, rkey, rshared) = self.submit(reference, reference_config, &s0, false)?;
        let (ct, ckey, cshared) = self.submit(candidate, candidate_config, &s0, false)?;
        self.worker(&mut finished)?;
        self.wait_required_module(
            rt,
            &rkey,
            &reference.kernel_name,
            rshared,
            &first.id,
            "the reference",
            &mut finished,
        )?;
        let co = self.wait_ticket(ct, &mut finished)?;
        let compile_failure = match &*co {
            ModuleOutcome::Failed { log, .. } => Some(log.clone()),
            _ => None,
        };
        self.remember_module(ckey.clone(), co, &candidate.kernel_name, cshared);
        let mut refs = Vec::new();
        for t in tests {
            refs.push((
                launch_args(t),
                reference.geometry.launch(reference_config, &t.scalars())?,
            ));
        }
        self.prepare(
            tests,
            Some((
                rkey.clone(),
                refs.iter().map(|r| r.0.clone()).collect(),
                refs.iter().map(|r| r.1).collect(),
            )),
            &mut finished,
        )?;
        if let Err(m) = self.load(&rkey, &mut finished)? {
            return Err(TunerError::Reference {
                test: first.id.clone(),
                reason: m,
            });
        }
        let mut report = VerifyReport { tests: Vec::new() };
        for (i, t) in tests.iter().enumerate() {
            let run = RunRequest {
                module: rkey.clone(),
                test: t.id.clone(),
                args: refs[i].0.clone(),
                dims: refs[i].1,
                verify: false,
                timing: None,
                best: None,
            };
            let w = self.worker(&mut finished)?;
            match w
                .client
                .request(&Request::Reference { run }, &[], Duration::from_secs(300))
                .map_err(|f| TunerError::Reference {
                    test: t.id.clone(),
                    reason: f.to_string(),
                })? {
                (
                    Reply::Ran(RunOutcome {
                        status: RunStatus::Ok,
                        ..
                    }),
                    _,
                ) => {}
                (other, _) => {
                    return Err(TunerError::Reference {
                        test: t.id.clone(),
                        reason: format!("{other:?}"),
                    });
                }
            }
            if let Some(log) = &compile_failure {
                report.tests.push(TestVerdict {
                    test: t.id.clone(),
                    verdict: Verdict::CompileError { log: log.clone() },
                    outputs: vec![],
                    inputs_modified: vec![],
                });
                continue;
            }
            let dims = candidate.geometry.launch(candidate_config, &t.scalars())?;
            let run = RunRequest {
                module: ckey.clone(),
                test: t.id.clone(),
                args: launch_args(t),
                dims,
                verify: true,
                timing: None,
                best: None,
            };
            let timeout = self.config.timeout_floor.max(Duration::from_secs(30));
            let tv =
                match self.run_on_worker(&ckey, Request::Run { run }, timeout, &mut finished)? {
                    Err(v) => TestVerdict {
                        test: t.id.clone(),
                        verdict: v,
                        outputs: vec![],
                        inputs_modified: vec![],
                    },
                    Ok(o) => {
                        let verdict = match &o.status {
                            RunStatus::Ok => {
                                let bad: Vec<&OutputReport> =
                                    o.outputs.iter().filter(|r| !r.passed()).collect();
                                if bad.is_empty() && o.inputs_modified.is_empty() {
                                    Verdict::Ok
                                } else {
                                    let mut details: Vec<String> =
                                        bad.iter().map(|r| r.describe()).collect();
                                    details.extend(
                                        o.inputs_modified
                                            .iter()
                                            .map(|n| format!("input {n} was modified")),
                                    );
                                    Verdict::WrongAnswer {
                                        details,
                                        reports: bad.into_iter().cloned().collect(),
                                    }
                                }
                            }
                            RunStatus::Invalid(r) | RunStatus::Crashed(r) => {
                                Verdict::Invalid { reason: r.clone() }
                            }
                        };
                        TestVerdict {
                            test: t.id.clone(),
                            verdict,
                            outputs: o.outputs,
                            inputs_modified: o.inputs_modified,
                        }
                    }
                };
            report.tests.push(tv);
        }
        Ok(report)
    }
}

impl Drop for Tuner {
    fn drop(&mut self) {
        if let Some(w) = self.worker.take() {
            w.client.shutdown();
        }
    }
}

/// Hands the strategy's first batch (already submitted for compilation) to the driver before asking the
/// strategy again.
struct Prefetched<'a> {
    first: Option<Vec<usize>>,
    inner: &'a mut dyn SearchStrategy,
}

impl SearchStrategy for Prefetched<'_> {
    fn next_batch(&mut self, space: &SearchSpace, history: &History) -> Vec<usize> {
        match self.first.take() {
            Some(b) if !b.is_empty() => b,
            _ => self.inner.next_batch(space, history),
        }
    }
}

/// Kernel Tuner style reference configuration from a default block: `block_size_x/y/z` set to it and every
/// other tunable parameter at its first value.
pub fn config_from_block(params: &[TunableParam], block: [i64; 3]) -> Config {
    let mut values: Vec<(String, i64)> = params
        .iter()
        .map(|p| (p.name.clone(), p.values[0]))
        .collect();
    for (i, n) in ["block_size_x", "block_size_y", "block_size_z"]
        .iter()
        .enumerate()
    {
        match values.iter_mut().find(|(name, _)| name == n) {
            Some(v) => v.1 = block[i],
            None => {
                if block[i] != default_define(n).unwrap_or(1) {
                    values.push((n.to_string(), block[i]));
                }
            }
        }
    }
    Config(values)
}

/// One test's outputs as written by [`Tuner::run_reference`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceOutputs {
    pub test_id: String,
    /// Every output of the test, in parameter order, with where it was written.
    pub outputs: Vec<RecordedOutput>,
    /// The launch's timing, when asked for.
    pub timing: Option<TimingStats>,
}

/// The .npy shape of an array: its file's shape, else (generated inputs) flat, with a lane dimension for
/// structs.
fn array_shape(a: &crate::args::ArrayArg) -> Result<Vec<u64>, TunerError> {
    Ok(match &a.source {
        crate::args::ArraySource::Npy { path, .. } => crate::npy::read_header(path)?.shape,
        crate::args::ArraySource::Generate { .. } if a.lanes > 1 => {
            vec![a.elements / a.lanes as u64, a.lanes as u64]
        }
        crate::args::ArraySource::Generate { .. } => vec![a.elements],
    })
}

/// What went wrong, in words, for a verdict that ends a reference run.
fn verdict_reason(v: &Verdict) -> String {
    match v {
        Verdict::Ok => "no failure".into(),
        Verdict::WrongAnswer { details, .. } => details.join("; "),
        Verdict::CompileError { log } => format!("compile error: {log}"),
        Verdict::Invalid { reason } | Verdict::Crashed { reason } => reason.clone(),
        Verdict::Timeout { after_s } => {
            format!("no reply within {after_s:.1} s (hung kernel?); worker killed")
        }
    }
}

/// Convenience: scalar bindings of a test by name.
pub fn test_scalars(test: &KernelTest) -> BTreeMap<String, f64> {
    test.scalars()
}

/// Share of the ceiling that binds this kernel: the larger of achieved bandwidth over the measured copy
/// bandwidth and achieved FLOP rate over the theoretical FP32 rate. A memory-bound kernel is judged by the
/// first, a compute-bound one (matmul) by the second; reporting only bandwidth would call a matmul at 65% of
/// cuBLAS "2% of peak".
fn percent_of_binding_peak(
    m: &Measurement,
    peak_gbps: Option<f64>,
    peak_gflops: Option<f64>,
) -> Option<f64> {
    let memory = m.gbps.zip(peak_gbps).map(|(g, p)| 100.0 * g / p);
    let compute = m.gflops.zip(peak_gflops).map(|(g, p)| 100.0 * g / p);
    match (memory, compute) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod peak_tests {
    use super::*;

    fn measured(gbps: Option<f64>, gflops: Option<f64>) -> Measurement {
        let mut m = Measurement::synthetic(Config(vec![]), Verdict::Ok, Some(1.0));
        m.gbps = gbps;
        m.gflops = gflops;
        m
    }

    #[test]
    fn a_compute_bound_kernel_is_judged_by_its_flop_rate() {
        // matmul: little bandwidth, most of the FP32 rate.
        let m = measured(Some(66.0), Some(33_000.0));
        let p = percent_of_binding_peak(&m, Some(4_270.0), Some(66_000.0)).unwrap();
        assert!((p - 50.0).abs() < 1e-9, "{p}");
    }

    #[test]
    fn a_memory_bound_kernel_is_judged_by_its_bandwidth() {
        let m = measured(Some(3_416.0), Some(280.0));
        let p = percent_of_binding_peak(&m, Some(4_270.0), Some(66_000.0)).unwrap();
        assert!((p - 80.0).abs() < 1e-9, "{p}");
    }

    #[test]
    fn without_any_ceiling_there_is_no_percentage() {
        let m = measured(Some(1.0), Some(1.0));
        assert_eq!(percent_of_binding_peak(&m, None, None), None);
        assert!(percent_of_binding_peak(&m, None, Some(10.0)).is_some());
    }
}
