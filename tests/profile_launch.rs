//! `kt __profile-launch` under Nsight Compute on a GPU: the naive matmul's tests are made by `kt testgen`
//! (scripted answers), then ncu profiles exactly one launch of the kernel in the program Stage 3 runs for a
//! profile, and kt-profile reads the report.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

mod support;
use support::{kt, text};

#[test]
#[ignore = "needs a GPU with ncu; experiments/gpu-check.sh runs it (KT_GPU=1, --include-ignored)"]
fn profile_launch_under_ncu_profiles_one_launch_of_the_naive_matmul() {
    let ncu = kt_profile::ncu_availability()
        .expect("ncu on PATH, in CUDA_HOME/bin or /usr/local/cuda/bin");
    let home = tempfile::tempdir().unwrap();
    let runs = home.path().join("runs");
    let out = kt(
        home.path(),
        &[
            "testgen",
            "naive-kernels/matmul.cu",
            "--llm",
            "scripted:experiments/scripted/matmul.toml",
            "-n",
            "1",
            "--out",
            runs.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let test = PathBuf::from(v["tests"][0]["dir"].as_str().unwrap());
    let (params, geometry) = kt_pipeline::stage3::ProfileLaunch::parse_json(
        r#"{"block_size_x": 16, "block_size_y": 16}"#,
        r#"{"problem_size": ["B_width", "A_height"],
            "grid_div": [["block_size_x"], ["block_size_y"], []], "shared_mem": null}"#,
    )
    .unwrap();
    let launch = kt_pipeline::stage3::ProfileLaunch {
        kernel_file: support::root().join("naive-kernels/matmul.cu"),
        kernel: "matrixMultiply".into(),
        params,
        geometry,
        test,
        include: Vec::new(),
        cache_dir: Some(home.path().join("cache")),
    };
    let started = std::time::Instant::now();
    let profile =
        kt_profile::ProfileCommand::new(ncu.clone(), "matrixMultiply", env!("CARGO_BIN_EXE_kt"))
            .args(launch.args())
            .run(Duration::from_secs(300))
            .unwrap();
    println!("profiled in {:.1} s", started.elapsed().as_secs_f64());
    check(&profile);

    // The same launch through a standby: ncu and the program start first, the launch comes on stdin.
    let cache = home.path().join("cache");
    let mut standby =
        kt_profile::ProfileCommand::new(ncu, "matrixMultiply", env!("CARGO_BIN_EXE_kt"))
            .args([
                "__profile-launch",
                "--standby",
                "--cache-dir",
                cache.to_str().unwrap(),
            ])
            .spawn(true)
            .unwrap();
    std::thread::sleep(Duration::from_secs(5));
    assert!(standby.is_running(), "the standby waits for its launch");
    let line = serde_json::to_string(&launch).unwrap() + "\n";
    let started = std::time::Instant::now();
    let profile = standby
        .finish(Some(line.as_bytes()), Duration::from_secs(300))
        .unwrap();
    println!(
        "profiled through a standby {:.1} s after the launch was given",
        started.elapsed().as_secs_f64()
    );
    check(&profile);
}

fn check(profile: &kt_profile::KernelProfile) {
    assert!(
        profile.kernel.contains("matrixMultiply"),
        "{}",
        profile.kernel
    );
    assert!(profile.throughput.memory_pct.is_some(), "{profile:?}");
    assert!(profile.occupancy.achieved_pct.is_some(), "{profile:?}");
    let summary = kt_profile::summarize(profile).unwrap();
    println!("{summary}");
    assert!(summary.lines().count() <= kt_profile::MAX_LINES);
}
