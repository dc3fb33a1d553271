//! The launch facts Nsight Compute reports under `launch__*` (and its theoretical occupancy), computed from
//! the function's attributes, the launch's dimensions and the device's limits: these need no counters, and
//! CUPTI does not provide them because ncu derives them itself. Names are ncu's so a profile reads the same
//! whichever collected it.

use cudarc::driver::result;
use cudarc::driver::sys::{self, CUdevice_attribute as A, CUfunction_attribute as F};

use crate::model::geometry::LaunchDims;
use crate::worker::gpu::error::GpuError;

/// The device limits the occupancy calculation needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct SmLimits {
    pub sm_count: i64,
    pub max_threads_per_sm: i64,
    pub max_blocks_per_sm: i64,
    pub registers_per_sm: i64,
    pub shared_per_sm: i64,
    /// Shared memory the driver reserves for each block (1 KB from Ampere on).
    pub reserved_shared_per_block: i64,
}

impl SmLimits {
    /// The current device's limits (the worker's context is current).
    pub fn of_current_device() -> Result<SmLimits, GpuError> {
        let mut dev: sys::CUdevice = 0;
        // SAFETY: writes one device handle of the current context.
        unsafe { sys::cuCtxGetDevice(&mut dev) }
            .result()
            .map_err(|e| GpuError::Cuda {
                context: "cuCtxGetDevice".into(),
                code: format!("{e:?}"),
            })?;
        // SAFETY: dev is valid.
        let a = |attr| unsafe { result::device::get_attribute(dev, attr) }.map(i64::from);
        Ok(SmLimits {
            sm_count: a(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).unwrap_or(0),
            max_threads_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
                .unwrap_or(2048),
            max_blocks_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)
                .unwrap_or(32),
            registers_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)
                .unwrap_or(65536),
            shared_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
                .unwrap_or(0),
            reserved_shared_per_block: a(A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)
                .unwrap_or(0),
        })
    }
}

/// What the function itself uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct FunctionUse {
    pub registers: i64,
    pub static_shared: i64,
}

impl FunctionUse {
    pub fn of(func: sys::CUfunction) -> Result<FunctionUse, GpuError> {
        // SAFETY: func is a loaded function.
        let attr = |a| unsafe { result::function::get_function_attribute(func, a) }.map(i64::from);
        Ok(FunctionUse {
            registers: attr(F::CU_FUNC_ATTRIBUTE_NUM_REGS)
                .map_err(|e| function_attribute("registers", e))?,
            static_shared: attr(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
                .map_err(|e| function_attribute("static shared memory", e))?,
        })
    }
}

/// A function attribute the driver would not give.
fn function_attribute(what: &str, e: cudarc::driver::DriverError) -> GpuError {
    GpuError::Cuda {
        context: format!("function attribute ({what})"),
        code: format!("{:?}", e.0),
    }
}

/// The names [`launch_facts`] answers; every other metric is CUPTI's.
pub(super) const FACT_NAMES: [&str; 11] = [
    "launch__registers_per_thread",
    "launch__block_size",
    "launch__grid_size",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__waves_per_multiprocessor",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "sm__maximum_warps_per_active_cycle_pct",
];

/// The metrics among `metrics` that need counters.
pub(super) fn counted_metrics(metrics: &[String]) -> Vec<&str> {
    metrics
        .iter()
        .map(String::as_str)
        .filter(|m| !FACT_NAMES.contains(m))
        .collect()
}

/// Registers are allocated to warps in units of this many.
const REGISTER_UNIT: i64 = 256;
/// Shared memory is allocated to blocks in units of this many bytes.
const SHARED_UNIT: i64 = 128;

/// `x` rounded up to a multiple of `unit` (both positive).
fn round_up(x: i64, unit: i64) -> i64 {
    (x + unit - 1) / unit * unit
}

/// ncu's launch metrics for `dims`, by name. `driver_blocks_per_sm` is the driver's own occupancy answer
/// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`), which wins where it is lower than this calculation (the
/// driver knows the shared-memory carve-out it will use).
pub(super) fn launch_facts(
    f: FunctionUse,
    dims: &LaunchDims,
    sm: SmLimits,
    driver_blocks_per_sm: Option<i64>,
) -> Vec<(&'static str, f64)> {
    let threads = dims.block.iter().map(|&d| i64::from(d)).product::<i64>();
    let blocks = dims.grid.iter().map(|&d| i64::from(d)).product::<i64>();
    let warps_per_block = (round_up(threads, 32) / 32).max(1);
    let max_warps = (sm.max_threads_per_sm / 32).max(1);
    let limit_blocks = sm.max_blocks_per_sm;
    let limit_warps = max_warps / warps_per_block;
    let limit_registers = if f.registers > 0 {
        let per_warp = round_up(f.registers * 32, REGISTER_UNIT);
        (sm.registers_per_sm / per_warp) / warps_per_block
    } else {
        limit_blocks
    };
    let shared = f.static_shared + i64::from(dims.shared_mem);
    let mut limit_shared = if shared > 0 && sm.shared_per_sm > 0 {
        sm.shared_per_sm / round_up(shared + sm.reserved_shared_per_block, SHARED_UNIT)
    } else {
        limit_blocks
    };
    let mut per_sm = limit_blocks
        .min(limit_warps)
        .min(limit_registers)
        .min(limit_shared);
    if let Some(driver) = driver_blocks_per_sm
        && driver < per_sm
    {
        // the shared-memory carve-out the driver will choose is smaller than the maximum assumed above
        if shared > 0 {
            limit_shared = driver;
        }
        per_sm = driver;
    }
    let theoretical_pct = 100.0 * (per_sm * warps_per_block) as f64 / max_warps as f64;
    let waves = if per_sm > 0 && sm.sm_count > 0 {
        blocks as f64 / (per_sm * sm.sm_count) as f64
    } else {
        0.0
    };
    let facts = vec![
        ("launch__registers_per_thread", f.registers as f64),
        ("launch__block_size", threads as f64),
        ("launch__grid_size", blocks as f64),
        (
            "launch__shared_mem_per_block_static",
            f.static_shared as f64,
        ),
        (
            "launch__shared_mem_per_block_dynamic",
            f64::from(dims.shared_mem),
        ),
        ("launch__waves_per_multiprocessor", waves),
        ("launch__occupancy_limit_registers", limit_registers as f64),
        ("launch__occupancy_limit_shared_mem", limit_shared as f64),
        ("launch__occupancy_limit_warps", limit_warps as f64),
        ("launch__occupancy_limit_blocks", limit_blocks as f64),
        ("sm__maximum_warps_per_active_cycle_pct", theoretical_pct),
    ];
    debug_assert!(facts.iter().map(|(n, _)| n).eq(FACT_NAMES.iter()));
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: SmLimits = SmLimits {
        sm_count: 132,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        registers_per_sm: 65536,
        shared_per_sm: 233472,
        reserved_shared_per_block: 1024,
    };

    fn dims(grid: u32, block: [u32; 3], shared: u32) -> LaunchDims {
        LaunchDims {
            grid: [grid, 1, 1],
            block,
            shared_mem: shared,
        }
    }

    #[test]
    fn every_fact_is_named_and_only_the_others_need_counters() {
        let f = FunctionUse {
            registers: 32,
            static_shared: 0,
        };
        let facts = launch_facts(f, &dims(1, [32, 1, 1], 0), H100, None);
        let names: Vec<&str> = facts.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, FACT_NAMES);
        let asked = vec![
            "launch__block_size".to_string(),
            "dram__bytes_read.sum".to_string(),
        ];
        assert_eq!(counted_metrics(&asked), ["dram__bytes_read.sum"]);
    }

    fn fact(facts: &[(&str, f64)], name: &str) -> f64 {
        facts.iter().find(|(n, _)| *n == name).unwrap().1
    }

    #[test]
    fn a_small_block_without_shared_memory_is_limited_by_the_block_count() {
        // 16×16 threads, 32 registers: 8 warps a block, 8 blocks by warps, 8 by registers, 32 by blocks
        let f = FunctionUse {
            registers: 32,
            static_shared: 0,
        };
        let facts = launch_facts(f, &dims(4096, [16, 16, 1], 0), H100, Some(8));
        assert_eq!(fact(&facts, "launch__occupancy_limit_warps"), 8.0);
        assert_eq!(fact(&facts, "launch__occupancy_limit_registers"), 8.0);
        assert_eq!(fact(&facts, "launch__occupancy_limit_shared_mem"), 32.0);
        assert_eq!(
            fact(&facts, "sm__maximum_warps_per_active_cycle_pct"),
            100.0
        );
        assert_eq!(fact(&facts, "launch__block_size"), 256.0);
        let waves = fact(&facts, "launch__waves_per_multiprocessor");
        assert!((waves - 4096.0 / (8.0 * 132.0)).abs() < 1e-9, "{waves}");
    }

    #[test]
    fn many_registers_limit_occupancy_and_are_named_as_the_limiter() {
        // 95 registers → 96 per thread after rounding (3072 per warp): 21 warps → 2 blocks of 8 warps
        let f = FunctionUse {
            registers: 95,
            static_shared: 4096,
        };
        let facts = launch_facts(f, &dims(1000, [16, 16, 1], 0), H100, None);
        assert_eq!(fact(&facts, "launch__occupancy_limit_registers"), 2.0);
        assert_eq!(fact(&facts, "launch__occupancy_limit_shared_mem"), 45.0);
        assert_eq!(fact(&facts, "sm__maximum_warps_per_active_cycle_pct"), 25.0);
    }

    #[test]
    fn the_drivers_lower_answer_is_taken_as_the_shared_memory_limit() {
        let f = FunctionUse {
            registers: 16,
            static_shared: 16384,
        };
        let facts = launch_facts(f, &dims(10, [128, 1, 1], 0), H100, Some(5));
        assert_eq!(fact(&facts, "launch__occupancy_limit_shared_mem"), 5.0);
        assert_eq!(
            fact(&facts, "sm__maximum_warps_per_active_cycle_pct"),
            31.25
        );
    }
}
