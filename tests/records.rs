//! End-to-end tests of records that agree with what a run did: the number of tests asked for is the number
//! made, or the request is refused before a run exists; the HTML report of a stopped run says what happened
//! and what to run, and fits a 700 px window.

#![allow(clippy::unwrap_used)]

mod support;
use support::{kt, text};
#[path = "support/browser.rs"]
mod browser;

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

/// The HTML report of a run that stopped without a GPU (Stage 1 only), written to `home/report.html`.
fn stopped_run_report(home: &std::path::Path) -> std::path::PathBuf {
    let out_dir = home.join("runs");
    let out = kt(
        home,
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--tests",
            "1",
            "--llm",
            "scripted:experiments/cassettes/matmul-autonomous.toml",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let run = support::only_entry(&out_dir);
    let page = home.join("report.html");
    let out = kt(
        home,
        &[
            "runs",
            "report",
            run.to_str().unwrap(),
            "--html",
            "--out",
            page.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    page
}

#[test]
fn the_report_of_a_run_stopped_without_a_gpu_says_so_and_what_to_run() {
    support::require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let html = std::fs::read_to_string(stopped_run_report(home.path())).unwrap();
    assert!(
        html.contains("No result yet: the run needs a CUDA GPU") && html.contains("kt resume "),
        "{html}"
    );
    assert!(!html.contains("<td></td>"), "no blank cell");
}

#[test]
#[ignore = "needs chromium; scripts/test.sh runs it where chromium is installed"]
fn the_report_of_a_run_stopped_without_a_gpu_fits_700_px_without_sideways_scrolling() {
    support::require_no_gpu();
    let home = tempfile::tempdir().unwrap();
    let page = stopped_run_report(home.path());
    let mut browser = browser::Browser::start(700, 900);
    browser.goto(&format!("file://{}", page.display()));
    browser.wait_for(
        "document.getElementById('state')",
        std::time::Duration::from_secs(20),
        "the report",
    );
    let widths = browser.eval(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth].join(' ')",
    );
    let widths: Vec<u64> = widths
        .as_str()
        .unwrap()
        .split(' ')
        .map(|w| w.parse().unwrap())
        .collect();
    assert!(
        widths[0] <= widths[1],
        "the page is {} px wide in a {} px window",
        widths[0],
        widths[1]
    );
}
