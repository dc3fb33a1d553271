//! The large-values test: inputs of magnitudes a standard normal never reaches. randn stays within about 7
//! of zero even over 2^28 draws, so a softmax without its max shift, a tanh computed through `exp`, or an
//! accumulator that overflows passes every test drawn from it and fails a user with large activations. The
//! test draws the same floating-point inputs with a hundred times the spread, at the seeded sizes, and
//! compares only the elements the reference computed as finite: a naive reference may overflow where a
//! careful candidate does not, and that is no fault of the candidate.

use super::{DefaultTests, ExtraTest};
use crate::error::TunerError;
use crate::model::args::TestArg;
use crate::model::array_source::{ArraySource, Distribution};

/// The standard deviation of the large-values test's inputs (exp overflows float past about 88).
pub const LARGE_VALUES_SIGMA: f64 = 100.0;

impl DefaultTests<'_> {
    /// The large-values test; None when no floating-point input is drawn from a standard normal.
    pub fn large_values(&self) -> Result<Option<ExtraTest>, TunerError> {
        let mut test = self.inputs.make_test(
            self.params,
            &self.base,
            "large-values",
            self.next_seed + 4,
            self.configs,
        )?;
        let mut scaled = Vec::new();
        for arg in &mut test.args {
            if let TestArg::Array(a) = arg
                && !a.is_output
                && a.dtype.is_float()
                && let ArraySource::Generate { dist, .. } = &mut a.source
                && *dist == Distribution::Randn
            {
                *dist = Distribution::RandnScaled {
                    sigma: LARGE_VALUES_SIGMA,
                };
                scaled.push(a.name.clone());
            }
        }
        if scaled.is_empty() {
            return Ok(None);
        }
        for t in test.tolerances.values_mut() {
            t.finite_expected_only = true;
        }
        Ok(Some(ExtraTest {
            test,
            description: format!(
                "large-values: {} drawn with standard deviation {LARGE_VALUES_SIGMA} (compared where the \
                 reference is finite)",
                scaled.join(", ")
            ),
            derived: false,
        }))
    }
}
