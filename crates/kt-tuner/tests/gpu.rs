//! GPU tests: the full self-test (suite kernels tuned and verified, every failure mode of a broken kernel
//! caught while tuning continues). They run only with KT_GPU=1; elsewhere they print why they skipped.
//! The worker is this test executable itself, re-executed with only `gpu_worker_entry` selected.

#![allow(clippy::unwrap_used)]

use kt_tuner::session::TunerConfig;
use kt_tuner::worker::process::{PROTOCOL_ENV, WorkerCommand};

#[test]
fn gpu_worker_entry() {
    if std::env::var(PROTOCOL_ENV).is_ok() {
        let code = match kt_tuner::worker::serve() {
            Ok(()) => 0,
            Err(_) => 1,
        };
        std::process::exit(code);
    }
}

fn gpu_enabled() -> bool {
    if std::env::var("KT_GPU").ok().as_deref() == Some("1") {
        return true;
    }
    println!("skipped: set KT_GPU=1 to run the GPU tests on a machine with an NVIDIA GPU");
    false
}

#[test]
fn selftest_passes_every_check_on_the_gpu() {
    if !gpu_enabled() {
        return;
    }
    let worker = WorkerCommand {
        program: std::env::current_exe().unwrap(),
        args: vec![
            "--exact".into(),
            "gpu_worker_entry".into(),
            "--nocapture".into(),
            "--test-threads=1".into(),
        ],
        env: vec![],
    };
    let config = TunerConfig {
        worker: Some(worker),
        ..TunerConfig::default()
    };
    let checks = kt_tuner::selftest::run(config).expect("a GPU session");
    for c in &checks {
        println!(
            "{} {}: {}",
            if c.passed { "PASS" } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    assert!(checks.iter().all(|c| c.passed), "some checks failed");
}
