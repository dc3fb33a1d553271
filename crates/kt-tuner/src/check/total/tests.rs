use super::*;
use crate::check::verify::compare_host;

/// float64 partial sums compared by their total with the expdist sidecar's tolerance (1e-8 both).
fn by_total() -> Tolerance {
    Tolerance {
        rtol: 1e-8,
        atol: 1e-8,
        total: true,
        ..Tolerance::default()
    }
}

const P: f64 = f64::NAN; // a poisoned slot's value (its flag says it is poison)

/// The reference tiling's partials: 3 blocks, the last 3 slots unused (left at their initial zeros).
const EXPECTED: [f64; 6] = [1.5, -0.25, 4.0, 0.0, 0.0, 0.0];

#[test]
fn partials_laid_out_otherwise_with_the_same_total_pass_and_unused_slots_are_not_failures() {
    // another tiling: 5 partials in other places, one slot never written (still poison)
    let got = [0.5, 1.0, P, 2.0, -0.25, 2.0];
    let poison = [false, false, true, false, false, false];
    let r = compare_host(
        "cross_term",
        DType::Float64,
        by_total(),
        &got,
        &poison,
        &EXPECTED,
    );
    assert!(r.passed(), "{}", r.describe());
    assert_eq!((r.mismatches, r.never_written, r.elements), (0, 0, 6));
    assert!(r.first_mismatch.is_none());
    let t = r.totals.unwrap();
    assert_eq!((t.expected, t.got), (5.25, 5.25));
    let text = r.describe();
    assert!(
        text.starts_with(
            "output cross_term (compared by its total): total 5.25 expected, 5.25 got"
        ),
        "{text}"
    );
    // element by element the same launch is wrong: the mode is what makes it pass
    let elementwise = Tolerance {
        total: false,
        ..by_total()
    };
    let r = compare_host(
        "cross_term",
        DType::Float64,
        elementwise,
        &got,
        &poison,
        &EXPECTED,
    );
    assert!(!r.passed());
    assert_eq!((r.mismatches, r.never_written), (6, 1));
    assert!(r.totals.is_none());
    assert!(
        r.describe()
            .contains("6 of 6 elements wrong (1 never written)")
    );
}

#[test]
fn a_total_off_beyond_the_tolerance_fails_with_both_totals_at_index_0() {
    let got = [1.5, -0.25, 4.001, 0.0, 0.0, 0.0];
    let r = compare_host(
        "cross_term",
        DType::Float64,
        by_total(),
        &got,
        &[false; 6],
        &EXPECTED,
    );
    assert!(!r.passed());
    assert_eq!(
        (r.mismatches, r.mismatches_above, r.never_written),
        (1, 1, 0)
    );
    let m = r.first_mismatch.clone().unwrap();
    assert_eq!(m.index, 0);
    assert_eq!(m.expected, 5.25);
    assert!((m.got - 5.251).abs() < 1e-12 && !m.never_written);
    assert!((r.max_abs_error - 1e-3).abs() < 1e-12);
    let text = r.describe();
    assert!(
        text.contains("(compared by its total): total 5.25 expected, 5.251")
            && text.contains("allowed"),
        "{text}"
    );
}

#[test]
fn the_relative_tolerance_scales_with_the_sum_of_magnitudes_not_the_cancelled_total() {
    // the partials cancel to a total of 1; rounding of partials of size 1e6 is not relative to 1
    let expected = [1e6, -1e6, 1.0];
    let got = [-1e6 + 1.0, 1e6 + 1e-3, 0.0];
    let r = compare_host("t", DType::Float64, by_total(), &got, &[], &expected);
    assert!(r.passed(), "{}", r.describe());
    assert!((r.totals.unwrap().allowed - (1e-8 + 1e-8 * (2e6 + 1.0))).abs() < 1e-12);
    let far = [-1e6 + 1.0, 1e6 + 1.0, 0.0];
    assert!(!compare_host("t", DType::Float64, by_total(), &far, &[], &expected).passed());
}

#[test]
fn a_launch_that_wrote_nothing_fails_as_never_written() {
    let r = compare_host(
        "cross_term",
        DType::Float64,
        by_total(),
        &[P; 6],
        &[true; 6],
        &EXPECTED,
    );
    assert!(!r.passed());
    assert_eq!((r.never_written, r.mismatches, r.elements), (6, 6, 6));
    assert!(r.first_mismatch.clone().unwrap().never_written);
    let text = r.describe();
    assert!(
        text.contains("nothing written, all 6 elements still poison; total 5.25 expected"),
        "{text}"
    );
    // even where the expected total is zero: no launch may leave the whole output untouched
    let zeros = [0.0; 6];
    assert!(!compare_host("z", DType::Float64, by_total(), &[P; 6], &[true; 6], &zeros).passed());
}

#[test]
fn a_nan_the_kernel_wrote_fails() {
    let got = [1.5, f64::NAN, 4.0, -0.25, 0.0, 0.0];
    let r = compare_host(
        "cross_term",
        DType::Float64,
        by_total(),
        &got,
        &[false; 6],
        &EXPECTED,
    );
    assert!(!r.passed());
    assert_eq!((r.mismatches, r.never_written), (1, 0));
    assert!(r.first_mismatch.clone().unwrap().got.is_nan());
    assert!(
        r.describe().contains("NaN (an element is NaN) got"),
        "{}",
        r.describe()
    );
    // only a rerun against the first run lets two NaN totals agree
    let nan = Total::of(&got, &[]);
    assert!(compare_totals("c", DType::Float64, by_total(), &nan, &nan, true).passed());
    assert!(!compare_totals("c", DType::Float64, by_total(), &nan, &nan, false).passed());
}

#[test]
fn a_rerun_with_poisoned_unused_slots_agrees_with_a_first_run_that_had_zeros_there() {
    let first = Total::of(&EXPECTED, &[]);
    let rerun = Total::of(
        &[1.5, -0.25, 4.0, P, P, P],
        &[false, false, false, true, true, true],
    );
    assert!(compare_totals("c", DType::Float64, by_total(), &rerun, &first, true).passed());
}

#[test]
fn integer_totals_compare_exactly() {
    let tol = Tolerance {
        total: true,
        ..Tolerance::default()
    };
    let expected = [3.0, 4.0, 0.0];
    assert!(compare_host("h", DType::Int32, tol, &[0.0, 7.0, 0.0], &[], &expected).passed());
    assert!(!compare_host("h", DType::Int32, tol, &[0.0, 8.0, 0.0], &[], &expected).passed());
}

#[test]
fn a_reference_that_overflowed_leaves_nothing_to_compare_in_the_large_values_test() {
    let tol = Tolerance {
        finite_expected_only: true,
        ..by_total()
    };
    let expected = [f64::INFINITY, 1.0];
    assert!(compare_host("t", DType::Float32, tol, &[3e38, 3e38], &[], &expected).passed());
    assert!(
        !compare_host(
            "t",
            DType::Float32,
            by_total(),
            &[3e38, 3e38],
            &[],
            &expected
        )
        .passed()
    );
    assert!(
        !compare_host(
            "t",
            DType::Float32,
            by_total(),
            &[f64::INFINITY],
            &[],
            &[1.0]
        )
        .passed()
    );
    assert!(
        compare_host(
            "t",
            DType::Float32,
            by_total(),
            &[f64::INFINITY],
            &[],
            &[f64::INFINITY]
        )
        .passed()
    );
}

#[test]
fn sums_are_compensated_and_infinities_kept() {
    let mut values = vec![1e16];
    values.extend([1.0; 1000]);
    values.push(-1e16);
    assert_eq!(Total::of(&values, &[]).value(), 1000.0);
    assert_eq!(Total::of(&[f64::INFINITY, 1.0], &[]).value(), f64::INFINITY);
    let t = Total::of(&[2.0, -3.0, P], &[false, false, true]);
    assert_eq!((t.value(), t.abs(), t.elements()), (-1.0, 5.0, 3));
    assert!(!t.nothing_written() && !Total::default().nothing_written());
}

#[test]
fn a_report_by_totals_survives_json() {
    let got = [f64::NAN, 1.0];
    let r = compare_host(
        "c",
        DType::Float32,
        by_total(),
        &got,
        &[false, false],
        &[1.0, 1.0],
    );
    let text = serde_json::to_string(&r).unwrap();
    let back: OutputReport = serde_json::from_str(&text).unwrap();
    assert!(back.totals.unwrap().got.is_nan());
    assert_eq!(back.describe(), r.describe());
    // an elementwise report writes no `totals` and reads back without one
    let plain = compare_host(
        "c",
        DType::Float32,
        Tolerance::default(),
        &[1.0],
        &[false],
        &[1.0],
    );
    let text = serde_json::to_string(&plain).unwrap();
    assert!(!text.contains("totals"), "{text}");
    assert_eq!(serde_json::from_str::<OutputReport>(&text).unwrap(), plain);
}
