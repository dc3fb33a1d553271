//! Verification: poison values, and the report of a comparison (tolerances by dtype are `tolerance.rs`).
//!
//! Before each verifying run every output the reference kernel is known to overwrite is *poisoned* (NaN for
//! floats, a 0xDEADBEEF pattern for integers). Without that, a candidate that skips part of the output would
//! pass whenever the stale contents of the buffer happen to be right (zeros, or the previous config's
//! result); with it, an element never written stays poison and is reported as such. Outputs that the
//! reference accumulates into (a histogram's bins) are detected at set-up and reset instead of poisoned.
//! An output compared by its total (`total.rs`) counts its never-written elements as zero instead.
//!
//! The comparison itself runs on the GPU (see `device_kernels`), so gigabytes are never copied back; this
//! module holds the same rule for the host (tests, small arrays); the report types are `report.rs`.

use kt_record::DType;

pub use crate::check::report::{Mismatch, OutputReport};
use crate::check::total::{Total, compare_totals};
pub use crate::model::tolerance::Tolerance;

/// What is wrong with one checked launch, one line each, every line naming the launch as `launch` ("the
/// last timed launch"): outputs that failed their comparison, inputs it modified, guard bytes it wrote.
pub fn launch_problems(
    launch: &str,
    outputs: &[OutputReport],
    inputs_modified: &[String],
    guard_breaches: &[crate::check::guard::GuardBreach],
) -> Vec<String> {
    let failed = outputs.iter().filter(|o| !o.passed());
    failed
        .map(|o| format!("{launch}'s {}", o.describe()))
        .chain(
            inputs_modified
                .iter()
                .map(|n| format!("{launch} modified input {n}")),
        )
        .chain(
            guard_breaches
                .iter()
                .map(|b| format!("{launch} {}", b.describe())),
        )
        .collect()
}

/// The poison bit pattern of one element of `dtype`, little-endian, as a u64 (low bytes used).
pub fn poison_bits(dtype: DType) -> u64 {
    match dtype {
        // quiet NaNs with a recognisable payload, distinct from the canonical NaN a kernel computes
        DType::Float16 => 0x7E5B,
        DType::Bfloat16 => 0x7FDB,
        DType::Float32 => 0x7FC0_FFEE,
        DType::Float64 => 0x7FF8_DEAD_BEEF_0FEE,
        DType::Int8 | DType::Uint8 => 0xEF,
        DType::Int16 | DType::Uint16 => 0xBEEF,
        DType::Int32 | DType::Uint32 => 0xDEAD_BEEF,
        DType::Int64 | DType::Uint64 => 0xDEAD_BEEF_DEAD_BEEF,
    }
}

/// Host-side comparison with the same rule as the GPU kernel: element by element, or by the totals of
/// `got` and `expected` (each over its own length) when `tol.total` says so.
pub fn compare_host(
    name: &str,
    dtype: DType,
    tol: Tolerance,
    got: &[f64],
    got_is_poison: &[bool],
    expected: &[f64],
) -> OutputReport {
    if tol.total {
        let (got, expected) = (Total::of(got, got_is_poison), Total::of(expected, &[]));
        return compare_totals(name, dtype, tol, &got, &expected, false);
    }
    let mut r = OutputReport {
        name: name.into(),
        elements: got.len() as u64,
        mismatches: 0,
        mismatches_above: 0,
        never_written: 0,
        max_abs_error: 0.0,
        max_rel_error: 0.0,
        first_mismatch: None,
        allowed_mismatches: (tol.max_mismatch_fraction * got.len() as f64) as u64,
        sum_floor: None,
        totals: None,
    };
    for (i, ((&g, &e), &p)) in got.iter().zip(expected).zip(got_is_poison).enumerate() {
        if !g.is_nan() && !e.is_nan() {
            let abs = (g - e).abs();
            if abs.is_finite() {
                r.max_abs_error = r.max_abs_error.max(abs);
                if e != 0.0 {
                    r.max_rel_error = r.max_rel_error.max(abs / e.abs());
                }
            }
        }
        if p || !tol.accepts(dtype, g, e) {
            r.mismatches += 1;
            if p {
                r.never_written += 1;
            } else if g > e {
                r.mismatches_above += 1;
            }
            if r.first_mismatch.is_none() {
                r.first_mismatch = Some(Mismatch {
                    index: i as u64,
                    expected: e,
                    got: g,
                    never_written: p,
                });
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_with_nan_and_infinity_survive_json() {
        let r = compare_host(
            "C",
            DType::Float32,
            Tolerance::default(),
            &[f64::NAN, f64::INFINITY],
            &[true, false],
            &[1.0, 2.0],
        );
        let text = serde_json::to_string(&r).unwrap();
        let back: OutputReport = serde_json::from_str(&text).unwrap();
        assert!(back.first_mismatch.unwrap().got.is_nan());
        assert_eq!(back.mismatches, 2);
    }

    #[test]
    fn poison_for_floats_is_nan() {
        assert!(f32::from_bits(poison_bits(DType::Float32) as u32).is_nan());
        assert!(
            DType::Bfloat16
                .bits_to_f64(poison_bits(DType::Bfloat16))
                .is_nan()
        );
        assert!(
            DType::Float16
                .bits_to_f64(poison_bits(DType::Float16))
                .is_nan()
        );
        assert!(f64::from_bits(poison_bits(DType::Float64)).is_nan());
    }

    #[test]
    fn report_names_first_index_and_never_written() {
        let got = [1.0, 2.0, f64::NAN, 4.5];
        let poison = [false, false, true, false];
        let exp = [1.0, 2.0, 3.0, 4.0];
        let r = compare_host(
            "C",
            DType::Float32,
            Tolerance::default(),
            &got,
            &poison,
            &exp,
        );
        assert_eq!(r.mismatches, 2);
        assert_eq!(r.never_written, 1);
        let m = r.first_mismatch.clone().unwrap();
        assert_eq!(m.index, 2);
        assert!(m.never_written);
        assert!((r.max_abs_error - 0.5).abs() < 1e-12);
        let text = r.describe();
        assert!(
            text.contains("index 2") && text.contains("never written"),
            "{text}"
        );
    }
}
