//! Launching and timing: user modules loaded from CUBINs (with their register and memory facts), one
//! checked launch (a refused launch leaves the context usable, a fault found at synchronisation does not),
//! CUDA-event samples until the timing policy is satisfied (with an optional L2 flush before each), the
//! occupancy bound of a launch and the device's copy bandwidth.

use std::collections::HashMap;
use std::ffi::{CString, c_void};

use cudarc::driver::sys::{self, CUfunction_attribute as F, CUresult};
use cudarc::driver::{DriverError, result};

use super::memory::{Ptr, STREAM, alloc, cuda, free};
use crate::check::measure::{Baseline, TimingPolicy, TimingStats};
use crate::check::sampling::{FirstSample, LastLaunch, take_samples};
use crate::model::geometry::LaunchDims;
use crate::worker::gpu::error::GpuError;
use crate::worker::protocol::{DeviceInfo, FunctionInfo};

/// Why a launch did not complete.
pub(super) enum LaunchError {
    /// Refused by the driver; the configuration is at fault and the context is still usable.
    Invalid(GpuError),
    /// The kernel faulted (or the context failed): the worker must exit after replying.
    Crashed(GpuError),
}

/// Launch errors after which the context is still usable: the configuration itself is at fault.
fn is_config_error(e: &DriverError) -> bool {
    matches!(
        e.0,
        CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
            | CUresult::CUDA_ERROR_INVALID_VALUE
            | CUresult::CUDA_ERROR_INVALID_HANDLE
            | CUresult::CUDA_ERROR_NOT_SUPPORTED
    )
}

struct Loaded {
    module: sys::CUmodule,
    func: sys::CUfunction,
}

#[derive(Default)]
pub(super) struct Launcher {
    modules: HashMap<String, Loaded>,
    events: Option<(sys::CUevent, sys::CUevent)>,
    /// A buffer twice the L2's size, written before each sample when the policy flushes L2.
    flush: Option<(Ptr, usize)>,
    l2_bytes: usize,
    max_threads_per_sm: i32,
}

impl Launcher {
    /// Creates the timing events in the current context.
    pub fn init(&mut self, info: &DeviceInfo) -> Result<(), GpuError> {
        // Events with default flags: the `None` flags of some helpers disable timing.
        let e0 = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(|e| cuda("event", e))?;
        let e1 = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(|e| cuda("event", e))?;
        self.events = Some((e0, e1));
        self.l2_bytes = info.l2_bytes.max(0) as usize;
        self.max_threads_per_sm = info.max_threads_per_sm;
        Ok(())
    }

    /// Loads a module (once per key) and finds `kernel` in it: the symbol as the module names it (the
    /// lowered name of a C++ kernel).
    pub fn load(
        &mut self,
        key: String,
        kernel: &str,
        dynamic_shared: u32,
        cubin: &[u8],
    ) -> Result<FunctionInfo, GpuError> {
        let func = match self.modules.get(&key) {
            Some(l) => l.func,
            None => {
                let mut image = cubin.to_vec();
                image.push(0);
                // SAFETY: a CUBIN from NVRTC for this device's architecture.
                let module = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
                    .map_err(|e| cuda("loading the module", e))?;
                let name = CString::new(kernel).map_err(|e| GpuError::Refused(e.to_string()))?;
                // SAFETY: module just loaded.
                let func = unsafe { result::module::get_function(module, name) }.map_err(|e| {
                    GpuError::KernelNotFound {
                        kernel: kernel.to_string(),
                        cause: Box::new(cuda("cuModuleGetFunction", e)),
                    }
                })?;
                self.modules.insert(key.clone(), Loaded { module, func });
                func
            }
        };
        // SAFETY: func is a loaded function.
        let attr = |a| {
            unsafe { result::function::get_function_attribute(func, a) }
                .map_err(|e| cuda("function attribute", e))
        };
        if dynamic_shared > 48 * 1024 {
            // SAFETY: as above; raising the opt-in limit for dynamic shared memory above 48 KB.
            unsafe {
                result::function::set_function_attribute(
                    func,
                    F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic_shared as i32,
                )
            }
            .map_err(|e| {
                cuda(
                    &format!("allowing {dynamic_shared} bytes of dynamic shared memory"),
                    e,
                )
            })?;
        }
        Ok(FunctionInfo {
            registers: attr(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            local_bytes: attr(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            static_shared_bytes: attr(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            max_threads_per_block: attr(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        })
    }

    /// Unloads a module (its globals go with it); unknown keys are ignored.
    pub fn unload(&mut self, key: &str) {
        if let Some(l) = self.modules.remove(key) {
            // SAFETY: loaded by `load`, removed from the map so never used again.
            let _ = unsafe { result::module::unload(l.module) };
        }
    }

    /// The loaded function of a module.
    pub fn function(&self, key: &str) -> Option<sys::CUfunction> {
        self.modules.get(key).map(|l| l.func)
    }

    /// A loaded module (for its `__constant__` symbols).
    pub fn module(&self, key: &str) -> Option<sys::CUmodule> {
        self.modules.get(key).map(|l| l.module)
    }

    /// How many blocks of this launch fit on one SM at once, as the driver computes it.
    pub fn blocks_per_sm(&self, func: sys::CUfunction, dims: &LaunchDims) -> Option<i64> {
        let threads = (dims.block[0] * dims.block[1] * dims.block[2]) as i32;
        // SAFETY: func is loaded.
        unsafe {
            result::occupancy::max_active_block_per_multiprocessor(
                func,
                threads,
                dims.shared_mem as usize,
            )
        }
        .ok()
        .map(i64::from)
    }

    /// Achieved occupancy bound of a launch: active threads per SM over the maximum.
    pub fn occupancy(&self, func: sys::CUfunction, dims: &LaunchDims) -> Option<f64> {
        let threads = (dims.block[0] * dims.block[1] * dims.block[2]) as f64;
        let blocks = self.blocks_per_sm(func, dims)? as f64;
        Some(blocks * threads / self.max_threads_per_sm.max(1) as f64)
    }

    /// Launches the kernel once and checks both the launch and the last error; `timed` returns its time.
    pub fn launch(
        &self,
        func: sys::CUfunction,
        d: LaunchDims,
        params: &mut [Vec<u8>],
        timed: bool,
    ) -> Result<f64, LaunchError> {
        let mut ptrs: Vec<*mut c_void> = params
            .iter_mut()
            .map(|p| p.as_mut_ptr() as *mut c_void)
            .collect();
        let (e0, e1) = self
            .events
            .ok_or(LaunchError::Crashed(GpuError::NoContext))?;
        if timed {
            // SAFETY: events belong to this context.
            unsafe { result::event::record(e0, STREAM) }
                .map_err(|e| LaunchError::Crashed(cuda("event", e)))?;
        }
        // SAFETY: arguments were built from the test's device arrays and encoded scalars in signature order.
        if let Err(e) = unsafe {
            result::launch_kernel(
                func,
                (d.grid[0], d.grid[1], d.grid[2]),
                (d.block[0], d.block[1], d.block[2]),
                d.shared_mem,
                STREAM,
                &mut ptrs,
            )
        } {
            return Err(if is_config_error(&e) {
                LaunchError::Invalid(cuda("launch refused", e))
            } else {
                LaunchError::Crashed(cuda("launch", e))
            });
        }
        if timed {
            // SAFETY: as above.
            unsafe { result::event::record(e1, STREAM) }
                .map_err(|e| LaunchError::Crashed(cuda("event", e)))?;
            unsafe { result::event::synchronize(e1) }
                .map_err(|e| LaunchError::Crashed(cuda("kernel failed", e)))?;
            let ms = unsafe { result::event::elapsed(e0, e1) }
                .map_err(|e| LaunchError::Crashed(cuda("event timing", e)))?;
            return Ok(ms as f64);
        }
        result::ctx::synchronize().map_err(|e| LaunchError::Crashed(cuda("kernel failed", e)))?;
        Ok(0.0)
    }

    /// Samples until the policy is satisfied (see [`take_samples`]). `first` is the verifying run's sample
    /// when it counts as the first. With `prepare` (which poisons or resets the outputs), every sample
    /// starts from the state a checked launch starts from, and the last one is checked by the caller.
    #[allow(clippy::too_many_arguments)]
    pub fn time(
        &mut self,
        func: sys::CUfunction,
        dims: LaunchDims,
        params: &mut [Vec<u8>],
        policy: &TimingPolicy,
        best: Option<Baseline>,
        first: Option<FirstSample>,
        prepare: Option<&mut dyn FnMut() -> Result<(), LaunchError>>,
    ) -> Result<(TimingStats, LastLaunch), LaunchError> {
        if policy.flush_l2 {
            self.flush_buffer()?;
        }
        let this = &*self;
        take_samples(policy, best, first, prepare, &mut |index| {
            this.sample(func, dims, params, index)
        })
    }

    /// The L2 flush buffer, allocated on first use.
    fn flush_buffer(&mut self) -> Result<(Ptr, usize), LaunchError> {
        if let Some(f) = self.flush {
            return Ok(f);
        }
        let bytes = self.l2_bytes.max(1 << 20) * 2;
        let p = alloc(bytes, "L2 flush buffer").map_err(LaunchError::Crashed)?;
        self.flush = Some((p, bytes));
        Ok((p, bytes))
    }

    /// Evicts everything from L2 by writing a buffer twice its size (queued on the launch stream).
    pub fn flush_l2(&mut self) -> Result<(), LaunchError> {
        let (p, bytes) = self.flush_buffer()?;
        // SAFETY: writes the whole flush buffer.
        unsafe { result::memset_d8_async(p, 0, bytes, STREAM) }
            .map_err(|e| LaunchError::Crashed(cuda("L2 flush", e)))
    }

    /// One timed sample, after the L2 flush when the policy asks for one.
    fn sample(
        &self,
        func: sys::CUfunction,
        dims: LaunchDims,
        params: &mut [Vec<u8>],
        index: usize,
    ) -> Result<f64, LaunchError> {
        if let Some((p, bytes)) = self.flush {
            // SAFETY: writes the whole flush buffer, evicting the kernel's data from L2.
            unsafe { result::memset_d8_async(p, (index & 0xff) as u8, bytes, STREAM) }
                .map_err(|e| LaunchError::Crashed(cuda("L2 flush", e)))?;
        }
        self.launch(func, dims, params, true)
    }

    /// The FP32 rate of `fma` (kt's `kt_fma_rate`) on `sms` SMs, full occupancy, best of five, in GFLOP/s.
    pub fn fp32_rate(&mut self, fma: sys::CUfunction, sms: u32) -> Result<f64, GpuError> {
        const ITERS: i32 = 16384;
        const THREADS: u32 = 256;
        let blocks = sms.max(1) * 8;
        let (e0, e1) = self.events.ok_or(GpuError::NoContext)?;
        let sink = alloc(4, "FP32 rate sink")?;
        let mut params: Vec<Vec<u8>> = vec![
            sink.to_le_bytes().to_vec(),
            ITERS.to_le_bytes().to_vec(),
            1.0f32.to_le_bytes().to_vec(),
        ];
        let mut ptrs: Vec<*mut c_void> = params
            .iter_mut()
            .map(|p| p.as_mut_ptr() as *mut c_void)
            .collect();
        // SAFETY: the parameters match kt_fma_rate's signature; events of this context.
        let best = unsafe {
            (|| -> Result<f64, GpuError> {
                let mut best = f64::MAX;
                // the first launch warms the clocks up and is not counted
                for round in 0..6 {
                    result::event::record(e0, STREAM).map_err(|e| cuda("event", e))?;
                    result::launch_kernel(
                        fma,
                        (blocks, 1, 1),
                        (THREADS, 1, 1),
                        0,
                        STREAM,
                        &mut ptrs,
                    )
                    .map_err(|e| cuda("kt_fma_rate", e))?;
                    result::event::record(e1, STREAM).map_err(|e| cuda("event", e))?;
                    result::event::synchronize(e1).map_err(|e| cuda("kt_fma_rate", e))?;
                    let ms = result::event::elapsed(e0, e1).map_err(|e| cuda("event", e))? as f64;
                    if round > 0 {
                        best = best.min(ms);
                    }
                }
                Ok(best)
            })()
        };
        free(sink);
        let flops = crate::compile::device_kernels::FMA_FLOPS_PER_ROUND
            * ITERS as f64
            * (blocks * THREADS) as f64;
        Ok(flops / (best? * 1e-3) / 1e9)
    }

    /// Device-to-device copy bandwidth over `bytes` (bytes read plus written), best of five, in GB/s.
    pub fn bandwidth(&mut self, bytes: usize) -> Result<f64, GpuError> {
        let (e0, e1) = self.events.ok_or(GpuError::NoContext)?;
        let a = alloc(bytes, "bandwidth buffer")?;
        let b = alloc(bytes, "bandwidth buffer")?;
        // SAFETY: copies within the two allocations, events of this context.
        let best = unsafe {
            (|| -> Result<f64, GpuError> {
                result::memset_d8_sync(a, 1, bytes).map_err(|e| cuda("memset", e))?;
                result::memcpy_dtod_async(b, a, bytes, STREAM).map_err(|e| cuda("copy", e))?;
                let mut best = f64::MAX;
                for _ in 0..5 {
                    result::event::record(e0, STREAM).map_err(|e| cuda("event", e))?;
                    result::memcpy_dtod_async(b, a, bytes, STREAM).map_err(|e| cuda("copy", e))?;
                    result::event::record(e1, STREAM).map_err(|e| cuda("event", e))?;
                    result::event::synchronize(e1).map_err(|e| cuda("copy", e))?;
                    best = best
                        .min(result::event::elapsed(e0, e1).map_err(|e| cuda("event", e))? as f64);
                }
                Ok(best)
            })()
        };
        free(a);
        free(b);
        Ok(2.0 * bytes as f64 / (best? * 1e-3) / 1e9)
    }
}
