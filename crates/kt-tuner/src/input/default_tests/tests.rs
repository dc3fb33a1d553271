//! Unit tests of the default test sets (sizes, odd and large tests, size rules).

use super::*;
use crate::model::args::{SizeChoice, TestSet};

/// The suite kernel `name` of naive-kernels/: its sidecar's inputs, parameters and problem size.
pub(super) fn kernel(name: &str) -> (SuiteInputs, Vec<ParamSpec>, Vec<String>) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../naive-kernels");
    let sc = kt_cuda::Sidecar::load(&root.join(format!("{name}.toml"))).unwrap();
    let parsed = kt_cuda::parse_file(&root.join(format!("{name}.cu"))).unwrap();
    let k = parsed.select_kernel(None).unwrap();
    let ps = sc.problem_size.iter().map(|p| p.text()).collect();
    (
        SuiteInputs::from_sidecar(&sc),
        ParamSpec::from_kernel(k),
        ps,
    )
}

fn matmul() -> (SuiteInputs, Vec<ParamSpec>, Vec<String>) {
    kernel("matmul")
}

pub(super) fn at_test_size<'a>(
    inputs: &'a SuiteInputs,
    params: &'a [ParamSpec],
    problem_size: &'a [String],
) -> DefaultTests<'a> {
    DefaultTests {
        inputs,
        params,
        problem_size,
        base: inputs.values_at(SizeChoice::Test, &BTreeMap::new()),
        configs: &[],
        next_seed: 4,
    }
}

fn scalar(t: &KernelTest, name: &str) -> f64 {
    t.scalars()[name]
}

#[test]
fn primes_above_are_found() {
    assert_eq!(next_prime_above(100), 101);
    assert_eq!(next_prime_above(77), 79);
    assert_eq!(next_prime_above(10007), 10009);
    assert_eq!(next_prime_above(1), 2);
    assert_eq!(next_prime_above(1 << 41) % 2, 1);
}

#[test]
fn the_odd_test_makes_the_matmuls_inner_dimension_odd() {
    let (inputs, params, ps) = matmul();
    assert_eq!(
        size_names(&inputs, &params, &ps),
        ["A_width", "A_height", "B_width"]
    );
    let d = at_test_size(&inputs, &params, &ps);
    let odd = d.odd().unwrap().unwrap();
    assert_eq!(odd.test.id, "odd");
    assert_eq!(scalar(&odd.test, "A_width"), 101.0);
    assert_eq!(scalar(&odd.test, "A_height"), 79.0);
    assert_eq!(scalar(&odd.test, "B_width"), 97.0);
    let c = odd.test.arrays().find(|a| a.name == "C").unwrap();
    assert_eq!(c.elements, 79 * 97);
    assert!(
        odd.description.contains("A_width=101"),
        "{}",
        odd.description
    );
}

#[test]
fn a_size_rule_moves_the_odd_test_to_the_nearest_valid_size_and_says_so() {
    let (mut inputs, params, problem) = matmul();
    inputs.size_rules.insert(
        "A_width".into(),
        kt_cuda::SizeRule {
            multiple_of: Some(4),
            min: None,
        },
    );
    let d = at_test_size(&inputs, &params, &problem);
    let odd = d.odd().unwrap().unwrap();
    // the next prime above the test size (101) moved up to a multiple of 4
    assert_eq!(scalar(&odd.test, "A_width"), 104.0);
    assert_eq!(scalar(&odd.test, "A_height"), 79.0);
    assert!(
        odd.description
            .contains("A_width=104 A_height=79 B_width=97 (nearest valid sizes, size_rules: A_width a multiple of 4)"),
        "{}",
        odd.description
    );
}

#[test]
fn the_large_test_fills_an_h100_within_bench_and_memory() {
    let (inputs, params, ps) = matmul();
    let d = at_test_size(&inputs, &params, &ps);
    let h100 = DeviceScale::new(132, 2048, 80 << 30);
    let large = d.large(&h100).unwrap().unwrap();
    let (w, h) = (
        scalar(&large.test, "B_width"),
        scalar(&large.test, "A_height"),
    );
    assert!(w * h >= h100.threads_to_fill, "{w} x {h}");
    assert!(w <= 4096.0 && h <= 4096.0);
    // 32x the test size, made odd (a multiple of 4 would hide a dropped tail): 2977 x 2465 covers
    // 8 x 132 x 2048 threads; the inner dimension stays
    assert_eq!((w, h), (2977.0, 2465.0));
    assert_eq!(scalar(&large.test, "A_width"), 100.0);
    // with little memory the test stays smaller, never above the cap
    let small = DeviceScale::new(132, 2048, 8 * 4 * 3 * 400 * 400);
    let large = d.large(&small).unwrap().unwrap();
    assert!(large.test.array_bytes() <= small.max_test_bytes);
    // a test that already fills the GPU gets no larger one
    let d = DefaultTests {
        base: inputs.values_at(SizeChoice::Bench, &BTreeMap::new()),
        ..d
    };
    assert!(d.large(&h100).unwrap().is_none());
}

fn vector_add() -> (SuiteInputs, Vec<ParamSpec>, Vec<String>) {
    kernel("vectorAdd")
}

#[test]
fn a_bench_test_whose_reference_would_run_too_long_is_halved_and_says_why() {
    let (inputs, params, ps) = vector_add();
    let d = at_test_size(&inputs, &params, &ps);
    let h100 = DeviceScale::new(132, 2048, 80 << 30);
    // a reference that took 50 ms at 1 M elements: at 2^28 (256 x the data) about 3300 s
    let budget = TimeBudget {
        measured_bytes: 12 << 20,
        measured_ms: 50.0,
        measured_at: "large (fills the GPU): n=1048576".into(),
        budget_ms: DEFAULT_TEST_LAUNCH_MS,
    };
    let capped = d.bench(&h100, Some(&budget)).unwrap().unwrap();
    assert!(budget.fits(&capped.test));
    // 4 x the data is 16 x the time (800 ms); 8 x would be 3.2 s
    assert_eq!(scalar(&capped.test, "n"), (1u64 << 22) as f64);
    let text = &capped.description;
    assert!(
        text.starts_with(
            "below the bench size (halved: at the bench size the reference would take"
        ) && text.contains("50.000 ms at large (fills the GPU): n=1048576")
            && text.ends_with("n=4194304"),
        "{text}"
    );
    // within the budget, the bench size itself
    let fast = TimeBudget {
        measured_ms: 0.01,
        ..budget
    };
    let bench = d.bench(&h100, Some(&fast)).unwrap().unwrap();
    assert!(
        bench.description.starts_with("bench size:"),
        "{}",
        bench.description
    );
}

#[test]
fn the_bench_test_is_at_the_bench_size_when_it_fits_and_halved_when_not() {
    let (inputs, params, ps) = matmul();
    let d = at_test_size(&inputs, &params, &ps);
    let h100 = DeviceScale::new(132, 2048, 80 << 30);
    let bench = d.bench(&h100, None).unwrap().unwrap();
    assert_eq!(bench.test.id, "bench");
    for n in ["A_width", "A_height", "B_width"] {
        assert_eq!(scalar(&bench.test, n), 4096.0, "{n}");
    }
    assert!(
        bench.description.starts_with("bench size:"),
        "{}",
        bench.description
    );
    // 3 x 4096^2 floats are 192 MiB: a GPU with 1 GiB (an eighth for a test) gets half of each
    // dimension the problem grows in; the inner dimension is no problem dimension and stays
    let small = DeviceScale::new(132, 2048, 1 << 30);
    let near = d.bench(&small, None).unwrap().unwrap();
    assert!(near.test.array_bytes() <= small.max_test_bytes);
    assert!(
        near.description.starts_with("near the bench size"),
        "{}",
        near.description
    );
    assert!(scalar(&near.test, "B_width") < 4096.0);
    // seeded tests already at the bench size: no bench test
    let at_bench = DefaultTests {
        base: inputs.values_at(SizeChoice::Bench, &BTreeMap::new()),
        ..d
    };
    assert!(at_bench.bench(&h100, None).unwrap().is_none());
}

#[test]
fn a_one_dimensional_output_gets_a_test_past_2_to_the_24() {
    let (inputs, params, ps) = vector_add();
    let d = at_test_size(&inputs, &params, &ps);
    let h100 = DeviceScale::new(132, 2048, 80 << 30);
    let seeded = vec![inputs.make_test(&params, &d.base, "gen1", 1, &[]).unwrap()];
    let past = d.past_float_index(&h100, &seeded).unwrap().unwrap();
    let n = scalar(&past.test, "n");
    assert!(
        n > FLOAT_EXACT_INTEGERS as f64 && n < 2.0 * FLOAT_EXACT_INTEGERS as f64 * 1.3,
        "{n}"
    );
    assert_eq!(
        n as u64 % 2,
        1,
        "odd, so an index rounded through float lands on a neighbour"
    );
    let c = past.test.arrays().find(|a| a.name == "c").unwrap();
    assert!(c.elements > FLOAT_EXACT_INTEGERS);
    // a test that already reaches past 2^24 (the bench test) makes it unneeded
    let bench = d.bench(&h100, None).unwrap().unwrap();
    assert!(d.past_float_index(&h100, &[bench.test]).unwrap().is_none());
    // and a GPU too small for it gets none
    let tiny = DeviceScale::new(132, 2048, 256 << 20);
    assert!(d.past_float_index(&tiny, &seeded).unwrap().is_none());
}

#[test]
fn a_matmul_has_no_one_dimensional_output() {
    let (inputs, params, ps) = matmul();
    let d = at_test_size(&inputs, &params, &ps);
    let h100 = DeviceScale::new(132, 2048, 80 << 30);
    assert!(d.past_float_index(&h100, &[]).unwrap().is_none());
}

#[test]
fn a_size_that_is_a_multiple_of_64_in_every_test_is_a_warning() {
    let (inputs, params, ps) = matmul();
    let sizes = size_names(&inputs, &params, &ps);
    let at = |w: f64| {
        let mut v = inputs.values_at(SizeChoice::Test, &BTreeMap::new());
        v.insert("A_width".into(), w);
        inputs.make_test(&params, &v, "t", 1, &[]).unwrap()
    };
    let tests = TestSet {
        tests: vec![at(128.0), at(256.0)],
    };
    let w = power_of_two_warnings(&tests.tests, &sizes);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("`A_width`") && w[0].contains("128, 256"),
        "{}",
        w[0]
    );
    assert!(power_of_two_warnings(&[at(128.0), at(101.0)], &sizes).is_empty());
}

#[test]
fn large_values_draws_randn_inputs_a_hundred_times_wider_and_compares_where_finite() {
    use crate::model::array_source::{ArraySource, Distribution};
    let (inputs, params, ps) = matmul();
    let plan = at_test_size(&inputs, &params, &ps);
    let t = plan.large_values().unwrap().unwrap();
    assert!(
        t.description.starts_with("large-values: A, B"),
        "{}",
        t.description
    );
    for a in t.test.arrays() {
        let ArraySource::Generate { dist, .. } = &a.source else {
            panic!("{} is generated", a.name);
        };
        let wide = *dist
            == Distribution::RandnScaled {
                sigma: LARGE_VALUES_SIGMA,
            };
        assert_eq!(wide, !a.is_output, "{}: {dist:?}", a.name);
    }
    assert!(t.test.tolerances.values().all(|t| t.finite_expected_only));
    assert_eq!(t.test.scalars(), plan.base);
}

#[test]
fn the_bench_test_takes_the_bench_scalars_too_not_only_its_sizes() {
    let (inputs, params, ps) = kernel("mandelbrot");
    let d = at_test_size(&inputs, &params, &ps);
    let h100 = DeviceScale::new(132, 2048, 80 << 30);
    let bench = d.bench(&h100, None).unwrap().unwrap();
    assert_eq!(scalar(&bench.test, "width"), 8192.0);
    assert_eq!(
        scalar(&bench.test, "max_iter"),
        1000.0,
        "the kernel is timed at 1000 iterations"
    );
}
