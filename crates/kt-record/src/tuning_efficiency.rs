//! How much of a tuning's wall time its decisions strictly needed on the GPU.
//!
//! Every configuration that verified needs at least one launch per test: the verifying launch, which is also
//! its first timed sample. A configuration that lost the race (its sampling stopped because its fastest sample
//! was beyond the bound, `aborted_early`) needed exactly that one launch per test: its fastest one is counted. A
//! contender — the best and everything that stayed within the race's bound — needed every sample it got, since
//! those samples are what ranks it against the best. So:
//!
//! - **needed GPU time** = Σ over the configurations measured in this tuning (not those read from a cache) and
//!   over their tests: the fastest sample of a configuration that lost the race, the sum of all samples of a
//!   contender;
//! - **spent GPU time** = Σ of every timed sample over the same configurations and tests;
//! - **tuning efficiency** = needed GPU time / the tuning's wall time (start-up, compilation, uploads,
//!   verification, the default launch's reference, the search and the best's checks included).
//!
//! An efficiency of 100 % would be a tuning that did nothing but the launches its ranking rests on. Failed
//! configurations (compile errors, wrong answers) have no timed sample and add nothing to either sum.

use serde::{Deserialize, Serialize};

use crate::lenient::or_default;

/// GPU time of one configuration's timed launches, summed over its tests (ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuTime {
    /// Every timed sample.
    #[serde(default, deserialize_with = "or_default")]
    pub spent_ms: f64,
    /// The samples its place in the ranking rests on (see the module's text).
    #[serde(default, deserialize_with = "or_default")]
    pub needed_ms: f64,
}

impl GpuTime {
    /// One test's samples: all of them needed for a contender, the fastest alone for one that lost the race.
    pub fn of_samples(samples_ms: &[f64], lost_the_race: bool) -> GpuTime {
        let spent_ms: f64 = samples_ms.iter().sum();
        let needed_ms = if lost_the_race {
            samples_ms
                .iter()
                .copied()
                .min_by(f64::total_cmp)
                .unwrap_or(0.0)
        } else {
            spent_ms
        };
        GpuTime {
            spent_ms,
            needed_ms,
        }
    }
}

impl std::ops::Add for GpuTime {
    type Output = GpuTime;

    fn add(self, other: GpuTime) -> GpuTime {
        GpuTime {
            spent_ms: self.spent_ms + other.spent_ms,
            needed_ms: self.needed_ms + other.needed_ms,
        }
    }
}

/// A tuning's GPU time beside its wall time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TuningEfficiency {
    #[serde(default, deserialize_with = "or_default")]
    pub wall_ms: f64,
    #[serde(default, deserialize_with = "or_default")]
    pub spent_gpu_ms: f64,
    #[serde(default, deserialize_with = "or_default")]
    pub needed_gpu_ms: f64,
    /// needed_gpu_ms / wall_ms (0 when no wall time was recorded).
    #[serde(default, deserialize_with = "or_default")]
    pub efficiency: f64,
}

impl TuningEfficiency {
    pub fn new(gpu: impl IntoIterator<Item = GpuTime>, wall_ms: f64) -> TuningEfficiency {
        let total = gpu.into_iter().fold(GpuTime::default(), |a, b| a + b);
        TuningEfficiency {
            wall_ms,
            spent_gpu_ms: total.spent_ms,
            needed_gpu_ms: total.needed_ms,
            efficiency: if wall_ms > 0.0 {
                total.needed_ms / wall_ms
            } else {
                0.0
            },
        }
    }

    /// `tuning efficiency 62.0 % (needed GPU time 1.24 s of 2.00 s wall; 1.50 s of GPU time spent)`.
    pub fn describe(&self) -> String {
        format!(
            "tuning efficiency {:.1} % (needed GPU time {:.2} s of {:.2} s wall; {:.2} s of GPU time spent)",
            self.efficiency * 100.0,
            self.needed_gpu_ms / 1e3,
            self.wall_ms / 1e3,
            self.spent_gpu_ms / 1e3
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contender_needs_every_sample_and_a_loser_its_fastest() {
        let c = GpuTime::of_samples(&[2.0, 2.1, 1.9], false);
        assert!((c.spent_ms - 6.0).abs() < 1e-12 && (c.needed_ms - 6.0).abs() < 1e-12);
        let l = GpuTime::of_samples(&[4.0, 3.5], true);
        assert_eq!((l.spent_ms, l.needed_ms), (7.5, 3.5));
        assert_eq!(GpuTime::of_samples(&[], true), GpuTime::default());
    }

    #[test]
    fn efficiency_is_needed_gpu_time_over_wall_time() {
        let gpu = [
            GpuTime::of_samples(&[2.0, 2.0, 2.0], false),
            GpuTime::of_samples(&[5.0, 4.0], true),
        ];
        let e = TuningEfficiency::new(gpu, 20.0);
        assert_eq!((e.spent_gpu_ms, e.needed_gpu_ms), (15.0, 10.0));
        assert!((e.efficiency - 0.5).abs() < 1e-12);
        assert!(
            e.describe().starts_with("tuning efficiency 50.0 %"),
            "{}",
            e.describe()
        );
        assert_eq!(TuningEfficiency::new([], 0.0).efficiency, 0.0);
    }

    #[test]
    fn records_without_the_fields_or_with_wrong_ones_still_read() {
        let g: GpuTime = serde_json::from_value(serde_json::json!({"spent_ms": "x"})).unwrap();
        assert_eq!(g, GpuTime::default());
        let e: TuningEfficiency =
            serde_json::from_value(serde_json::json!({"wall_ms": 3.0})).unwrap();
        assert_eq!((e.wall_ms, e.efficiency), (3.0, 0.0));
    }
}
