//! A launch request resolved against the device (`setup`: its function, encoded arguments and arrays,
//! the test's constants written), and the two things every checked launch does with its arrays: prepare
//! the outputs before it, compare everything after it.

use cudarc::driver::sys;

use super::launch::{LaunchError, Launcher};
use super::memory::{ArrayView, DeviceMemory, reset};
use crate::worker::gpu::error::GpuError;
use crate::worker::protocol::{LaunchArg, RunRequest};

/// A launch request resolved against the device: the function, its encoded arguments, the test's arrays.
pub(super) struct Setup {
    pub func: sys::CUfunction,
    pub params: Vec<Vec<u8>>,
    pub arrays: Vec<ArrayView>,
    pub occupancy: Option<f64>,
}

/// Also writes the test's `__constant__` contents into the module: every launch request runs on them.
pub(super) fn setup(
    mem: &mut DeviceMemory,
    launcher: &Launcher,
    r: &RunRequest,
) -> Result<Setup, LaunchError> {
    let inv = LaunchError::Invalid;
    let (func, module) = launcher
        .function(&r.module)
        .zip(launcher.module(&r.module))
        .ok_or_else(|| inv(GpuError::Missing(format!("module {} not loaded", r.module))))?;
    mem.write_constants(&r.test, module).map_err(inv)?;
    let mut params: Vec<Vec<u8>> = Vec::new();
    for a in &r.args {
        match a {
            LaunchArg::Array(name) => params.push(
                mem.working(&r.test, name)
                    .map_err(inv)?
                    .to_le_bytes()
                    .to_vec(),
            ),
            LaunchArg::Scalar(b) => params.push(b.clone()),
        }
    }
    let mut arrays = mem.views(&r.test).map_err(inv)?;
    for a in &mut arrays {
        if let Some((_, n)) = r.extents.iter().find(|(name, _)| name == &a.name) {
            a.elements = a.elements.min(*n);
        }
    }
    Ok(Setup {
        func,
        params,
        arrays,
        occupancy: launcher.occupancy(func, &r.dims),
    })
}

pub(super) fn crashed(m: GpuError) -> LaunchError {
    LaunchError::Crashed(m)
}

/// Outputs poisoned (or reset, for those the kernel accumulates into) before a checked launch.
pub(super) fn prepare_outputs(
    mem: &mut DeviceMemory,
    arrays: &[ArrayView],
) -> Result<(), LaunchError> {
    for a in arrays.iter().filter(|a| a.is_output) {
        if a.poison {
            mem.poison(a.work, a.dtype, a.elements).map_err(crashed)?;
        } else {
            reset(a).map_err(crashed)?;
        }
    }
    Ok(())
}

/// Every output compared with its expected values, every input with its pristine copy, every guard read.
pub(super) fn compare_all(
    mem: &mut DeviceMemory,
    arrays: &[ArrayView],
    outputs: &mut Vec<crate::check::verify::OutputReport>,
    inputs_modified: &mut Vec<String>,
) -> Result<Vec<crate::check::guard::GuardBreach>, LaunchError> {
    for a in arrays {
        if a.is_output {
            let Some(e) = a.expected else {
                return Err(LaunchError::Invalid(GpuError::Missing(format!(
                    "no expected values for output {}: run the reference first",
                    a.name
                ))));
            };
            outputs.push(mem.compare_output(a, e).map_err(crashed)?);
        } else if !mem.input_unchanged(a).map_err(crashed)? {
            inputs_modified.push(a.name.clone());
        }
    }
    mem.check_all_guards(arrays).map_err(crashed)
}
