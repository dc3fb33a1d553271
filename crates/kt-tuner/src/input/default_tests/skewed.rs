//! The skewed test: integer inputs that all hold one value. A sidecar draws integer data uniformly
//! (`randint:0:256` bytes), so every bin of a histogram, every key of a sort or every label of a gather sees
//! about as many elements as any other, and a kernel whose counters are too narrow for one value's count (a
//! histogram packing 16-bit block counters: 65536 equal bytes in one block wrap) passes every such test.
//! Real data is skewed: zero padding, a black image region, one hot key. Here, at the seeded sizes, every
//! integer input the sidecar generates with more than one value is filled with the lowest value of its
//! distribution (`randint:LO:HI` gives LO; a normal or uniform draw into an integer array gives 0).
//!
//! A reference may not be defined on such data (a label used as an index, sorted input a scan assumes
//! distinct): the test is *derived* ([`ExtraTest::derived`]), left out with a note where the reference
//! fails on it.

use super::{DefaultTests, ExtraTest};
use crate::error::TunerError;
use crate::model::args::TestArg;
use crate::model::array_source::{ArraySource, Distribution};

/// The one value an integer input of `dist` holds in the skewed test; None when it holds one value already.
pub fn skewed_value(dist: &Distribution) -> Option<f64> {
    match dist {
        Distribution::RandInt { lo, hi } if hi - lo > 1 => Some(*lo as f64),
        Distribution::Randn | Distribution::RandnScaled { .. } | Distribution::Rand => Some(0.0),
        Distribution::RandInt { .. }
        | Distribution::Zeros
        | Distribution::Ones
        | Distribution::Fill { .. } => None,
    }
}

impl DefaultTests<'_> {
    /// The skewed test; None when the sidecar generates no integer input with more than one value.
    pub fn skewed(&self) -> Result<Option<ExtraTest>, TunerError> {
        let mut test = self.inputs.make_test(
            self.params,
            &self.base,
            "skewed",
            self.next_seed + 6,
            self.configs,
        )?;
        let mut filled = Vec::new();
        for arg in &mut test.args {
            if let TestArg::Array(a) = arg
                && !a.is_output
                && !a.dtype.is_float()
                && let ArraySource::Generate { dist, .. } = &mut a.source
                && let Some(value) = skewed_value(dist)
            {
                let drawn = self.inputs.inputs.get(&a.name).cloned().unwrap_or_default();
                filled.push(format!("{} all {value} (instead of {drawn})", a.name));
                *dist = Distribution::Fill { value };
            }
        }
        if filled.is_empty() {
            return Ok(None);
        }
        Ok(Some(ExtraTest {
            test,
            description: format!("skewed: {}", filled.join(", ")),
            derived: true,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{at_test_size, kernel};
    use super::*;

    #[test]
    fn the_histograms_bytes_are_all_zero_and_its_bins_stay_an_output() {
        let (inputs, params, ps) = kernel("histogram");
        let d = at_test_size(&inputs, &params, &ps);
        let t = d.skewed().unwrap().unwrap();
        assert_eq!(t.test.id, "skewed");
        assert!(t.derived);
        let data = t.test.arrays().find(|a| a.name == "data").unwrap();
        assert!(matches!(
            data.source,
            ArraySource::Generate {
                dist: Distribution::Fill { value: 0.0 },
                ..
            }
        ));
        let bins = t.test.arrays().find(|a| a.name == "bins").unwrap();
        assert!(matches!(
            bins.source,
            ArraySource::Generate {
                dist: Distribution::Zeros,
                ..
            }
        ));
        assert_eq!(
            t.description,
            "skewed: data all 0 (instead of randint:0:256)"
        );
        // at the seeded size, where one block of 256 threads sees 65536 bytes of it
        assert_eq!(t.test.scalars(), d.base);
        assert!(data.elements > 65536);
    }

    #[test]
    fn game_of_life_grid_is_filled_with_the_lowest_value_of_its_range() {
        let (inputs, params, ps) = kernel("game_of_life");
        let d = at_test_size(&inputs, &params, &ps);
        let t = d.skewed().unwrap().unwrap();
        assert_eq!(
            t.description,
            "skewed: current_grid all 0 (instead of randint:0:2)"
        );
    }

    #[test]
    fn a_kernel_without_generated_integer_inputs_gets_none() {
        // float inputs only; assign_clusters' integer array is an output
        for name in ["vectorAdd", "saxpy", "assign_clusters", "mandelbrot"] {
            let (inputs, params, ps) = kernel(name);
            let d = at_test_size(&inputs, &params, &ps);
            assert!(d.skewed().unwrap().is_none(), "{name}");
        }
    }

    #[test]
    fn the_value_is_the_distributions_lowest_and_a_constant_stays() {
        assert_eq!(
            skewed_value(&Distribution::RandInt { lo: -5, hi: 9 }),
            Some(-5.0)
        );
        assert_eq!(skewed_value(&Distribution::RandInt { lo: 3, hi: 4 }), None);
        assert_eq!(skewed_value(&Distribution::Randn), Some(0.0));
        assert_eq!(skewed_value(&Distribution::Ones), None);
        assert_eq!(skewed_value(&Distribution::Zeros), None);
    }
}
