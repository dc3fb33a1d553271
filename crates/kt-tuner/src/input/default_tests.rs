//! The tests `kt verify` runs when it generates inputs from a sidecar. Small seeded tests at the sidecar's
//! `test` size miss two classes of wrong kernels that look right there: tile-tail bugs (a loop unrolled by
//! two, a `k` loop over whole tiles) hide behind an even or tile-multiple size, and races (a missing
//! barrier) need many blocks in flight at once. So besides the seeded tests there are:
//!
//! - `odd`: every size — an integer scalar named in the problem size or an array's size — moved to the next
//!   prime above its value (odd and a multiple of no tile);
//! - `large`: the problem's dimensions scaled up (doubling) until it covers the GPU several times over
//!   (8 × SMs × threads per SM), each capped by the sidecar's `bench` value and the whole test by a share
//!   of the GPU's memory.
//!
//! Both are still far below the sizes a kernel is timed and used at, and a kernel can be right at every
//! small size and wrong at the real one (an index computed through `float` is exact only up to 2^24).
//! So unless the user asks for the quick set there are two more:
//!
//! - `bench`: every size at the sidecar's `bench` value, the size the kernel will be timed at (halved
//!   until the test fits the memory share);
//! - `past-2^24`: for an output whose length follows one size (`c` of `n` elements), that size grown
//!   until the output holds more than 2^24 elements (and made odd), when no test reaches that already.
//!
//! A size that is a multiple of 64 (hence of every power of two up to 64) in every test is a warning. A size the
//! sidecar's `size_rules` restricts (`n = { multiple_of = 4 }`) is moved to the nearest valid value above in
//! each of these tests, and the test's description says so.

mod time_budget;

use std::collections::BTreeMap;

use crate::error::TunerError;
use crate::model::args::{KernelTest, ParamSpec, SuiteInputs, TestArg};
use crate::model::expr::{Bindings, eval_number};
use crate::model::space::Config;
pub use time_budget::{DEFAULT_TEST_LAUNCH_MS, TimeBudget};

/// How much work fills the GPU, and how much memory a test may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceScale {
    /// Threads that cover the GPU several times over: 8 × SMs × resident threads per SM.
    pub threads_to_fill: f64,
    /// The most bytes a test's arrays may take.
    pub max_test_bytes: u64,
}

impl DeviceScale {
    /// From the device's multiprocessors, resident threads per multiprocessor and memory (a test takes at
    /// most an eighth of it: the tuner also holds expected outputs and the candidate's).
    pub fn new(sm_count: u32, threads_per_sm: u32, total_memory: u64) -> Self {
        DeviceScale {
            threads_to_fill: 8.0 * sm_count as f64 * threads_per_sm as f64,
            max_test_bytes: total_memory / 8,
        }
    }
}

/// The names among the kernel's integer scalars that are sizes: named in the problem size or in an
/// array's size expression.
pub fn size_names(
    inputs: &SuiteInputs,
    params: &[ParamSpec],
    problem_size: &[String],
) -> Vec<String> {
    let mentioned: Vec<String> = problem_size
        .iter()
        .chain(inputs.sizes.values())
        .flat_map(|e| kt_cuda::expression_identifiers(e))
        .collect();
    params
        .iter()
        .filter(|p| !p.is_pointer && p.dtype.is_some_and(|(d, _)| !d.is_float()))
        .filter(|p| mentioned.contains(&p.name))
        .map(|p| p.name.clone())
        .collect()
}

/// The smallest prime above `n`; past where trial division is cheap, the next odd number instead.
pub fn next_prime_above(n: u64) -> u64 {
    let mut c = n + 1;
    if c > 1 << 40 {
        return c | 1;
    }
    loop {
        if is_prime(c) {
            return c;
        }
        c += 1;
    }
}

fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    let mut d = 2;
    while d * d <= n {
        if n.is_multiple_of(d) {
            return false;
        }
        d += 1;
    }
    true
}

/// `values` with every size moved to the next prime above it.
pub fn odd_values(values: &Bindings, sizes: &[String]) -> Bindings {
    let mut out = values.clone();
    for name in sizes {
        if let Some(v) = out.get_mut(name) {
            *v = next_prime_above(v.max(0.0) as u64) as f64;
        }
    }
    out
}

/// The problem's thread count at `values`: the product of the problem size expressions. A problem size may
/// name a launch parameter (one block per tile: `ceil_div(width, 32) * block_size_x`); those take the first
/// configuration's values, and a launch name no configuration sets takes 1.
fn problem_threads(
    problem_size: &[String],
    values: &Bindings,
    configs: &[Config],
) -> Result<f64, TunerError> {
    let mut values = values.clone();
    if let Some(first) = configs.first() {
        for (name, v) in first.bindings() {
            values.entry(name).or_insert(v);
        }
    }
    for name in kt_cuda::LAUNCH_NAMES {
        values.entry((*name).to_string()).or_insert(1.0);
    }
    problem_size
        .iter()
        .map(|e| eval_number(e, &values))
        .try_fold(1.0, |acc, v| Ok(acc * v?.max(1.0)))
}

/// The default test set's extra tests and what each is, for the user.
#[derive(Debug, Clone)]
pub struct ExtraTest {
    pub test: KernelTest,
    /// `odd: n=10009` — the sizes that differ from the seeded tests.
    pub description: String,
}

/// Makes the extra tests of a verification.
pub struct DefaultTests<'a> {
    pub inputs: &'a SuiteInputs,
    pub params: &'a [ParamSpec],
    pub problem_size: &'a [String],
    /// The seeded tests' scalar values.
    pub base: Bindings,
    /// Sizes of arrays that follow the configuration are taken at their largest over these.
    pub configs: &'a [Config],
    /// The seed after the seeded tests'.
    pub next_seed: u64,
}

impl DefaultTests<'_> {
    fn sizes(&self) -> Vec<String> {
        size_names(self.inputs, self.params, self.problem_size)
    }

    fn describe(&self, label: &str, values: &Bindings) -> String {
        let changed: Vec<String> = self
            .sizes()
            .iter()
            .filter_map(|n| values.get(n).map(|v| format!("{n}={v}")))
            .collect();
        let ruled: Vec<String> = self
            .inputs
            .size_rules
            .iter()
            .filter(|(n, _)| values.contains_key(*n))
            .map(|(n, r)| format!("{n} {}", r.describe()))
            .collect();
        let rules = if ruled.is_empty() {
            String::new()
        } else {
            format!(" (nearest valid sizes, size_rules: {})", ruled.join("; "))
        };
        format!("{label}: {}{rules}", changed.join(" "))
    }

    /// `values` moved to the sizes the sidecar's `size_rules` allow.
    fn valid(&self, mut values: Bindings) -> Bindings {
        kt_cuda::apply_size_rules(&mut values, &self.inputs.size_rules);
        values
    }

    /// The test with every size odd (the next prime above the seeded tests' value); None when the kernel
    /// has no size scalars.
    pub fn odd(&self) -> Result<Option<ExtraTest>, TunerError> {
        let sizes = self.sizes();
        if sizes.is_empty() {
            return Ok(None);
        }
        let values = self.valid(odd_values(&self.base, &sizes));
        let test =
            self.inputs
                .make_test(self.params, &values, "odd", self.next_seed, self.configs)?;
        Ok(Some(ExtraTest {
            test,
            description: self.describe("odd (next primes)", &values),
        }))
    }

    /// The test whose problem covers the GPU several times over: the seeded sizes doubled until the
    /// problem reaches `scale.threads_to_fill`, each at most its `bench` value, the test's arrays within
    /// `scale.max_test_bytes`. None when the seeded tests already fill the GPU or cannot grow.
    pub fn large(&self, scale: &DeviceScale) -> Result<Option<ExtraTest>, TunerError> {
        // only the dimensions of the problem grow: an inner dimension or a filter width stays
        let mentioned: Vec<String> = self
            .problem_size
            .iter()
            .flat_map(|e| kt_cuda::expression_identifiers(e))
            .collect();
        let sizes: Vec<String> = self
            .sizes()
            .into_iter()
            .filter(|n| mentioned.contains(n))
            .collect();
        if sizes.is_empty()
            || problem_threads(self.problem_size, &self.base, self.configs)?
                >= scale.threads_to_fill
        {
            return Ok(None);
        }
        let mut chosen: Option<(Bindings, KernelTest)> = None;
        let mut factor = 1.0;
        for _ in 0..40 {
            factor *= 2.0;
            let values = self.valid(self.scaled(&sizes, factor));
            if chosen.as_ref().is_some_and(|(prev, _)| *prev == values) {
                break; // every size is at its bench value
            }
            let test = self.inputs.make_test(
                self.params,
                &values,
                "large",
                self.next_seed + 1,
                self.configs,
            )?;
            if test.array_bytes() > scale.max_test_bytes {
                break;
            }
            let fills =
                problem_threads(self.problem_size, &values, self.configs)? >= scale.threads_to_fill;
            chosen = Some((values, test));
            if fills {
                break;
            }
        }
        Ok(chosen.map(|(values, test)| ExtraTest {
            description: self.describe("large (fills the GPU)", &values),
            test,
        }))
    }

    fn scaled(&self, sizes: &[String], factor: f64) -> Bindings {
        let mut values = self.base.clone();
        for name in sizes {
            if let Some(v) = values.get_mut(name) {
                let cap = self
                    .inputs
                    .bench
                    .get(name)
                    .copied()
                    .unwrap_or(f64::MAX)
                    .max(*v);
                *v = (*v * factor).min(cap).round();
            }
        }
        values
    }
}

/// Elements past which a `float` no longer holds every integer: an index computed through it goes wrong.
pub const FLOAT_EXACT_INTEGERS: u64 = 1 << 24;

impl DefaultTests<'_> {
    /// The test at the sidecar's `bench` sizes, halved (the problem's dimensions) until it fits
    /// `scale.max_test_bytes` and, with a `budget`, until the reference's estimated launch fits it; None
    /// when the seeded tests are already there or the sidecar has no bench.
    pub fn bench(
        &self,
        scale: &DeviceScale,
        budget: Option<&TimeBudget>,
    ) -> Result<Option<ExtraTest>, TunerError> {
        let sizes = self.sizes();
        let mut values = self.base.clone();
        for name in &sizes {
            if let (Some(v), Some(b)) = (values.get_mut(name), self.inputs.bench.get(name)) {
                *v = *b;
            }
        }
        if values == self.base {
            return Ok(None);
        }
        let mentioned: Vec<String> = self
            .problem_size
            .iter()
            .flat_map(|e| kt_cuda::expression_identifiers(e))
            .collect();
        let mut halved_for_memory = false;
        let mut over_time: Option<String> = None;
        for _ in 0..40 {
            values = self.valid(values);
            let test = self.inputs.make_test(
                self.params,
                &values,
                "bench",
                self.next_seed + 2,
                self.configs,
            )?;
            let fits_memory = test.array_bytes() <= scale.max_test_bytes;
            let fits_time = budget.is_none_or(|b| b.fits(&test));
            if fits_memory && fits_time {
                let label = match (&over_time, halved_for_memory) {
                    (Some(why), _) => {
                        format!("below the bench size (halved: at the bench size {why})")
                    }
                    (None, true) => "near the bench size (halved to fit the GPU's memory)".into(),
                    (None, false) => "bench size".into(),
                };
                return Ok(Some(ExtraTest {
                    description: self.describe(&label, &values),
                    test,
                }));
            }
            if !fits_memory {
                halved_for_memory = true;
            } else if over_time.is_none() {
                over_time = budget.map(|b| b.over(&test));
            }
            let mut shrunk = false;
            for name in sizes.iter().filter(|n| mentioned.contains(n)) {
                if let (Some(v), Some(b)) = (values.get_mut(name), self.base.get(name))
                    && *v / 2.0 >= *b
                {
                    *v = (*v / 2.0).round();
                    shrunk = true;
                }
            }
            if !shrunk {
                break;
            }
        }
        Ok(None)
    }

    /// The test whose 1-D outputs (length set by one size) hold more than 2^24 elements, when none of
    /// `existing` reaches that and it fits `scale.max_test_bytes`.
    pub fn past_float_index(
        &self,
        scale: &DeviceScale,
        existing: &[KernelTest],
    ) -> Result<Option<ExtraTest>, TunerError> {
        let sizes = self.sizes();
        let longest = |name: &str| {
            existing
                .iter()
                .flat_map(|t| t.arrays())
                .filter(|a| a.name == name)
                .map(|a| a.elements)
                .max()
                .unwrap_or(0)
        };
        let mut values = self.base.clone();
        let mut grown = false;
        for output in &self.inputs.outputs {
            let Some(expr) = self.inputs.sizes.get(output) else {
                continue;
            };
            let named: Vec<String> = kt_cuda::expression_identifiers(expr)
                .into_iter()
                .filter(|n| sizes.contains(n))
                .collect();
            let [size] = named.as_slice() else {
                continue; // not one-dimensional in a size
            };
            if longest(output) > FLOAT_EXACT_INTEGERS {
                continue;
            }
            let elements = |values: &Bindings| eval_number(expr, values).unwrap_or(0.0);
            for _ in 0..64 {
                if elements(&values) > FLOAT_EXACT_INTEGERS as f64 {
                    break;
                }
                if let Some(v) = values.get_mut(size) {
                    *v = (v.max(1.0) * 2.0).round();
                }
            }
            if let Some(v) = values.get_mut(size) {
                *v = next_prime_above(*v as u64) as f64;
                grown = true;
            }
        }
        if !grown {
            return Ok(None);
        }
        let values = self.valid(values);
        let test = self.inputs.make_test(
            self.params,
            &values,
            "past-2^24",
            self.next_seed + 3,
            self.configs,
        )?;
        if test.array_bytes() > scale.max_test_bytes {
            return Ok(None);
        }
        Ok(Some(ExtraTest {
            description: self.describe("past 2^24 elements", &values),
            test,
        }))
    }
}

/// Sizes that are a multiple of 64 in every test: each a warning that tile-tail bugs go unseen.
pub fn power_of_two_warnings(tests: &[KernelTest], sizes: &[String]) -> Vec<String> {
    let mut per_size: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for t in tests {
        for arg in &t.args {
            if let TestArg::Scalar(s) = arg
                && sizes.contains(&s.name)
            {
                per_size.entry(s.name.as_str()).or_default().push(s.value);
            }
        }
    }
    per_size
        .into_iter()
        .filter(|(_, vs)| !vs.is_empty() && vs.iter().all(|v| *v >= 64.0 && v % 64.0 == 0.0))
        .map(|(name, vs)| {
            format!(
                "size `{name}` is a multiple of 64 in every test ({}): a kernel that assumes whole tiles \
                 passes unseen; add a test with an odd `{name}` (--size {name}=V)",
                vs.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::args::{SizeChoice, TestSet};

    fn matmul() -> (SuiteInputs, Vec<ParamSpec>, Vec<String>) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../naive-kernels");
        let sc = kt_cuda::Sidecar::load(&root.join("matmul.toml")).unwrap();
        let parsed = kt_cuda::parse_file(&root.join("matmul.cu")).unwrap();
        let k = parsed.select_kernel(None).unwrap();
        let ps = sc.problem_size.iter().map(|p| p.text()).collect();
        (
            SuiteInputs::from_sidecar(&sc),
            ParamSpec::from_kernel(k),
            ps,
        )
    }

    fn at_test_size<'a>(
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
        // 32x the test size: 2976 x 2464 covers 8 x 132 x 2048 threads; the inner dimension stays
        assert_eq!((w, h), (2976.0, 2464.0));
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
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../naive-kernels");
        let sc = kt_cuda::Sidecar::load(&root.join("vectorAdd.toml")).unwrap();
        let parsed = kt_cuda::parse_file(&root.join("vectorAdd.cu")).unwrap();
        let k = parsed.select_kernel(None).unwrap();
        let ps = sc.problem_size.iter().map(|p| p.text()).collect();
        (
            SuiteInputs::from_sidecar(&sc),
            ParamSpec::from_kernel(k),
            ps,
        )
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
}
