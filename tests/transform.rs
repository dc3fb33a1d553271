//! End-to-end tests of `kt transform`, `kt resume` and `kt graph export` through the real binary, with no GPU
//! and no LLM service: scripted answers (the demo's), real generator programs in the sandbox (python3 + numpy,
//! see scripts/install-test-deps.sh). Without a GPU the run must get as far as Stage 3's first GPU step, stop
//! with a clear message and leave a resumable run.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs kt from the workspace root with no user configuration leaking in.
fn kt(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kt"))
        .args(args)
        .current_dir(root())
        .env_remove("KT_CONFIG")
        .env_remove("KT_LLM")
        .env_remove("KT_RUNS_DIR")
        .env_remove("KT_PROMPTS_DIR")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("no-config"))
        .output()
        .expect("kt runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn has_numpy() -> bool {
    Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn has_gpu() -> bool {
    std::env::var("KT_GPU").is_ok_and(|v| v == "1")
}

#[test]
fn transform_without_a_gpu_stops_at_stage_3_with_a_clear_message_and_a_resumable_run() {
    if !has_numpy() {
        eprintln!(
            "skipped: python3 with numpy is needed for Stage 2 (scripts/install-test-deps.sh)"
        );
        return;
    }
    if has_gpu() {
        eprintln!("skipped: KT_GPU=1, this test is about machines without a GPU");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let out = kt(
        home.path(),
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--strategy",
            "autonomous",
            "--replan",
            "3",
            "--tests",
            "1",
            "--llm",
            "scripted:experiments/cassettes/matmul-autonomous.toml",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {}\nstderr: {stderr}",
        text(&out.stdout)
    );
    assert!(stderr.contains("a CUDA GPU is needed"), "{stderr}");
    assert!(stderr.contains("kt resume"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let runs: Vec<PathBuf> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    for file in [
        "run.json",
        "run.sqlite",
        "input.cu",
        "kernel_info.json",
        "llm.jsonl",
        "result.json",
        "report.md",
    ] {
        assert!(
            run.join(file).is_file(),
            "{file} missing in {}",
            run.display()
        );
    }
    assert!(run.join("tests").is_dir());
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["status"], "interrupted");
    assert_eq!(meta["strategy"], "autonomous");
    assert_eq!(meta["settings"]["replan"], 3);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("result.json")).unwrap()).unwrap();
    assert_eq!(result["schema_version"], 1);
    assert_eq!(result["status"], "interrupted");
    assert!(
        result["error"].as_str().unwrap().contains("GPU"),
        "{result}"
    );
    // No Stage 3 LLM call was made before the GPU was needed (the baseline comes first).
    let llm = std::fs::read_to_string(run.join("llm.jsonl")).unwrap();
    assert!(
        llm.contains("stage1.describe") && !llm.contains("stage3."),
        "{llm}"
    );

    // Resuming on the same machine stops at the same point, with the same message.
    let again = kt(
        home.path(),
        &[
            "resume",
            run.to_str().unwrap(),
            "--llm",
            "scripted:experiments/cassettes/matmul-autonomous.toml",
        ],
    );
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stderr));
    assert!(text(&again.stderr).contains("a CUDA GPU is needed"));
}

#[test]
fn transform_without_an_llm_says_how_to_configure_one() {
    let home = tempfile::tempdir().unwrap();
    let out = kt(
        home.path(),
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--out",
            home.path().to_str().unwrap(),
        ],
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--llm PROVIDER:MODEL") && stderr.contains("kt.toml"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn transform_with_an_unknown_strategy_lists_the_known_ones() {
    let home = tempfile::tempdir().unwrap();
    let out = kt(
        home.path(),
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--strategy",
            "greedy",
        ],
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("greedy") && stderr.contains("autonomous") && stderr.contains("explicit"),
        "{stderr}"
    );
}

#[test]
fn graph_export_prints_the_autonomous_graph_as_mermaid_and_dot() {
    let home = tempfile::tempdir().unwrap();
    let out = kt(
        home.path(),
        &["graph", "export", "autonomous", "--format", "mermaid"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mermaid = text(&out.stdout);
    assert!(mermaid.starts_with("flowchart"));
    for node in [
        "plan",
        "validate",
        "breakdown",
        "apply",
        "select",
        "replan",
        "finish",
    ] {
        assert!(
            mermaid.contains(&format!("[\"{node}\"]")),
            "{node} missing:\n{mermaid}"
        );
    }
    let out = kt(
        home.path(),
        &["graph", "export", "explicit", "--format", "dot"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("digraph"));
}

/// The demo on a real GPU (KT_GPU=1): the replayed autonomous run must finish with a verified kernel that is
/// faster than the naive one. Prints result.json for the record.
#[test]
fn demo_replay_on_a_gpu_finishes_with_a_faster_verified_kernel() {
    if !has_gpu() {
        eprintln!("skipped: set KT_GPU=1 on a machine with an NVIDIA GPU to run the demo for real");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let out_dir = home.path().join("runs");
    let out = kt(
        home.path(),
        &[
            "transform",
            "naive-kernels/matmul.cu",
            "--strategy",
            "autonomous",
            "--replan",
            "3",
            "--llm",
            "replay:experiments/cassettes/matmul-autonomous.jsonl",
            "--out",
            out_dir.to_str().unwrap(),
            "--json",
        ],
    );
    let stdout = text(&out.stdout);
    println!("{stdout}");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["status"], "finished");
    assert_eq!(result["correct"], true);
    assert!(result["speedup"].as_f64().unwrap() > 1.0, "{result}");
}
