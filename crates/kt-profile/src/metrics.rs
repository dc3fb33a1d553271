//! The fixed metric set kt asks Nsight Compute for, one constant per metric so the parser names them by
//! the same constants. All names are valid for Nsight Compute 2025 on Hopper (sm_90) and on Ampere/Ada;
//! a metric a device does not have comes back as "n/a" and its field stays `None`.
//!
//! Collecting them replays the kernel a few dozen times (ncu's passes); the timing that kt reports comes
//! from its own launches, never from these.

/// Launch facts (no counters needed): registers per thread, block and grid, shared memory per block,
/// and how many full waves the grid makes on the device.
pub const REGISTERS_PER_THREAD: &str = "launch__registers_per_thread";
pub const BLOCK_SIZE: &str = "launch__block_size";
pub const GRID_SIZE: &str = "launch__grid_size";
pub const SHARED_MEM_STATIC: &str = "launch__shared_mem_per_block_static";
pub const SHARED_MEM_DYNAMIC: &str = "launch__shared_mem_per_block_dynamic";
pub const WAVES_PER_SM: &str = "launch__waves_per_multiprocessor";

/// Duration of the profiled launch (ns, under the profiler: slower than an unprofiled launch).
pub const DURATION: &str = "gpu__time_duration.sum";

/// Speed of light: memory (the busiest of DRAM, L2, L1) and compute (the busiest SM pipe), as % of peak,
/// and DRAM alone.
pub const MEMORY_THROUGHPUT_PCT: &str =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
pub const COMPUTE_THROUGHPUT_PCT: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
pub const DRAM_THROUGHPUT_PCT: &str = "dram__throughput.avg.pct_of_peak_sustained_elapsed";

/// Occupancy: achieved (active warps over the SM's maximum) and theoretical, and the blocks per SM each
/// resource allows — the smallest of the four is the limiter.
pub const ACHIEVED_OCCUPANCY_PCT: &str = "sm__warps_active.avg.pct_of_peak_sustained_active";
pub const THEORETICAL_OCCUPANCY_PCT: &str = "sm__maximum_warps_per_active_cycle_pct";
pub const BLOCK_LIMIT_REGISTERS: &str = "launch__occupancy_limit_registers";
pub const BLOCK_LIMIT_SHARED_MEM: &str = "launch__occupancy_limit_shared_mem";
pub const BLOCK_LIMIT_WARPS: &str = "launch__occupancy_limit_warps";
pub const BLOCK_LIMIT_BLOCKS: &str = "launch__occupancy_limit_blocks";

/// Memory traffic (bytes) at each level and the cache hit rates.
pub const DRAM_READ_BYTES: &str = "dram__bytes_read.sum";
pub const DRAM_WRITE_BYTES: &str = "dram__bytes_write.sum";
pub const L2_BYTES: &str = "lts__t_bytes.sum";
pub const L1_BYTES: &str = "l1tex__t_bytes.sum";
pub const L2_HIT_PCT: &str = "lts__t_sector_hit_rate.pct";
pub const L1_HIT_PCT: &str = "l1tex__t_sector_hit_rate.pct";

/// Register spills: local-memory traffic (bytes loaded and stored through L1).
pub const LOCAL_LOAD_BYTES: &str = "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum";
pub const LOCAL_STORE_BYTES: &str = "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum";

/// Shared-memory bank conflicts (extra wavefronts) on loads and stores.
pub const BANK_CONFLICTS_LD: &str = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
pub const BANK_CONFLICTS_ST: &str = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";

/// FP32 work actually executed (thread-level, predicated on): FLOPs = fadd + fmul + 2 × ffma.
pub const FADD: &str = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
pub const FMUL: &str = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
pub const FFMA: &str = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";

/// Warp stalls: for each reason, the cycles warps spent stalled on it per issued instruction (ncu's
/// "Warp State Statistics"; their sum is about the cycles between two instructions of one warp).
pub const STALL_LONG_SCOREBOARD: &str =
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio";
pub const STALL_SHORT_SCOREBOARD: &str =
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio";
pub const STALL_BARRIER: &str = "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio";
pub const STALL_MEMBAR: &str = "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio";
pub const STALL_MIO_THROTTLE: &str =
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio";
pub const STALL_LG_THROTTLE: &str =
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio";
pub const STALL_TEX_THROTTLE: &str =
    "smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio";
pub const STALL_MATH_PIPE_THROTTLE: &str =
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio";
pub const STALL_WAIT: &str = "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio";
pub const STALL_NOT_SELECTED: &str =
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio";
pub const STALL_DISPATCH: &str =
    "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio";
pub const STALL_DRAIN: &str = "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio";
pub const STALL_IMC_MISS: &str =
    "smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio";
pub const STALL_BRANCH_RESOLVING: &str =
    "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio";
pub const STALL_NO_INSTRUCTION: &str =
    "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio";
pub const STALL_SLEEPING: &str =
    "smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio";
pub const STALL_MISC: &str = "smsp__average_warps_issue_stalled_misc_per_issue_active.ratio";

/// What [`crate::summarize`] reads, in groups: what kt profiles for a prompt.
pub const SUMMARY_METRICS: &[&str] = &SUMMARY;

const SUMMARY: [&str; 41] = [
    // launch facts
    REGISTERS_PER_THREAD,
    BLOCK_SIZE,
    GRID_SIZE,
    SHARED_MEM_STATIC,
    SHARED_MEM_DYNAMIC,
    WAVES_PER_SM,
    DURATION,
    // speed of light
    MEMORY_THROUGHPUT_PCT,
    COMPUTE_THROUGHPUT_PCT,
    DRAM_THROUGHPUT_PCT,
    // occupancy and its limiter
    ACHIEVED_OCCUPANCY_PCT,
    THEORETICAL_OCCUPANCY_PCT,
    BLOCK_LIMIT_REGISTERS,
    BLOCK_LIMIT_SHARED_MEM,
    BLOCK_LIMIT_WARPS,
    BLOCK_LIMIT_BLOCKS,
    // memory traffic and hit rates
    DRAM_READ_BYTES,
    DRAM_WRITE_BYTES,
    L2_HIT_PCT,
    L1_HIT_PCT,
    // spills
    LOCAL_LOAD_BYTES,
    LOCAL_STORE_BYTES,
    // shared-memory bank conflicts
    BANK_CONFLICTS_LD,
    BANK_CONFLICTS_ST,
    // warp stalls
    STALL_LONG_SCOREBOARD,
    STALL_SHORT_SCOREBOARD,
    STALL_BARRIER,
    STALL_MEMBAR,
    STALL_MIO_THROTTLE,
    STALL_LG_THROTTLE,
    STALL_TEX_THROTTLE,
    STALL_MATH_PIPE_THROTTLE,
    STALL_WAIT,
    STALL_NOT_SELECTED,
    STALL_DISPATCH,
    STALL_DRAIN,
    STALL_IMC_MISS,
    STALL_BRANCH_RESOLVING,
    STALL_NO_INSTRUCTION,
    STALL_SLEEPING,
    STALL_MISC,
];

/// The measured roofline's inputs ([`crate::KernelProfile::arithmetic_intensity`]): traffic through L2 and
/// L1, and the FP32 instruction counts. The summary does not read them, and they cost ncu extra replays (the
/// instruction counts patch the kernel's code).
const ROOFLINE: [&str; 5] = [L2_BYTES, L1_BYTES, FADD, FMUL, FFMA];

/// The full set, as passed to `ncu --metrics` by default: the summary's and the roofline's.
pub const METRICS: &[&str] = &concat::<41, 5, 46>(SUMMARY, ROOFLINE);

/// `a` then `b` (a const fn: the sets are constants).
const fn concat<const A: usize, const B: usize, const C: usize>(
    a: [&'static str; A],
    b: [&'static str; B],
) -> [&'static str; C] {
    let mut out = [""; C];
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    let mut j = 0;
    while j < B {
        out[A + j] = b[j];
        j += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summarys_set_is_the_full_set_without_the_roofline_counts() {
        assert!(SUMMARY_METRICS.iter().all(|m| METRICS.contains(m)));
        let left: Vec<&str> = METRICS
            .iter()
            .filter(|m| !SUMMARY_METRICS.contains(m))
            .copied()
            .collect();
        assert_eq!(left, vec![L2_BYTES, L1_BYTES, FADD, FMUL, FFMA]);
    }

    #[test]
    fn the_set_has_no_repeats_and_only_metric_names() {
        let all = METRICS;
        let mut sorted = all.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), all.len());
        // ncu metric names are `unit__counter[.rollup]`: lower case, no spaces, no commas.
        for m in all {
            assert!(m.contains("__"), "{m}");
            assert!(!m.contains([' ', ',']), "{m}");
            assert_eq!(*m, m.to_lowercase(), "{m}");
        }
    }
}
