//! `KernelProfile`: the facts of one profiled launch, typed. Every measured field is optional: a metric the
//! device or the ncu version lacks leaves its field empty instead of failing the profile.

use crate::error::ProfileError;
use crate::metrics as m;
use crate::raw::{RawLaunch, parse_raw_csv};
use crate::stall::{Stall, StallReason};
use serde::{Deserialize, Serialize};

/// One kernel launch as Nsight Compute measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelProfile {
    /// The kernel's name as ncu printed it (demangled, with its parameter types).
    pub kernel: String,
    /// "(x, y, z)" as ncu printed them.
    pub block: Option<String>,
    pub grid: Option<String>,
    pub device: Option<String>,
    /// Compute capability, e.g. "9.0".
    pub compute_capability: Option<String>,
    /// Duration of the profiled launch in ns (under the profiler; not kt's timing).
    pub duration_ns: Option<f64>,
    pub throughput: Throughput,
    pub occupancy: Occupancy,
    pub memory: MemoryTraffic,
    /// Register spills: local-memory bytes loaded and stored.
    pub spills: Spills,
    pub bank_conflicts: BankConflicts,
    /// FP32 operations executed (fadd + fmul + 2 × ffma).
    pub fp32_flops: Option<f64>,
    /// Stall reasons with a non-zero share, largest first.
    pub stalls: Vec<Stall>,
}

/// Speed of light, % of peak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// The busiest memory unit (DRAM, L2 or L1).
    pub memory_pct: Option<f64>,
    /// The busiest SM pipe.
    pub compute_pct: Option<f64>,
    pub dram_pct: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Occupancy {
    /// Active warps over the SM's maximum, %.
    pub achieved_pct: Option<f64>,
    /// What the launch's resources allow, %.
    pub theoretical_pct: Option<f64>,
    /// The resource that caps theoretical occupancy (the smallest blocks-per-SM limit).
    pub limiter: Option<OccupancyLimiter>,
    pub registers_per_thread: Option<f64>,
    pub threads_per_block: Option<f64>,
    /// Static plus dynamic shared memory per block, bytes.
    pub shared_mem_per_block: Option<f64>,
    /// Full waves of blocks the grid makes on the device (below 1: the GPU is not filled).
    pub waves_per_sm: Option<f64>,
}

/// What limits how many blocks fit on an SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OccupancyLimiter {
    Registers,
    SharedMemory,
    /// The block's warps: the SM's warp slots run out.
    Warps,
    /// The SM's cap on resident blocks (blocks too small).
    Blocks,
}

impl OccupancyLimiter {
    pub fn describe(self) -> &'static str {
        match self {
            Self::Registers => "registers per thread",
            Self::SharedMemory => "shared memory per block",
            Self::Warps => "block size (warps per block)",
            Self::Blocks => "the SM's block limit (blocks too small)",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryTraffic {
    pub dram_read_bytes: Option<f64>,
    pub dram_write_bytes: Option<f64>,
    pub l2_bytes: Option<f64>,
    pub l1_bytes: Option<f64>,
    pub l2_hit_pct: Option<f64>,
    pub l1_hit_pct: Option<f64>,
}

impl MemoryTraffic {
    /// DRAM bytes read and written; `None` unless both are known.
    pub fn dram_bytes(&self) -> Option<f64> {
        Some(self.dram_read_bytes? + self.dram_write_bytes?)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spills {
    pub local_load_bytes: Option<f64>,
    pub local_store_bytes: Option<f64>,
}

impl Spills {
    pub fn total_bytes(&self) -> f64 {
        self.local_load_bytes.unwrap_or(0.0) + self.local_store_bytes.unwrap_or(0.0)
    }
}

/// Extra shared-memory wavefronts caused by bank conflicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BankConflicts {
    pub loads: Option<f64>,
    pub stores: Option<f64>,
}

impl BankConflicts {
    pub fn total(&self) -> f64 {
        self.loads.unwrap_or(0.0) + self.stores.unwrap_or(0.0)
    }
}

impl KernelProfile {
    /// The profiles of every launch in ncu's `--csv --page raw` output, in order.
    pub fn parse_all(csv_text: &str) -> Result<Vec<KernelProfile>, ProfileError> {
        Ok(parse_raw_csv(csv_text)?
            .iter()
            .map(Self::from_raw)
            .collect())
    }

    /// The profile of the one launch in ncu's output (the first, if it holds several).
    pub fn parse(csv_text: &str) -> Result<KernelProfile, ProfileError> {
        Self::parse_all(csv_text)?
            .into_iter()
            .next()
            .ok_or_else(|| ProfileError::NoReport {
                excerpt: "the report's table has a header but no launch rows".into(),
            })
    }

    pub fn from_raw(raw: &RawLaunch) -> KernelProfile {
        let metric = |name| raw.metric(name);
        let text = |name| raw.column(name).map(str::to_string);
        let shared = match (metric(m::SHARED_MEM_STATIC), metric(m::SHARED_MEM_DYNAMIC)) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        let fp32_flops = match (metric(m::FADD), metric(m::FMUL), metric(m::FFMA)) {
            (None, None, None) => None,
            (a, b, c) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0) + 2.0 * c.unwrap_or(0.0)),
        };
        KernelProfile {
            kernel: text("Kernel Name").unwrap_or_else(|| "?".into()),
            block: text("Block Size"),
            grid: text("Grid Size"),
            device: text("Device Name").or_else(|| text("Device")),
            compute_capability: text("CC"),
            duration_ns: metric(m::DURATION),
            throughput: Throughput {
                memory_pct: metric(m::MEMORY_THROUGHPUT_PCT),
                compute_pct: metric(m::COMPUTE_THROUGHPUT_PCT),
                dram_pct: metric(m::DRAM_THROUGHPUT_PCT),
            },
            occupancy: Occupancy {
                achieved_pct: metric(m::ACHIEVED_OCCUPANCY_PCT),
                theoretical_pct: metric(m::THEORETICAL_OCCUPANCY_PCT),
                limiter: limiter(raw),
                registers_per_thread: metric(m::REGISTERS_PER_THREAD),
                threads_per_block: metric(m::BLOCK_SIZE),
                shared_mem_per_block: shared,
                waves_per_sm: metric(m::WAVES_PER_SM),
            },
            memory: MemoryTraffic {
                dram_read_bytes: metric(m::DRAM_READ_BYTES),
                dram_write_bytes: metric(m::DRAM_WRITE_BYTES),
                l2_bytes: metric(m::L2_BYTES),
                l1_bytes: metric(m::L1_BYTES),
                l2_hit_pct: metric(m::L2_HIT_PCT),
                l1_hit_pct: metric(m::L1_HIT_PCT),
            },
            spills: Spills {
                local_load_bytes: metric(m::LOCAL_LOAD_BYTES),
                local_store_bytes: metric(m::LOCAL_STORE_BYTES),
            },
            bank_conflicts: BankConflicts {
                loads: metric(m::BANK_CONFLICTS_LD),
                stores: metric(m::BANK_CONFLICTS_ST),
            },
            fp32_flops,
            stalls: stalls(raw),
        }
    }

    /// FP32 FLOPs per DRAM byte, as measured (the x of the roofline).
    pub fn arithmetic_intensity(&self) -> Option<f64> {
        let bytes = self.memory.dram_bytes().filter(|b| *b > 0.0)?;
        Some(self.fp32_flops? / bytes)
    }

    /// FP32 GFLOP/s of the profiled launch (slower than unprofiled; kt's own timing is the better y).
    pub fn achieved_gflops(&self) -> Option<f64> {
        let ns = self.duration_ns.filter(|d| *d > 0.0)?;
        Some(self.fp32_flops? / ns)
    }
}

/// The smallest of the four blocks-per-SM limits; ties go to the resource a programmer can change
/// (registers, then shared memory, then block size).
fn limiter(raw: &RawLaunch) -> Option<OccupancyLimiter> {
    [
        (OccupancyLimiter::Registers, m::BLOCK_LIMIT_REGISTERS),
        (OccupancyLimiter::SharedMemory, m::BLOCK_LIMIT_SHARED_MEM),
        (OccupancyLimiter::Warps, m::BLOCK_LIMIT_WARPS),
        (OccupancyLimiter::Blocks, m::BLOCK_LIMIT_BLOCKS),
    ]
    .into_iter()
    .filter_map(|(l, name)| raw.metric(name).map(|v| (l, v)))
    .fold(
        None,
        |best: Option<(OccupancyLimiter, f64)>, (l, v)| match best {
            Some((_, b)) if b <= v => best,
            _ => Some((l, v)),
        },
    )
    .map(|(l, _)| l)
}

fn stalls(raw: &RawLaunch) -> Vec<Stall> {
    let mut stalls: Vec<Stall> = StallReason::ALL
        .iter()
        .filter_map(|r| {
            let cycles = raw.metric(r.metric())?;
            (cycles > 0.0).then_some(Stall {
                reason: *r,
                cycles_per_instruction: cycles,
            })
        })
        .collect();
    stalls.sort_by(|a, b| {
        b.cycles_per_instruction
            .total_cmp(&a.cycles_per_instruction)
    });
    stalls
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(metrics: &[(&str, f64)]) -> RawLaunch {
        let mut r = RawLaunch::default();
        r.columns.insert("Kernel Name".into(), "k".into());
        for (name, v) in metrics {
            r.metrics.insert(name.to_string(), Some(*v));
        }
        r
    }

    #[test]
    fn the_smallest_block_limit_is_the_occupancy_limiter() {
        let p = KernelProfile::from_raw(&raw(&[
            (m::BLOCK_LIMIT_REGISTERS, 2.0),
            (m::BLOCK_LIMIT_SHARED_MEM, 8.0),
            (m::BLOCK_LIMIT_WARPS, 2.0),
            (m::BLOCK_LIMIT_BLOCKS, 32.0),
        ]));
        assert_eq!(p.occupancy.limiter, Some(OccupancyLimiter::Registers));
        let p = KernelProfile::from_raw(&raw(&[
            (m::BLOCK_LIMIT_WARPS, 8.0),
            (m::BLOCK_LIMIT_BLOCKS, 32.0),
        ]));
        assert_eq!(p.occupancy.limiter, Some(OccupancyLimiter::Warps));
        assert_eq!(KernelProfile::from_raw(&raw(&[])).occupancy.limiter, None);
    }

    #[test]
    fn stalls_are_sorted_largest_first_and_zero_ones_dropped() {
        let p = KernelProfile::from_raw(&raw(&[
            (m::STALL_BARRIER, 3.0),
            (m::STALL_LONG_SCOREBOARD, 20.0),
            (m::STALL_WAIT, 0.0),
        ]));
        let reasons: Vec<StallReason> = p.stalls.iter().map(|s| s.reason).collect();
        assert_eq!(reasons, [StallReason::LongScoreboard, StallReason::Barrier]);
    }

    #[test]
    fn flops_count_a_fused_multiply_add_twice_and_give_intensity_and_rate() {
        let p = KernelProfile::from_raw(&raw(&[
            (m::FFMA, 1000.0),
            (m::FADD, 10.0),
            (m::DRAM_READ_BYTES, 800.0),
            (m::DRAM_WRITE_BYTES, 202.0),
            (m::DURATION, 2010.0),
        ]));
        assert_eq!(p.fp32_flops, Some(2010.0));
        assert_eq!(p.arithmetic_intensity(), Some(2010.0 / 1002.0));
        assert_eq!(p.achieved_gflops(), Some(1.0));
    }

    #[test]
    fn a_profile_without_metrics_has_every_fact_empty() {
        let p = KernelProfile::from_raw(&raw(&[]));
        assert_eq!(p.throughput, Throughput::default());
        assert_eq!(p.fp32_flops, None);
        assert_eq!(p.arithmetic_intensity(), None);
        assert!(p.stalls.is_empty());
    }
}
