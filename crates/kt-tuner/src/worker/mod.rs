//! The GPU worker: a separate process that owns the CUDA context and performs every launch of untrusted
//! kernel code. A hung kernel is killed by the parent's watchdog, a faulting kernel takes down only the
//! worker; either way the parent starts a fresh worker and the tuning run continues.

pub mod client;
mod fake;
mod gpu;
pub mod gpu_turns;
pub mod process;
pub mod protocol;

pub use gpu::{CuptiError, GpuError, find_cupti};

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::os::fd::FromRawFd;

use crate::error::TunerError;
use process::{PROTOCOL_ENV, PROTOCOL_FD};
use protocol::{Reply, Request, read_frame, write_frame};

/// Selects a fake device for CPU tests of the protocol: `ok`, `hang`, `die` or `garbage` (what happens on
/// a `Run` request), or a reward hack the real worker catches (`out-of-bounds`, `unwatched`,
/// `skips-written`, `nondeterministic`; see `fake.rs`).
pub const FAKE_ENV: &str = "KT_TUNER_FAKE_WORKER";

/// The fake device's mode when this process's environment asks for one (kt's end-to-end tests run the
/// `kt` binary on it, on machines without a GPU).
pub fn fake_mode_in_env() -> Option<String> {
    std::env::var(FAKE_ENV).ok().filter(|m| !m.is_empty())
}

/// Entry point of the worker process (`kt __tuner-worker`). Reads requests from stdin and replies on the
/// protocol fd until `Shutdown` or end of input.
pub fn serve() -> Result<(), TunerError> {
    if std::env::var(PROTOCOL_ENV).ok().as_deref() != Some(&PROTOCOL_FD.to_string()) {
        return Err(TunerError::Worker("the worker is started by kt itself (it needs the protocol pipe on fd 3); do not run it by hand".into()));
    }
    // SAFETY: the parent set up fd 3 as the write end of the reply pipe before exec; it is owned here once.
    let out = unsafe { File::from_raw_fd(PROTOCOL_FD) };
    let mut out = BufWriter::new(out);
    let mut input = BufReader::new(std::io::stdin().lock());
    let fake = std::env::var(FAKE_ENV).ok();
    let mut handler: Box<dyn FnMut(Request, Vec<u8>) -> (Reply, bool)> = match fake {
        Some(mode) => Box::new(fake::Fake::new(mode).handler()),
        None => Box::new(gpu::GpuWorker::handler()),
    };
    loop {
        let (req, payload): (Request, Vec<u8>) = match read_frame(&mut input) {
            Ok(f) => f,
            Err(_) => return Ok(()),
        };
        if req == Request::Shutdown {
            let _ = write_frame(&mut out, &Reply::Done { ms: 0.0 }, &[]);
            return Ok(());
        }
        let (reply, exit_after) = handler(req, payload);
        if write_frame(&mut out, &reply, &[]).is_err() {
            return Ok(());
        }
        if exit_after {
            // A faulted context cannot be used again: leave, the parent starts a fresh worker.
            std::process::exit(70);
        }
    }
}

#[cfg(test)]
mod tests;
