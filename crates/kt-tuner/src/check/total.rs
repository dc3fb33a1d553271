//! Outputs compared by their total (the sidecar's `compare = { out = "total" }`). A kernel that writes one
//! partial sum per thread block (Kernel Tuner's `expdist.cu`) puts as many partials, in as many places, as
//! its tiling makes; only the sum of the array means anything, so only the sums are compared:
//! |Σgot − Σexpected| <= atol + rtol · Σ|expected| for floats, Σgot == Σexpected for integers.
//!
//! Elements still holding the poison (never written: the partial slots this launch does not use) count as
//! zero and are no failure on their own; an output left entirely poison was not written at all and fails
//! whatever the totals. A NaN the kernel wrote makes its total NaN, which never passes against a reference.
//! Sums are taken in f64 with compensation, so the order of the elements hardly matters.

use crate::check::report::{Mismatch, OutputReport, Totals};
use crate::model::tolerance::Tolerance;
use kt_record::DType;

/// The running total of one buffer: its written elements summed, poison skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Total {
    /// The plain sum: what the total is once an element is infinite or NaN.
    plain: f64,
    /// Neumaier's compensated sum and its correction.
    sum: f64,
    carry: f64,
    /// Σ|value| of the written elements.
    abs: f64,
    elements: u64,
    poisoned: u64,
}

impl Total {
    /// Adds one element: `poison` when it still holds the poison pattern (counted, not summed).
    pub fn add(&mut self, value: f64, poison: bool) {
        self.elements += 1;
        if poison {
            self.poisoned += 1;
            return;
        }
        self.plain += value;
        self.abs += value.abs();
        let t = self.sum + value;
        if self.sum.abs() >= value.abs() {
            self.carry += (self.sum - t) + value;
        } else {
            self.carry += (value - t) + self.sum;
        }
        self.sum = t;
    }

    /// The total of `values`; `poison` flags those still holding the poison (a shorter slice, or an empty
    /// one: the rest are written).
    pub fn of(values: &[f64], poison: &[bool]) -> Total {
        let mut t = Total::default();
        for (i, &v) in values.iter().enumerate() {
            t.add(v, poison.get(i).copied().unwrap_or(false));
        }
        t
    }

    /// The sum of the written elements.
    pub fn value(&self) -> f64 {
        if self.plain.is_finite() {
            self.sum + self.carry
        } else {
            self.plain
        }
    }

    /// Σ|value| of the written elements.
    pub fn abs(&self) -> f64 {
        self.abs
    }

    pub fn elements(&self) -> u64 {
        self.elements
    }

    /// Whether every element still holds the poison: the launch wrote none of them.
    pub fn nothing_written(&self) -> bool {
        self.elements > 0 && self.poisoned == self.elements
    }
}

/// Compares `got`'s total with `expected`'s under `tol` (its `atol` and `rtol`; `max_mismatch_fraction`
/// means nothing here). `same_bits_agree`: a rerun against the first run, where two NaN totals agree.
/// The report has at most one mismatch (the totals, at index 0) unless nothing was written, when every
/// element is a never-written mismatch as in the elementwise comparison.
pub fn compare_totals(
    name: &str,
    dtype: DType,
    tol: Tolerance,
    got: &Total,
    expected: &Total,
    same_bits_agree: bool,
) -> OutputReport {
    let (g, e) = (got.value(), expected.value());
    let allowed = if dtype.is_float() {
        tol.atol + tol.rtol * expected.abs()
    } else {
        0.0
    };
    let abs_error = (g - e).abs();
    let agree = if got.nothing_written() {
        false
    } else if g.is_nan() || e.is_nan() {
        same_bits_agree && g.is_nan() && e.is_nan()
    } else if g == e {
        true // equal infinities too
    } else if !e.is_finite() {
        // a reference that overflowed: nothing left to compare where only finite values are (an infinite
        // Σ|expected| would otherwise let any total pass)
        tol.finite_expected_only
    } else {
        abs_error <= allowed
    };
    let never_written = if got.nothing_written() {
        got.elements()
    } else {
        0
    };
    let finite_error = abs_error.is_finite();
    OutputReport {
        name: name.to_string(),
        elements: got.elements(),
        mismatches: never_written.max(u64::from(!agree)),
        mismatches_above: u64::from(!agree && never_written == 0 && g > e),
        never_written,
        max_abs_error: if finite_error { abs_error } else { 0.0 },
        max_rel_error: if finite_error && e != 0.0 {
            abs_error / e.abs()
        } else {
            0.0
        },
        first_mismatch: (!agree).then_some(Mismatch {
            index: 0,
            expected: e,
            got: g,
            never_written: never_written > 0,
        }),
        allowed_mismatches: 0,
        sum_floor: None,
        totals: Some(Totals {
            expected: e,
            got: g,
            allowed,
        }),
    }
}

#[cfg(test)]
mod tests;
