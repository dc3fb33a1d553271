//! How long a launch of a default test may take. The `bench` and `past-2^24` tests are sized by memory and
//! by the sidecar, not by what the reference costs there: a naive scan does O(n²) work, and at the 2^24
//! elements the past-2^24 test needs, its reference takes tens of seconds a launch (a verification runs it
//! twice, the candidate three times more). So the reference is timed once at the largest test already in
//! the set, and a larger test's launch is estimated from it as growing with the *square* of the test's
//! data: pessimistic for kernels whose work grows linearly (most) or as a square matmul's (1.5 in its
//! data), right for quadratic ones. It is an estimate, not a bound: a kernel whose work grows faster (a
//! matmul whose inner dimension grows more than its outer ones, about 2.4 from the large test to the
//! bench) may take a few times longer, and the per-test timeout still stops a runaway. A test whose
//! estimate is over the budget is shrunk (bench) or left out (past-2^24, which cannot shrink below its
//! size), and the output says so.

use crate::model::args::KernelTest;

/// The most a launch of the reference may take at a default test, in milliseconds: with the reference's
/// two launches and the candidate's three, a test costs a few seconds at most.
pub const DEFAULT_TEST_LAUNCH_MS: f64 = 1000.0;

/// The reference's time at one test, and the budget a larger test's estimated launch must fit.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeBudget {
    /// Bytes of the timed test's arrays.
    pub measured_bytes: u64,
    pub measured_ms: f64,
    /// Which test was timed, for the messages (`large (fills the GPU): n=2621568`).
    pub measured_at: String,
    pub budget_ms: f64,
}

impl TimeBudget {
    /// The reference's estimated time at `test`: the measured time grown with the square of the data
    /// (never below the measured time).
    pub fn estimate_ms(&self, test: &KernelTest) -> f64 {
        let ratio = (test.array_bytes() as f64 / self.measured_bytes.max(1) as f64).max(1.0);
        self.measured_ms * ratio * ratio
    }

    pub fn fits(&self, test: &KernelTest) -> bool {
        self.estimate_ms(test) <= self.budget_ms
    }

    /// Why `test` is over the budget: "the reference would take about 43 s a launch there (7.1 ms at
    /// large: n=262144, grown with the square of the data), over the 1 s a default test's launch may take".
    pub fn over(&self, test: &KernelTest) -> String {
        format!(
            "the reference would take about {} a launch there ({} at {}, grown with the square of the \
             data), over the {} a default test's launch may take",
            seconds(self.estimate_ms(test)),
            seconds(self.measured_ms),
            self.measured_at,
            seconds(self.budget_ms)
        )
    }
}

/// "43 s", "1.8 s", "7.1 ms".
fn seconds(ms: f64) -> String {
    if ms >= 10_000.0 {
        format!("{:.0} s", ms / 1e3)
    } else if ms >= 1000.0 {
        format!("{:.1} s", ms / 1e3)
    } else {
        format!("{ms:.3} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::args::{ArrayArg, ArraySource, Distribution, TestArg};
    use kt_record::DType;

    fn test_of(elements: u64) -> KernelTest {
        KernelTest {
            id: "t".into(),
            args: vec![TestArg::Array(ArrayArg {
                name: "x".into(),
                dtype: DType::Float32,
                lanes: 1,
                elements,
                source: ArraySource::Generate {
                    dist: Distribution::Rand,
                    seed: 1,
                },
                is_output: true,
                expected: None,
            })],
            tolerances: Default::default(),
            constants: Vec::new(),
        }
    }

    fn naive_scan_at_its_bench() -> TimeBudget {
        // the naive prefix_sum: 7.1 ms at n = 262144 on an H200
        TimeBudget {
            measured_bytes: 262_144 * 4,
            measured_ms: 7.1,
            measured_at: "large (fills the GPU): n=262144".into(),
            budget_ms: DEFAULT_TEST_LAUNCH_MS,
        }
    }

    #[test]
    fn a_quadratic_reference_past_2_to_the_24_is_over_the_budget_and_says_why() {
        let b = naive_scan_at_its_bench();
        let past = test_of((1 << 24) + 3);
        assert!(!b.fits(&past));
        let why = b.over(&past);
        assert!(
            why.contains("about 29 s a launch")
                && why.contains("7.100 ms at large (fills the GPU): n=262144")
                && why.contains("over the 1.0 s"),
            "{why}"
        );
        // four times the data is 16 times the time: 114 ms, within
        assert!(b.fits(&test_of(4 * 262_144)));
    }

    #[test]
    fn a_fast_linear_reference_reaches_its_bench_size() {
        // vectorAdd: 15 µs at 2.6 M elements; the bench's 2^28 is 100 times the data
        let b = TimeBudget {
            measured_bytes: 3 * 2_621_568 * 4,
            measured_ms: 0.015,
            measured_at: "large".into(),
            budget_ms: DEFAULT_TEST_LAUNCH_MS,
        };
        let mut bench = test_of(1 << 28);
        bench.args.push(bench.args[0].clone());
        bench.args.push(bench.args[0].clone());
        assert!(b.fits(&bench), "{}", b.estimate_ms(&bench));
        // a smaller test than the one timed is estimated at the time measured
        assert_eq!(b.estimate_ms(&test_of(10)), 0.015);
    }
}
