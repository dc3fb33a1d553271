//! What a caller hands the tuner besides the kernel (`TunableKernel`, in `tunable_kernel.rs`): how to tune it
//! (`TuneOptions`) and how the tuner itself is set up (`TunerConfig`: device, compiler threads, caches,
//! worker command, watchdog).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check::measure::TimingPolicy;
use crate::model::geometry::default_define;
use crate::model::param_value::ParamValue;
use crate::model::space::{Config, TunableParam};
use crate::search::{Limits, Strategy};
use crate::worker::process::WorkerCommand;

pub use crate::model::tunable_kernel::{TunableKernel, template_args_for};

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
    /// A Kernel Tuner cache file (`kt tune --kt-cache`): its results measured on a GPU of this name are
    /// reused, not run again (export::import decides which).
    #[serde(default)]
    pub kernel_tuner_cache: Option<PathBuf>,
    /// Configurations to measure before the strategy's own (`search::seeded`); each may name only some
    /// parameters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seeds: Vec<Config>,
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
            kernel_tuner_cache: None,
            seeds: Vec::new(),
        }
    }
}

impl TuneOptions {
    /// These options for tuning `kernel`: one that keeps state across launches is sampled and checked past
    /// a launch counter's first few (`TimingPolicy::for_stateful_kernel`), whichever command tunes it.
    pub fn for_kernel(&self, kernel: &TunableKernel) -> TuneOptions {
        let mut o = self.clone();
        if kernel.keeps_state() {
            o.timing = o.timing.for_stateful_kernel();
        }
        o
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
        TunerConfig {
            device: 0,
            compile_threads: compile_threads(std::env::var("KT_COMPILE_THREADS").ok().as_deref()),
            cache_dir: None,
            worker: None,
            timeout_floor: Duration::from_secs(2),
            timeout_factor: 50.0,
        }
    }
}

/// How many compiler threads a tuner runs: `KT_COMPILE_THREADS` when it is a positive number (a shared login
/// or batch node), else one per core the process may use but one, which the search and the worker's
/// launches keep (measured on a 16-core H100 host: 15 threads compiled the demo's 103 register-tiling
/// configurations faster than 16). A value that is not a number is ignored with a warning rather than
/// failing a tuning over a setting that only changes its speed.
pub fn compile_threads(setting: Option<&str>) -> usize {
    let cores = || {
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(4);
        if n >= 4 { n - 1 } else { n }
    };
    match setting.map(str::trim) {
        None | Some("") => cores(),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                tracing::warn!(
                    value = v,
                    "KT_COMPILE_THREADS is not a positive whole number; using one compiler thread per core"
                );
                cores()
            }
        },
    }
}

/// Kernel Tuner style reference configuration from a default block: `block_size_x/y/z` set to it and every
/// other tunable parameter at its first value.
pub fn config_from_block(params: &[TunableParam], block: [i64; 3]) -> Config {
    let mut values: Vec<(String, ParamValue)> = params
        .iter()
        .map(|p| (p.name.clone(), p.values[0].clone()))
        .collect();
    for (i, n) in ["block_size_x", "block_size_y", "block_size_z"]
        .iter()
        .enumerate()
    {
        match values.iter_mut().find(|(name, _)| name == n) {
            Some(v) => v.1 = block[i].into(),
            None => {
                if block[i] != default_define(n).unwrap_or(1) {
                    values.push((n.to_string(), block[i].into()));
                }
            }
        }
    }
    Config(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compile_threads_follow_a_positive_setting_and_else_the_cores() {
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(4);
        let cores = if n >= 4 { n - 1 } else { n };
        assert_eq!(compile_threads(Some("3")), 3);
        assert_eq!(compile_threads(Some(" 12 ")), 12);
        assert_eq!(compile_threads(None), cores);
        assert_eq!(compile_threads(Some("")), cores);
        assert_eq!(compile_threads(Some("0")), cores);
        assert_eq!(compile_threads(Some("many")), cores);
    }

    #[test]
    fn a_default_block_sets_the_block_sizes_and_leaves_the_rest_at_their_first_value() {
        let params = vec![
            TunableParam::new("block_size_x", [32, 64]),
            TunableParam::new("TILE", [8, 16]),
        ];
        let c = config_from_block(&params, [128, 2, 1]);
        assert_eq!(
            c,
            Config::ints([("block_size_x", 128), ("TILE", 8), ("block_size_y", 2)])
        );
    }
}
