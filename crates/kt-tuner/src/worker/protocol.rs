//! The parent–worker protocol: length-prefixed frames, each a JSON header plus an optional raw payload
//! (CUBIN bytes travel raw, never as JSON arrays). Frame = u32 header length, u64 payload length (both
//! little-endian), header, payload.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use crate::check::guard::GuardBreach;
use crate::check::measure::{Baseline, TimingPolicy, TimingStats};
use crate::check::verify::OutputReport;
use crate::model::args::KernelTest;
use crate::model::geometry::LaunchDims;
use kt_record::DType;

/// How a `LoadFailed` message starts when the module has no symbol for the kernel.
pub const KERNEL_NOT_FOUND: &str = "kernel not found";

/// Header sizes above this are garbage, not a message (a real header is a few KB at most).
const MAX_HEADER: u32 = 64 << 20;
const MAX_PAYLOAD: u64 = 1 << 32;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub uuid: String,
    /// `00000000:1B:00.0` (domain:bus:device.function, as nvidia-smi prints it): tells two GPUs of one
    /// machine apart. Empty from workers that predate it.
    #[serde(default)]
    pub pci_bus_id: String,
    pub compute_capability: (i32, i32),
    pub sm_count: i32,
    pub max_threads_per_block: i32,
    pub max_threads_per_sm: i32,
    pub max_shared_per_block: i32,
    pub max_shared_per_block_optin: i32,
    pub registers_per_block: i32,
    pub l2_bytes: i32,
    pub total_memory: usize,
    pub driver_version: i32,
    /// SM clock in kHz as the driver reports it (0 when the driver does not say).
    #[serde(default)]
    pub clock_khz: i32,
    /// Milliseconds the worker spent creating its context.
    pub context_ms: f64,
}

impl DeviceInfo {
    /// FP32 lanes per SM for the architectures kt knows (one FMA per lane per clock).
    fn fp32_lanes_per_sm(&self) -> Option<f64> {
        match self.compute_capability {
            (7, _) | (8, 0) => Some(64.0),
            (8, _) | (9, 0) | (10, _) | (12, _) => Some(128.0),
            _ => None,
        }
    }

    /// Theoretical FP32 rate in GFLOP/s: SMs × FP32 lanes × 2 (an FMA is two operations) × clock.
    /// The ceiling for compute-bound kernels such as matmul, where "% of copy bandwidth" says nothing.
    pub fn fp32_peak_gflops(&self) -> Option<f64> {
        let lanes = self.fp32_lanes_per_sm()?;
        (self.clock_khz > 0 && self.sm_count > 0)
            .then_some(self.sm_count as f64 * lanes * 2.0 * self.clock_khz as f64 * 1e-6)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LaunchArg {
    /// A device array of the current test, by name.
    Array(String),
    /// A by-value argument, already encoded.
    Scalar(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    pub module: String,
    pub test: String,
    pub args: Vec<LaunchArg>,
    pub dims: LaunchDims,
    /// Poison outputs, run once, compare every output with its expected values and inputs with their
    /// pristine copies. This run doubles as the untimed warm-up.
    pub verify: bool,
    pub timing: Option<TimingPolicy>,
    /// The best median so far and its noise: a configuration far slower stops sampling early.
    pub best: Option<Baseline>,
    /// Arrays this configuration uses only a prefix of (sized per configuration, allocated at the
    /// largest): name → elements. Poisoning, comparing, resetting and recording stop there.
    #[serde(default)]
    pub extents: Vec<(String, u64)>,
}

/// Where the worker writes one output of a recording run (`RecordOutputs`), as a .npy file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputFile {
    pub name: String,
    /// Absolute path; the parent directory must exist.
    pub path: std::path::PathBuf,
    /// The .npy shape (its product is the array's element count).
    pub shape: Vec<u64>,
}

/// One output the worker wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedOutput {
    pub name: String,
    pub path: std::path::PathBuf,
    pub dtype: DType,
    pub shape: Vec<u64>,
    /// Elements still holding the poison pattern after a run with the output poisoned beforehand: the
    /// kernel never writes them (their recorded value is the initial contents the test gave).
    pub never_written: u64,
    /// Elements whose value after the poisoned run differs from the recorded one: the kernel reads the
    /// output's initial contents (accumulates into it) or leaves them unwritten.
    pub depends_on_initial: u64,
}

fn probe_by_default() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Request {
    Hello {
        ordinal: usize,
    },
    /// kt's own kernels (fill, poison, compare); CUBIN in the payload.
    LoadUtilities,
    Upload {
        test: KernelTest,
    },
    /// A user module; CUBIN in the payload.
    Load {
        key: String,
        kernel: String,
        dynamic_shared: u32,
    },
    /// Runs the reference launch of a test: its outputs become the expected values (unless the test brings
    /// its own), and a second, poisoned run finds which outputs the kernel fully overwrites.
    Reference {
        run: RunRequest,
    },
    Run {
        run: RunRequest,
    },
    /// Runs a launch with every output reset to the test's initial contents, writes each output named in
    /// `files` as a .npy file, then (with `probe`) reruns with the outputs poisoned to find elements the
    /// kernel never writes, and times the launch if `run.timing` is set. The test's own expected values are
    /// untouched. Without `probe` the arrays recorded may be inputs too (Kernel Tuner's `run_kernel` returns
    /// every array): poisoning an input, an index array say, could make the rerun fault.
    RecordOutputs {
        run: RunRequest,
        files: Vec<OutputFile>,
        #[serde(default = "probe_by_default")]
        probe: bool,
    },
    /// The launch `runs` times on the same inputs, outputs freshly poisoned before odd runs and reset to
    /// their initial contents before even ones; every output of each later run is compared with the first
    /// run's (bitwise for integers, under the output's
    /// tolerance for floats). Mismatches mean the kernel is nondeterministic (a race, an unordered
    /// reduction past the tolerance).
    Repeat {
        run: RunRequest,
        runs: u32,
    },
    MeasureBandwidth {
        bytes: u64,
    },
    /// The FP32 rate kt's own FMA kernel reaches (needs kt's utility kernels loaded).
    MeasureFp32,
    /// Launches once (outputs from their initial contents) under CUPTI's range profiler, loaded from
    /// `cupti`, and reports `metrics` by Nsight Compute's names: counters from CUPTI, `launch__*` facts
    /// computed from the function and the launch.
    Counters {
        run: RunRequest,
        metrics: Vec<String>,
        cupti: std::path::PathBuf,
    },
    /// Starts CUPTI and prepares `metrics` on a helper thread of the worker, so that a later `Counters`
    /// request finds them ready; answered at once.
    PrepareCounters {
        metrics: Vec<String>,
        cupti: std::path::PathBuf,
    },
    /// Unloads a user module: the next `Load` of its key loads it afresh, its `__device__` and
    /// `__managed__` globals back at their initial values (so no state carries from one test to the next).
    Unload {
        key: String,
    },
    Shutdown,
}

impl Request {
    /// Whether the request runs kernels or copies on the GPU (and so waits for its turn on a GPU shared
    /// with other kt processes): loading modules, starting CUPTI and leaving do not.
    pub fn runs_on_gpu(&self) -> bool {
        match self {
            Request::Upload { .. }
            | Request::Reference { .. }
            | Request::Run { .. }
            | Request::RecordOutputs { .. }
            | Request::Repeat { .. }
            | Request::MeasureBandwidth { .. }
            | Request::MeasureFp32
            | Request::Counters { .. } => true,
            Request::Hello { .. }
            | Request::LoadUtilities
            | Request::Load { .. }
            | Request::PrepareCounters { .. }
            | Request::Unload { .. }
            | Request::Shutdown => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionInfo {
    pub registers: i32,
    pub local_bytes: i32,
    pub static_shared_bytes: i32,
    pub max_threads_per_block: i32,
}

/// The metrics of one profiled launch, by Nsight Compute's names, in the order asked for; `None` for one
/// this device or CUPTI does not provide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterReport {
    pub values: Vec<(String, Option<f64>)>,
    /// How many times CUPTI replayed the launch to collect the counters.
    pub passes: u32,
    /// Milliseconds the worker spent on the whole request (set-up, replays, evaluation).
    pub ms: f64,
    /// Where those went: (phase, milliseconds), for the debug log.
    #[serde(default)]
    pub phases_ms: Vec<(String, f64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RunStatus {
    Ok,
    /// The launch was refused (too many resources, invalid configuration): the config is invalid.
    Invalid(String),
    /// The kernel faulted; the context is gone and the worker exits after this reply.
    Crashed(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    pub status: RunStatus,
    pub outputs: Vec<OutputReport>,
    pub inputs_modified: Vec<String>,
    pub timing: Option<TimingStats>,
    /// Achieved occupancy bound: active warps per SM / maximum, from the occupancy calculator.
    pub occupancy: Option<f64>,
    /// Reference runs only: outputs that depend on their initial contents (reset, never poisoned).
    pub accumulating_outputs: Vec<String>,
    /// Reference runs only: outputs the launch left exactly at their initial contents although it writes a
    /// number to every element of them when they start as poison. The kernel computes only where an
    /// output does not already hold a value, so on this test it does no work at all.
    #[serde(default)]
    pub unchanged_outputs: Vec<String>,
    /// Reference runs only: outputs of which the launch wrote no element when they started as poison (on
    /// this test the kernel computes nothing into them: it returned early, or its loop bounds were empty).
    #[serde(default)]
    pub unwritten_outputs: Vec<String>,
    /// Recording runs only: the files written.
    #[serde(default)]
    pub recorded: Vec<RecordedOutput>,
    /// Verifying and reference runs: guard bytes around the test's arrays that the launch overwrote.
    #[serde(default)]
    pub guard_breaches: Vec<GuardBreach>,
    /// Verifying runs that were timed: the last timed launch, checked like the first.
    #[serde(default)]
    pub timed_check: Option<TimedCheck>,
}

/// The last timed launch of a verifying run: its outputs poisoned before it and compared after it like the
/// verifying launch's, its inputs and guards checked. A kernel that computes only while it is watched (the
/// first launches, or when its output does not already hold the answer) fails here or is far slower than
/// the samples it was not watched in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimedCheck {
    /// Every output's comparison after the checked launch.
    pub outputs: Vec<OutputReport>,
    pub inputs_modified: Vec<String>,
    pub guard_breaches: Vec<GuardBreach>,
    /// The fastest checked launch (ms): the last timed one, and up to two more when it was slow.
    pub checked_ms: f64,
    /// The median of the timed samples that were not checked (ms).
    pub unchecked_median_ms: f64,
    /// The check after many more launches, for a kernel with state across launches (its policy asked for
    /// one and the last timed launch was right).
    #[serde(default)]
    pub late: Option<Box<crate::check::late_check::LateCheck>>,
    /// For a kernel with state across launches every timed launch is checked: the first wrong one (its
    /// number among the timed launches, from 1), whose comparison `outputs` then holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrong_timed_launch: Option<usize>,
}

/// A checked launch this many times slower than the unchecked ones means those did not do its work.
pub const CHECKED_SLOWER_FACTOR: f64 = 3.0;

impl TimedCheck {
    /// Whether the checked launches were so much slower than the unchecked samples that those cannot have
    /// done the same work (a kernel that skips its work when unobserved).
    pub fn unchecked_samples_skipped_work(checked_ms: f64, unchecked_median_ms: f64) -> bool {
        unchecked_median_ms > 0.0 && checked_ms > CHECKED_SLOWER_FACTOR * unchecked_median_ms
    }

    /// What is wrong with the timed launches, one line each; empty when they are sound.
    pub fn problems(&self) -> Vec<String> {
        let launch = match self.wrong_timed_launch {
            Some(k) => format!(
                "timed launch {k} (a kernel with state across launches has every timed launch checked)"
            ),
            None => "the last timed launch".to_string(),
        };
        let mut p = crate::check::verify::launch_problems(
            &launch,
            &self.outputs,
            &self.inputs_modified,
            &self.guard_breaches,
        );
        if Self::unchecked_samples_skipped_work(self.checked_ms, self.unchecked_median_ms) {
            p.push(format!(
                "the checked launch took {:.4} ms but the unchecked timed samples {:.4} ms (median): \
                 they did not do the verified work",
                self.checked_ms, self.unchecked_median_ms
            ));
        }
        p.extend(self.late.iter().flat_map(|l| l.problems()));
        p
    }
}

impl RunOutcome {
    /// An outcome with only a status: nothing compared, timed or recorded (yet).
    pub fn empty(status: RunStatus) -> Self {
        RunOutcome {
            status,
            outputs: vec![],
            inputs_modified: vec![],
            timing: None,
            occupancy: None,
            accumulating_outputs: vec![],
            unchanged_outputs: vec![],
            unwritten_outputs: vec![],
            recorded: vec![],
            guard_breaches: vec![],
            timed_check: None,
        }
    }
}

// A reply lives for one frame, serialised and read once: boxing `Ran` would save nothing worth a heap trip.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Reply {
    Hello(DeviceInfo),
    Done {
        ms: f64,
    },
    Loaded(FunctionInfo),
    LoadFailed(String),
    Ran(RunOutcome),
    Bandwidth {
        gbps: f64,
    },
    Fp32 {
        gflops: f64,
    },
    Counted(CounterReport),
    /// A request the worker could not serve; `fatal` means it exits next.
    Error {
        message: String,
        fatal: bool,
    },
}

pub fn write_frame<T: Serialize>(
    w: &mut impl Write,
    header: &T,
    payload: &[u8],
) -> std::io::Result<()> {
    let h = serde_json::to_vec(header).map_err(std::io::Error::other)?;
    let mut buf = Vec::with_capacity(12 + h.len());
    buf.extend((h.len() as u32).to_le_bytes());
    buf.extend((payload.len() as u64).to_le_bytes());
    buf.extend(&h);
    w.write_all(&buf)?;
    w.write_all(payload)?;
    w.flush()
}

pub fn read_frame<T: for<'de> Deserialize<'de>>(
    r: &mut impl Read,
) -> std::io::Result<(T, Vec<u8>)> {
    let mut len = [0u8; 12];
    r.read_exact(&mut len)?;
    let hl = u32::from_le_bytes([len[0], len[1], len[2], len[3]]);
    let mut pl_bytes = [0u8; 8];
    pl_bytes.copy_from_slice(&len[4..]);
    let pl = u64::from_le_bytes(pl_bytes);
    if hl > MAX_HEADER || pl > MAX_PAYLOAD {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame sizes {hl}/{pl} are not a protocol frame"),
        ));
    }
    let mut h = vec![0u8; hl as usize];
    r.read_exact(&mut h)?;
    let mut p = vec![0u8; pl as usize];
    r.read_exact(&mut p)?;
    let header = serde_json::from_slice(&h)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    Ok((header, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp32_peak_of_an_h200_like_device_is_sms_times_lanes_times_two_times_clock() {
        let d = DeviceInfo {
            ordinal: 0,
            name: "H200".into(),
            uuid: String::new(),
            pci_bus_id: String::new(),
            compute_capability: (9, 0),
            sm_count: 132,
            max_threads_per_block: 1024,
            max_threads_per_sm: 2048,
            max_shared_per_block: 49152,
            max_shared_per_block_optin: 232448,
            registers_per_block: 65536,
            l2_bytes: 60 << 20,
            total_memory: 1 << 30,
            driver_version: 13000,
            clock_khz: 1_980_000,
            context_ms: 0.0,
        };
        let peak = d.fp32_peak_gflops().unwrap();
        assert!((peak - 132.0 * 128.0 * 2.0 * 1.98).abs() < 1e-6, "{peak}");
        let unknown_clock = DeviceInfo {
            clock_khz: 0,
            ..d.clone()
        };
        assert_eq!(unknown_clock.fp32_peak_gflops(), None);
        let unknown_arch = DeviceInfo {
            compute_capability: (5, 2),
            ..d
        };
        assert_eq!(unknown_arch.fp32_peak_gflops(), None);
    }

    #[test]
    fn frames_round_trip_with_raw_payload() {
        let mut buf = Vec::new();
        write_frame(
            &mut buf,
            &Request::Load {
                key: "k".into(),
                kernel: "f".into(),
                dynamic_shared: 0,
            },
            &[0, 1, 2, 255],
        )
        .unwrap();
        write_frame(&mut buf, &Request::Shutdown, &[]).unwrap();
        let mut r = &buf[..];
        let (a, p): (Request, _) = read_frame(&mut r).unwrap();
        assert_eq!(
            a,
            Request::Load {
                key: "k".into(),
                kernel: "f".into(),
                dynamic_shared: 0
            }
        );
        assert_eq!(p, vec![0, 1, 2, 255]);
        let (b, _): (Request, _) = read_frame(&mut r).unwrap();
        assert_eq!(b, Request::Shutdown);
    }

    #[test]
    fn garbage_is_an_error_not_a_huge_allocation() {
        let mut r: &[u8] = b"hello world, this is printf output";
        assert!(read_frame::<Reply>(&mut r).is_err());
    }
}
