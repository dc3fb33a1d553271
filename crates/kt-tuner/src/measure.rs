//! Timing policy and statistics. Samples come from CUDA event pairs around single launches (taken in the
//! worker); this module decides when enough samples were taken and summarises them. The objective is the
//! median: Kernel Tuner's mean is pulled up by slow first runs.

use serde::{Deserialize, Serialize};

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
    /// Stop after the first run (the verifying run, timed too) when it is this many times the best median
    /// so far: such a configuration cannot win.
    pub abort_factor: f64,
}

impl Default for TimingPolicy {
    fn default() -> Self {
        TimingPolicy {
            min_reps: 3,
            max_reps: 20,
            target_error: 0.01,
            max_total_ms: 500.0,
            flush_l2: false,
            abort_factor: 2.0,
        }
    }
}

impl TimingPolicy {
    /// Whether another sample is needed. `best_ms` is the best median of the run so far.
    pub fn wants_more(&self, samples: &[f64], best_ms: Option<f64>) -> bool {
        let n = samples.len() as u32;
        if n == 0 {
            return true;
        }
        if n == 1
            && let Some(best) = best_ms
            && samples[0] > self.abort_factor * best
        {
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

    /// Whether a configuration whose first (untimed-for-statistics) run took `first_ms` should be dropped.
    pub fn aborts_after_first_run(&self, first_ms: f64, best_ms: Option<f64>) -> bool {
        best_ms.is_some_and(|b| first_ms > self.abort_factor * b)
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
    /// True when sampling stopped after one sample because it was far slower than the best so far.
    pub aborted_early: bool,
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
        })
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

    #[test]
    fn far_slower_first_sample_aborts() {
        let p = TimingPolicy::default();
        assert!(!p.wants_more(&[10.0], Some(2.0)));
        assert!(p.wants_more(&[3.0], Some(2.0)));
        assert!(p.aborts_after_first_run(4.5, Some(2.0)));
        assert!(!p.aborts_after_first_run(3.5, Some(2.0)));
        assert!(!p.aborts_after_first_run(100.0, None));
    }
}
