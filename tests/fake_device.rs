//! End-to-end tests of `kt tune` and `kt verify` on kt's fake device (`KT_TUNER_FAKE_WORKER`, see
//! kt-tuner's `worker/fake.rs`): the `kt` binary as a user runs it, on a machine without a GPU. The fake
//! plays the reward hacks the real worker catches on a GPU (the attack corpus checks those there): timed
//! samples that skip the work the checked launch did (`unwatched`), a launch counter that goes lazy after
//! the samples (`lazy-late`), a write past an array (`out-of-bounds`); and a time limit that must not wait
//! for the rest of the space to compile. NVRTC still compiles every
//! configuration, so these are ignored by a plain `cargo test`; scripts/test.sh runs them with the NVRTC of
//! kt's Python environment (`--include-ignored`).

#![allow(clippy::unwrap_used)]

use std::process::Output;

mod support;
use support::{kt_command, output, text};

const NEEDS_NVRTC: &str = "needs NVRTC";
const LAZY: &str = "tests/corpus/verify/attacks/lazy_after_40_launches.cu";

/// `kt args` on the fake device in `mode`, with a fresh home and cache.
fn kt_on_fake(mode: &str, args: &[&str]) -> (Output, String) {
    let home = tempfile::tempdir().unwrap();
    let out = output(
        kt_command(home.path())
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .env("KT_TUNER_FAKE_WORKER", mode)
            .args(args),
    );
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!all.contains("panicked"), "{all}");
    assert!(
        !all.contains("NVRTC not found"),
        "{NEEDS_NVRTC}: put libnvrtc.so on LD_LIBRARY_PATH (scripts/test.sh does): {all}"
    );
    (out, all)
}

fn tune(mode: &str) -> (Output, String) {
    kt_on_fake(
        mode,
        &[
            "tune",
            LAZY,
            "--test-size",
            "--param",
            "block_size_x=64,128",
        ],
    )
}

fn verify(mode: &str) -> (Output, String) {
    kt_on_fake(
        mode,
        &[
            "verify",
            "naive-kernels/vectorAdd.cu",
            LAZY,
            "--param",
            "block_size_x=128",
        ],
    )
}

#[test]
#[ignore = "needs NVRTC: scripts/test.sh runs it on the fake device"]
fn an_honest_device_tunes_and_verifies() {
    let (out, all) = tune("ok");
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("best       block_size_x=64"), "{all}");
    let (out, all) = verify("ok");
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("all tests passed"), "{all}");
}

#[test]
#[ignore = "needs NVRTC: scripts/test.sh runs it on the fake device"]
fn samples_that_skip_the_checked_work_are_refused_by_tune_and_verify() {
    let (out, all) = tune("unwatched");
    for config in ["block_size_x=64", "block_size_x=128"] {
        assert!(
            all.contains(&format!("{config}: timed launches differ")),
            "{config}: {all}"
        );
    }
    assert!(all.contains("they did not do the verified work"), "{all}");
    // the fake's reference launch is honest: the default launch is what kt hands back, and says so
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("only its default launch block_size_x=256 runs correctly"),
        "{all}"
    );
    let (out, all) = verify("unwatched");
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("they did not do the verified work"), "{all}");
    assert!(all.contains("verification FAILED"), "{all}");
}

#[test]
#[ignore = "needs NVRTC: scripts/test.sh runs it on the fake device"]
fn a_kernel_lazy_after_many_launches_is_refused_by_tune_and_verify() {
    let late =
        "after 250 more launches in the same module (the kernel keeps state across launches)";
    let (_, all) = tune("lazy-late");
    assert!(
        all.contains("block_size_x=128: timed launches differ"),
        "{all}"
    );
    assert!(all.contains(late), "{all}");
    let (out, all) = verify("lazy-late");
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains(late), "{all}");
}

#[test]
#[ignore = "needs NVRTC: scripts/test.sh runs it on the fake device"]
fn a_write_past_an_array_fails_verification() {
    let (out, all) = verify("out-of-bounds");
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("out-of-bounds write: wrote 4 bytes past the end of `a`"),
        "{all}"
    );
}

#[test]
#[ignore = "needs NVRTC: scripts/test.sh runs it on the fake device"]
fn a_gpu_without_room_for_a_test_says_so_and_blames_neither_kernel_nor_arguments() {
    let (out, all) = verify("no-room:bench");
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("the GPU has no room for test bench: allocating"),
        "{all}"
    );
    assert!(
        all.contains("CUDA_ERROR_OUT_OF_MEMORY") && all.contains("nvidia-smi"),
        "{all}"
    );
    assert!(
        !all.contains("invalid kernel arguments") && !all.contains("fix the reference kernel"),
        "{all}"
    );
}

#[test]
#[ignore = "needs NVRTC: scripts/test.sh runs it on the fake device"]
fn a_time_limit_does_not_wait_for_the_rest_of_the_space_to_compile() {
    // 1,000 configurations; the limit stops
    // the search after its first chunk, and kt must not go on compiling the rest of the space before it exits
    // vectorAdd with its sidecar, and a parameter its code names (each value a module of its own)
    let dir = tempfile::tempdir().unwrap();
    let kernel = dir.path().join("vectorAdd.cu");
    let source = std::fs::read_to_string("naive-kernels/vectorAdd.cu").unwrap();
    std::fs::write(
        &kernel,
        source.replace("a[i] + b[i]", "a[i] + b[i] + (variant - variant)"),
    )
    .unwrap();
    std::fs::copy(
        "naive-kernels/vectorAdd.toml",
        dir.path().join("vectorAdd.toml"),
    )
    .unwrap();
    let values: Vec<String> = (1..=1000).map(|v| v.to_string()).collect();
    let param = format!("variant={}", values.join(","));
    let start = std::time::Instant::now();
    let (out, all) = kt_on_fake(
        "ok",
        &[
            "tune",
            kernel.to_str().unwrap(),
            "--test-size",
            "--param",
            "block_size_x=128",
            "--param",
            &param,
            "--time-limit",
            "1",
        ],
    );
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(out.status.code(), Some(0), "{all}");
    let measured = all
        .lines()
        .find_map(|l| l.split(" configs in the space, ").nth(1))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no count of measured configurations: {all}"));
    assert!(measured < 1000, "the whole space was measured: {all}");
    // the whole space compiles in ~27 s on two cores, the first two chunks in ~2 s
    assert!(
        secs < 10.0,
        "{secs:.1} s: kt waited for compiles the limit never reached\n{all}"
    );
}
