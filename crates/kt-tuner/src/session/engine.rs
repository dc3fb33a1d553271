//! What every operation of a session works with: the tuner's setup, the compile queue and the link to the
//! worker, plus the device limit the search space needs. The operations (tuning, verification, reference
//! runs, peak measurement) are functions over an `Engine`, each in its own file.

use std::time::Duration;

use crate::error::TunerError;
use crate::model::args::KernelTest;
use crate::model::outcome::Verdict;
use crate::model::space::Config;
use crate::model::tunable_kernel::TunableKernel;
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

    /// The module a check of `kernel` at `config` on `tests` runs (compiled for the first test's scalars),
    /// or the verdict that ends the check before it runs: `Ok` when there are no tests, else the compile
    /// failure. Reruns and back-to-back runs of a delivered configuration start here.
    pub fn module_for_check(
        &mut self,
        kernel: &TunableKernel,
        config: &Config,
        tests: &[KernelTest],
        grid_defines: bool,
    ) -> Result<Result<String, Verdict>, TunerError> {
        let Some(first) = tests.first() else {
            return Ok(Err(Verdict::Ok));
        };
        self.queue
            .compiled(kernel, config, &first.scalars(), grid_defines)
    }
}
