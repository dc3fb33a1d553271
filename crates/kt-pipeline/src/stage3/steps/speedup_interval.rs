//! The speedup of one kernel over another from separate launches of each, with a 95 % interval.
//!
//! The estimate is the Hodges–Lehmann ratio: the median over every pair (slow launch i, fast launch j) of
//! t_slow,i / t_fast,j. Its interval is the distribution-free one that goes with it (Moses' interval from the
//! exact Mann–Whitney distribution, applied to log times): the (k+1)-th smallest and (k+1)-th largest of the
//! pairwise ratios, where k is the largest count with P(U ≤ k) ≤ 2.5 %. It assumes only that the two kernels'
//! launch times differ by a factor, not that they are normal; with fewer than 4 launches each there is no 95 %
//! interval at all, which is why kt times at least 5.

use serde::{Deserialize, Serialize};

/// Above this many pairs the exact distribution is replaced by its normal approximation.
const EXACT_PAIRS: usize = 2500;

/// A speedup with its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpeedupEstimate {
    /// t_slow / t_fast (Hodges–Lehmann).
    pub speedup: f64,
    /// The 95 % interval of the speedup.
    pub ci95: [f64; 2],
}

/// The method's name, as result.json and the report state it.
pub const METHOD: &str = "Hodges-Lehmann ratio with the Mann-Whitney (Moses) 95% interval";

/// The speedup of `fast` over `slow` (> 1 when `fast` is faster), or None when there are too few finite,
/// positive launch times for a 95 % interval.
pub fn speedup_interval(slow: &[f64], fast: &[f64]) -> Option<SpeedupEstimate> {
    let logs = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .filter(|t| t.is_finite() && **t > 0.0)
            .map(|t| t.ln())
            .collect()
    };
    let (a, b) = (logs(slow), logs(fast));
    let k = critical_count(a.len(), b.len())?;
    let mut d: Vec<f64> = a
        .iter()
        .flat_map(|x| b.iter().map(move |y| x - y))
        .collect();
    d.sort_by(f64::total_cmp);
    let n = d.len();
    let median = if n % 2 == 1 {
        d[n / 2]
    } else {
        (d[n / 2 - 1] + d[n / 2]) / 2.0
    };
    Some(SpeedupEstimate {
        speedup: median.exp(),
        ci95: [d[k].exp(), d[n - 1 - k].exp()],
    })
}

/// The largest k with P(U ≤ k) ≤ 0.025 under the null, for samples of sizes n and m; None when even
/// P(U = 0) is larger (too few launches).
fn critical_count(n: usize, m: usize) -> Option<usize> {
    if n == 0 || m == 0 {
        return None;
    }
    let pairs = n * m;
    if pairs > EXACT_PAIRS {
        let (nf, mf) = (n as f64, m as f64);
        let sd = (nf * mf * (nf + mf + 1.0) / 12.0).sqrt();
        let k = (nf * mf / 2.0 - 1.959_964 * sd - 0.5).floor();
        return (k >= 0.0).then_some(k as usize);
    }
    let counts = mann_whitney_counts(n, m);
    let total: f64 = counts.iter().sum();
    let mut cdf = 0.0;
    let mut k = None;
    for (u, c) in counts.iter().enumerate() {
        cdf += c / total;
        if cdf > 0.025 {
            break;
        }
        k = Some(u);
    }
    k
}

/// How many arrangements of n and m items give each value of the Mann–Whitney U (index = U).
fn mann_whitney_counts(n: usize, m: usize) -> Vec<f64> {
    // f(i, j)[u] = f(i-1, j)[u - j] + f(i, j-1)[u]: the largest item is from the first sample (beating all
    // j of the second) or from the second.
    let mut prev: Vec<Vec<f64>> = (0..=m).map(|_| vec![1.0]).collect();
    for i in 1..=n {
        let mut row: Vec<Vec<f64>> = Vec::with_capacity(m + 1);
        row.push(vec![1.0]);
        for j in 1..=m {
            let mut f = vec![0.0; i * j + 1];
            for (u, c) in prev[j].iter().enumerate() {
                f[u + j] += c;
            }
            for (u, c) in row[j - 1].iter().enumerate() {
                f[u] += c;
            }
            row.push(f);
        }
        prev = row;
    }
    prev.pop().unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_exact_distribution_matches_the_tables() {
        // C(10, 5) = 252 arrangements; P(U <= 2) = 4/252 < 0.025 < P(U <= 3) = 7/252.
        let c = mann_whitney_counts(5, 5);
        assert_eq!(c.iter().sum::<f64>(), 252.0);
        assert_eq!(&c[..4], &[1.0, 1.0, 2.0, 3.0]);
        assert_eq!(critical_count(5, 5), Some(2));
        assert_eq!(critical_count(10, 10), Some(23));
        assert_eq!(
            critical_count(3, 3),
            None,
            "3 launches each cannot give 95%"
        );
    }

    #[test]
    fn a_clear_speedup_has_an_interval_around_it() {
        let slow = [10.0, 10.1, 9.9, 10.05, 9.95];
        let fast = [2.0, 2.02, 1.98, 2.01, 1.99];
        let e = speedup_interval(&slow, &fast).unwrap();
        assert!((e.speedup - 5.0).abs() < 0.05, "{e:?}");
        assert!(
            e.ci95[0] > 4.8 && e.ci95[1] < 5.2 && e.ci95[0] < e.speedup && e.speedup < e.ci95[1]
        );
    }

    #[test]
    fn equal_kernels_give_an_interval_that_holds_one() {
        let a = [1.0, 1.02, 0.98, 1.01, 0.99, 1.0];
        let b = [1.01, 0.99, 1.0, 1.02, 0.98, 1.0];
        let e = speedup_interval(&a, &b).unwrap();
        assert!(e.ci95[0] < 1.0 && e.ci95[1] > 1.0, "{e:?}");
    }

    #[test]
    fn too_few_or_unusable_launches_give_no_interval() {
        assert!(speedup_interval(&[1.0, 1.0], &[0.5, 0.5]).is_none());
        assert!(speedup_interval(&[1.0, f64::NAN, 0.0, -1.0, 1.0], &[0.5; 5]).is_none());
    }

    #[test]
    fn large_samples_use_the_normal_approximation() {
        let slow: Vec<f64> = (0..60).map(|i| 3.0 + f64::from(i % 7) * 0.01).collect();
        let fast: Vec<f64> = (0..60).map(|i| 1.0 + f64::from(i % 5) * 0.01).collect();
        let e = speedup_interval(&slow, &fast).unwrap();
        assert!(e.ci95[0] > 2.8 && e.ci95[1] < 3.2, "{e:?}");
    }
}
