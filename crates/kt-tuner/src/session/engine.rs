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

    /// Checks `target` test by test in one module (compiled for the first test's scalars): `each` gets the
    /// engine, the module's key and a test's index, and returns the verdict that ends the check or `None` to
    /// go on. `Verdict::Ok` when every test passes or there are none; a compile failure is the verdict.
    /// Reruns and back-to-back runs of a delivered configuration are such checks.
    pub fn check_tests(
        &mut self,
        target: &CheckTarget,
        mut each: impl FnMut(&mut Engine, &str, usize) -> Result<Option<Verdict>, TunerError>,
    ) -> Result<Verdict, TunerError> {
        let Some(first) = target.tests.first() else {
            return Ok(Verdict::Ok);
        };
        let key = match self.queue.compiled(
            target.kernel,
            target.config,
            &first.scalars(),
            target.grid_defines,
        )? {
            Ok(key) => key,
            Err(failed) => return Ok(failed),
        };
        for i in 0..target.tests.len() {
            if let Some(verdict) = each(self, &key, i)? {
                return Ok(verdict);
            }
        }
        Ok(Verdict::Ok)
    }
}

/// A kernel at one configuration, checked on a set of tests in one module.
pub(crate) struct CheckTarget<'a> {
    pub kernel: &'a TunableKernel,
    pub config: &'a Config,
    pub tests: &'a [KernelTest],
    /// `grid_size_*` as defines (every test has the same launch).
    pub grid_defines: bool,
}
