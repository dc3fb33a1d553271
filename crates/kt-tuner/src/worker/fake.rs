//! A stand-in device for testing the protocol, the watchdog and restarts on machines without a GPU. It
//! answers like the real worker, except that launches (`Run`, `Reference`, `RecordOutputs`) do what the mode
//! says: `ok` replies with fixed timings (and `RecordOutputs` writes float32 files holding 0, 1, 2, …, with
//! the last element reported never written), `hang` never replies, `die` exits, `garbage` writes bytes that
//! are no frame. Two modes play reward hacks the real worker catches: `out-of-bounds` (every verifying run
//! wrote 4 bytes past the end of its first array) and `unwatched` (right outputs on the verifying launch,
//! poison left by the checked last timed launch, the unchecked samples ten times faster). `skips-written`
//! plays a kernel that computes only where its output does not already hold a number: its reference run
//! left the output as it found it, and its timed samples run through the worker's own sampling sequence
//! on a simulated kernel that is ten times faster when it finds its output written. `lazy-late` plays a
//! launch counter that waits past the timed samples: its last timed launch is right, and the late check
//! after many launches (`crate::check::late_check`), when the policy asks for one, finds its output unwritten.
//! `no-room:ID` refuses to upload test ID as a full GPU does (CUDA_ERROR_OUT_OF_MEMORY).
//! As the real worker, it refuses a launch on a test that was never uploaded, refuses an upload whose
//! `__constant__` contents come from a file it cannot open, and it races: a `Run` is sampled
//! by the request's timing policy against its best so far.

use std::io::Write;

use crate::check::guard::{GuardBreach, Side};
use crate::check::measure::TimingStats;
use crate::worker::protocol::{
    DeviceInfo, FunctionInfo, LaunchArg, OutputFile, RecordedOutput, Reply, Request, RunOutcome,
    RunRequest, RunStatus, TimedCheck,
};
use kt_record::DType;

pub struct Fake {
    mode: String,
}

impl Fake {
    pub fn new(mode: String) -> Self {
        Fake { mode }
    }

    /// `no-room:ID`: the device has no room for test ID's arrays, as a GPU another process fills.
    fn no_room_for(&self, test: &crate::model::args::KernelTest) -> Option<String> {
        let id = self.mode.strip_prefix("no-room:")?;
        let a = test.arrays().next()?;
        (test.id == id).then(|| {
            format!(
                "allocating {} ({} bytes): CUDA_ERROR_OUT_OF_MEMORY",
                a.name,
                a.bytes()
            )
        })
    }

    pub fn handler(self) -> impl FnMut(Request, Vec<u8>) -> (Reply, bool) {
        // as the real worker, a launch on a test that was never uploaded is refused
        let mut uploaded = std::collections::HashSet::new();
        move |req, _payload| match req {
            Request::Upload { test } => {
                match unreadable_constant(&test).or_else(|| self.no_room_for(&test)) {
                    // as the real worker, which reads a constant's file at upload
                    Some(message) => (
                        Reply::Error {
                            message,
                            fatal: false,
                        },
                        false,
                    ),
                    None => {
                        uploaded.insert(test.id);
                        (Reply::Done { ms: 0.0 }, false)
                    }
                }
            }
            Request::Run { run }
            | Request::Reference { run }
            | Request::RecordOutputs { run, .. }
            | Request::Repeat { run, .. }
                if !uploaded.contains(&run.test) =>
            {
                let reason = format!("test {} not uploaded", run.test);
                (
                    Reply::Ran(RunOutcome::empty(RunStatus::Invalid(reason))),
                    false,
                )
            }
            Request::Hello { ordinal } => (
                Reply::Hello(DeviceInfo {
                    ordinal,
                    name: "fake".into(),
                    uuid: "GPU-fake".into(),
                    pci_bus_id: String::new(),
                    compute_capability: (9, 0),
                    sm_count: 1,
                    max_threads_per_block: 1024,
                    max_threads_per_sm: 2048,
                    max_shared_per_block: 48 << 10,
                    max_shared_per_block_optin: 227 << 10,
                    registers_per_block: 65536,
                    l2_bytes: 1 << 20,
                    total_memory: 1 << 30,
                    driver_version: 13000,
                    clock_khz: 0,
                    context_ms: 0.0,
                }),
                false,
            ),
            Request::Load { .. } => (
                Reply::Loaded(FunctionInfo {
                    registers: 8,
                    local_bytes: 0,
                    static_shared_bytes: 0,
                    max_threads_per_block: 1024,
                }),
                false,
            ),
            Request::Run { run } => {
                self.hack(&run, raced(&run, self.launch(run.dims.block[0], &[])))
            }
            Request::Reference { run } => self.reference(&run),
            Request::RecordOutputs { run, files, .. } => self.launch(run.dims.block[0], &files),
            Request::Repeat { run, runs } if self.mode == "nondeterministic" => {
                (Reply::Ran(differing_reruns(&run.test, runs)), false)
            }
            Request::Repeat { run, .. } => self.launch(run.dims.block[0], &[]),
            Request::MeasureBandwidth { .. } => (Reply::Bandwidth { gbps: 1000.0 }, false),
            Request::MeasureFp32 => (Reply::Fp32 { gflops: 50_000.0 }, false),
            Request::Counters { .. } => (
                Reply::Error {
                    message: "the fake device has no performance counters".into(),
                    fatal: false,
                },
                false,
            ),
            _ => (Reply::Done { ms: 0.0 }, false),
        }
    }

    /// What the reward-hack modes add to a verifying run's reply.
    fn hack(&self, run: &RunRequest, (reply, exits): (Reply, bool)) -> (Reply, bool) {
        let Reply::Ran(mut o) = reply else {
            return (reply, exits);
        };
        let first_array = first_array(run);
        match self.mode.as_str() {
            "out-of-bounds" if run.verify => o.guard_breaches.push(GuardBreach {
                array: first_array.unwrap_or_default(),
                side: Side::After,
                span: 4,
                distance: 0,
            }),
            "unwatched" if run.verify && run.timing.is_some() => {
                let name = first_array.unwrap_or_default();
                o.timed_check = Some(TimedCheck {
                    outputs: vec![crate::check::verify::compare_host(
                        &name,
                        DType::Float32,
                        crate::check::verify::Tolerance::default(),
                        &[f64::NAN],
                        &[true],
                        &[1.0],
                    )],
                    inputs_modified: vec![],
                    guard_breaches: vec![],
                    checked_ms: 1.0,
                    unchecked_median_ms: 0.1,
                    late: None,
                    wrong_timed_launch: None,
                });
            }
            "lazy-late" if run.verify && run.timing.is_some() => {
                o.timed_check = Some(lazy_after_many(run));
            }
            "skips-written" if run.verify => {
                if let Some(policy) = &run.timing {
                    o.timing = Some(timed_skipping_kernel(policy));
                }
            }
            _ => {}
        }
        (Reply::Ran(o), exits)
    }

    /// A reference run; in `skips-written` mode its first array was left as it was found.
    fn reference(&self, run: &RunRequest) -> (Reply, bool) {
        let (reply, exits) = self.launch(run.dims.block[0], &[]);
        match reply {
            Reply::Ran(mut o) if self.mode == "skips-written" => {
                o.unchanged_outputs.extend(first_array(run));
                (Reply::Ran(o), exits)
            }
            other => (other, exits),
        }
    }

    fn launch(&self, block_x: u32, files: &[OutputFile]) -> (Reply, bool) {
        match self.mode.as_str() {
            "hang" => loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            },
            "die" => std::process::exit(3),
            "garbage" => {
                // SAFETY-free: write straight to the protocol fd, bypassing framing.
                let mut f = std::mem::ManuallyDrop::new(unsafe_protocol_file());
                let _ = f.write_all(b"\xff\xff\xff\xffnot a frame at all, just noise........");
                let _ = f.flush();
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                }
            }
            _ => {
                let t = (block_x as f64 - 64.0).abs() / 64.0 + 1.0;
                let mut recorded = Vec::new();
                for f in files {
                    let n = f.shape.iter().product::<u64>();
                    let mut bytes = kt_record::tests_format::npy::header(DType::Float32, &f.shape);
                    bytes.extend((0..n).flat_map(|i| (i as f32).to_le_bytes()));
                    if let Err(e) = std::fs::write(&f.path, bytes) {
                        return (
                            Reply::Ran(RunOutcome::empty(RunStatus::Invalid(format!(
                                "writing {}: {e}",
                                f.path.display()
                            )))),
                            false,
                        );
                    }
                    recorded.push(RecordedOutput {
                        name: f.name.clone(),
                        path: f.path.clone(),
                        dtype: DType::Float32,
                        shape: f.shape.clone(),
                        never_written: 1,
                        depends_on_initial: 1,
                    });
                }
                let mut o = RunOutcome::empty(RunStatus::Ok);
                o.timing = TimingStats::from_samples(&[t, t, t]);
                o.occupancy = Some(1.0);
                o.recorded = recorded;
                (Reply::Ran(o), false)
            }
        }
    }
}

/// The first `__constant__` contents of `test` whose file cannot be opened, as the worker's error says it.
fn unreadable_constant(test: &crate::model::args::KernelTest) -> Option<String> {
    test.constants.iter().find_map(|c| match &c.source {
        crate::model::args::ArraySource::Npy { path, .. } => std::fs::File::open(path)
            .err()
            .map(|e| format!("constant `{}`: {}: {e}", c.name, path.display())),
        crate::model::args::ArraySource::Generate { .. } => None,
    })
}

/// A run's samples as the GPU worker takes them: its timing policy against the best so far (racing), every
/// launch of the simulated kernel taking the launch's fixed time.
fn raced(run: &RunRequest, (reply, exits): (Reply, bool)) -> (Reply, bool) {
    use crate::check::sampling::{FirstSample, take_samples};
    let (Reply::Ran(mut o), Some(policy)) = (reply.clone(), run.timing.as_ref()) else {
        return (reply, exits);
    };
    let Some(ms) = o.timing.as_ref().map(|t| t.median_ms) else {
        return (reply, exits);
    };
    let first = run.verify.then_some(FirstSample(ms));
    let Ok((stats, _)) = take_samples::<()>(policy, run.best, first, None, &mut |_| Ok(ms)) else {
        return (reply, exits);
    };
    o.timing = Some(stats);
    (Reply::Ran(o), exits)
}

fn first_array(run: &RunRequest) -> Option<String> {
    run.args.iter().find_map(|a| match a {
        LaunchArg::Array(name) => Some(name.clone()),
        LaunchArg::Scalar(_) => None,
    })
}

/// The checks of a kernel right for its first hundred launches after loading, then idle: its last timed
/// sample is right; the late check (when the policy asks for one) finds its output never written.
fn lazy_after_many(run: &RunRequest) -> TimedCheck {
    let name = first_array(run).unwrap_or_default();
    let report = |got: f64, poison: bool| {
        crate::check::verify::compare_host(
            &name,
            DType::Float32,
            crate::check::verify::Tolerance::default(),
            &[got],
            &[poison],
            &[1.0],
        )
    };
    let cap = run.timing.map_or(0, |p| p.late_check_launches);
    TimedCheck {
        outputs: vec![report(1.0, false)],
        inputs_modified: vec![],
        guard_breaches: vec![],
        checked_ms: 1.0,
        unchecked_median_ms: 1.0,
        late: (cap > 0).then(|| {
            Box::new(crate::check::late_check::LateCheck {
                launches_before: crate::check::late_check::launches_before(cap, 1.0),
                outputs: vec![report(f64::NAN, true)],
                inputs_modified: vec![],
                guard_breaches: vec![],
            })
        }),
        wrong_timed_launch: None,
    }
}

/// The timed samples of a verifying run of a kernel that skips its work where its output holds a number
/// (1 ms when it computes, 0.1 ms when it finds its output written), sampled as the GPU worker samples:
/// the verifying launch (on a poisoned output) counts as the first, every later sample is prepared.
fn timed_skipping_kernel(policy: &crate::check::measure::TimingPolicy) -> TimingStats {
    use crate::check::sampling::{FirstSample, SkipsWrittenOutput, take_samples};
    use std::convert::Infallible;
    let kernel = std::cell::RefCell::new(SkipsWrittenOutput {
        full_ms: 1.0,
        idle_ms: 0.1,
        written: true,
    });
    let mut poison = || -> Result<(), Infallible> {
        kernel.borrow_mut().poison();
        Ok(())
    };
    let Ok((stats, _)) = take_samples(
        policy,
        None,
        Some(FirstSample(1.0)),
        Some(&mut poison as &mut dyn FnMut() -> Result<(), Infallible>),
        &mut |_| Ok(kernel.borrow_mut().launch()),
    );
    stats
}

/// Reruns whose second run differs from the first at index 7 (a race, as a GPU would show it).
fn differing_reruns(test: &str, runs: u32) -> RunOutcome {
    let mut o = RunOutcome::empty(RunStatus::Ok);
    o.outputs.push(crate::check::verify::compare_host(
        &format!("out (run {} against run 1) of test {test}", runs.max(2)),
        DType::Float32,
        crate::check::verify::Tolerance::default(),
        &(0..8)
            .map(|i| if i == 7 { 2.0 } else { 1.0 })
            .collect::<Vec<f64>>(),
        &[false; 8],
        &[1.0; 8],
    ));
    o
}

fn unsafe_protocol_file() -> std::fs::File {
    use std::os::fd::FromRawFd;
    // SAFETY: fd 3 is the protocol pipe; wrapped in ManuallyDrop by the caller so it is never closed twice.
    unsafe { std::fs::File::from_raw_fd(crate::worker::process::PROTOCOL_FD) }
}
