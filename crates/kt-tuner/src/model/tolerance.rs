//! [`Tolerance`]: how far an output may be from the expected one, by dtype. Tests, sidecars and the sum
//! floor set it; the comparison (`verify.rs`, and its GPU twin in `device_kernels`) applies it.

use serde::{Deserialize, Serialize};

use kt_record::DType;

/// |got - expected| <= atol + rtol * |expected| for floats; NaN never passes; integers compare exactly.
/// For an output whose elements are sums (`terms`), `atol` is raised to the rounding a sum of that many
/// terms may show in another order (see `sum_floor.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
    /// Fraction of elements allowed to differ (chaotic kernels such as mandelbrot); 0 for everything else.
    #[serde(default)]
    pub max_mismatch_fraction: f64,
    /// About how many terms each element of the output sums (the kernel's flops per output element);
    /// None: not known, the tolerance is elementwise only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<f64>,
    /// Compare only the elements the reference computed as finite numbers (the large-values test: a
    /// naive reference may overflow where a careful candidate does not).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub finite_expected_only: bool,
    /// Compare the output by its total, not element by element (the sidecar's `compare = { out = "total" }`):
    /// |Σgot − Σexpected| <= atol + rtol · Σ|expected|, elements left unwritten counting as zero (see
    /// `crate::check::total`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub total: bool,
}

impl Default for Tolerance {
    /// float32 arithmetic reordered by a faster kernel lands far below 1e-4 relative error.
    fn default() -> Self {
        Tolerance {
            rtol: 1e-4,
            atol: 1e-5,
            max_mismatch_fraction: 0.0,
            terms: None,
            finite_expected_only: false,
            total: false,
        }
    }
}

impl Tolerance {
    /// The tolerance an output of `dtype` gets when its sidecar gives none: half-precision arithmetic
    /// reordered by a faster kernel is off by a few units in the last place of an 11-bit (float16) or
    /// 8-bit (bfloat16) mantissa; float32 and float64 as [`Tolerance::default`]; integers compare exactly
    /// whatever the tolerance.
    pub fn for_dtype(dtype: DType) -> Tolerance {
        let (rtol, atol) = match dtype {
            DType::Float16 => (1e-2, 1e-2),
            DType::Bfloat16 => (2e-2, 2e-2),
            _ => return Tolerance::default(),
        };
        Tolerance {
            rtol,
            atol,
            max_mismatch_fraction: 0.0,
            terms: None,
            finite_expected_only: false,
            total: false,
        }
    }

    pub fn accepts(&self, dtype: DType, got: f64, expected: f64) -> bool {
        if !dtype.is_float() {
            return got == expected;
        }
        if got.is_nan() || expected.is_nan() {
            return false;
        }
        if got == expected {
            return true; // equal infinities
        }
        (got - expected).abs() <= self.atol + self.rtol * expected.abs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_never_passes_and_integers_are_exact() {
        let t = Tolerance {
            rtol: 1e-3,
            atol: 1e-3,
            max_mismatch_fraction: 0.0,
            terms: None,
            finite_expected_only: false,
            total: false,
        };
        assert!(!t.accepts(DType::Float32, f64::NAN, f64::NAN));
        assert!(t.accepts(DType::Float32, 1.0005, 1.0));
        assert!(!t.accepts(DType::Float32, 1.01, 1.0));
        assert!(!t.accepts(DType::Int32, 2.0, 1.0));
        assert!(t.accepts(DType::Int32, 7.0, 7.0));
        assert!(t.accepts(DType::Float64, f64::INFINITY, f64::INFINITY));
    }

    #[test]
    fn half_types_get_looser_defaults_and_integers_stay_exact() {
        let h = Tolerance::for_dtype(DType::Float16);
        let b = Tolerance::for_dtype(DType::Bfloat16);
        assert!(h.rtol >= 1e-3 && h.rtol <= 1e-2, "{h:?}");
        assert!(b.rtol > h.rtol, "{b:?}");
        assert_eq!(Tolerance::for_dtype(DType::Float32), Tolerance::default());
        // bfloat16 keeps 8 mantissa bits: 1.0078125 is its neighbour of 1.0, within tolerance
        assert!(b.accepts(DType::Bfloat16, 1.0078125, 1.0));
        assert!(!b.accepts(DType::Bfloat16, 1.1, 1.0));
        assert!(!Tolerance::for_dtype(DType::Int32).accepts(DType::Int32, 2.0, 1.0));
    }
}
