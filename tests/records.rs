//! End-to-end tests of records that agree with what a run did: the number of tests asked for is the number
//! made, or the request is refused before a run exists.

#![allow(clippy::unwrap_used)]

mod support;
use support::{kt, text};

#[test]
fn zero_tests_are_refused_before_a_run_is_made() {
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let out = kt(
        home.path(),
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--tests",
            "0",
            "--llm",
            "scripted:experiments/cassettes/matmul-autonomous.toml",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("--tests must be at least 1"), "{stderr}");
    assert!(!out_dir.exists(), "no run is made for a refused request");
}
