//! The `Tuner`: one worker process (restarted whenever a kernel hangs or faults) and one compiler pool,
//! each public operation handed to its file in `session/`; and what the parent reads of the device through
//! the driver alone, so compilation starts while the worker is still creating its context.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::check::measure::TimingPolicy;
use crate::compile::module_cache::{CompilePool, DiskCache};
use crate::compile::nvrtc;
use crate::error::TunerError;
use crate::model::args::{KernelTest, TestSet};
use crate::model::outcome::{Progress, ReferenceOutputs, TuneResult, Verdict, VerifyReport};
use crate::model::space::Config;
use crate::session::compile_queue::CompileQueue;
use crate::session::engine::{CheckTarget, Engine};
use crate::session::setup::{TunableKernel, TuneOptions, TunerConfig};
use crate::session::worker_link::WorkerLink;
use crate::session::{
    determinism, launch_time, peak, reference_probe, reference_run, tuning, verification,
};
use crate::worker::protocol::DeviceInfo;

pub struct Tuner {
    engine: Engine,
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

/// How much work fills device `ordinal` and how much memory a test may take (`kt verify`'s large test).
/// Needs only the driver, no context.
pub fn device_scale(
    ordinal: usize,
) -> Result<crate::input::default_tests::DeviceScale, TunerError> {
    if crate::worker::fake_mode_in_env().is_some() {
        // what the fake device reports (`worker/fake.rs`): one SM of 2048 threads, 1 GiB
        return Ok(crate::input::default_tests::DeviceScale::new(
            1,
            2048,
            1 << 30,
        ));
    }
    query_device(ordinal)?;
    use cudarc::driver::result;
    use cudarc::driver::sys::CUdevice_attribute as A;
    let dev = result::device::get(ordinal as i32).map_err(device_error)?;
    // SAFETY: dev is a valid device handle (query_device initialised the driver and checked the ordinal).
    let (sms, threads, memory) = unsafe {
        (
            result::device::get_attribute(dev, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .map_err(device_error)?,
            result::device::get_attribute(
                dev,
                A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            )
            .map_err(device_error)?,
            result::device::total_mem(dev).map_err(device_error)?,
        )
    };
    Ok(crate::input::default_tests::DeviceScale::new(
        sms.max(1) as u32,
        threads.max(1) as u32,
        memory as u64,
    ))
}

/// The device a fake worker (`worker::FAKE_ENV` in its environment) stands for: sm_90, 1024 threads per
/// block, as `worker/fake.rs` reports. The parent then needs no driver, only NVRTC: CPU tests of a whole
/// tuning run (kt's Python module in CI) compile for real and launch on the fake.
fn fake_device(config: &TunerConfig) -> Option<((i32, i32), u64)> {
    let fake = match config.worker.as_ref() {
        Some(worker) => worker.env.iter().any(|(k, _)| k == crate::worker::FAKE_ENV),
        // kt's own binary as the worker: it passes the fake on (`WorkerCommand::current_exe`)
        None => crate::worker::fake_mode_in_env().is_some(),
    };
    fake.then_some(((9, 0), 1024))
}

impl Tuner {
    /// Starts the worker (its context is created in the background) and the compiler pool.
    pub fn new(config: TunerConfig) -> Result<Self, TunerError> {
        nvrtc::ensure_available()?;
        let fake = fake_device(&config);
        // SAFETY: only dlopen.
        if fake.is_none() && !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(TunerError::NoDriver("libcuda.so not found".into()));
        }
        // the worker creates its context while this process initialises the driver and NVRTC
        let link = WorkerLink::start(&config)?;
        let (arch, max_threads) = match fake {
            Some(device) => device,
            None => query_device(config.device)?,
        };
        let disk = DiskCache::new(config.cache_dir.as_ref().map(|d| d.join("modules")));
        let pool = CompilePool::new(config.compile_threads, disk)?;
        Ok(Tuner {
            engine: Engine {
                config,
                queue: CompileQueue::new(pool, arch),
                link,
                max_threads,
            },
        })
    }

    pub fn arch(&self) -> (i32, i32) {
        self.engine.queue.arch()
    }

    /// Tunes `kernel` on `tests`. Per-config failures become verdicts; only set-up failures are errors.
    pub fn tune(
        &mut self,
        kernel: &TunableKernel,
        tests: &TestSet,
        options: &TuneOptions,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<TuneResult, TunerError> {
        tuning::tune(&mut self.engine, kernel, tests, options, progress)
    }

    /// Waits until the worker is up (its CUDA context created) and returns its device: a caller that knows it
    /// will need the GPU soon takes the start-up out of its later calls.
    pub fn wait_for_device(&mut self) -> Result<DeviceInfo, TunerError> {
        self.engine.link.device(&mut self.engine.queue)
    }

    /// The device of the live worker, if one is running.
    pub fn device_info(&self) -> Option<DeviceInfo> {
        self.engine.link.device_info()
    }

    /// Device copy bandwidth (bytes read + written), measured once per device and cached on disk.
    pub fn measure_peak(&mut self, device: &DeviceInfo) -> Result<f64, TunerError> {
        peak::copy_bandwidth(&mut self.engine, device)
    }

    /// Runs `kernel` at `config` on every test and writes each output to `<out_dirs[i]>/<name>.npy`: what
    /// becomes a test's `expected/` (see `reference_run`).
    pub fn run_reference(
        &mut self,
        kernel: &TunableKernel,
        config: &Config,
        tests: &TestSet,
        out_dirs: &[PathBuf],
        timing: Option<TimingPolicy>,
    ) -> Result<Vec<ReferenceOutputs>, TunerError> {
        reference_run::run(&mut self.engine, kernel, config, tests, out_dirs, timing)
    }

    /// Runs `kernel` at `config` once on every test and writes the arrays marked as outputs to
    /// `<out_dirs[i]>/<name>.npy`, as they are after the launch (Kernel Tuner's `run_kernel`): no poisoned
    /// second run, so the arrays may include inputs.
    pub fn record_outputs(
        &mut self,
        kernel: &TunableKernel,
        config: &Config,
        tests: &TestSet,
        out_dirs: &[PathBuf],
    ) -> Result<Vec<ReferenceOutputs>, TunerError> {
        reference_run::record(
            &mut self.engine,
            kernel,
            config,
            tests,
            out_dirs,
            None,
            false,
        )
    }

    /// Times one launch of `kernel` at `config` on `test` (uploaded alone, outputs from their initial
    /// contents), in milliseconds: how `kt verify` sizes its largest default tests.
    pub fn time_launch(
        &mut self,
        kernel: &TunableKernel,
        config: &Config,
        test: &KernelTest,
    ) -> Result<f64, TunerError> {
        launch_time::time_once(&mut self.engine, kernel, config, test)
    }

    /// Runs `kernel` at `config` on `test` (uploaded alone) as a reference: None when it gives expected
    /// values there, else why not (a launch error or fault, a write outside its arrays, outputs it leaves
    /// unwritten or as it found them). `kt verify` asks before keeping a derived default test, whose values
    /// the sidecar never gave. A kernel that does not compile or load is an error.
    pub fn reference_failure(
        &mut self,
        kernel: &TunableKernel,
        config: &Config,
        test: &KernelTest,
    ) -> Result<Option<String>, TunerError> {
        reference_probe::failure_on(&mut self.engine, kernel, config, test)
    }

    /// Profiles one launch of `kernel` at `config` on `test` (uploaded alone, outputs from their initial
    /// contents) through CUPTI, loaded from `cupti` ([`crate::find_cupti`]): `metrics` by Nsight Compute's
    /// names. `TunerError::Counters` when no counters can be read; the session stays usable.
    pub fn count_launch(
        &mut self,
        kernel: &TunableKernel,
        config: &Config,
        test: &KernelTest,
        metrics: &[&str],
        cupti: &std::path::Path,
    ) -> Result<crate::worker::protocol::CounterReport, TunerError> {
        launch_time::count_once(&mut self.engine, kernel, config, test, metrics, cupti)
    }

    /// Has the worker start CUPTI and prepare `metrics` on a helper thread (waiting for the worker's device
    /// first), so that the first [`Tuner::count_launch`] does not pay for CUPTI's start.
    pub fn prepare_counters(
        &mut self,
        metrics: &[&str],
        cupti: &std::path::Path,
    ) -> Result<(), TunerError> {
        let metrics = metrics.iter().map(|m| m.to_string()).collect();
        self.engine
            .link
            .prepare_counters(metrics, cupti.to_path_buf(), &mut self.engine.queue)
    }

    /// Times `launches` separate launches of `kernel` at `config` on `test` (uploaded alone, outputs from
    /// their initial contents, nothing written), in milliseconds.
    pub fn time_launches(
        &mut self,
        kernel: &TunableKernel,
        config: &Config,
        test: &KernelTest,
        launches: u32,
    ) -> Result<Vec<f64>, TunerError> {
        launch_time::time_exactly(&mut self.engine, kernel, config, test, launches)
    }

    /// Runs `candidate` at `config` on every test of `tests` once and twice more (same inputs, outputs
    /// freshly poisoned), uploading those no `verify` uploaded first: the runs are compared with each other,
    /// not with expected values. `Verdict::Nondeterministic` with the first differing index when the reruns
    /// disagree, `Verdict::Ok` when they agree. Outputs are poisoned before a rerun only where a `verify` of
    /// these tests has shown that the reference overwrites them; until then every rerun starts from the
    /// outputs' initial contents (poisoning an output a kernel accumulates into would make reruns differ).
    pub fn check_determinism(
        &mut self,
        candidate: &TunableKernel,
        config: &Config,
        tests: &TestSet,
    ) -> Result<Verdict, TunerError> {
        self.engine
            .link
            .ensure_uploaded(&tests.tests, &mut self.engine.queue)?;
        let target = CheckTarget {
            kernel: candidate,
            config,
            tests: &tests.tests,
            grid_defines: false,
        };
        determinism::check(&mut self.engine, &target)
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
        verification::verify(
            &mut self.engine,
            reference,
            reference_config,
            candidate,
            candidate_config,
            tests,
        )
    }
}

impl Tuner {
    /// Stops the worker, giving it up to `grace` to exit by itself (a wrapping tool writes its report at
    /// exit).
    pub fn close(mut self, grace: std::time::Duration) {
        self.engine.link.shutdown_within(grace);
    }
}

impl Drop for Tuner {
    fn drop(&mut self) {
        let started = std::time::Instant::now();
        self.engine.link.shutdown();
        tracing::debug!(
            ms = started.elapsed().as_secs_f64() * 1e3,
            "the tuner's worker is stopped"
        );
    }
}

/// Convenience: scalar bindings of a test by name.
pub fn test_scalars(test: &KernelTest) -> BTreeMap<String, f64> {
    test.scalars()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::process::WorkerCommand;

    #[test]
    fn only_a_worker_started_as_the_fake_stands_for_a_device() {
        let worker = |env: Vec<(String, String)>| TunerConfig {
            worker: Some(WorkerCommand {
                program: "python3".into(),
                args: vec![],
                env,
                under_profiler: false,
            }),
            ..TunerConfig::default()
        };
        let fake = worker(vec![(crate::worker::FAKE_ENV.into(), "ok".into())]);
        assert_eq!(fake_device(&fake), Some(((9, 0), 1024)));
        assert_eq!(fake_device(&worker(vec![])), None);
        assert_eq!(fake_device(&TunerConfig::default()), None);
    }
}
