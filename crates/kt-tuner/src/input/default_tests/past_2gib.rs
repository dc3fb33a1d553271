//! The past-2GiB test: one array larger than 2^31 bytes. A kernel that computes a byte offset, an index
//! times a row pitch or a flattened 2-D index in 32-bit arithmetic is right for every array below 2 GiB and
//! reads and writes far from its arrays past it, although `int n` allows the size (a float array of
//! 2^29 + 1 elements). A sidecar's bench size (vectorAdd's 2^28 floats: 1 GiB arrays) stays below it. So
//! one size that grows an array is grown alone, from the seeded tests' value, to the smallest value at
//! which the largest array passes 2^31 bytes, then made odd (the next prime), when the size's type still
//! holds it: the size that makes the smallest such test is taken.
//!
//! Memory: such a test is 2.1 GB for one array, 6.4 GB for vectorAdd's three and 10.7 GB for five, over the
//! eighth of an 80 GB H100 (10 GB) the other tests get. It may take a quarter of the device's memory
//! ([`DeviceScale::max_wide_test_bytes`]: 20 GB on an H100, 35 GB on an H200, nine arrays past 2 GiB). The
//! worker keeps every test of a verification on the device at once, each array twice (a working and a
//! pristine copy) and each output's expected values besides, so the test is also left out where all the
//! tests together would hold more than three quarters of the memory (the rest is the context's, kt's
//! buffers' and the candidate's). A test left out comes with a note saying why and how to run it alone.

use super::{DefaultTests, DeviceScale, ExtraTest, next_prime_above};
use crate::error::TunerError;
use crate::model::args::KernelTest;
use crate::model::expr::Bindings;
use kt_record::DType;

/// Bytes an array must pass: 2^31, where a signed 32-bit byte offset wraps.
pub const PAST_2GIB_BYTES: u64 = 1 << 31;

/// A device-sized test, or why it is left out (a note for the user).
#[derive(Debug, Clone)]
pub enum Fitted {
    Test(ExtraTest),
    LeftOut(String),
}

/// The most blocks a grid may have in y or z.
const GRID_YZ_MAX: f64 = 65_535.0;

/// What the worker holds on the device for `test`: every array twice (working and pristine copies) and the
/// expected values of each output.
pub fn resident_bytes(test: &KernelTest) -> u64 {
    let outputs: u64 = test
        .arrays()
        .filter(|a| a.is_output)
        .map(|a| a.bytes())
        .sum();
    2 * test.array_bytes() + outputs
}

/// The largest value of an integer scalar type a size may take (64-bit sizes stop at 2^40: a terabyte
/// array is past every GPU); None for floating-point types.
fn type_max(dtype: DType) -> Option<u64> {
    Some(match dtype {
        DType::Int8 => i8::MAX as u64,
        DType::Uint8 => u8::MAX as u64,
        DType::Int16 => i16::MAX as u64,
        DType::Uint16 => u16::MAX as u64,
        DType::Int32 => i32::MAX as u64,
        DType::Uint32 => u32::MAX as u64,
        DType::Int64 | DType::Uint64 => 1 << 40,
        DType::Float16 | DType::Bfloat16 | DType::Float32 | DType::Float64 => return None,
    })
}

fn largest_array(test: &KernelTest) -> u64 {
    test.arrays().map(|a| a.bytes()).max().unwrap_or(0)
}

/// "6.4 GB".
fn gb(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

/// The past-2GiB test's id.
pub const PAST_2GIB: &str = "past-2GiB";

impl DefaultTests<'_> {
    /// The test at `values`, as the past-2GiB test.
    fn past_2gib_test(&self, values: &Bindings) -> Result<KernelTest, TunerError> {
        self.inputs.make_test(
            self.params,
            values,
            PAST_2GIB,
            self.next_seed + 7,
            self.configs,
        )
    }

    /// The seeded values with `size` grown (alone) to the smallest odd value whose largest array passes
    /// 2^31 bytes, within the size's type; None when the type cannot hold one.
    fn grown_past_2gib(&self, size: &str) -> Result<Option<Bindings>, TunerError> {
        let Some(max) = self
            .params
            .iter()
            .find(|p| p.name == size)
            .and_then(|p| p.dtype)
            .and_then(|(d, _)| type_max(d))
        else {
            return Ok(None);
        };
        let Some(&start) = self.base.get(size) else {
            return Ok(None);
        };
        let at = |v: u64| {
            let mut values = self.base.clone();
            values.insert(size.to_string(), v as f64);
            values
        };
        let passes = |v: u64| -> Result<bool, TunerError> {
            Ok(largest_array(&self.past_2gib_test(&at(v))?) > PAST_2GIB_BYTES)
        };
        let mut lo = (start.max(1.0) as u64).min(max);
        if passes(lo)? {
            return Ok(None); // the seeded tests are past it already
        }
        // doubled until past (arrays stay within a few times 2 GiB: no element count near overflow), then
        // the smallest value past between the last two: sizes grow arrays monotonically
        let mut hi = loop {
            let next = lo.saturating_mul(2).min(max);
            if passes(next)? {
                break next;
            }
            if next == max {
                return Ok(None); // the type cannot hold a size that large
            }
            lo = next;
        };
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if passes(mid)? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let odd = next_prime_above(hi - 1);
        let values = self.valid(at(odd));
        Ok((values.get(size).is_some_and(|v| *v <= max as f64)).then_some(values))
    }

    /// The past-2GiB test, or why it is left out; None when a test of `existing` has an array past 2^31
    /// bytes already or no size can grow an array past it.
    pub fn past_2gib(
        &self,
        scale: &DeviceScale,
        existing: &[KernelTest],
    ) -> Result<Option<Fitted>, TunerError> {
        if existing.iter().any(|t| largest_array(t) > PAST_2GIB_BYTES) {
            return Ok(None);
        }
        let mentioned: Vec<String> = self
            .inputs
            .sizes
            .values()
            .flat_map(|e| kt_cuda::expression_identifiers(e))
            .collect();
        // a size of the problem's y or z dimension grown past 65,535 takes the grid past the device's
        // limit there (a grid's y and z are at most 65,535 blocks): grow another
        let beyond_x: Vec<String> = self
            .problem_size
            .iter()
            .skip(1)
            .flat_map(|e| kt_cuda::expression_identifiers(e))
            .collect();
        // a size the problem size names grows the launch with the data; another (softmax's row length)
        // grows each thread's serial loop instead, and 37 threads over 14 M columns take minutes: the
        // problem's sizes are taken first, the smallest test among them
        let in_problem: Vec<String> = self
            .problem_size
            .iter()
            .flat_map(|e| kt_cuda::expression_identifiers(e))
            .collect();
        let mut best: Option<(bool, String, Bindings, KernelTest)> = None;
        for size in self.sizes().into_iter().filter(|s| mentioned.contains(s)) {
            let Some(values) = self.grown_past_2gib(&size)? else {
                continue;
            };
            if beyond_x.contains(&size) && values.get(&size).is_some_and(|v| *v > GRID_YZ_MAX) {
                continue;
            }
            let test = self.past_2gib_test(&values)?;
            let outside = !in_problem.contains(&size);
            if best
                .as_ref()
                .is_none_or(|(o, _, _, b)| (outside, test.array_bytes()) < (*o, b.array_bytes()))
            {
                best = Some((outside, size, values, test));
            }
        }
        let best = best.map(|(_, size, values, test)| (size, values, test));
        let Some((size, values, test)) = best else {
            return Ok(None);
        };
        let largest = test
            .arrays()
            .max_by_key(|a| a.bytes())
            .map(|a| format!("{}: {} bytes", a.name, a.bytes()))
            .unwrap_or_default();
        let description = self.describe(&format!("past 2 GiB ({largest})"), &values);
        let alone = format!(
            "to test there alone: --size {size}={} --tests 1 --seeds-only",
            values.get(&size).copied().unwrap_or_default()
        );
        if test.array_bytes() > scale.max_wide_test_bytes {
            return Ok(Some(Fitted::LeftOut(format!(
                "the {description} test is left out: its arrays take {}, over the quarter of this GPU's {} \
                 a test this large may take; {alone} on a GPU with more memory",
                gb(test.array_bytes()),
                gb(scale.total_memory)
            ))));
        }
        let held = existing.iter().map(resident_bytes).sum::<u64>() + resident_bytes(&test);
        if held > scale.total_memory / 4 * 3 {
            return Ok(Some(Fitted::LeftOut(format!(
                "the {description} test is left out: with the other tests the GPU would hold about {} \
                 (every array twice, and the expected outputs), over three quarters of its {}; {alone}",
                gb(held),
                gb(scale.total_memory)
            ))));
        }
        Ok(Some(Fitted::Test(ExtraTest {
            test,
            description,
            derived: false,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{at_test_size, kernel};
    use super::*;

    const H100: u64 = 80 << 30;

    fn seeded(d: &DefaultTests) -> Vec<KernelTest> {
        vec![d.past_2gib_test(&d.base).unwrap()]
    }

    #[test]
    fn mandelbrot_grows_its_width_never_its_height_past_the_grids_65535_blocks_in_y() {
        let (inputs, params, ps) = kernel("mandelbrot");
        let d = at_test_size(&inputs, &params, &ps);
        let scale = DeviceScale::new(132, 2048, 141 << 30);
        let Some(Fitted::Test(t)) = d.past_2gib(&scale, &seeded(&d)).unwrap() else {
            panic!("mandelbrot gets a past-2GiB test on an H200");
        };
        let s = t.test.scalars();
        assert_eq!(s["height"], 61.0, "the seeded height: {s:?}");
        assert!(s["width"] * 61.0 * 4.0 > PAST_2GIB_BYTES as f64, "{s:?}");
    }

    #[test]
    fn softmax_grows_its_rows_the_launchs_size_not_each_threads_row_length() {
        // one thread a row: 37 rows of 14.5 M columns took two minutes on an H200; 536 k rows of 1001 do not
        let (inputs, params, ps) = kernel("softmax_forward");
        let d = at_test_size(&inputs, &params, &ps);
        let scale = DeviceScale::new(132, 2048, 141 << 30);
        let Some(Fitted::Test(t)) = d.past_2gib(&scale, &seeded(&d)).unwrap() else {
            panic!("softmax gets a past-2GiB test on an H200");
        };
        let s = t.test.scalars();
        assert_eq!(s["cols"], 1001.0, "the seeded row length: {s:?}");
        assert!(s["rows"] * 1001.0 * 4.0 > PAST_2GIB_BYTES as f64, "{s:?}");
    }

    #[test]
    fn vector_adds_n_grows_to_the_first_odd_size_past_2_gib() {
        let (inputs, params, ps) = kernel("vectorAdd");
        let d = at_test_size(&inputs, &params, &ps);
        let scale = DeviceScale::new(132, 2048, H100);
        let Some(Fitted::Test(t)) = d.past_2gib(&scale, &seeded(&d)).unwrap() else {
            panic!("vectorAdd gets a past-2GiB test on an H100");
        };
        assert_eq!(t.test.id, "past-2GiB");
        let n = t.test.scalars()["n"];
        // 2^29 floats are 2 GiB exactly: the next prime above
        assert_eq!(n, 536_870_923.0);
        assert!(n <= i32::MAX as f64);
        for a in t.test.arrays() {
            assert!(a.bytes() > PAST_2GIB_BYTES, "{}", a.name);
        }
        assert_eq!(
            t.description,
            "past 2 GiB (c: 2147483692 bytes): n=536870923"
        );
        assert!(t.test.array_bytes() <= scale.max_wide_test_bytes);
        // a test already that large makes it unneeded
        assert!(d.past_2gib(&scale, &[t.test]).unwrap().is_none());
    }

    #[test]
    fn the_histograms_int_n_cannot_reach_2_gib_of_bytes() {
        // one byte an element: n past 2^31 is past int's largest value
        let (inputs, params, ps) = kernel("histogram");
        let d = at_test_size(&inputs, &params, &ps);
        let scale = DeviceScale::new(132, 2048, H100);
        assert!(d.past_2gib(&scale, &seeded(&d)).unwrap().is_none());
    }

    #[test]
    fn the_same_histogram_with_a_64_bit_n_gets_one() {
        let (inputs, mut params, ps) = kernel("histogram");
        for p in &mut params {
            if p.name == "n" {
                p.dtype = Some((DType::Int64, 1));
            }
        }
        let d = at_test_size(&inputs, &params, &ps);
        let scale = DeviceScale::new(132, 2048, H100);
        let Some(Fitted::Test(t)) = d.past_2gib(&scale, &seeded(&d)).unwrap() else {
            panic!("a 64-bit n reaches 2 GiB of bytes");
        };
        // the next prime above 2^31
        assert_eq!(t.test.scalars()["n"], 2_147_483_659.0);
    }

    #[test]
    fn a_matmul_grows_the_size_that_makes_the_smallest_test() {
        let (inputs, params, ps) = kernel("matmul");
        let d = at_test_size(&inputs, &params, &ps);
        let scale = DeviceScale::new(132, 2048, H100);
        let Some(Fitted::Test(t)) = d.past_2gib(&scale, &seeded(&d)).unwrap() else {
            panic!("a matmul gets a past-2GiB test");
        };
        let s = t.test.scalars();
        // one size grown, the others at the seeded values (A_width 100, A_height 77, B_width 93)
        let grown: Vec<&str> = ["A_width", "A_height", "B_width"]
            .into_iter()
            .filter(|n| s[*n] != d.base[*n])
            .collect();
        assert_eq!(grown.len(), 1, "{s:?}");
        assert!(t.test.arrays().any(|a| a.bytes() > PAST_2GIB_BYTES));
        assert_eq!(s[grown[0]] as u64 % 2, 1);
    }

    #[test]
    fn a_gpu_too_small_for_it_gets_a_note_saying_how_to_test_there() {
        let (inputs, params, ps) = kernel("vectorAdd");
        let d = at_test_size(&inputs, &params, &ps);
        // 16 GB: a quarter is 4 GB, under vectorAdd's 6.4
        let small = DeviceScale::new(132, 2048, 16 << 30);
        let Some(Fitted::LeftOut(note)) = d.past_2gib(&small, &seeded(&d)).unwrap() else {
            panic!("left out on a 16 GB GPU");
        };
        assert!(
            note.starts_with("the past 2 GiB (c: 2147483692 bytes): n=536870923 test is left out")
                && note.contains("its arrays take 6.4 GB")
                && note.contains("--size n=536870923 --tests 1 --seeds-only"),
            "{note}"
        );
        // within its share, but not beside other tests that already fill the device
        let h100 = DeviceScale::new(132, 2048, H100);
        // four tests of three arrays just under 2 GiB each: 15 GB each on the device
        let mut big = d.past_2gib_test(&d.base).unwrap();
        for a in &mut big.args {
            if let crate::model::args::TestArg::Array(a) = a {
                a.elements = (1 << 29) - 1;
            }
        }
        let crowded = vec![big; 4];
        let Some(Fitted::LeftOut(note)) = d.past_2gib(&h100, &crowded).unwrap() else {
            panic!("left out beside 60 GB of other tests");
        };
        assert!(note.contains("over three quarters"), "{note}");
    }

    #[test]
    fn the_share_is_a_quarter_of_the_memory_and_resident_bytes_count_copies() {
        let s = DeviceScale::new(132, 2048, H100);
        assert_eq!(s.max_wide_test_bytes, H100 / 4);
        assert_eq!(s.max_test_bytes, H100 / 8);
        let (inputs, params, ps) = kernel("vectorAdd");
        let d = at_test_size(&inputs, &params, &ps);
        let t = d.past_2gib_test(&d.base).unwrap();
        // a, b, c of 10007 floats each, c the output: 2 x 3 + 1 arrays
        assert_eq!(resident_bytes(&t), 7 * 10007 * 4);
        assert_eq!(type_max(DType::Int32), Some(i32::MAX as u64));
        assert_eq!(type_max(DType::Float32), None);
    }
}
