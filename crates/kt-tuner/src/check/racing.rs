//! Racing: a configuration stops being sampled once its launches show it cannot be the best, so the samples go
//! to the contenders that decide the ranking.
//!
//! The rule compares the configuration's *fastest* sample with the best median so far. A launch cannot run
//! faster than its kernel; interference, clocks and launch latency only add time. So for a configuration that is
//! truly as fast as the best to be dropped, every one of its `n` samples must have been inflated past the bound.
//! The bound shrinks as evidence accumulates — `n` independent samples all beyond it are as unlikely as one
//! sample beyond the one-sample bound — but never below what the best's own measured noise allows:
//!
//! margin(n) = max(`slower_margin` / n, `noise_sigmas` × σ_best / √n), bound = best median × (1 + margin(n))
//!
//! where σ_best is the best's per-sample relative noise (1.4826 · MAD / median). With the defaults (15 %, 8σ) and
//! 1 % noise: one sample beyond +15 %, two beyond +7.5 %, three beyond +5 %, each an event of more than four
//! standard deviations per sample for a configuration that is really as fast. A configuration inside the bound
//! is a contender: it is sampled like the best, to the policy's target error. The best and its interval keep
//! that standard: racing only ends the sampling of configurations that lost.

use crate::check::measure::{Baseline, TimingPolicy};
pub use crate::check::race_evidence::RaceEvidence;

impl TimingPolicy {
    /// The relative margin above the best median after `n` samples (see the module's text).
    pub fn race_margin(&self, n: usize, best_noise: Option<f64>) -> f64 {
        let n = n.max(1) as f64;
        let noise = self.noise_sigmas * effective_noise(best_noise);
        (self.slower_margin / n).max(noise / n.sqrt())
    }

    /// The evidence that these samples cannot be the best's, or None while they are a contender (or there is
    /// no best to race against).
    pub fn race(&self, samples: &[f64], best: Option<Baseline>) -> Option<RaceEvidence> {
        let best = best.filter(|b| b.ms.is_finite() && b.ms > 0.0)?;
        let fastest = samples.iter().copied().min_by(f64::total_cmp)?;
        let bound = best.ms * (1.0 + self.race_margin(samples.len(), best.noise));
        (fastest > bound).then(|| RaceEvidence {
            samples: samples.len() as u32,
            median_ms: median(samples),
            fastest_ms: fastest,
            best_ms: best.ms,
            bound_ms: bound,
        })
    }
}

/// The best's per-sample noise, or the conservative default when it was not measured.
fn effective_noise(noise: Option<f64>) -> f64 {
    noise
        .filter(|n| n.is_finite() && *n >= 0.0)
        .unwrap_or(crate::check::measure::UNKNOWN_NOISE)
}

fn median(samples: &[f64]) -> f64 {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => s[n / 2],
        _ => 0.5 * (s[n / 2 - 1] + s[n / 2]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::sampling::{FirstSample, take_samples};

    fn best(ms: f64, noise: f64) -> Option<Baseline> {
        Some(Baseline {
            ms,
            noise: Some(noise),
        })
    }

    /// Races a synthetic stream of launch times (the first is the verifying launch) through the worker's
    /// sampling sequence; returns what it recorded.
    fn race(stream: &[f64], against: Option<Baseline>) -> crate::check::measure::TimingStats {
        let mut next = stream[1..].iter().copied().cycle();
        take_samples::<()>(
            &TimingPolicy::default(),
            against,
            Some(FirstSample(stream[0])),
            None,
            &mut |_| Ok(next.next().unwrap_or(f64::NAN)),
        )
        .map(|(s, _)| s)
        .unwrap_or_else(|()| unreachable!())
    }

    #[test]
    fn the_margin_shrinks_with_the_samples_but_not_below_the_best_noise() {
        let p = TimingPolicy::default();
        assert!((p.race_margin(1, Some(0.01)) - 0.15).abs() < 1e-12);
        assert!((p.race_margin(2, Some(0.01)) - 0.075).abs() < 1e-12);
        assert!((p.race_margin(3, Some(0.01)) - 0.05).abs() < 1e-12);
        // 4 % noise: 8σ/√n dominates
        assert!((p.race_margin(4, Some(0.04)) - 0.16).abs() < 1e-12);
        // unmeasured noise is taken as 5 %: 40 % on one sample
        assert!((p.race_margin(1, None) - 0.40).abs() < 1e-12);
    }

    #[test]
    fn a_config_twice_as_slow_stops_after_its_verifying_launch_with_the_evidence() {
        let s = race(&[40.0, 40.1, 39.9, 40.0], best(20.0, 0.01));
        assert!(s.aborted_early);
        assert_eq!(s.samples_ms, vec![40.0]);
        let e = s.race.unwrap_or_else(|| panic!("no evidence: {s:?}"));
        assert_eq!(
            (e.samples, e.best_ms, e.fastest_ms, e.median_ms),
            (1, 20.0, 40.0, 40.0)
        );
        assert!((e.bound_ms - 23.0).abs() < 1e-9, "{e:?}");
        assert!(e.describe().contains("1 sample(s)"));
    }

    #[test]
    fn a_config_ten_percent_slower_stops_after_two_samples_not_at_the_target_error() {
        // 10 % slower, inside the one-sample margin (15 %) but beyond the two-sample one (7.5 %); its noisy
        // samples would otherwise keep it sampling towards the 1 % target error
        let s = race(&[22.0, 22.6, 21.9, 23.5, 22.2], best(20.0, 0.01));
        assert!(s.aborted_early);
        assert_eq!(s.samples_ms.len(), 2);
        assert_eq!(s.race.map(|e| e.samples), Some(2));
    }

    #[test]
    fn a_close_contender_is_sampled_to_the_policys_standard() {
        // 2 % slower, within every margin: a contender, sampled like the best until its error is small
        let s = race(&[20.4, 20.5, 20.3, 20.4, 20.45, 20.35], best(20.0, 0.01));
        assert!(!s.aborted_early && s.race.is_none(), "{s:?}");
        assert!(s.samples_ms.len() >= TimingPolicy::default().min_reps as usize);
        assert!(s.rel_error <= TimingPolicy::default().target_error);
    }

    #[test]
    fn a_config_faster_than_the_best_is_never_stopped() {
        let s = race(&[15.0, 15.2, 14.9, 15.1], best(20.0, 0.01));
        assert!(!s.aborted_early && s.race.is_none());
        assert!(s.samples_ms.len() >= 3);
    }

    #[test]
    fn one_slow_launch_of_a_contender_does_not_stop_it() {
        // the verifying launch ran slow (+10 %, a warm-up); the next samples are back near the best
        let s = race(&[22.0, 20.2, 20.1, 20.3], best(20.0, 0.01));
        assert!(!s.aborted_early && s.warmup_discarded, "{s:?}");
        assert!(s.samples_ms.len() >= 3);
    }

    #[test]
    fn without_a_best_nothing_is_raced() {
        let s = race(&[100.0, 100.0, 100.0], None);
        assert!(!s.aborted_early && s.samples_ms.len() == 3);
    }

    #[test]
    fn a_noisy_best_keeps_a_moderately_slower_config_in_the_race_longer() {
        // 30 % slower against a best with 4 % noise: margin 32 % on one sample, 22.6 % on two
        let noisy = race(&[26.0, 26.0, 26.0, 26.0], best(20.0, 0.04));
        assert_eq!(noisy.race.map(|e| e.samples), Some(2));
        let quiet = race(&[26.0, 26.0, 26.0, 26.0], best(20.0, 0.01));
        assert_eq!(quiet.race.map(|e| e.samples), Some(1));
    }
}
