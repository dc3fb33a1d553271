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

/// The thesis's gain in percent: (speedup − 1) × 100.
pub fn gain_percent(speedup: f64) -> f64 {
    (speedup - 1.0) * 100.0
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
        assert!(close(Some(gain_percent(1.25)), 25.0));
    }
}
