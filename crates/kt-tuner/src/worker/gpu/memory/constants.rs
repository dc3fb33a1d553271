//! A test's `__constant__` contents on the device, and writing them into a loaded module. Contents from a
//! .npy file are read once at upload into a plain buffer and copied into the symbol; generated contents are
//! filled straight into the symbol by the seeded fill kernel (the same seed gives the same values), sized
//! by the symbol when the test leaves the size to the module. Both happen before the launches of every
//! request: a module loaded afresh (`Unload`, a restarted worker) starts with its symbols zeroed, and one
//! module may serve tests whose constants differ. The kernel cannot write constant memory, so once per
//! request is enough.

use std::ffi::CString;

use cudarc::driver::result;
use cudarc::driver::sys::{self, CUresult};

use super::{DeviceMemory, Ptr, alloc, cuda, free};
use crate::model::args::ArraySource;
use crate::model::constants::ConstantArg;
use crate::worker::gpu::error::GpuError;

/// One constant of an uploaded test.
pub(super) struct DevConstant {
    arg: ConstantArg,
    /// The contents read from a file; `None` for generated contents (filled into the symbol directly).
    data: Option<Ptr>,
}

/// Frees a test's constant buffers (once).
pub(super) fn free_constants(constants: Vec<DevConstant>) {
    constants.into_iter().filter_map(|c| c.data).for_each(free);
}

impl DeviceMemory {
    /// The device side of a test's constants: file contents uploaded, generated ones only described.
    pub(super) fn upload_constants(
        &mut self,
        args: &[ConstantArg],
    ) -> Result<Vec<DevConstant>, GpuError> {
        let mut out = Vec::new();
        for arg in args {
            let data = match (&arg.source, arg.elements) {
                (ArraySource::Generate { .. }, _) => None,
                (ArraySource::Npy { .. }, None) => {
                    free_constants(out);
                    return Err(GpuError::Refused(format!(
                        "constant `{}`: contents from a file need their element count",
                        arg.name
                    )));
                }
                (ArraySource::Npy { .. }, Some(n)) => {
                    let bytes = (n as usize * arg.dtype.size()).max(1);
                    let what = format!("allocating constant {} ({bytes} bytes)", arg.name);
                    let p = match alloc(bytes, &what) {
                        Ok(p) => p,
                        Err(e) => {
                            free_constants(out);
                            return Err(e);
                        }
                    };
                    if let Err(e) = self.upload_source(p, arg.dtype, n, &arg.source) {
                        free(p);
                        free_constants(out);
                        return Err(e);
                    }
                    Some(p)
                }
            };
            out.push(DevConstant {
                arg: arg.clone(),
                data,
            });
        }
        Ok(out)
    }

    /// Writes test `test`'s constants into `module`. A symbol the module lacks is skipped: the compiler
    /// drops a `__constant__` variable no kernel of the module reads, and nothing can read it then.
    pub fn write_constants(&mut self, test: &str, module: sys::CUmodule) -> Result<(), GpuError> {
        let t = self
            .tests
            .get(test)
            .ok_or_else(|| GpuError::Missing(format!("test {test} not uploaded")))?;
        // (symbol, symbol bytes, what goes in) resolved first: filling needs `self` mutably
        let mut writes = Vec::new();
        for c in &t.constants {
            let Some((symbol, symbol_bytes)) = global(module, &c.arg.name)? else {
                tracing::debug!(constant = %c.arg.name, "not in the module: nothing reads it");
                continue;
            };
            let elements = c
                .arg
                .elements_for(symbol_bytes as u64)
                .map_err(GpuError::Refused)?;
            writes.push((symbol, elements, c.arg.clone(), c.data));
        }
        for (symbol, elements, arg, data) in writes {
            match (data, &arg.source) {
                (Some(buffer), _) => {
                    let bytes = elements as usize * arg.dtype.size();
                    // SAFETY: the symbol holds at least `bytes` (checked by `elements_for`), the buffer exactly.
                    unsafe { result::memcpy_dtod_sync(symbol, buffer, bytes) }
                        .map_err(|e| cuda(&format!("writing constant `{}`", arg.name), e))?;
                }
                (None, ArraySource::Generate { dist, seed }) => {
                    self.fill(symbol, arg.dtype, elements, dist, *seed)?;
                }
                (None, ArraySource::Npy { .. }) => {
                    return Err(GpuError::Missing(format!(
                        "constant `{}` was not uploaded",
                        arg.name
                    )));
                }
            }
        }
        Ok(())
    }
}

/// A module's `__constant__` (or `__device__`) symbol: its address and size; `None` when it has none by
/// that name.
fn global(module: sys::CUmodule, name: &str) -> Result<Option<(Ptr, usize)>, GpuError> {
    let c = CString::new(name).map_err(|e| GpuError::Refused(e.to_string()))?;
    // SAFETY: the module is loaded (the caller holds it from the launcher's map).
    match unsafe { result::module::get_global(module, c) } {
        Ok(found) => Ok(Some(found)),
        Err(e) if e.0 == CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
        Err(e) => Err(cuda(&format!("cuModuleGetGlobal({name})"), e)),
    }
}
