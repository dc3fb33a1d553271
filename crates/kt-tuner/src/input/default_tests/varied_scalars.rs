//! The varied-scalars test: every scalar that is not a size at a value the sidecar never gave it. The seeded
//! tests and every other default test pass the sidecar's scalars unchanged (saxpy's `a = 1.5`), so a kernel
//! that is exact only at those values passes them all: one that rounds `a` to bfloat16 (1.5 and 2.0 are
//! bfloat16 numbers), or one specialised to a `max_iter` of 100. Here, at the seeded sizes, a floating-point
//! scalar goes through an increasing affine map whose slope is 1/√2 (`v * 0.7071… + 0.1`): ranges stay
//! ordered (`x_min < x_max`), and the new value has a full mantissa (1.5 becomes 1.1606601, which no
//! bfloat16 or half holds). An integer scalar becomes `2v + 1`, larger and odd; 0 and 1 (flags, booleans)
//! stay, and so does a value whose `2v + 1` its type cannot hold.
//!
//! The reference has never run at these values: an integer used as a loop bound over an array may take it
//! out of bounds. The test is therefore *derived* ([`ExtraTest::derived`]): where the reference fails on
//! it, `kt verify` leaves it out with a note instead of failing the verification.

use super::{DefaultTests, ExtraTest};
use crate::error::TunerError;
use crate::model::args::ParamSpec;
use crate::model::expr::Bindings;
use kt_record::DType;

/// The slope of the map of floating-point scalars: 1/√2, whose products have a full mantissa.
pub const FLOAT_SCALE: f64 = std::f64::consts::FRAC_1_SQRT_2;
/// The offset of the map of floating-point scalars (0 becomes 0.1, itself no binary fraction).
pub const FLOAT_SHIFT: f64 = 0.1;

/// A scalar's value in the varied-scalars test, None when it stays (a flag, or a value its type cannot
/// hold once changed).
pub fn varied_value(dtype: DType, value: f64) -> Option<f64> {
    let new = if dtype.is_float() {
        value * FLOAT_SCALE + FLOAT_SHIFT
    } else if value == 0.0 || value == 1.0 {
        return None; // a flag or a boolean: another value means another mode, not another input
    } else {
        2.0 * value + 1.0
    };
    let same = |v: f64| dtype.encode_scalar("", v).ok();
    match (same(new), same(value)) {
        (Some(n), Some(old)) if n != old => Some(new),
        _ => None,
    }
}

/// `value` as the kernel receives it: a float32 scalar at float32's shortest digits.
fn shown(dtype: DType, value: f64) -> String {
    match dtype {
        DType::Float32 | DType::Float16 | DType::Bfloat16 => format!("{}", value as f32),
        _ => format!("{value}"),
    }
}

impl DefaultTests<'_> {
    /// The kernel's scalars that are no size, no launch or tunable parameter and not named in an array's
    /// size or the problem size: what the varied-scalars test changes.
    fn varied_params(&self) -> Vec<&ParamSpec> {
        let sizes = self.sizes();
        let mentioned: Vec<String> = self
            .problem_size
            .iter()
            .chain(self.inputs.sizes.values())
            .flat_map(|e| kt_cuda::expression_identifiers(e))
            .collect();
        let tuned = |name: &str| {
            kt_cuda::LAUNCH_NAMES.contains(&name)
                || self
                    .configs
                    .iter()
                    .any(|c| c.0.iter().any(|(n, _)| n == name))
        };
        self.params
            .iter()
            .filter(|p| !p.is_pointer && matches!(p.dtype, Some((_, 1))))
            .filter(|p| !sizes.contains(&p.name) && !mentioned.contains(&p.name) && !tuned(&p.name))
            .collect()
    }

    /// The varied-scalars test; None when the kernel has no scalar to vary.
    pub fn varied_scalars(&self) -> Result<Option<ExtraTest>, TunerError> {
        let mut values: Bindings = self.base.clone();
        let mut changed = Vec::new();
        for p in self.varied_params() {
            let (Some((dtype, _)), Some(old)) = (p.dtype, self.base.get(&p.name)) else {
                continue;
            };
            if let Some(new) = varied_value(dtype, *old) {
                values.insert(p.name.clone(), new);
                changed.push(format!(
                    "{} {} -> {}",
                    p.name,
                    shown(dtype, *old),
                    shown(dtype, new)
                ));
            }
        }
        if changed.is_empty() {
            return Ok(None);
        }
        let test = self.inputs.make_test(
            self.params,
            &values,
            "varied-scalars",
            self.next_seed + 5,
            self.configs,
        )?;
        Ok(Some(ExtraTest {
            test,
            description: format!(
                "varied-scalars: {} (values the sidecar never gives)",
                changed.join(", ")
            ),
            derived: true,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{at_test_size, kernel};
    use super::*;

    #[test]
    fn saxpys_a_gets_a_value_bfloat16_cannot_hold_and_n_stays() {
        let (inputs, params, ps) = kernel("saxpy");
        let d = at_test_size(&inputs, &params, &ps);
        let t = d.varied_scalars().unwrap().unwrap();
        assert_eq!(t.test.id, "varied-scalars");
        assert!(t.derived);
        let s = t.test.scalars();
        assert_eq!(s["n"], 10007.0, "a size stays");
        let a = s["a"] as f32;
        assert_eq!(a, 1.160_660_1);
        // bfloat16 keeps the top 16 bits of a float32: this value is not one of its numbers
        assert_ne!(a.to_bits() & 0xFFFF_0000, a.to_bits());
        assert_eq!(
            t.description,
            "varied-scalars: a 1.5 -> 1.1606601 (values the sidecar never gives)"
        );
        // the sidecar's arrays are drawn as in the seeded tests
        assert_eq!(t.test.arrays().count(), 2);
    }

    #[test]
    fn mandelbrots_window_stays_ordered_and_its_iteration_cap_grows_odd() {
        let (inputs, params, ps) = kernel("mandelbrot");
        let d = at_test_size(&inputs, &params, &ps);
        let t = d.varied_scalars().unwrap().unwrap();
        let s = t.test.scalars();
        assert!(s["x_min"] < s["x_max"] && s["y_min"] < s["y_max"], "{s:?}");
        assert_eq!(s["max_iter"], 201.0);
        assert_eq!((s["width"], s["height"]), (97.0, 61.0));
        for name in ["x_min", "x_max", "y_min", "y_max", "max_iter"] {
            assert!(t.description.contains(name), "{}", t.description);
        }
        assert!(
            t.description.contains("max_iter 100 -> 201"),
            "{}",
            t.description
        );
    }

    #[test]
    fn a_kernel_whose_scalars_are_all_sizes_gets_none() {
        for name in ["vectorAdd", "matmul", "assign_clusters", "conv2d"] {
            let (inputs, params, ps) = kernel(name);
            let d = at_test_size(&inputs, &params, &ps);
            assert!(d.varied_scalars().unwrap().is_none(), "{name}");
        }
    }

    #[test]
    fn flags_and_values_their_type_cannot_hold_stay() {
        assert_eq!(varied_value(DType::Int32, 0.0), None);
        assert_eq!(varied_value(DType::Int32, 1.0), None);
        assert_eq!(varied_value(DType::Int32, 7.0), Some(15.0));
        assert_eq!(varied_value(DType::Int32, -3.0), Some(-5.0));
        // -1 maps to itself: nothing to vary
        assert_eq!(varied_value(DType::Int32, -1.0), None);
        // 2v + 1 past the type's largest value
        assert_eq!(varied_value(DType::Int32, (i32::MAX / 2 + 1) as f64), None);
        assert_eq!(
            varied_value(DType::Int32, (i32::MAX / 2) as f64),
            Some(i32::MAX as f64)
        );
        assert_eq!(varied_value(DType::Uint8, 200.0), None);
        assert_eq!(varied_value(DType::Uint8, 100.0), Some(201.0));
        // floats: increasing, with a full mantissa
        assert_eq!(varied_value(DType::Float32, 0.0), Some(0.1));
        let (lo, hi) = (
            varied_value(DType::Float64, -2.0).unwrap(),
            varied_value(DType::Float64, 1.0).unwrap(),
        );
        assert!(lo < hi);
    }

    #[test]
    fn a_tunable_or_launch_parameter_passed_as_a_scalar_stays() {
        use crate::model::param_value::ParamValue;
        use crate::model::space::Config;
        let (inputs, mut params, ps) = kernel("saxpy");
        params.push(ParamSpec {
            name: "unroll".into(),
            is_pointer: false,
            dtype: Some((DType::Int32, 1)),
        });
        let mut inputs = inputs;
        inputs.test.insert("unroll".into(), 4.0);
        let configs = [Config(vec![("unroll".into(), ParamValue::Int(4))])];
        let d = DefaultTests {
            configs: &configs,
            ..at_test_size(&inputs, &params, &ps)
        };
        let t = d.varied_scalars().unwrap().unwrap();
        assert_eq!(t.test.scalars()["unroll"], 4.0);
        assert!(!t.description.contains("unroll"), "{}", t.description);
    }
}
