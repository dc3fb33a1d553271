//! The `__constant__` symbols' contents a generator returned, re-checked against the spec once the harness
//! wrote them (the harness shares its process with untrusted code): one `constants/<name>.npy` per symbol the
//! kernel reads, of its type and declared length, within constant memory.

use std::path::Path;

use kt_record::tests_format::ManifestConstant;

use super::error::GeneratorError;
use super::spec::{CONSTANT_MEMORY_BYTES, GeneratorSpec};
use super::store::{NpyEntry, invalid, npy_data_bytes};

/// A .npy header is at most this long (numpy pads it to a multiple of 64; version 1 caps it at 64 KiB).
const NPY_HEADER_BYTES: u64 = 64 << 10;

/// Checks the harness's constant entries against `spec.constants` and their files in `out`; returns them
/// in the spec's order.
pub(super) fn validate(
    spec: &GeneratorSpec,
    entries: Vec<ManifestConstant>,
    out: &Path,
) -> Result<Vec<ManifestConstant>, GeneratorError> {
    if entries.len() != spec.constants.len() {
        return Err(invalid(format!(
            "{} constants reported for {} `__constant__` symbols",
            entries.len(),
            spec.constants.len()
        )));
    }
    for (entry, symbol) in entries.iter().zip(&spec.constants) {
        let element = symbol.element()?;
        if entry.name != symbol.name
            || entry.dtype != element.dtype
            || entry.file != format!("constants/{}.npy", symbol.name)
            || entry.struct_name.as_deref() != element.struct_name
        {
            return Err(invalid(format!(
                "constant entry `{}` ({}, {}) does not match `__constant__` symbol `{}`",
                entry.name, entry.dtype, entry.file, symbol.name
            )));
        }
        let npy = NpyEntry {
            file: &entry.file,
            dtype: &entry.dtype,
            shape: entry.shape.as_ref(),
            lanes: element.lanes,
        };
        let bytes = npy_data_bytes(out, &npy, CONSTANT_MEMORY_BYTES + NPY_HEADER_BYTES)?;
        // structs count once, as in the declaration
        let elements = bytes / (element.item_size() * u64::from(element.lanes)).max(1);
        if bytes > CONSTANT_MEMORY_BYTES || symbol.length.is_some_and(|n| n != elements) {
            return Err(invalid(format!(
                "{}: {elements} elements ({bytes} bytes) for `__constant__` symbol `{}` of {} elements",
                entry.file,
                symbol.name,
                symbol
                    .length
                    .map_or("any number of".to_string(), |n| n.to_string())
            )));
        }
    }
    Ok(entries)
}
