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
//! Every test so far draws the sidecar's distributions and passes its scalars unchanged, so at the seeded
//! sizes there are three more, each changing what a kernel may wrongly assume of its data:
//!
//! - `large-values` (`large_values.rs`): the floating-point inputs a sidecar draws from a standard normal
//!   drawn at a hundred times its spread, compared where the reference is finite;
//! - `varied-scalars` (`varied_scalars.rs`): every scalar that is no size at a value the sidecar never gives
//!   it (a float with a full mantissa, an integer larger and odd);
//! - `skewed` (`skewed.rs`): every integer input the sidecar draws filled with one value.
//!
//! The varied-scalars and skewed tests are *derived* ([`ExtraTest::derived`]): the reference never ran at
//! such values and may fail there (an integer used as a loop bound), so where it does the test is left out
//! with a note.
//!
//! All of these are still far below the sizes a kernel is timed and used at, and a kernel can be right at
//! every small size and wrong at the real one (an index computed through `float` is exact only up to
//! 2^24). So unless the user asks for the quick set there are three more:
//!
//! - `bench`: every size and scalar at the sidecar's `bench` value, what the kernel will be timed at (the
//!   sizes halved until the test fits the memory share);
//! - `past-2^24`: for an output whose length follows one size (`c` of `n` elements), that size grown
//!   until the output holds more than 2^24 elements (and made odd), when no test reaches that already;
//! - `past-2GiB` (`past_2gib.rs`): one size grown until an array passes 2^31 bytes (a 32-bit byte offset
//!   wraps there), when the size's type holds it and the device's memory has room.
//!
//! A size that is a multiple of 64 (hence of every power of two up to 64) in every test is a warning. A size the
//! sidecar's `size_rules` restricts (`n = { multiple_of = 4 }`) is moved to the nearest valid value above in
//! each of these tests, and the test's description says so.

mod large_values;
mod past_2gib;
mod skewed;
mod time_budget;
mod varied_scalars;

pub use large_values::LARGE_VALUES_SIGMA;
pub use past_2gib::{Fitted, PAST_2GIB, PAST_2GIB_BYTES, resident_bytes};
pub use skewed::skewed_value;
pub use varied_scalars::varied_value;

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
    /// The most bytes the past-2GiB test's arrays may take (see `past_2gib.rs`).
    pub max_wide_test_bytes: u64,
    /// The device's memory: every test of a verification stays on it at once.
    pub total_memory: u64,
}

impl DeviceScale {
    /// From the device's multiprocessors, resident threads per multiprocessor and memory (a test takes at
    /// most an eighth of it: the tuner also holds expected outputs and the candidate's; the past-2GiB test
    /// a quarter, its arrays alone being 2 GiB each).
    pub fn new(sm_count: u32, threads_per_sm: u32, total_memory: u64) -> Self {
        DeviceScale {
            threads_to_fill: 8.0 * sm_count as f64 * threads_per_sm as f64,
            max_test_bytes: total_memory / 8,
            max_wide_test_bytes: total_memory / 4,
            total_memory,
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

/// The ids of the extra tests (the seeded ones are `gen1`, `gen2`, …).
pub const EXTRA_TEST_IDS: &[&str] = &[
    "odd",
    "large-values",
    "varied-scalars",
    "skewed",
    "large",
    "bench",
    "past-2^24",
    "past-2GiB",
];

/// The default test set's extra tests and what each is, for the user.
#[derive(Debug, Clone)]
pub struct ExtraTest {
    pub test: KernelTest,
    /// `odd: n=10009` — the sizes that differ from the seeded tests.
    pub description: String,
    /// Made of values the sidecar never gave (varied-scalars, skewed): the reference may not be defined
    /// there, so a reference that fails on the test leaves it out (with a note) rather than failing the
    /// verification.
    pub derived: bool,
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
            derived: false,
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
            derived: false,
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
                let grown = (*v * factor).min(cap).round();
                // odd below the cap: a large size that is a multiple of 4 (or of a warp) would hide a
                // tail a vectorised path drops only at large sizes
                *v = if grown < cap && grown % 2.0 == 0.0 {
                    grown + 1.0
                } else {
                    grown
                };
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
        // every value the kernel is timed at, not only the sizes: an iteration cap that binds only past the
        // test's max_iter = 100 is wrong at the bench's 1000
        for (name, b) in &self.inputs.bench {
            if let Some(v) = values.get_mut(name) {
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
                    derived: false,
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
            derived: false,
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
mod tests;
