//! What every operation of a session works with: the tuner's setup, the compile queue and the link to the
//! worker, plus the device limit the search space needs. The operations (tuning, verification, reference
//! runs, peak measurement) are functions over an `Engine`, each in its own file.

use std::time::Duration;

use crate::session::compile_queue::CompileQueue;
use crate::session::setup::TunerConfig;
use crate::session::worker_link::WorkerLink;

pub(crate) struct Engine {
    pub config: TunerConfig,
    pub queue: CompileQueue,
    pub link: WorkerLink,
    /// The device's thread limit per block (configurations above it are left out of the space).
    pub max_threads: u64,
}

impl Engine {
    /// The watchdog for one run of a configuration whose reference launch takes `ref_ms` and whose
    /// sampling may take `budget_ms`: max(floor, factor × reference time + budget).
    pub fn run_timeout(&self, ref_ms: f64, budget_ms: f64) -> Duration {
        self.config.timeout_floor.max(Duration::from_secs_f64(
            (self.config.timeout_factor * ref_ms + budget_ms) / 1e3,
        ))
    }
}
