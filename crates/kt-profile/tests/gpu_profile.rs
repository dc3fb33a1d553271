//! On a GPU machine with Nsight Compute and nvcc: profile one launch of a real naive matmul end to end
//! (find ncu, run the command, parse, summarise). `cargo test -p kt-profile -- --include-ignored`.

#![allow(clippy::unwrap_used)]

use kt_profile::{Binding, ProfileCommand, ncu_availability, summarize};
use std::process::Command;
use std::time::Duration;

const SOURCE: &str = include_str!("../../../experiments/profile/matmul_bench.cu");

#[test]
#[ignore = "needs a GPU with ncu and nvcc"]
fn a_naive_matmul_launch_is_profiled_parsed_and_summarised() {
    let ncu = ncu_availability().unwrap_or_else(|missing| panic!("{missing}"));
    let dir = tempfile::tempdir().unwrap();
    let (source, program) = (
        dir.path().join("matmul.cu"),
        dir.path().join("matmul_bench"),
    );
    std::fs::write(&source, SOURCE).unwrap();
    let nvcc = ncu.path().with_file_name("nvcc");
    let nvcc = if nvcc.exists() { nvcc } else { "nvcc".into() };
    let status = Command::new(&nvcc)
        .args(["-O3", "-arch=native", "-o"])
        .arg(&program)
        .arg(&source)
        .status()
        .unwrap_or_else(|e| panic!("{}: {e}", nvcc.display()));
    assert!(status.success(), "nvcc failed");

    let t0 = std::time::Instant::now();
    let profile = ProfileCommand::new(ncu, "matmul", &program)
        .args(["1024"])
        .run(Duration::from_secs(300))
        .unwrap();
    let summary = summarize(&profile).unwrap();
    println!("profiled in {:.1} s\n{summary}", t0.elapsed().as_secs_f64());
    assert!(profile.kernel.starts_with("matmul"), "{}", profile.kernel);
    assert_eq!(profile.occupancy.threads_per_block, Some(256.0));
    assert!(profile.duration_ns.is_some_and(|d| d > 0.0));
    assert!(
        profile
            .fp32_flops
            .is_some_and(|f| f >= 2.0 * 1024f64.powi(3))
    );
    assert!(!profile.stalls.is_empty());
    assert_ne!(Binding::of(&profile), Binding::Unknown);
    assert!(summary.lines().count() <= kt_profile::MAX_LINES);
}
