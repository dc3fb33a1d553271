//! End-to-end tests of launch facts read from a file's own host code (issue 44): the block, grid and dynamic
//! shared memory of `kernel<<<grid, block, shmem>>>` as `kt inspect` shows them and `kt tune` uses them, a
//! 1-D block of BLOCKSIZE x BLOCKSIZE threads, the fallback to the default launch when the restrictions leave
//! nothing, and `kt verify` taking template values from the program's own launches. CPU only (`--dry-run`);
//! the GPU runs are ignored here and run by experiments/launch-facts/check.sh.

#![allow(clippy::unwrap_used)]

use std::process::Output;

mod support;
use support::text;

const FILE: &str = "tests/corpus/real-world-classes/host_launch.cu";

fn kt(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    support::kt(home.path(), args)
}

/// `kt tune FILE --kernel K --test-size --dry-run`: stdout and stderr together, after checking success.
fn dry_run(kernel: &str) -> String {
    let out = kt(&["tune", FILE, "--kernel", kernel, "--test-size", "--dry-run"]);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{said}");
    said
}

#[test]
fn inspect_shows_each_launch_with_what_was_read_from_it() {
    let out = kt(&["inspect", FILE]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    for line in [
        "host launch (line 53): softmax_rows<<<rows, 256, 256 * sizeof(float)>>>",
        "grid x: N: one block per `N`",
        "dynamic shared memory: 256 * sizeof(float) = block_size_x * 4 bytes",
        "host launch (line 59): scale8<<<grid_size, block_size>>>",
        "block: 128x1x1",
        "problem `N` / block_size_x * 8",
        "host launch (line 65): sgemm_coalesced<32><<<gridDim, blockDim>>>",
        "block: 1024x1x1",
        "problem `M` / 32",
        "problem `N` / 32",
    ] {
        assert!(said.contains(line), "`{line}` in\n{said}");
    }
}

#[test]
fn tune_takes_the_grid_and_shared_memory_of_the_programs_launch() {
    let said = dry_run("softmax_rows");
    assert!(
        said.contains("launch: grid x: one block per `N` (grid divisors [])"),
        "{said}"
    );
    assert!(
        said.contains("launch: dynamic shared memory block_size_x * 4 bytes"),
        "{said}"
    );
    let said = dry_run("scale8");
    assert!(said.contains("grid divisors [block_size_x, 8]"), "{said}");
}

#[test]
fn a_square_block_with_its_template_fixed_falls_back_to_the_programs_launch_not_to_nothing() {
    let said = dry_run("sgemm_coalesced");
    assert!(
        said.contains("restriction from the code: block_size_x == 32 * 32"),
        "{said}"
    );
    assert!(
        said.contains("tuning the default launch alone (block_size_x=1024 block_size_y=1)"),
        "{said}"
    );
    assert!(
        said.contains("space: 1 configurations, 1 after restrictions"),
        "{said}"
    );
    // the user's own restriction is kept as given: nothing left is an error that says so
    let out = kt(&[
        "tune",
        FILE,
        "--kernel",
        "sgemm_coalesced",
        "--test-size",
        "--dry-run",
        "--restrict",
        "block_size_x == 7",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no configuration is left"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn verify_takes_template_values_from_the_programs_launches() {
    let f = "tests/corpus/real-world-classes/host_instances.cu";
    let out = kt(&["verify", f, f, "--dry-run"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{}{err}", text(&out.stdout));
    for note in [
        "template parameter `T` of `block_sum` = float",
        "template parameter `blockSize` of `block_sum` = 128: the value of the default launch's block",
        "template parameter `nIsPow2` of `block_sum` = true",
    ] {
        assert_eq!(err.matches(note).count(), 1, "`{note}` once in\n{err}");
    }
}

#[test]
fn a_size_rule_moves_the_odd_test_to_the_nearest_valid_size() {
    let out = kt(&["verify", FILE, FILE, "--kernel", "scale8", "--dry-run"]);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{said}");
    // 10007 (the test size) → 10009 (the next prime) → 10016 (the next multiple of 8)
    assert!(
        said.contains("N=10016 (nearest valid sizes, size_rules: N a multiple of 8)"),
        "{said}"
    );
}

#[test]
#[ignore = "needs a GPU"]
fn each_kernel_tunes_and_verifies_at_the_programs_own_launch() {
    for kernel in ["softmax_rows", "scale8", "sgemm_coalesced"] {
        let out = kt(&["tune", FILE, "--kernel", kernel, "--test-size"]);
        assert!(
            out.status.success(),
            "{kernel}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
    }
}
