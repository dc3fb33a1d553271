use super::*;
use crate::check::verify::{OutputReport, compare_host};

/// A seeded normal generator (xorshift64* and Box-Muller): the same numbers on every machine.
struct Normal(u64);

impl Normal {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn next(&mut self) -> f32 {
        let (u1, u2) = (self.uniform(), self.uniform());
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
    }
}

/// `rows` float32 dot products of `k` randn pairs (a matmul's rows), the terms of each.
fn terms(rows: usize, k: usize) -> Vec<Vec<(f32, f32)>> {
    let mut g = Normal(0x9E37_79B9_7F4A_7C15);
    (0..rows)
        .map(|_| (0..k).map(|_| (g.next(), g.next())).collect())
        .collect()
}

/// Each row summed in float32 from `start` round the row, the products formed by `product` and each
/// partial sum rounded by `round`.
fn sums(
    rows: &[Vec<(f32, f32)>],
    start: usize,
    product: impl Fn(f32, f32) -> f32,
    round: impl Fn(f32) -> f32,
) -> Vec<f64> {
    rows.iter()
        .map(|r| {
            let k = r.len();
            let mut s = 0.0f32;
            for j in 0..k {
                let (a, b) = r[(j + start) % k];
                s = round(s + product(a, b));
            }
            s as f64
        })
        .collect()
}

fn plain(a: f32, b: f32) -> f32 {
    a * b
}

fn same(x: f32) -> f32 {
    x
}

/// The matmul sidecar's tolerance for C (rtol = atol = 1e-4), C being sums of `k` products (its flops
/// expression counts 2 per product, so `terms` is 2k as kt computes it).
fn matmul_c(k: usize) -> Tolerance {
    Tolerance {
        rtol: 1e-4,
        atol: 1e-4,
        terms: Some(2.0 * k as f64),
        ..Tolerance::default()
    }
}

fn compare(tol: Tolerance, got: &[f64], expected: &[f64]) -> OutputReport {
    let (tol, floor) = tol.raised_for_sums(DType::Float32, rms(expected));
    let mut r = compare_host(
        "C",
        DType::Float32,
        tol,
        got,
        &vec![false; got.len()],
        expected,
    );
    r.sum_floor = floor;
    r
}

#[test]
fn a_k4096_float32_dot_product_summed_in_a_rotated_order_passes() {
    let rows = terms(256, 4096);
    let expected = sums(&rows, 0, plain, same);
    for start in [1, 1365, 4095] {
        let got = sums(&rows, start, plain, same);
        let r = compare(matmul_c(4096), &got, &expected);
        assert!(r.passed(), "{}", r.describe());
    }
}

#[test]
fn elements_where_the_terms_cancel_fail_elementwise_and_pass_the_sum_floor() {
    // each row: products, then the same products negated: exactly zero, but its partial sums are not
    let mut rows = terms(64, 2048);
    for r in &mut rows {
        let neg: Vec<(f32, f32)> = r.iter().map(|&(a, b)| (-a, b)).collect();
        r.extend(neg);
    }
    // plus ordinary rows, which set the output's RMS
    rows.extend(terms(192, 4096));
    let expected = sums(&rows, 0, plain, same);
    let got = sums(&rows, 1365, plain, same);
    let elementwise = Tolerance {
        terms: None,
        ..matmul_c(4096)
    };
    let r = compare(elementwise, &got, &expected);
    assert!(
        !r.passed(),
        "the elementwise rule alone rejects a right kernel here"
    );
    let r = compare(matmul_c(4096), &got, &expected);
    assert!(r.passed(), "{}", r.describe());
}

#[test]
fn a_result_computed_in_half_precision_fails() {
    let rows = terms(256, 4096);
    let expected = sums(&rows, 0, plain, same);
    // inputs rounded to bfloat16 (the corpus's precision_downgrade), float32 accumulation
    let bf16 = |x: f32| f32::from_bits(x.to_bits() & 0xFFFF_0000);
    let got = sums(&rows, 0, |a, b| bf16(a) * bf16(b), same);
    let r = compare(matmul_c(4096), &got, &expected);
    assert!(!r.passed() && r.sum_floor.is_some(), "{}", r.describe());
    // accumulated in float16: every partial sum rounded to 11 significant bits
    let f16 = |x: f32| {
        if x == 0.0 {
            return x;
        }
        let q = 2f32.powi(x.abs().log2().floor() as i32 - 10);
        (x / q).round() * q
    };
    let got = sums(&rows, 0, plain, f16);
    let r = compare(matmul_c(4096), &got, &expected);
    assert!(!r.passed(), "{}", r.describe());
}

#[test]
fn a_dropped_product_fails_at_an_odd_inner_dimension() {
    let rows = terms(256, 101);
    let expected = sums(&rows, 0, plain, same);
    let got: Vec<f64> = rows
        .iter()
        .map(|r| r[..100].iter().map(|&(a, b)| a * b).sum::<f32>() as f64)
        .collect();
    let r = compare(matmul_c(101), &got, &expected);
    assert!(!r.passed(), "{}", r.describe());
}

#[test]
fn the_floor_is_named_in_the_verdict_text() {
    let rows = terms(16, 4096);
    let expected = sums(&rows, 0, plain, same);
    let mut got = expected.clone();
    got[3] += 1.0;
    let text = compare(matmul_c(4096), &got, &expected).describe();
    assert!(
        text.contains("tolerance raised to") && text.contains("sums of about 8192 terms"),
        "{text}"
    );
}

#[test]
fn integers_and_outputs_of_unknown_length_keep_their_tolerance() {
    let t = matmul_c(4096);
    assert_eq!(t.raised_for_sums(DType::Int32, Some(50.0)), (t, None));
    let unknown = Tolerance { terms: None, ..t };
    assert_eq!(
        unknown.raised_for_sums(DType::Float32, Some(50.0)),
        (unknown, None)
    );
    // a short sum of small values: the output's own atol is larger, nothing changes
    assert_eq!(t.raised_for_sums(DType::Float32, Some(0.1)).1, None);
}

#[test]
fn a_matmuls_elements_sum_twice_its_inner_dimension_by_its_flops() {
    use crate::model::args::{ArrayArg, ArraySource, Distribution, ScalarArg, TestArg};
    let array = |name: &str, elements: u64, is_output: bool| {
        TestArg::Array(ArrayArg {
            name: name.into(),
            dtype: DType::Float32,
            lanes: 1,
            elements,
            source: ArraySource::Generate {
                dist: Distribution::Randn,
                seed: 1,
            },
            is_output,
            expected: None,
        })
    };
    let scalar = |name: &str, v: i32| {
        TestArg::Scalar(ScalarArg {
            name: name.into(),
            dtype: DType::Int32,
            value: v as f64,
            bytes: v.to_le_bytes().to_vec(),
        })
    };
    let test = KernelTest {
        id: "bench".into(),
        args: vec![
            array("A", 4096 * 64, false),
            array("B", 4096 * 32, false),
            array("C", 64 * 32, true),
            scalar("A_width", 4096),
            scalar("A_height", 64),
            scalar("B_width", 32),
        ],
        tolerances: Default::default(),
        constants: Vec::new(),
    };
    let flops = "2 * A_width * A_height * B_width";
    let t = &with_sum_lengths(std::slice::from_ref(&test), Some(flops))[0];
    assert_eq!(t.tolerances["C"].terms, Some(8192.0));
    assert_eq!(t.tolerances["C"].rtol, Tolerance::default().rtol);
    assert!(with_sum_lengths(&[test], None)[0].tolerances.is_empty());
}
