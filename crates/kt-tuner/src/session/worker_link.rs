//! The worker's lifecycle as the session sees it: start it (its context is created while the parent
//! compiles), load modules and kt's utility kernels into it, upload the tests, and run requests under a
//! watchdog. When a kernel hangs or faults the worker is gone: the next request starts a fresh one and
//! brings it back to the state the old one had (tests uploaded, expected values recomputed by the
//! reference launch), and the failure is the configuration's verdict.

use std::collections::HashSet;
use std::time::Duration;

use crate::compile::module_cache::ModuleOutcome;
use crate::error::TunerError;
use crate::model::args::KernelTest;
use crate::model::outcome::Verdict;
use crate::session::compile_queue::CompileQueue;
use crate::session::run_request::test_dtypes;
use crate::session::setup::TunerConfig;
use crate::worker::client::{WorkerClient, WorkerFailure};
use crate::worker::process::WorkerCommand;
use crate::worker::protocol::{
    CounterReport, DeviceInfo, FunctionInfo, Reply, Request, RunOutcome, RunRequest, RunStatus,
};
use kt_record::DType;

/// The reference launch of a test (recomputes its expected values in a restarted worker).
pub(crate) type ReferenceLaunch = RunRequest;

struct Worker {
    client: WorkerClient,
    device: DeviceInfo,
    loaded: HashSet<String>,
    util_dtypes: Vec<Vec<DType>>,
    /// Tests on this worker as they were uploaded. Uploading one of them again (each tuning, timed pair,
    /// verification and profile uploads its tests) is skipped: no request changes what a later one reads
    /// (working copies are reset from the pristine ones before use, a modified input is restored, and
    /// expected values that are not the test's own are recomputed by the reference run that starts every
    /// tuning, verification and timing).
    /// Tests on the worker, with their files' stamps when they were sent.
    resident: Vec<(KernelTest, Vec<Option<crate::compile::source_stamp::Stamp>>)>,
}

pub(crate) struct WorkerLink {
    ordinal: usize,
    command: WorkerCommand,
    worker: Option<Worker>,
    /// The first worker, started at construction, until its Hello reply is read.
    pending_hello: Option<WorkerClient>,
    /// Tests uploaded into the current worker, and the reference launch each one's expected values came from.
    uploaded: Vec<(KernelTest, Option<ReferenceLaunch>)>,
    restarts: usize,
    restoring: bool,
    /// Turn waits of the workers that have stopped.
    turns_waited_before: std::time::Duration,
}

fn worker_failure(e: WorkerFailure) -> TunerError {
    TunerError::Worker(e.to_string())
}

fn spawn(command: &WorkerCommand, ordinal: usize) -> Result<WorkerClient, TunerError> {
    let mut client = WorkerClient::start(command)?;
    client
        .send(&Request::Hello { ordinal }, &[])
        .map_err(worker_failure)?;
    Ok(client)
}

impl WorkerLink {
    /// Starts the first worker; it creates its context in the background.
    pub fn start(config: &TunerConfig) -> Result<Self, TunerError> {
        let command = match &config.worker {
            Some(c) => c.clone(),
            None => WorkerCommand::current_exe()?,
        };
        let client = spawn(&command, config.device)?;
        Ok(WorkerLink {
            ordinal: config.device,
            command,
            worker: None,
            pending_hello: Some(client),
            uploaded: Vec::new(),
            restarts: 0,
            restoring: false,
            turns_waited_before: std::time::Duration::ZERO,
        })
    }

    /// How many times a dead worker was replaced.
    pub fn restarts(&self) -> usize {
        self.restarts
    }

    /// The device of the live worker, if one is running.
    pub fn device_info(&self) -> Option<DeviceInfo> {
        self.worker.as_ref().map(|w| w.device.clone())
    }

    /// The device, waiting for the worker if it is still starting.
    pub fn device(&mut self, queue: &mut CompileQueue) -> Result<DeviceInfo, TunerError> {
        Ok(self.live(queue)?.device.clone())
    }

    /// How long this link's workers have waited for turns on a GPU shared with other kt processes.
    pub fn waited_for_turns(&self) -> std::time::Duration {
        self.turns_waited_before
            + self
                .worker
                .as_ref()
                .map_or(std::time::Duration::ZERO, |w| w.client.waited_for_turns())
    }

    /// The live worker, started (and its tests restored) if needed.
    fn live(&mut self, queue: &mut CompileQueue) -> Result<&mut Worker, TunerError> {
        if self.worker.as_ref().is_some_and(|w| w.client.is_dead())
            && let Some(w) = self.worker.take()
        {
            self.turns_waited_before += w.client.waited_for_turns();
        }
        if self.worker.is_none() {
            let first = self.pending_hello.is_some();
            let mut client = match self.pending_hello.take() {
                Some(c) => c,
                None => spawn(&self.command, self.ordinal)?,
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
            client.take_turns_on(&device.uuid);
            self.worker = Some(Worker {
                client,
                device,
                loaded: HashSet::new(),
                util_dtypes: Vec::new(),
                resident: Vec::new(),
            });
            if !first {
                // a fresh worker after a hang or a fault: bring back the tests and their expected values
                if self.restoring {
                    return Err(TunerError::Worker("the worker died again while its tests were being restored (does the reference kernel itself fail?)".into()));
                }
                self.restarts += 1;
                self.restoring = true;
                let restored = self.restore(queue);
                self.restoring = false;
                restored?;
            }
        }
        self.worker
            .as_mut()
            .ok_or_else(|| TunerError::Worker("no worker".into()))
    }

    /// Makes sure the live worker has kt's kernels for these dtypes.
    fn ensure_util(
        &mut self,
        dtypes: &[DType],
        queue: &mut CompileQueue,
    ) -> Result<(), TunerError> {
        if self.live(queue)?.util_dtypes.iter().any(|d| d == dtypes) {
            return Ok(());
        }
        let cubin = queue.util_cubin(dtypes)?;
        let w = self.live(queue)?;
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

    fn upload(&mut self, test: &KernelTest, queue: &mut CompileQueue) -> Result<(), TunerError> {
        self.ensure_util(&test_dtypes(test), queue)?;
        let w = self.live(queue)?;
        let stamps = crate::compile::source_stamp::of_test(test);
        if w.resident
            .iter()
            .any(|(t, s)| t == test && *s == stamps && s.iter().all(Option::is_some))
        {
            return Ok(());
        }
        w.resident.retain(|(t, _)| t.id != test.id);
        match w
            .client
            .request(
                &Request::Upload { test: test.clone() },
                &[],
                Duration::from_secs(600),
            )
            .map_err(worker_failure)?
        {
            (Reply::Done { .. }, _) => {
                w.resident.push((test.clone(), stamps));
                Ok(())
            }
            (Reply::Error { message, .. }, _) => Err(TunerError::on_test(&test.id, message, |m| {
                TunerError::Arguments(format!("test {}: {m}", test.id))
            })),
            (other, _) => Err(TunerError::Worker(format!("upload: {other:?}"))),
        }
    }

    /// Uploads the tests (arrays generated or read in the worker). With `reference`, a restarted worker
    /// recomputes each test's expected values with that launch.
    pub fn prepare(
        &mut self,
        tests: &[KernelTest],
        reference: Option<Vec<ReferenceLaunch>>,
        queue: &mut CompileQueue,
    ) -> Result<(), TunerError> {
        self.uploaded.clear();
        for (i, t) in tests.iter().enumerate() {
            self.upload(t, queue)?;
            let r = reference.as_ref().and_then(|runs| runs.get(i).cloned());
            self.uploaded.push((t.clone(), r));
        }
        Ok(())
    }

    /// Uploads those of `tests` that are not on the worker yet (no expected values: a request that compares
    /// runs with each other, such as the determinism reruns, needs only the inputs). Tests already there
    /// (same id, same inputs) keep their expected values, tolerances and the reference launch that set them.
    pub fn ensure_uploaded(
        &mut self,
        tests: &[KernelTest],
        queue: &mut CompileQueue,
    ) -> Result<(), TunerError> {
        for t in tests {
            // the same inputs under the same id are the same test, whatever tolerances it was uploaded
            // with (`verify` raises them for long sums): uploading it again would lose its expected
            // values and which outputs are poisoned before a run, and the reruns would then start every
            // run from the outputs' initial contents and compare under the plain tolerance
            if self.uploaded.iter().any(|(u, _)| same_test(u, t)) {
                continue;
            }
            self.upload(t, queue)?;
            // a test of the same id replaced in place: `set_reference` addresses the others by index
            match self.uploaded.iter_mut().find(|(u, _)| u.id == t.id) {
                Some(slot) => *slot = (t.clone(), None),
                None => self.uploaded.push((t.clone(), None)),
            }
        }
        Ok(())
    }

    /// Records that test `index`'s expected values come from `launch` (to recompute them after a restart).
    pub fn set_reference(&mut self, index: usize, launch: ReferenceLaunch) {
        if let Some((_, r)) = self.uploaded.get_mut(index) {
            *r = Some(launch);
        }
    }

    /// Loads a module into the worker if it is not there yet; `Ok(Err(..))` says why it cannot be loaded.
    pub fn load(
        &mut self,
        key: &str,
        queue: &mut CompileQueue,
    ) -> Result<Result<FunctionInfo, String>, TunerError> {
        let entry = queue
            .module(key)
            .ok_or_else(|| TunerError::Worker(format!("unknown module {key}")))?;
        let ModuleOutcome::Compiled { cubin, .. } = &*entry.outcome else {
            return Ok(Err("did not compile".into()));
        };
        let (cubin, kernel, dynamic_shared) =
            (cubin.clone(), entry.kernel.clone(), entry.dynamic_shared);
        let w = self.live(queue)?;
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

    /// Unloads a module from the worker, so that its next run loads it afresh (its globals reset).
    pub fn unload(&mut self, key: &str, queue: &mut CompileQueue) -> Result<(), TunerError> {
        let w = self.live(queue)?;
        if !w.loaded.remove(key) {
            return Ok(());
        }
        match w.client.request(
            &Request::Unload {
                key: key.to_string(),
            },
            &[],
            Duration::from_secs(60),
        ) {
            Ok((Reply::Done { .. }, _)) => Ok(()),
            Ok((other, _)) => Err(TunerError::Worker(format!("unload: {other:?}"))),
            Err(e) => Err(TunerError::Worker(format!("unload: {e}"))),
        }
    }

    /// Loads a module the run cannot do without (a reference): failing to load it is a reference error.
    pub fn load_required(
        &mut self,
        key: &str,
        test: &str,
        queue: &mut CompileQueue,
    ) -> Result<FunctionInfo, TunerError> {
        self.load(key, queue)?
            .map_err(|reason| TunerError::Reference {
                test: test.to_string(),
                reason,
            })
    }

    /// Runs a test's reference launch (its outputs become the expected values unless the test brings its
    /// own). Any failure is a reference error: without expected values nothing can be verified.
    pub fn reference(
        &mut self,
        run: RunRequest,
        queue: &mut CompileQueue,
    ) -> Result<RunOutcome, TunerError> {
        let test = run.test.clone();
        let failed = |reason: String| {
            TunerError::on_test(&test, reason, |reason| TunerError::Reference {
                test: test.clone(),
                reason,
            })
        };
        let w = self.live(queue)?;
        match w
            .client
            .request(&Request::Reference { run }, &[], Duration::from_secs(300))
        {
            Ok((Reply::Ran(o), _)) => match &o.status {
                RunStatus::Ok if !o.guard_breaches.is_empty() => {
                    Err(failed(wrote_outside(&o.guard_breaches)))
                }
                RunStatus::Ok if !o.unchanged_outputs.is_empty() => {
                    Err(failed(does_no_work(&o.unchanged_outputs)))
                }
                // its timed launches are the default launch's time (the baseline of every speed-up)
                RunStatus::Ok
                    if o.timed_check
                        .as_ref()
                        .is_some_and(|c| !c.problems().is_empty()) =>
                {
                    let problems = o.timed_check.iter().flat_map(|c| c.problems());
                    Err(failed(format!(
                        "its timed launches are not the work its first launch did: {}",
                        problems.collect::<Vec<_>>().join("; ")
                    )))
                }
                RunStatus::Ok => Ok(o),
                RunStatus::Invalid(m) => Err(failed(m.clone())),
                RunStatus::Crashed(m) => Err(TunerError::ReferenceFault {
                    test: test.clone(),
                    reason: m.clone(),
                }),
            },
            Ok((other, _)) => Err(failed(format!("{other:?}"))),
            Err(f) => Err(failed(f.to_string())),
        }
    }

    /// Profiles one launch of a loaded module (`Request::Counters`). A fault in the kernel ends the worker
    /// (the next request starts a fresh one).
    pub fn counters(
        &mut self,
        run: RunRequest,
        metrics: Vec<String>,
        cupti: std::path::PathBuf,
        queue: &mut CompileQueue,
    ) -> Result<CounterReport, TunerError> {
        let w = self.live(queue)?;
        let request = Request::Counters {
            run,
            metrics,
            cupti,
        };
        match w.client.request(&request, &[], Duration::from_secs(300)) {
            Ok((Reply::Counted(report), _)) => Ok(report),
            Ok((Reply::Error { message, fatal }, _)) => {
                if fatal {
                    if let Some(w) = self.worker.as_mut() {
                        w.client.kill();
                    }
                    self.worker = None;
                }
                Err(TunerError::Counters(message))
            }
            Ok((other, _)) => Err(TunerError::Worker(format!("unexpected reply {other:?}"))),
            Err(f) => {
                self.worker = None;
                Err(TunerError::Worker(f.to_string()))
            }
        }
    }

    /// Asks the worker to start CUPTI and prepare `metrics` in the background (`Request::PrepareCounters`).
    pub fn prepare_counters(
        &mut self,
        metrics: Vec<String>,
        cupti: std::path::PathBuf,
        queue: &mut CompileQueue,
    ) -> Result<(), TunerError> {
        let w = self.live(queue)?;
        let request = Request::PrepareCounters { metrics, cupti };
        match w.client.request(&request, &[], Duration::from_secs(30)) {
            Ok((Reply::Done { .. }, _)) => Ok(()),
            Ok((other, _)) => Err(TunerError::Worker(format!("unexpected reply {other:?}"))),
            Err(f) => {
                self.worker = None;
                Err(TunerError::Worker(f.to_string()))
            }
        }
    }

    /// Brings a fresh worker to the state the old one had: tests uploaded, expected values recomputed.
    fn restore(&mut self, queue: &mut CompileQueue) -> Result<(), TunerError> {
        let uploaded = std::mem::take(&mut self.uploaded);
        for (t, reference) in &uploaded {
            self.upload(t, queue)?;
            if let Some(run) = reference {
                self.load_required(&run.module, &t.id, queue)?;
                let run = RunRequest {
                    timing: None,
                    ..run.clone()
                };
                self.reference(run, queue)?;
            }
        }
        self.uploaded = uploaded;
        Ok(())
    }

    /// Runs one request of a configuration on the worker; a hang or death restarts the worker (restoring
    /// its tests) and is returned as the configuration's verdict.
    pub fn run(
        &mut self,
        key: &str,
        req: Request,
        timeout: Duration,
        queue: &mut CompileQueue,
    ) -> Result<Result<RunOutcome, Verdict>, TunerError> {
        let already_loaded = self.live(queue)?.loaded.contains(key);
        if !already_loaded && let Err(m) = self.load(key, queue)? {
            let symbol = queue
                .module(key)
                .map(|e| e.kernel.clone())
                .unwrap_or_default();
            return Ok(Err(Verdict::from_load_failure(m, &symbol)));
        }
        let w = self.live(queue)?;
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

    /// Measures the FP32 rate kt's own FMA kernel reaches, in GFLOP/s (kt's utility kernels must be loaded:
    /// after `prepare`).
    pub fn fp32_rate(&mut self, queue: &mut CompileQueue) -> Result<f64, TunerError> {
        let w = self.live(queue)?;
        match w
            .client
            .request(&Request::MeasureFp32, &[], Duration::from_secs(60))
            .map_err(worker_failure)?
        {
            (Reply::Fp32 { gflops }, _) => Ok(gflops),
            (other, _) => Err(TunerError::Worker(format!("FP32 rate: {other:?}"))),
        }
    }

    /// Measures the device's copy bandwidth over `bytes`, in GB/s (bytes read plus written).
    pub fn copy_bandwidth(
        &mut self,
        bytes: u64,
        queue: &mut CompileQueue,
    ) -> Result<f64, TunerError> {
        let w = self.live(queue)?;
        match w
            .client
            .request(
                &Request::MeasureBandwidth { bytes },
                &[],
                Duration::from_secs(60),
            )
            .map_err(worker_failure)?
        {
            (Reply::Bandwidth { gbps }, _) => Ok(gbps),
            (other, _) => Err(TunerError::Worker(format!("bandwidth: {other:?}"))),
        }
    }

    /// Asks the worker to leave (at the end of the session).
    pub fn shutdown(&mut self) {
        self.shutdown_within(Duration::ZERO);
    }

    /// As `shutdown`, giving the worker up to `grace` to exit by itself.
    pub fn shutdown_within(&mut self, grace: Duration) {
        if let Some(w) = self.worker.take() {
            w.client.shutdown_within(grace);
        }
    }
}

/// Why a reference that left `outputs` as it found them (yet writes them when they start as poison) cannot
/// give expected values: on this test it does no work, so every launch of it would verify and be timed
/// doing nothing.
pub(crate) fn does_no_work(outputs: &[String]) -> String {
    let names: Vec<String> = outputs.iter().map(|n| format!("`{n}`")).collect();
    format!(
        "it left {} exactly as it found {} (every element at its initial value), but writes a number to \
         every element when {} starts as NaN: it computes only where the output does not already hold a \
         value, so on this test it does no work and its launches would be verified and timed doing \
         nothing. A kernel must not read an output it computes; if it is really an input-output array, \
         give it initial contents the kernel changes",
        names.join(", "),
        if outputs.len() == 1 { "it" } else { "them" },
        if outputs.len() == 1 { "it" } else { "each" },
    )
}

/// Why a reference that wrote into the guard bytes around its arrays cannot give expected values.
pub(crate) fn wrote_outside(breaches: &[crate::check::guard::GuardBreach]) -> String {
    let what: Vec<String> = breaches.iter().map(|b| b.describe()).collect();
    format!(
        "it wrote outside its arrays ({}): its outputs on this test are no expected values",
        what.join("; ")
    )
}

/// Whether `uploaded` is `wanted` on the worker: the same id and inputs (tolerances may differ).
fn same_test(uploaded: &KernelTest, wanted: &KernelTest) -> bool {
    uploaded.id == wanted.id
        && uploaded.args == wanted.args
        && uploaded.constants == wanted.constants
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_uploaded_with_raised_tolerances_is_the_same_test() {
        let plain = KernelTest {
            id: "bench".into(),
            args: vec![],
            tolerances: Default::default(),
            constants: Vec::new(),
        };
        let raised =
            crate::check::sum_floor::with_sum_lengths(std::slice::from_ref(&plain), Some("8192"));
        assert!(same_test(&raised[0], &plain));
        let other = KernelTest {
            id: "gen2".into(),
            ..plain.clone()
        };
        assert!(!same_test(&other, &plain));
    }

    #[test]
    fn a_reference_that_writes_outside_its_arrays_says_where() {
        use crate::check::guard::{GuardBreach, Side};
        let r = wrote_outside(&[GuardBreach {
            array: "y".into(),
            side: Side::After,
            span: 4,
            distance: 0,
        }]);
        assert!(
            r.starts_with("it wrote outside its arrays (wrote 4 bytes past the end of `y`)"),
            "{r}"
        );
    }

    #[test]
    fn a_reference_that_does_no_work_is_named_with_what_to_do() {
        let r = does_no_work(&["c".to_string()]);
        assert!(
            r.starts_with("it left `c` exactly as it found it")
                && r.contains("does no work")
                && r.contains("must not read an output it computes"),
            "{r}"
        );
        let e = crate::error::TunerError::Reference {
            test: "gen1".into(),
            reason: r,
        };
        assert!(
            e.to_string()
                .starts_with("the reference launch failed on test gen1: it left `c`")
        );
    }
}
