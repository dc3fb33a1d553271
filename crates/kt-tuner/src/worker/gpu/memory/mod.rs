//! Device memory and its checks. Each test's arrays live on the GPU three times: a working copy the kernel
//! runs on, a pristine copy to reset it from, and the expected outputs. Inputs are uploaded from .npy files
//! or generated on the GPU by kt's utility kernels (fill), outputs are poisoned before a verifying run,
//! compared on the GPU (only a few result words come back) and streamed to .npy files in chunks. The
//! working copy sits between guard regions (see `crate::check::guard`): filled with a pattern at upload and read
//! back after every verifying launch. Putting a test on the GPU is `upload`.

use std::collections::HashMap;
use std::ffi::{CString, c_void};

use cudarc::driver::result;
use cudarc::driver::sys;

use crate::check::guard::{GUARD_BYTES, GUARD_PATTERN, GuardBreach, GuardedLayout, Side};
use crate::check::sum_floor::SumFloor;
use crate::check::verify::{Mismatch, OutputReport, Tolerance, poison_bits};
use crate::compile::device_kernels::{
    self as dk, CMP_ABOVE, CMP_FIRST, CMP_MAX_ABS, CMP_MAX_REL, CMP_MISMATCHES, CMP_POISON,
    CMP_WORDS,
};
use crate::model::args::{ArrayArg, Distribution};
use crate::worker::gpu::error::GpuError;

mod constants;
mod reupload;
mod totals;
mod upload;

use totals::Extent;

use kt_record::DType;

/// Bytes of an input file read and copied to the GPU at a time.
const UPLOAD_PIECE: usize = 16 << 20;

pub(super) type Ptr = sys::CUdeviceptr;

/// The default stream: every launch and copy of the worker is ordered on it.
pub(super) const STREAM: sys::CUstream = std::ptr::null_mut();

pub(super) use crate::worker::gpu::error::cuda;

struct DevArray {
    meta: ArrayArg,
    /// Its input's source when it was read (`reupload`).
    input_stamp: Option<reupload::Stamp>,
    /// The allocation holding the working copy between its guards (what is freed).
    work_base: Ptr,
    /// The working copy: `work_base` + the guard before it.
    work: Ptr,
    pristine: Ptr,
    expected: Option<Ptr>,
    /// The expected values' source when they were read.
    expected_stamp: Option<reupload::Stamp>,
    /// Whether the reference proved it overwrites every element (then it is poisoned before verifying).
    poison: bool,
    /// How many elements `expected` holds (fewer than allocated when the size depends on the launch).
    expected_elements: u64,
    /// RMS of the expected values, for an output whose elements are sums (see `crate::check::sum_floor`).
    expected_rms: Option<f64>,
}

struct DevTest {
    arrays: Vec<DevArray>,
    tolerances: HashMap<String, Tolerance>,
    /// Contents of the `__constant__` symbols the kernel reads, written into a module before its launches.
    constants: Vec<constants::DevConstant>,
}

/// One array of a test as a run sees it.
#[derive(Debug, Clone)]
pub(super) struct ArrayView {
    pub name: String,
    pub work: Ptr,
    pub pristine: Ptr,
    pub expected: Option<Ptr>,
    pub dtype: DType,
    /// The elements this run uses: all of them, or its configuration's extent.
    pub elements: u64,
    /// The elements allocated.
    pub capacity: u64,
    /// The elements the expected values hold.
    pub expected_elements: u64,
    pub is_output: bool,
    /// Poisoned (not reset) before a verifying run.
    pub poison: bool,
    /// The output's tolerance, its `atol` raised when its elements are long sums (`sum_floor`).
    pub tolerance: Tolerance,
    pub sum_floor: Option<SumFloor>,
    /// Where the working copy's guards are.
    pub guards: Guards,
}

/// The two guard regions of a working copy.
#[derive(Debug, Clone, Copy)]
pub(super) struct Guards {
    pub before: Ptr,
    pub after: Ptr,
    pub after_bytes: u64,
}

impl Guards {
    fn of(work: Ptr, layout: GuardedLayout) -> Guards {
        Guards {
            before: work - GUARD_BYTES,
            after: work + layout.bytes,
            after_bytes: layout.after_bytes(),
        }
    }
}

impl ArrayView {
    pub fn bytes(&self) -> usize {
        self.elements as usize * self.dtype.size()
    }
}

#[derive(Default)]
pub(super) struct DeviceMemory {
    /// kt's own modules, newest last (each covers the dtypes of the tests that needed it).
    util: Vec<sys::CUmodule>,
    util_funcs: HashMap<String, sys::CUfunction>,
    tests: HashMap<String, DevTest>,
    /// The compare kernel's result words.
    cmp: Ptr,
    sm_count: i32,
}

impl DeviceMemory {
    /// Allocates the compare buffer in the current context.
    pub fn init(&mut self, sm_count: i32) -> Result<(), GpuError> {
        // SAFETY: plain allocation in the current context.
        self.cmp = unsafe { result::malloc_sync(CMP_WORDS * 8) }
            .map_err(|e| cuda("allocating the compare buffer", e))?;
        self.sm_count = sm_count;
        Ok(())
    }

    pub fn load_utilities(&mut self, cubin: &[u8]) -> Result<(), GpuError> {
        let mut image = cubin.to_vec();
        image.push(0);
        // SAFETY: a CUBIN image produced by NVRTC for this device.
        let m = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
            .map_err(|e| cuda("loading kt's utility kernels", e))?;
        self.util.push(m);
        Ok(())
    }

    fn util_fn(&mut self, name: &str) -> Result<sys::CUfunction, GpuError> {
        if let Some(f) = self.util_funcs.get(name) {
            return Ok(*f);
        }
        let c = CString::new(name).map_err(|e| GpuError::Refused(e.to_string()))?;
        for m in self.util.iter().rev() {
            // SAFETY: module is loaded.
            if let Ok(f) = unsafe { result::module::get_function(*m, c.clone()) } {
                self.util_funcs.insert(name.to_string(), f);
                return Ok(f);
            }
        }
        Err(GpuError::Missing(format!(
            "utility kernel {name} not loaded"
        )))
    }

    /// One of kt's utility kernels, for a caller outside this module (the FP32 rate).
    pub(in crate::worker::gpu) fn utility(
        &mut self,
        name: &str,
    ) -> Result<sys::CUfunction, GpuError> {
        self.util_fn(name)
    }

    /// Launches a utility kernel over `n` elements with a grid-stride loop.
    fn util_launch(&mut self, name: &str, n: u64, params: &mut [Vec<u8>]) -> Result<(), GpuError> {
        let f = self.util_fn(name)?;
        let sms = if self.sm_count > 0 { self.sm_count } else { 80 } as u64;
        let blocks = n.div_ceil(256).clamp(1, sms * 16) as u32;
        let mut ptrs: Vec<*mut c_void> = params
            .iter_mut()
            .map(|p| p.as_mut_ptr() as *mut c_void)
            .collect();
        // SAFETY: parameters match the utility kernel's signature (built by the callers below).
        unsafe { result::launch_kernel(f, (blocks, 1, 1), (256, 1, 1), 0, STREAM, &mut ptrs) }
            .map_err(|e| cuda(name, e))
    }

    /// Fills `elements` of `dtype` at `ptr` from a seeded distribution: element i depends only on the seed
    /// and i.
    fn fill(
        &mut self,
        ptr: Ptr,
        dtype: DType,
        elements: u64,
        dist: &Distribution,
        seed: u64,
    ) -> Result<(), GpuError> {
        let (code, x, y) = match dist {
            Distribution::Randn => (dk::DIST_RANDN, 0.0, 0.0),
            Distribution::RandnScaled { sigma } => (dk::DIST_RANDN, *sigma, 0.0),
            Distribution::Rand => (dk::DIST_RAND, 0.0, 0.0),
            Distribution::Zeros => (dk::DIST_CONST, 0.0, 0.0),
            Distribution::Ones => (dk::DIST_CONST, 1.0, 0.0),
            Distribution::Fill { value } => (dk::DIST_CONST, *value, 0.0),
            Distribution::RandInt { lo, hi } => (dk::DIST_RANDINT, *lo as f64, *hi as f64),
        };
        let mut p = vec![
            ptr.to_le_bytes().to_vec(),
            elements.to_le_bytes().to_vec(),
            code.to_le_bytes().to_vec(),
            x.to_le_bytes().to_vec(),
            y.to_le_bytes().to_vec(),
            seed.to_le_bytes().to_vec(),
        ];
        self.util_launch(&format!("kt_fill_{}", dk::suffix(dtype)), elements, &mut p)
    }

    /// The guard bytes around an array that no longer hold the pattern (each side restored for the next
    /// launch). A few hundred bytes per array come back: cheap beside the launch it checks.
    pub fn check_guards(&self, a: &ArrayView) -> Result<Vec<GuardBreach>, GpuError> {
        let mut breaches = Vec::new();
        for (side, ptr, bytes) in [
            (Side::Before, a.guards.before, GUARD_BYTES),
            (Side::After, a.guards.after, a.guards.after_bytes),
        ] {
            let mut host = vec![0u8; bytes as usize];
            // SAFETY: the guard lies inside the array's allocation (see `alloc_guarded`).
            unsafe { result::memcpy_dtoh_sync(&mut host, ptr) }
                .map_err(|e| cuda("reading a guard region", e))?;
            if let Some(b) = crate::check::guard::check(&a.name, side, &host) {
                breaches.push(b);
                fill_guard(ptr, bytes as usize)?;
            }
        }
        Ok(breaches)
    }

    /// Every guard breach of a run's arrays.
    pub fn check_all_guards(&self, arrays: &[ArrayView]) -> Result<Vec<GuardBreach>, GpuError> {
        let mut all = Vec::new();
        for a in arrays {
            all.extend(self.check_guards(a)?);
        }
        Ok(all)
    }

    /// Fills an array with the poison pattern of its dtype.
    pub fn poison(&mut self, ptr: Ptr, dtype: DType, n: u64) -> Result<(), GpuError> {
        let mut p = vec![
            ptr.to_le_bytes().to_vec(),
            n.to_le_bytes().to_vec(),
            poison_bits(dtype).to_le_bytes().to_vec(),
        ];
        self.util_launch(&format!("kt_poison_{}", dk::suffix(dtype)), n, &mut p)
    }

    /// Compares on the GPU; copies back only the five result words and, on mismatch, two elements.
    /// `same_bits_agree`: a rerun against the first run, where the same bits (the same NaN, poison left
    /// unwritten by both) agree; against a reference a NaN never passes. An output whose tolerance says
    /// `total` is compared by its total instead (`totals.rs`).
    #[allow(clippy::too_many_arguments)]
    pub fn compare(
        &mut self,
        name: &str,
        got: Ptr,
        expected: Ptr,
        dtype: DType,
        n: u64,
        tol: Tolerance,
        same_bits_agree: bool,
    ) -> Result<OutputReport, GpuError> {
        if tol.total {
            let (got, expected) = (Extent::of(got, n), Extent::of(expected, n));
            return self.compare_totals(name, dtype, got, expected, tol, same_bits_agree);
        }
        let init: [u64; CMP_WORDS] = [0, u64::MAX, 0, 0, 0, 0];
        // SAFETY: cmp holds CMP_WORDS u64.
        unsafe { result::memcpy_htod_sync(self.cmp, &init) }
            .map_err(|e| cuda("compare init", e))?;
        let mut p = vec![
            got.to_le_bytes().to_vec(),
            expected.to_le_bytes().to_vec(),
            n.to_le_bytes().to_vec(),
            tol.atol.to_le_bytes().to_vec(),
            tol.rtol.to_le_bytes().to_vec(),
            poison_bits(dtype).to_le_bytes().to_vec(),
            (u64::from(same_bits_agree) | (u64::from(tol.finite_expected_only) << 1))
                .to_le_bytes()
                .to_vec(),
            self.cmp.to_le_bytes().to_vec(),
        ];
        self.util_launch(&format!("kt_compare_{}", dk::suffix(dtype)), n, &mut p)?;
        let mut out = [0u64; CMP_WORDS];
        // SAFETY: synchronous copy of CMP_WORDS u64.
        unsafe { result::memcpy_dtoh_sync(&mut out, self.cmp) }
            .map_err(|e| cuda("compare result", e))?;
        let mut r = OutputReport {
            name: name.to_string(),
            elements: n,
            mismatches: out[CMP_MISMATCHES],
            mismatches_above: out[CMP_ABOVE],
            never_written: out[CMP_POISON],
            max_abs_error: f64::from_bits(out[CMP_MAX_ABS]),
            max_rel_error: f64::from_bits(out[CMP_MAX_REL]),
            first_mismatch: None,
            allowed_mismatches: (tol.max_mismatch_fraction * n as f64) as u64,
            sum_floor: None,
            totals: None,
        };
        if r.mismatches > 0 && out[CMP_FIRST] < n {
            let i = out[CMP_FIRST];
            let g = self.element(got, dtype, i)?;
            let e = self.element(expected, dtype, i)?;
            r.first_mismatch = Some(Mismatch {
                index: i,
                expected: e.0,
                got: g.0,
                never_written: g.1,
            });
        }
        Ok(r)
    }

    /// Compares an output with `expected` under its own tolerance. By its total, each buffer is summed over
    /// its own extent: this launch's partials may lie in places the reference's launch did not fill.
    pub fn compare_output(
        &mut self,
        a: &ArrayView,
        expected: Ptr,
    ) -> Result<OutputReport, GpuError> {
        let mut r = if a.tolerance.total {
            self.compare_output_totals(a, expected)?
        } else {
            // never past the expected values (a reference at another launch may have produced fewer)
            let n = a.elements.min(a.expected_elements);
            self.compare(&a.name, a.work, expected, a.dtype, n, a.tolerance, false)?
        };
        r.sum_floor = a.sum_floor;
        Ok(r)
    }

    /// Compares `a`'s output with an earlier run's of the same kernel (`first`): the same bits agree (the
    /// same computed NaN), poison never does. By its total when its tolerance says so (`compare`): atomics
    /// may add a run's partials in another order.
    pub fn compare_rerun(&mut self, a: &ArrayView, first: Ptr) -> Result<OutputReport, GpuError> {
        let n = a.elements.min(a.expected_elements);
        let mut r = self.compare(&a.name, a.work, first, a.dtype, n, a.tolerance, true)?;
        r.sum_floor = a.sum_floor;
        Ok(r)
    }

    /// RMS of the finite values of `n` elements at `ptr`; None for integers or when none is finite.
    pub fn rms(&mut self, ptr: Ptr, dtype: DType, n: u64) -> Result<Option<f64>, GpuError> {
        if !dtype.is_float() || n == 0 {
            return Ok(None);
        }
        let init = [0u64; CMP_WORDS];
        // SAFETY: cmp holds CMP_WORDS u64.
        unsafe { result::memcpy_htod_sync(self.cmp, &init) }.map_err(|e| cuda("rms init", e))?;
        let mut p = vec![
            ptr.to_le_bytes().to_vec(),
            n.to_le_bytes().to_vec(),
            self.cmp.to_le_bytes().to_vec(),
        ];
        self.util_launch(&format!("kt_sumsq_{}", dk::suffix(dtype)), n, &mut p)?;
        let mut out = [0u64; CMP_WORDS];
        // SAFETY: synchronous copy of CMP_WORDS u64.
        unsafe { result::memcpy_dtoh_sync(&mut out, self.cmp) }.map_err(|e| cuda("rms", e))?;
        let (sum, count) = (f64::from_bits(out[0]), out[1]);
        Ok((count > 0).then(|| (sum / count as f64).sqrt()))
    }

    /// The RMS an output's sum floor needs: only for outputs whose tolerance says they are sums.
    fn rms_if_sum(
        &mut self,
        tol: Option<&Tolerance>,
        ptr: Ptr,
        a: &ArrayArg,
        n: u64,
    ) -> Result<Option<f64>, GpuError> {
        if tol.is_none_or(|t| t.terms.is_none()) {
            return Ok(None);
        }
        self.rms(ptr, a.dtype, n)
    }

    /// Whether an input came out of a run byte for byte as it went in; a changed one is reset.
    pub fn input_unchanged(&mut self, a: &ArrayView) -> Result<bool, GpuError> {
        let same = self.same_bytes(&a.name, a.work, a.pristine, a.bytes() as u64)?;
        if !same {
            // later configurations must see the original inputs
            reset(a)?;
        }
        Ok(same)
    }

    /// Whether an output's values `got` are its initial contents byte for byte (a launch that left it as
    /// it found it).
    pub fn is_initial(&mut self, a: &ArrayView, got: Ptr) -> Result<bool, GpuError> {
        self.same_bytes(&a.name, got, a.pristine, a.bytes() as u64)
    }

    /// Whether every element of an output's working copy is a number (no NaN, no poison).
    pub fn all_numbers(&mut self, a: &ArrayView) -> Result<bool, GpuError> {
        let any = Tolerance {
            rtol: 0.0,
            atol: f64::INFINITY,
            max_mismatch_fraction: 0.0,
            terms: None,
            finite_expected_only: false,
            total: false,
        };
        let rep = self.compare(&a.name, a.work, a.work, a.dtype, a.elements, any, false)?;
        Ok(rep.mismatches == 0)
    }

    /// Whether two buffers of `bytes` hold the same bytes.
    fn same_bytes(&mut self, name: &str, a: Ptr, b: Ptr, bytes: u64) -> Result<bool, GpuError> {
        // widest word that divides the size: far fewer elements than comparing byte by byte
        let (word, words) = if bytes.is_multiple_of(8) {
            (DType::Uint64, bytes / 8)
        } else if bytes.is_multiple_of(4) {
            (DType::Uint32, bytes / 4)
        } else {
            (DType::Uint8, bytes)
        };
        let exact = Tolerance {
            rtol: 0.0,
            atol: 0.0,
            max_mismatch_fraction: 0.0,
            terms: None,
            finite_expected_only: false,
            total: false,
        };
        Ok(self
            .compare(name, a, b, word, words, exact, false)?
            .passed())
    }

    /// One element as f64, and whether it is the poison pattern.
    fn element(&self, ptr: Ptr, dtype: DType, i: u64) -> Result<(f64, bool), GpuError> {
        let size = dtype.size();
        let mut b = [0u8; 8];
        // SAFETY: index is inside the array (the compare kernel found it there).
        unsafe { result::memcpy_dtoh_sync(&mut b[..size], ptr + i * size as u64) }
            .map_err(|e| cuda("reading an element", e))?;
        let bits = u64::from_le_bytes(b);
        Ok((dtype.bits_to_f64(bits), bits == poison_bits(dtype)))
    }

    /// The working copy of an array, for a launch's arguments.
    pub fn working(&self, test: &str, name: &str) -> Result<Ptr, GpuError> {
        let t = self
            .tests
            .get(test)
            .ok_or_else(|| GpuError::Missing(format!("test {test} not uploaded")))?;
        t.arrays
            .iter()
            .find(|x| x.meta.name == name)
            .map(|d| d.work)
            .ok_or_else(|| GpuError::Missing(format!("no array `{name}` in test {test}")))
    }

    /// Every array of a test, in parameter order.
    pub fn views(&self, test: &str) -> Result<Vec<ArrayView>, GpuError> {
        let t = self
            .tests
            .get(test)
            .ok_or_else(|| GpuError::Missing(format!("test {test} not uploaded")))?;
        Ok(t.arrays
            .iter()
            .map(|a| {
                let own = t
                    .tolerances
                    .get(&a.meta.name)
                    .copied()
                    .unwrap_or_else(|| Tolerance::for_dtype(a.meta.dtype));
                let (tolerance, sum_floor) = own.raised_for_sums(a.meta.dtype, a.expected_rms);
                ArrayView {
                    name: a.meta.name.clone(),
                    work: a.work,
                    pristine: a.pristine,
                    expected: a.expected,
                    dtype: a.meta.dtype,
                    elements: a.meta.elements,
                    capacity: a.meta.elements,
                    expected_elements: a.expected_elements,
                    is_output: a.meta.is_output,
                    poison: a.poison,
                    guards: Guards::of(
                        a.work,
                        GuardedLayout::new((a.meta.bytes() as usize).max(1) as u64),
                    ),
                    tolerance,
                    sum_floor,
                }
            })
            .collect())
    }

    /// Records a reference run's findings: the expected values of each output (as many elements as the
    /// reference's `run` views use, their RMS for an output that is a sum), and which outputs are fully
    /// overwritten by the kernel (poisoned from now on).
    pub fn set_expected(
        &mut self,
        test: &str,
        expected: &HashMap<String, Ptr>,
        poisonable: &[String],
        run: &[ArrayView],
    ) -> Result<(), GpuError> {
        let Some(t) = self.tests.remove(test) else {
            return Ok(());
        };
        let mut t = t;
        let mut failed = Ok(());
        for a in &mut t.arrays {
            if let Some(e) = expected.get(&a.meta.name) {
                a.expected = Some(*e);
                // computed here, not read from a file: a later upload reads the test's own again
                a.expected_stamp = None;
                if let Some(v) = run.iter().find(|v| v.name == a.meta.name) {
                    a.expected_elements = v.elements;
                }
                match self.rms_if_sum(
                    t.tolerances.get(&a.meta.name),
                    *e,
                    &a.meta,
                    a.expected_elements,
                ) {
                    Ok(r) => a.expected_rms = r,
                    Err(m) => failed = Err(m),
                }
            }
            a.poison = poisonable.contains(&a.meta.name);
        }
        self.tests.insert(test.to_string(), t);
        failed
    }
}

/// A device allocation of `bytes`; `what` names it in the error.
pub(super) fn alloc(bytes: usize, what: &str) -> Result<Ptr, GpuError> {
    // SAFETY: plain allocation in the current context.
    unsafe { result::malloc_sync(bytes) }.map_err(|e| cuda(what, e))
}

/// An allocation with guard regions around `bytes`, the guards filled with the pattern: (the allocation
/// to free, the 256-byte aligned interior pointer the kernel gets).
pub(super) fn alloc_guarded(bytes: usize, what: &str) -> Result<(Ptr, Ptr), GpuError> {
    let layout = GuardedLayout::new(bytes as u64);
    let base = alloc(layout.total() as usize, what)?;
    // the array's own bytes are overwritten by the upload; filling all of it is one call
    if let Err(e) = fill_guard(base, layout.total() as usize) {
        free(base);
        return Err(e);
    }
    Ok((base, base + layout.offset()))
}

/// Writes the guard pattern over `bytes` at `ptr`.
fn fill_guard(ptr: Ptr, bytes: usize) -> Result<(), GpuError> {
    // SAFETY: the caller's range lies inside one allocation.
    unsafe { result::memset_d8_sync(ptr, GUARD_PATTERN, bytes) }
        .map_err(|e| cuda("filling a guard region", e))
}

/// Frees an allocation made by `alloc` (once).
pub(super) fn free(p: Ptr) {
    // SAFETY: allocated by malloc_sync and freed once by the caller's bookkeeping.
    let _ = unsafe { result::free_sync(p) };
}

/// A new device copy of an array's working contents (allocated at the array's full size, so a later
/// run with a larger extent never reads past it).
pub(super) fn copy_of(a: &ArrayView, what: &str) -> Result<Ptr, GpuError> {
    let p = alloc((a.capacity as usize * a.dtype.size()).max(1), what)?;
    // SAFETY: p holds the capacity, work at least the bytes of this run's extent.
    unsafe { result::memcpy_dtod_sync(p, a.work, a.bytes().max(1)) }
        .map_err(|e| cuda("copy", e))?;
    Ok(p)
}

/// Resets an array's working copy from its pristine copy.
pub(super) fn reset(a: &ArrayView) -> Result<(), GpuError> {
    // SAFETY: same-size device buffers.
    unsafe { result::memcpy_dtod_sync(a.work, a.pristine, a.bytes()) }.map_err(|e| cuda("reset", e))
}

/// Resets every output of a test to its initial contents.
pub(super) fn reset_outputs(arrays: &[ArrayView]) -> Result<(), GpuError> {
    arrays.iter().filter(|a| a.is_output).try_for_each(reset)
}

/// Streams a device buffer into a .npy file through a bounded host buffer (outputs can be gigabytes).
pub(super) fn write_npy_from_device(
    path: &std::path::Path,
    dtype: DType,
    shape: &[u64],
    src: Ptr,
    bytes: usize,
) -> Result<(), GpuError> {
    use std::io::Write;
    const CHUNK: usize = 64 << 20;
    let io = |e: std::io::Error| GpuError::Io(format!("writing {}: {e}", path.display()));
    let file = std::fs::File::create(path).map_err(io)?;
    let mut w = std::io::BufWriter::new(file);
    w.write_all(&kt_record::tests_format::npy::header(dtype, shape))
        .map_err(io)?;
    let data_bytes = shape.iter().product::<u64>() as usize * dtype.size();
    let mut buf = vec![0u8; CHUNK.min(bytes).min(data_bytes.max(1))];
    let mut done = 0usize;
    while done < data_bytes {
        let n = buf.len().min(data_bytes - done);
        // SAFETY: src holds at least data_bytes bytes; the host slice holds n.
        unsafe { result::memcpy_dtoh_sync(&mut buf[..n], src + done as u64) }
            .map_err(|e| cuda("reading an output back", e))?;
        w.write_all(&buf[..n]).map_err(io)?;
        done += n;
    }
    w.flush().map_err(io)?;
    Ok(())
}
