//! Outputs compared by their total (`crate::check::total`): both buffers are read back in pieces and summed
//! on the host. Such outputs hold partial sums, so they are small; the pieces bound the host memory anyway.

use cudarc::driver::result;

use super::{ArrayView, DeviceMemory, Ptr, cuda};
use crate::check::total::{Total, compare_totals};
use crate::check::verify::{OutputReport, Tolerance, poison_bits};
use crate::worker::gpu::error::GpuError;
use kt_record::DType;

/// Bytes of an output read back at a time.
const PIECE: usize = 4 << 20;

/// A buffer on the device and how many elements of it to sum.
#[derive(Debug, Clone, Copy)]
pub(in crate::worker::gpu) struct Extent {
    pub ptr: Ptr,
    pub elements: u64,
}

impl Extent {
    pub fn of(ptr: Ptr, elements: u64) -> Extent {
        Extent { ptr, elements }
    }
}

impl DeviceMemory {
    /// An output's total after this launch (over this launch's extent) against the expected total (over
    /// the extent the expected values hold): the partials may lie where the reference's launch wrote none.
    pub(in crate::worker::gpu) fn compare_output_totals(
        &self,
        a: &ArrayView,
        expected: Ptr,
    ) -> Result<OutputReport, GpuError> {
        let got = Extent::of(a.work, a.elements);
        let expected = Extent::of(expected, a.expected_elements);
        self.compare_totals(&a.name, a.dtype, got, expected, a.tolerance, false)
    }

    /// Compares the total of `got` with the total of `expected` (each over its own extent) under `tol`;
    /// elements still holding the poison count as zero. `same_bits_agree` as in `compare`.
    pub(in crate::worker::gpu) fn compare_totals(
        &self,
        name: &str,
        dtype: DType,
        got: Extent,
        expected: Extent,
        tol: Tolerance,
        same_bits_agree: bool,
    ) -> Result<OutputReport, GpuError> {
        let got = total_of(got, dtype)?;
        let expected = total_of(expected, dtype)?;
        Ok(compare_totals(
            name,
            dtype,
            tol,
            &got,
            &expected,
            same_bits_agree,
        ))
    }
}

/// The total of a buffer's elements, poison skipped.
fn total_of(x: Extent, dtype: DType) -> Result<Total, GpuError> {
    let size = dtype.size();
    let poison = poison_bits(dtype);
    let per_piece = (PIECE / size).max(1);
    let mut buf = vec![0u8; per_piece.min(x.elements as usize) * size];
    let mut total = Total::default();
    let mut done = 0u64;
    while done < x.elements {
        let count = per_piece.min((x.elements - done) as usize);
        let bytes = &mut buf[..count * size];
        // SAFETY: the buffer holds at least `x.elements` elements of `dtype` (the caller's extent).
        unsafe { result::memcpy_dtoh_sync(bytes, x.ptr + done * size as u64) }
            .map_err(|e| cuda("reading an output back for its total", e))?;
        for element in bytes.chunks_exact(size) {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(element);
            let bits = u64::from_le_bytes(b);
            total.add(dtype.bits_to_f64(bits), bits == poison);
        }
        done += count as u64;
    }
    Ok(total)
}
