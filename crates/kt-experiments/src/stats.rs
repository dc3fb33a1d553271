//! The statistics of a report. Kept as small pure functions so the report's numbers can be checked by hand.

/// Geometric mean of positive values (the right mean for ratios such as speedups); `None` when empty or
/// when a value is not positive.
pub fn geomean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|&x| !(x > 0.0 && x.is_finite())) {
        return None;
    }
    Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// Median (mean of the two middle values for an even count).
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Sample standard deviation (n − 1 in the denominator, as pandas and the thesis's tables use); `None`
/// for fewer than two values.
pub fn std_dev(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    Some((xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt())
}

/// The thesis's gain in percent: (t_naive − t_best) / t_naive × 100 = (1 − 1/speedup) × 100. A 5.49×
/// speedup is an 82 % gain; no speedup is 0 %; the gain never reaches 100 %.
pub fn gain_percent(speedup: f64) -> f64 {
    if speedup > 0.0 && speedup.is_finite() {
        (1.0 - 1.0 / speedup) * 100.0
    } else {
        0.0
    }
}

/// The two-sided 97.5 % quantile of Student's t with `df` degrees of freedom (the normal's 1.96 past 30).
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df.wrapping_sub(1)).copied().unwrap_or(1.96)
}

/// 95 % confidence interval of the mean (Student's t over the values); `None` for fewer than two values.
pub fn mean_ci95(xs: &[f64]) -> Option<[f64; 2]> {
    let (m, sd) = (mean(xs)?, std_dev(xs)?);
    let half = t975(xs.len() - 1) * sd / (xs.len() as f64).sqrt();
    Some([m - half, m + half])
}

/// 95 % confidence interval of the geometric mean of positive ratios: the t interval of their logarithms,
/// transformed back.
pub fn geomean_ci95(xs: &[f64]) -> Option<[f64; 2]> {
    if xs.iter().any(|&x| !(x > 0.0 && x.is_finite())) {
        return None;
    }
    let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    mean_ci95(&logs).map(|[lo, hi]| [lo.exp(), hi.exp()])
}

/// fast_p: the share of cells that are correct *and* more than `p` times faster than the naive kernel
/// (KernelBench's definition). Strictly greater, because kt never keeps a slower kernel, so every correct
/// cell has a speedup of at least 1 and "≥ 1" would only repeat the correctness rate; fast_1.0 is thus the
/// share of cells that improved at all.
pub fn fast_p(cells: &[(bool, f64)], p: f64) -> Option<f64> {
    if cells.is_empty() {
        return None;
    }
    let fast = cells
        .iter()
        .filter(|(correct, s)| *correct && *s > p)
        .count();
    Some(fast as f64 / cells.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn geomean_of_ratios() {
        assert!(close(geomean(&[1.0, 4.0]), 2.0));
        assert!(close(geomean(&[2.0, 2.0, 2.0]), 2.0));
        assert!(close(geomean(&[1.0, 2.0, 4.0]), 2.0));
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[1.0, 0.0]), None);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert!(close(median(&[3.0, 1.0, 2.0]), 2.0));
        assert!(close(median(&[4.0, 1.0, 2.0, 3.0]), 2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn sample_standard_deviation() {
        // mean 5, squared deviations 9+1+1+9 = 20, / 3
        assert!(close(
            std_dev(&[2.0, 4.0, 6.0, 8.0]),
            (20.0_f64 / 3.0).sqrt()
        ));
        assert_eq!(std_dev(&[1.0]), None);
    }

    #[test]
    fn fast_p_counts_only_correct_cells_strictly_above_p() {
        let cells = [
            (true, 1.0),
            (true, 1.2),
            (true, 1.5),
            (false, 3.0),
            (true, 2.5),
        ];
        assert!(close(fast_p(&cells, 1.0), 3.0 / 5.0));
        assert!(close(fast_p(&cells, 1.2), 2.0 / 5.0));
        assert!(close(fast_p(&cells, 2.0), 1.0 / 5.0));
    }

    #[test]
    fn the_thesis_gain_is_the_share_of_time_saved() {
        assert!(close(Some(gain_percent(1.25)), 20.0));
        assert!(close(Some(gain_percent(2.0)), 50.0));
        assert!((gain_percent(5.49) - 81.785_063_752_276_87).abs() < 1e-9);
        assert!(close(Some(gain_percent(1.0)), 0.0));
    }

    #[test]
    fn confidence_intervals_use_students_t() {
        // mean 5, sd sqrt(20/3) = 2.5820, n 4, t(3) = 3.182: half width 3.182 * 2.5820 / 2 = 4.1080
        let [lo, hi] = mean_ci95(&[2.0, 4.0, 6.0, 8.0]).unwrap();
        assert!(
            (lo - 0.892_056).abs() < 1e-5 && (hi - 9.107_944).abs() < 1e-5,
            "{lo} {hi}"
        );
        assert_eq!(mean_ci95(&[1.0]), None);
        let [lo, hi] = geomean_ci95(&[2.0, 2.0, 2.0]).unwrap();
        assert!(close(Some(lo), 2.0) && close(Some(hi), 2.0));
        assert_eq!(geomean_ci95(&[1.0, 0.0]), None);
    }
}
