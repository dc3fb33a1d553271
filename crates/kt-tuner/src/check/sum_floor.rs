//! The tolerance of outputs that are sums. A float32 sum of K terms computed in another order (tiles,
//! partial sums, atomics, a rotated loop) rounds differently: each addition errs by up to half a unit in
//! the last place of the partial sum it makes. For terms of random sign the partial sums, and so the
//! errors, scale with the output's typical magnitude, and the errors add up like a random walk: two orders
//! differ by about u·√K times the output's RMS (u = 2^-24), largest over millions of elements a few times
//! that. Elementwise relative tolerance misses this: where terms cancel, an element is near zero while its
//! rounding is not, and at K = 4096 over 16 M elements some element always fails 1e-4 relative.
//!
//! So an output whose elements sum about `terms` terms (the kernel's flops per output element) gets its
//! absolute tolerance raised to [`SUM_ERROR_FACTOR`] · u · √terms · RMS(expected). With the factor 32
//! that is 6–10× above the largest reordering difference measured (4096 rows of float32 dot products of
//! K = 101…65536 randn pairs: at most 3 u·√K·RMS), and far below what wrong kernels show: bfloat16
//! inputs are off by about 1e-2·RMS (over 1000 u·√K·RMS at K = 4096), a dropped product by about
//! 1/√K·RMS. Half-precision outputs are assumed accumulated in float32 (their own rounding is in their
//! rtol); float64 sums use u = 2^-53.

use serde::{Deserialize, Serialize};

use crate::model::args::KernelTest;
use crate::model::expr::eval_number;
use crate::model::tolerance::Tolerance;
use kt_record::DType;

/// How many times u·√terms·RMS an element of a sum may differ from its expected value.
pub const SUM_ERROR_FACTOR: f64 = 32.0;

/// The raised absolute tolerance of an output that is a sum, and what it was computed from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SumFloor {
    /// The absolute tolerance used (above the output's own `atol`).
    pub atol: f64,
    pub terms: f64,
    /// RMS of the expected values.
    pub rms: f64,
}

impl SumFloor {
    /// "tolerance raised to 1.1e-2 absolute for sums of about 8192 terms (32 · 2^-24 · √8192 · RMS 64.1 of
    /// the expected values)".
    pub fn describe(&self) -> String {
        format!(
            "tolerance raised to {:.2e} absolute for sums of about {:.0} terms ({SUM_ERROR_FACTOR} · u · √{:.0} · \
             RMS {:.3e} of the expected values, u the rounding unit of the sum)",
            self.atol, self.terms, self.terms, self.rms
        )
    }
}

/// The rounding unit of the arithmetic that sums an output of `dtype`: float32's for float32 and the half
/// types (accumulated in float32), float64's for float64; None for integers (compared exactly).
pub fn unit_roundoff(dtype: DType) -> Option<f64> {
    match dtype {
        DType::Float64 => Some(f64::EPSILON / 2.0),
        d if d.is_float() => Some(f32::EPSILON as f64 / 2.0),
        _ => None,
    }
}

impl Tolerance {
    /// This tolerance for an output of `dtype` whose expected values have RMS `rms`: `atol` raised for a
    /// sum of `terms` terms when that is larger (the floor returned), else unchanged.
    pub fn raised_for_sums(self, dtype: DType, rms: Option<f64>) -> (Tolerance, Option<SumFloor>) {
        let (Some(terms), Some(rms), Some(u)) = (self.terms, rms, unit_roundoff(dtype)) else {
            return (self, None);
        };
        if !(terms.is_finite() && rms.is_finite() && terms >= 1.0 && rms > 0.0) {
            return (self, None);
        }
        let atol = SUM_ERROR_FACTOR * u * terms.sqrt() * rms;
        if atol <= self.atol {
            return (self, None);
        }
        (
            Tolerance { atol, ..self },
            Some(SumFloor { atol, terms, rms }),
        )
    }
}

/// RMS of the finite values (None when there are none).
pub fn rms(values: &[f64]) -> Option<f64> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    (!finite.is_empty())
        .then(|| (finite.iter().map(|v| v * v).sum::<f64>() / finite.len() as f64).sqrt())
}

/// The tests with each float output's tolerance told how many terms its elements sum: the kernel's
/// `flops` (an expression of the test's scalars) over the elements of all its outputs, at least 1. Tests
/// stay as they are without a flops expression or where it does not evaluate.
pub fn with_sum_lengths(tests: &[KernelTest], flops: Option<&str>) -> Vec<KernelTest> {
    let mut out = tests.to_vec();
    let Some(flops) = flops else {
        return out;
    };
    for t in &mut out {
        let outputs: u64 = t.arrays().filter(|a| a.is_output).map(|a| a.elements).sum();
        let Ok(f) = eval_number(flops, &t.scalars()) else {
            continue;
        };
        if outputs == 0 || !f.is_finite() {
            continue;
        }
        let terms = (f / outputs as f64).max(1.0);
        let names: Vec<String> = t
            .arrays()
            .filter(|a| a.is_output && a.dtype.is_float())
            .map(|a| a.name.clone())
            .collect();
        for n in names {
            let d = t
                .arrays()
                .find(|a| a.name == n)
                .map(|a| Tolerance::for_dtype(a.dtype))
                .unwrap_or_default();
            t.tolerances.entry(n).or_insert(d).terms = Some(terms);
        }
    }
    out
}

#[cfg(test)]
mod tests;
