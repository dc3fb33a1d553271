//! A whole ncu raw CSV report, as `ncu --csv --page raw --print-units base --log-file` writes it for one
//! launch of a naive matmul: parsed, summarised and drawn.
//!
//! `fixtures/synthetic-*.csv` is written by hand in ncu's layout; reports captured on a GPU with
//! `experiments/profile/capture-ncu.sh` go beside it as `fixtures/captured-*.csv` and are checked by
//! `every_captured_report_parses_into_a_profile_with_its_core_facts`.

#![allow(clippy::unwrap_used)]

use kt_profile::{
    Binding, DevicePeaks, DeviceSpec, KernelProfile, OccupancyLimiter, RooflinePoint, StallReason,
    roofline_svg, summarize,
};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn naive() -> KernelProfile {
    let text = std::fs::read_to_string(fixtures().join("synthetic-matmul-naive-h100.csv")).unwrap();
    KernelProfile::parse(&text).unwrap()
}

#[test]
fn the_launch_identity_comes_from_the_report() {
    let p = naive();
    assert_eq!(
        p.kernel,
        "matmul(const float *, const float *, float *, int)"
    );
    assert_eq!(p.block.as_deref(), Some("(16, 16, 1)"));
    assert_eq!(p.grid.as_deref(), Some("(64, 64, 1)"));
    assert_eq!(p.compute_capability.as_deref(), Some("9.0"));
    assert_eq!(p.duration_ns, Some(1_093_632.0));
}

#[test]
fn throughput_occupancy_and_traffic_are_typed_facts() {
    let p = naive();
    assert_eq!(p.throughput.memory_pct, Some(91.87));
    assert_eq!(p.throughput.compute_pct, Some(46.12));
    assert_eq!(p.throughput.dram_pct, Some(4.62));
    assert_eq!(p.occupancy.achieved_pct, Some(71.34));
    assert_eq!(p.occupancy.theoretical_pct, Some(75.0));
    assert_eq!(p.occupancy.limiter, Some(OccupancyLimiter::Registers));
    assert_eq!(p.occupancy.registers_per_thread, Some(40.0));
    assert_eq!(p.occupancy.threads_per_block, Some(256.0));
    assert_eq!(p.memory.dram_bytes(), Some(16_889_856.0));
    assert_eq!(p.memory.l1_bytes, Some(17_213_423_616.0));
    assert_eq!(p.memory.l2_hit_pct, Some(99.52));
    assert_eq!(p.spills.total_bytes(), 0.0);
    assert_eq!(p.bank_conflicts.total(), 0.0);
    assert_eq!(p.fp32_flops, Some(2.0 * 1_073_741_824.0));
}

#[test]
fn stalls_are_ranked_and_not_available_ones_are_left_out() {
    let p = naive();
    let top: Vec<StallReason> = p.stalls.iter().take(3).map(|s| s.reason).collect();
    assert_eq!(
        top,
        [
            StallReason::LongScoreboard,
            StallReason::LgThrottle,
            StallReason::Wait
        ]
    );
    assert!(p.stalls.iter().all(|s| s.reason != StallReason::Misc)); // "n/a" in the report
}

#[test]
fn a_naive_matmul_reads_as_bound_in_the_caches_with_its_stalls_in_words() {
    let p = naive();
    assert!(matches!(Binding::of(&p), Binding::Memory { .. }));
    let s = summarize(&p).unwrap();
    println!("{s}");
    assert!(s.lines().count() <= kt_profile::MAX_LINES);
    let first = s.lines().next().unwrap();
    assert_eq!(
        first,
        "`matmul` (block (16, 16, 1), grid (64, 64, 1)): memory-bound in the caches: L1/L2 at 92 % of peak, DRAM at 4.6 %."
    );
    assert!(s.contains("71 % achieved of 75 % theoretical, limited by registers per thread; 40 registers per thread"), "{s}");
    assert!(
        s.contains("- waiting on global or local memory (long scoreboard): 59 % of stall cycles"),
        "{s}"
    );
    assert!(
        s.contains("- global/local memory instruction queue full (LG throttle)"),
        "{s}"
    );
    assert!(
        !s.contains("spills") && !s.contains("bank conflicts"),
        "{s}"
    );
}

#[test]
fn the_profile_survives_a_round_trip_through_json() {
    let p = naive();
    let json = serde_json::to_string(&p).unwrap();
    assert!(json.contains("\"limiter\":\"registers\""), "{json}");
    assert_eq!(serde_json::from_str::<KernelProfile>(&json).unwrap(), p);
}

#[test]
fn the_profile_gives_a_point_under_the_roof() {
    let p = naive();
    let peaks = DevicePeaks::theoretical(&DeviceSpec {
        sm_count: 132,
        clock_khz: 1_980_000,
        memory_clock_khz: 2_619_000,
        memory_bus_bits: 5120,
        compute_capability: (9, 0),
    })
    .unwrap();
    let point = RooflinePoint {
        label: "naive (ncu)".into(),
        intensity: p.arithmetic_intensity().unwrap(),
        gflop_s: p.achieved_gflops().unwrap(),
    };
    assert!(point.gflop_s < peaks.roof(point.intensity), "{point:?}");
    let svg = roofline_svg("matmul", &peaks, &[point]).unwrap();
    assert!(svg.contains("naive (ncu)"));
}

#[test]
fn every_captured_report_parses_into_a_profile_with_its_core_facts() {
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("captured-") {
            continue;
        }
        let p = KernelProfile::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(p.duration_ns.is_some_and(|d| d > 0.0), "{name}: {p:?}");
        assert!(
            p.throughput.memory_pct.is_some() && p.throughput.compute_pct.is_some(),
            "{name}"
        );
        assert!(p.occupancy.achieved_pct.is_some(), "{name}");
        assert!(p.memory.dram_bytes().is_some(), "{name}");
        assert!(!p.stalls.is_empty(), "{name}");
        assert_ne!(Binding::of(&p), Binding::Unknown, "{name}");
    }
}
