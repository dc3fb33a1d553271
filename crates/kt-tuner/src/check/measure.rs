//! Timing policy and statistics. Samples come from CUDA event pairs around single launches (taken in the
//! worker); this module decides when enough samples were taken and summarises them. The objective is the
//! median: Kernel Tuner's mean is pulled up by slow first runs.
//!
//! Launches per configuration are the cost of tuning a slow kernel, so two rules keep them few without
//! making the figures less honest:
//! - The verifying run is timed and, once its outputs verified, counts as the first sample. First-launch
//!   costs cannot leak into it: the worker loads modules eagerly (`CUDA_MODULE_LOADING=EAGER`) and queries
//!   the function before the run, and when a second sample exists and the first is more than
//!   `warmup_outlier` above it, the first is discarded as a warm-up ([`TimingPolicy::first_is_warmup`]).
//! - Racing (`crate::check::racing`): a configuration stops as soon as even its *fastest* sample is slower
//!   than the best median so far by more than a margin that shrinks with the samples taken
//!   ([`TimingPolicy::race`]): one sample beyond max(`slower_margin`, `noise_sigmas` × the best's per-sample
//!   relative noise), n samples beyond that divided by n (resp. √n for the noise term). A configuration
//!   within the margin is a contender and is sampled to the target error, like the best.

use serde::{Deserialize, Serialize};

use crate::check::race_evidence::RaceEvidence;

/// Per-sample relative noise assumed for a best whose noise was not measured: large, so the early stop
/// stays conservative (a 40% margin with the default 8σ).
pub(crate) const UNKNOWN_NOISE: f64 = 0.05;

/// How long to keep sampling one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimingPolicy {
    pub min_reps: u32,
    pub max_reps: u32,
    /// Stop once the relative standard error of the median (1.4826 · MAD / median / √n) is below this.
    /// A robust measure: one outlier does not keep a configuration sampling until the cap, as
    /// (max - min) / median would (it can only grow with more samples).
    pub target_error: f64,
    /// Stop once the samples add up to this many milliseconds (after `min_reps`).
    pub max_total_ms: f64,
    /// Write a buffer larger than L2 between samples, so every sample starts with a cold cache.
    pub flush_l2: bool,
    /// Smallest relative margin above the best median at which a configuration stops early.
    #[serde(default = "default_slower_margin")]
    pub slower_margin: f64,
    /// The margin is at least this many times the best's per-sample relative noise.
    #[serde(default = "default_noise_sigmas")]
    pub noise_sigmas: f64,
    /// A verifying-run sample more than this fraction above the next sample is a warm-up and is dropped.
    #[serde(default = "default_warmup_outlier")]
    pub warmup_outlier: f64,
    /// A checked request of a kernel with state across launches: after its timed samples, up to this many
    /// more launches in the same module, then one more checked launch (`crate::check::late_check`); 0: none.
    #[serde(default)]
    pub late_check_launches: u32,
}

fn default_slower_margin() -> f64 {
    0.15
}

fn default_noise_sigmas() -> f64 {
    8.0
}

fn default_warmup_outlier() -> f64 {
    0.05
}

/// Samples per configuration, at least, of a kernel that keeps state across launches (it writes
/// `__device__`/`__managed__` variables): a kernel that counts its launches and stops working after the first
/// few would otherwise fit its good launches exactly into the verifying launch and `min_reps` samples, and the
/// checked last sample would be one of them.
pub const STATEFUL_MIN_REPS: u32 = 10;

impl TimingPolicy {
    /// This policy for a kernel with state across launches: at least [`STATEFUL_MIN_REPS`] samples, so that
    /// the checked last one comes after launches a launch counter could still treat as the first few.
    /// It is also checked once more after up to [`crate::check::late_check::LATE_LAUNCHES`] further launches, so a
    /// counter that lets more launches through than are sampled is caught too.
    pub fn for_stateful_kernel(mut self) -> Self {
        self.min_reps = self.min_reps.max(STATEFUL_MIN_REPS);
        self.max_reps = self.max_reps.max(self.min_reps);
        self.late_check_launches = self
            .late_check_launches
            .max(crate::check::late_check::LATE_LAUNCHES);
        self
    }

    /// Exactly `launches` timed launches, otherwise as every configuration is timed, so that an interval from
    /// them is about the same quantity (the end-of-run speedup interval, a profiled launch).
    pub fn exactly(launches: u32) -> Self {
        TimingPolicy {
            min_reps: launches,
            max_reps: launches,
            target_error: 0.0,
            max_total_ms: f64::MAX,
            ..TimingPolicy::default()
        }
    }
}

impl Default for TimingPolicy {
    fn default() -> Self {
        TimingPolicy {
            min_reps: 3,
            max_reps: 20,
            target_error: 0.01,
            max_total_ms: 500.0,
            flush_l2: false,
            slower_margin: default_slower_margin(),
            noise_sigmas: default_noise_sigmas(),
            warmup_outlier: default_warmup_outlier(),
            late_check_launches: 0,
        }
    }
}

/// The best median so far and its per-sample relative noise (1.4826 · MAD / median), the yardstick of the
/// early stop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub ms: f64,
    pub noise: Option<f64>,
}

impl TimingPolicy {
    /// Whether another sample is needed.
    pub fn wants_more(&self, samples: &[f64], best: Option<Baseline>) -> bool {
        let n = samples.len() as u32;
        if n == 0 {
            return true;
        }
        // racing (`crate::check::racing`): a configuration that lost stops, before or after `min_reps`
        if self.is_hopeless(samples, best) {
            return false;
        }
        if n < self.min_reps {
            return true;
        }
        if n >= self.max_reps || samples.iter().sum::<f64>() >= self.max_total_ms {
            return false;
        }
        TimingStats::from_samples(samples).is_some_and(|s| s.rel_error > self.target_error)
    }

    /// The relative margin above the best median beyond which a configuration cannot be the best.
    pub fn stop_margin(&self, best_noise: Option<f64>) -> f64 {
        let noise = best_noise
            .filter(|n| n.is_finite() && *n >= 0.0)
            .unwrap_or(UNKNOWN_NOISE);
        self.slower_margin.max(self.noise_sigmas * noise)
    }

    /// Whether even the fastest of these samples is slower than the best by more than the race's margin for
    /// this many samples ([`TimingPolicy::race`]).
    pub fn is_hopeless(&self, samples: &[f64], best: Option<Baseline>) -> bool {
        self.race(samples, best).is_some()
    }

    /// Whether the verifying run's sample `first` is a warm-up next to the following sample `second`.
    pub fn first_is_warmup(&self, first: f64, second: f64) -> bool {
        first > second * (1.0 + self.warmup_outlier)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingStats {
    pub median_ms: f64,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
    /// (max - min) / median.
    pub spread: f64,
    /// Relative standard error of the median: 1.4826 · MAD / median / √n.
    #[serde(default)]
    pub rel_error: f64,
    pub samples_ms: Vec<f64>,
    /// True when sampling stopped because the configuration lost the race against the best so far.
    pub aborted_early: bool,
    /// The evidence it lost on, when `aborted_early` (absent in results written before racing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race: Option<RaceEvidence>,
    /// True when the verifying run's sample was dropped as a warm-up.
    #[serde(default)]
    pub warmup_discarded: bool,
}

impl TimingStats {
    pub fn from_samples(samples: &[f64]) -> Option<TimingStats> {
        if samples.is_empty() {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            0.5 * (s[n / 2 - 1] + s[n / 2])
        };
        let mean = s.iter().sum::<f64>() / n as f64;
        let mut dev: Vec<f64> = s.iter().map(|v| (v - median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        let mad = if n % 2 == 1 {
            dev[n / 2]
        } else {
            0.5 * (dev[n / 2 - 1] + dev[n / 2])
        };
        Some(TimingStats {
            median_ms: median,
            min_ms: s[0],
            mean_ms: mean,
            max_ms: s[n - 1],
            spread: if median > 0.0 {
                (s[n - 1] - s[0]) / median
            } else {
                0.0
            },
            rel_error: if median > 0.0 {
                1.4826 * mad / median / (n as f64).sqrt()
            } else {
                0.0
            },
            samples_ms: samples.to_vec(),
            aborted_early: false,
            race: None,
            warmup_discarded: false,
        })
    }

    /// Per-sample relative noise: 1.4826 · MAD / median (the relative standard error times √n).
    pub fn sample_noise(&self) -> f64 {
        self.rel_error * (self.samples_ms.len() as f64).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_mean_and_spread() {
        let s = TimingStats::from_samples(&[3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!(s.median_ms, 2.5);
        assert_eq!(s.min_ms, 1.0);
        assert_eq!(s.mean_ms, 4.0);
        assert!((s.spread - 3.6).abs() < 1e-12);
    }

    #[test]
    fn a_stateful_kernel_is_sampled_past_a_few_launches() {
        let p = TimingPolicy::default().for_stateful_kernel();
        assert_eq!(p.min_reps, STATEFUL_MIN_REPS);
        assert!(p.max_reps >= p.min_reps);
        assert_eq!(
            p.late_check_launches,
            crate::check::late_check::LATE_LAUNCHES
        );
        assert_eq!(TimingPolicy::default().late_check_launches, 0);
        // agreeing samples no longer stop the sampling at the default's three
        let agreeing = vec![1.0; 3];
        assert!(p.wants_more(&agreeing, None));
        let many = TimingPolicy {
            min_reps: 50,
            max_reps: 60,
            ..TimingPolicy::default()
        }
        .for_stateful_kernel();
        assert_eq!(
            (many.min_reps, many.max_reps),
            (50, 60),
            "a larger setting stays"
        );
    }

    #[test]
    fn stops_at_min_reps_when_samples_agree() {
        let p = TimingPolicy::default();
        assert!(p.wants_more(&[1.0, 1.0], None));
        assert!(!p.wants_more(&[1.0, 1.0, 1.01], None));
        assert!(p.wants_more(&[1.0, 1.5, 1.3], None));
    }

    #[test]
    fn one_outlier_does_not_force_sampling_to_the_cap() {
        let p = TimingPolicy::default();
        assert!(!p.wants_more(&[20.0, 20.1, 26.0], None));
        let s = TimingStats::from_samples(&[20.0, 20.1, 26.0]).unwrap();
        assert!(s.spread > 0.25 && s.rel_error < 0.01);
    }

    #[test]
    fn noisy_samples_stop_at_the_time_cap() {
        let p = TimingPolicy {
            max_total_ms: 10.0,
            ..TimingPolicy::default()
        };
        assert!(!p.wants_more(&[4.0, 2.0, 5.0], None));
    }

    fn best(ms: f64, noise: f64) -> Option<Baseline> {
        Some(Baseline {
            ms,
            noise: Some(noise),
        })
    }

    /// Feeds a synthetic stream of samples through the policy; returns how many it took.
    fn samples_taken(p: &TimingPolicy, stream: &[f64], baseline: Option<Baseline>) -> usize {
        let mut taken = Vec::new();
        for &s in stream {
            if !p.wants_more(&taken, baseline) {
                break;
            }
            taken.push(s);
        }
        taken.len()
    }

    #[test]
    fn config_half_again_slower_than_the_best_stops_after_one_sample() {
        let p = TimingPolicy::default();
        let stream = [30.0, 30.2, 29.9, 30.1, 30.0];
        assert_eq!(samples_taken(&p, &stream, best(20.0, 0.01)), 1);
    }

    #[test]
    fn stop_decision_uses_the_fastest_sample() {
        // a config is hopeless only when even its fastest sample is beyond the margin (23 ms here)
        let p = TimingPolicy::default();
        // two samples: margin 7.5 % (21.5 ms)
        assert!(!p.is_hopeless(&[25.0, 21.4], best(20.0, 0.01)));
        assert!(p.is_hopeless(&[25.0, 21.6], best(20.0, 0.01)));
        assert!(!p.is_hopeless(&[25.0], None));
    }

    #[test]
    fn config_within_noise_of_the_best_gets_full_sampling() {
        let p = TimingPolicy::default();
        let stream = [20.3, 20.1, 20.2, 20.25, 20.15, 20.2];
        assert!(samples_taken(&p, &stream, best(20.0, 0.01)) >= p.min_reps as usize);
        // 14% slower is inside the one-sample 15% floor, but two such samples lose the race
        let stream = [22.8, 22.8, 22.8, 22.8];
        assert_eq!(samples_taken(&p, &stream, best(20.0, 0.01)), 2);
    }

    #[test]
    fn noisy_best_widens_the_margin() {
        let p = TimingPolicy::default();
        // 4% sample noise: margin 32%, so 1.3x slower is not enough evidence to stop
        assert!((p.stop_margin(Some(0.04)) - 0.32).abs() < 1e-12);
        assert_eq!(
            samples_taken(&p, &[26.0, 26.0, 26.0, 26.0], best(20.0, 0.04)),
            2
        );
        assert!(samples_taken(&p, &[22.0, 22.0, 22.0, 22.0], best(20.0, 0.04)) >= 3);
        assert_eq!(samples_taken(&p, &[30.0, 30.0, 30.0], best(20.0, 0.04)), 1);
        // unknown noise: conservative 40%
        assert!((p.stop_margin(None) - 0.40).abs() < 1e-12);
    }

    #[test]
    fn without_a_best_every_config_is_sampled_fully() {
        let p = TimingPolicy::default();
        assert_eq!(samples_taken(&p, &[100.0, 100.0, 100.0, 100.0], None), 3);
    }

    #[test]
    fn warm_up_first_sample_is_recognised() {
        let p = TimingPolicy::default();
        assert!(p.first_is_warmup(21.5, 20.0));
        assert!(!p.first_is_warmup(20.5, 20.0));
        assert!(!p.first_is_warmup(19.0, 20.0));
    }

    #[test]
    fn sample_noise_undoes_the_square_root() {
        let s = TimingStats::from_samples(&[1.0, 1.1, 0.9, 1.0]).unwrap();
        assert!((s.sample_noise() - s.rel_error * 2.0).abs() < 1e-12);
    }
}
