//! A stand-in device for testing the protocol, the watchdog and restarts on machines without a GPU. It
//! answers like the real worker, except that `Run` does what the mode says: `ok` replies with fixed
//! timings, `hang` never replies, `die` exits, `garbage` writes bytes that are no frame.

use std::io::Write;

use crate::measure::TimingStats;
use crate::worker::protocol::{DeviceInfo, FunctionInfo, Reply, Request, RunOutcome, RunStatus};

pub struct Fake {
    mode: String,
}

impl Fake {
    pub fn new(mode: String) -> Self {
        Fake { mode }
    }

    pub fn handler(self) -> impl FnMut(Request, Vec<u8>) -> (Reply, bool) {
        move |req, _payload| match req {
            Request::Hello { ordinal } => (
                Reply::Hello(DeviceInfo {
                    ordinal,
                    name: "fake".into(),
                    uuid: "GPU-fake".into(),
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
            Request::Run { run } | Request::Reference { run } => match self.mode.as_str() {
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
                    let t = (run.dims.block[0] as f64 - 64.0).abs() / 64.0 + 1.0;
                    (
                        Reply::Ran(RunOutcome {
                            status: RunStatus::Ok,
                            outputs: vec![],
                            inputs_modified: vec![],
                            timing: TimingStats::from_samples(&[t, t, t]),
                            occupancy: Some(1.0),
                            accumulating_outputs: vec![],
                        }),
                        false,
                    )
                }
            },
            Request::MeasureBandwidth { .. } => (Reply::Bandwidth { gbps: 1000.0 }, false),
            _ => (Reply::Done { ms: 0.0 }, false),
        }
    }
}

fn unsafe_protocol_file() -> std::fs::File {
    use std::os::fd::FromRawFd;
    // SAFETY: fd 3 is the protocol pipe; wrapped in ManuallyDrop by the caller so it is never closed twice.
    unsafe { std::fs::File::from_raw_fd(crate::worker::process::PROTOCOL_FD) }
}
